// SPDX-License-Identifier: GPL-3.0-or-later
// AnswerCheckJob: see answer_check_job.h.
#include "ui/answers/answer_check_job.h"

#include <QMetaObject>
#include <atomic>
#include <deque>
#include <mutex>

#include "engine/data/chat_records.h"
#include "engine/interop/model_ref.h"

namespace ws::ui {

namespace {

struct Event {
    enum class Kind { Cases, ModelReady, Outcome, ModelFailed, Finished };
    Kind kind = Kind::Finished;
    int model = -1;
    int caseIndex = -1;
    std::string text;  // the source, description or message
    bool ok = false;
    std::vector<sample::AnswerCase> cases;
    sample::AnswerOutcome outcome;
};

// The cases: the file's records, or the held-out records of the run `model` belongs to.
Result<std::vector<sample::AnswerCase>> readCases(const AnswerCheckJob::Request& request,
                                                  const modelio::LoadedModel& first,
                                                  std::string& source) {
    std::vector<chat::Conversation> conversations;
    if (!request.records.isEmpty()) {
        auto records = data::readRecordFile(request.records.toStdString());
        if (!records.ok()) return records.error();
        source = request.records.toStdString() + " (" + records->report.evidence + ")";
        conversations = std::move(records->conversations);
    } else {
        auto heldOut = sample::runHeldOutConversations(first.config, &source);
        if (!heldOut.ok()) return heldOut.error();
        conversations = std::move(heldOut).value();
    }
    auto cases = sample::answerCases(conversations, size_t(std::max(request.maxCases, 1)));
    if (cases.empty())
        return Error{"no record is a conversation ending with an assistant's answer"};
    return cases;
}

}  // namespace

struct AnswerCheckJob::Shared {
    std::mutex mutex;
    std::deque<Event> events;
    std::atomic<bool> cancel{false};
    std::atomic<bool> wakePending{false};
};

AnswerCheckJob::AnswerCheckJob(QObject* parent) : QObject(parent) {}

AnswerCheckJob::~AnswerCheckJob() {
    if (m_shared) m_shared->cancel = true;
    if (m_worker.joinable()) m_worker.join();
}

void AnswerCheckJob::cancel() {
    if (m_shared) m_shared->cancel = true;
}

bool AnswerCheckJob::start(const Request& request) {
    if (m_worker.joinable() || request.models.isEmpty()) return false;
    auto shared = std::make_shared<Shared>();
    m_shared = shared;
    AnswerCheckJob* self = this;  // the destructor joins the worker before `this` goes
    auto post = [shared, self](Event e) {
        {
            std::lock_guard lock(shared->mutex);
            shared->events.push_back(std::move(e));
        }
        if (shared->wakePending.exchange(true)) return;
        QMetaObject::invokeMethod(
            self, [self] { self->drain(); }, Qt::QueuedConnection);
    };
    m_worker = std::thread([shared, post, request] {
        auto finish = [&](bool ok, std::string message) {
            Event e;
            e.kind = Event::Kind::Finished;
            e.ok = ok;
            e.text = std::move(message);
            post(std::move(e));
        };
        std::vector<sample::AnswerCase> cases;
        for (int m = 0; m < request.models.size(); ++m) {
            if (shared->cancel) return finish(false, "stopped");
            auto failed = [&](const std::string& message) {
                Event e;
                e.kind = Event::Kind::ModelFailed;
                e.model = m;
                e.text = message;
                post(std::move(e));
            };
            std::string described;
            auto loaded = interop::loadModelRef(request.models[m].toStdString(),
                                                request.dbPath.toStdString(), &described);
            if (!loaded.ok()) {
                if (m == 0) return finish(false, loaded.error().message);
                failed(loaded.error().message);
                continue;
            }
            if (m == 0) {
                std::string source;
                auto read = readCases(request, *loaded, source);
                if (!read.ok()) return finish(false, read.error().message);
                cases = std::move(read).value();
                Event e;
                e.kind = Event::Kind::Cases;
                e.cases = cases;
                e.text = source;
                post(std::move(e));
            }
            // With `auto`, a model that cannot hold its template's tokens (the base a chat
            // fine-tune started from) answers through the plain template instead, and says so.
            std::string fallbackNote;
            auto chatModel = sample::prepareChatModelOrPlain(
                std::move(loaded).value(), request.chatTemplate.toStdString(), &fallbackNote);
            const std::string templateNote =
                fallbackNote.empty() ? std::string() : " (" + fallbackNote + ")";
            if (!chatModel.ok()) {
                failed(chatModel.error().message);
                continue;
            }
            {
                Event e;
                e.kind = Event::Kind::ModelReady;
                e.model = m;
                e.text = "chat template " + (*chatModel)->chatTemplate.name() + templateNote;
                post(std::move(e));
            }
            sample::AnswerChecker checker(*chatModel);
            const sample::SamplingOptions options =
                sample::greedyAnswerOptions(request.maxNewTokens);
            for (size_t c = 0; c < cases.size(); ++c) {
                if (shared->cancel) return finish(false, "stopped");
                auto outcome = checker.check(cases[c], options, &shared->cancel);
                if (!outcome.ok()) {
                    if (shared->cancel) return finish(false, "stopped");
                    failed(outcome.error().message);
                    break;
                }
                Event e;
                e.kind = Event::Kind::Outcome;
                e.model = m;
                e.caseIndex = int(c);
                e.outcome = std::move(outcome).value();
                post(std::move(e));
            }
        }
        finish(true, {});
    });
    return true;
}

void AnswerCheckJob::drain() {
    if (!m_shared) return;
    std::deque<Event> events;
    {
        std::lock_guard lock(m_shared->mutex);
        m_shared->wakePending = false;
        events.swap(m_shared->events);
    }
    for (Event& e : events) {
        switch (e.kind) {
            case Event::Kind::Cases:
                emit casesReady(e.cases, QString::fromStdString(e.text));
                break;
            case Event::Kind::ModelReady:
                emit modelReady(e.model, QString::fromStdString(e.text));
                break;
            case Event::Kind::Outcome:
                emit outcomeReady(e.model, e.caseIndex, e.outcome);
                break;
            case Event::Kind::ModelFailed:
                emit modelFailed(e.model, QString::fromStdString(e.text));
                break;
            case Event::Kind::Finished:
                if (m_worker.joinable()) m_worker.join();  // it has posted its last event
                emit finished(e.ok, QString::fromStdString(e.text));
                break;
        }
    }
}

}  // namespace ws::ui
