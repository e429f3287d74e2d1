// SPDX-License-Identifier: GPL-3.0-or-later
// ChatPresenter: see chat_presenter.h.
#include "ui/chat/chat_presenter.h"

#include <QTimer>
#include <atomic>
#include <mutex>

#include "engine/chat/conversation_file.h"
#include "engine/interop/model_ref.h"
#include "engine/sample/chat_session.h"

namespace ws::ui {

// What the worker and the GUI share; the worker never touches widgets.
struct ChatPresenter::Shared {
    std::mutex mutex;
    std::string pending;  // reply text generated but not yet shown
    bool loaded = false;  // a model was loaded by this worker (template names below)
    std::string templateName, templateWhy;
    std::shared_ptr<sample::ChatSession> session;  // the worker's result (new or the same)
    bool done = false;
    bool ok = false;
    std::string message;
    std::atomic<bool> cancel{false};
    std::atomic<bool> wakePending{false};
};

ChatPresenter::ChatPresenter(QObject* parent) : QObject(parent) {
    m_drainTimer = new QTimer(this);
    m_drainTimer->setSingleShot(true);
    m_drainTimer->setInterval(33);
    connect(m_drainTimer, &QTimer::timeout, this, &ChatPresenter::drain);
}

ChatPresenter::~ChatPresenter() {
    if (m_shared) m_shared->cancel = true;
    if (m_worker.joinable()) m_worker.join();
}

void ChatPresenter::setSystemPrompt(const QString& text) {
    if (isBusy()) return;
    m_systemPrompt = text;
    chat::setSystemMessage(m_conversation, text.toStdString());
    if (m_session) m_session->setConversation(m_conversation);
}

void ChatPresenter::newConversation() {
    if (isBusy()) return;
    m_conversation = {};
    setSystemPrompt(m_systemPrompt);
}

Status ChatPresenter::save(const QString& file) const {
    return chat::saveConversations(file.toStdString(),
                                   std::span<const chat::Conversation>(&m_conversation, 1));
}

bool ChatPresenter::send(const ChatModelChoice& choice, const QString& text,
                         const sample::SamplingOptions& options) {
    if (isBusy() || text.trimmed().isEmpty()) return false;
    auto shared = std::make_shared<Shared>();
    m_shared = shared;
    // Another model: load it on the worker; the conversation goes on with the new one from the
    // messages so far (its system prompt included).
    std::shared_ptr<sample::ChatSession> session = choice == m_loaded ? m_session : nullptr;
    const std::string ref = choice.model.toStdString();
    const std::string templateChoice = choice.chatTemplate.toStdString();
    const std::string dbPath = m_dbPath.toStdString();
    const bool adapters = choice.adapters;
    const chat::Conversation conversation = m_conversation;
    const std::string message = text.toStdString();
    m_session.reset();  // the worker owns it until it is done
    if (!session) {
        m_templateName.clear();
        m_templateWhy.clear();
    }
    m_loaded = choice;
    ChatPresenter* self = this;  // the destructor joins the worker before `this` goes
    auto wake = [shared, self] {
        if (shared->wakePending.exchange(true)) return;
        QMetaObject::invokeMethod(
            self,
            [self] {
                if (!self->m_drainTimer->isActive()) self->m_drainTimer->start();
            },
            Qt::QueuedConnection);
    };
    emit replyStarted();
    m_worker = std::thread([=]() mutable {
        auto finish = [&](bool ok, std::string why) {
            std::lock_guard lock(shared->mutex);
            shared->done = true;
            shared->ok = ok;
            shared->message = std::move(why);
            shared->session = session;
        };
        if (!session) {
            auto loaded = interop::loadModelRef(ref, dbPath);
            if (!loaded.ok()) {
                finish(false, loaded.error().message);
                wake();
                return;
            }
            auto model = sample::prepareChatModel(std::move(loaded).value(), templateChoice);
            if (!model.ok()) {
                finish(false, model.error().message);
                wake();
                return;
            }
            session = std::make_shared<sample::ChatSession>(*model, adapters);
            session->setConversation(conversation);
            std::lock_guard lock(shared->mutex);
            shared->loaded = true;
            shared->templateName = (*model)->chatTemplate.name();
            shared->templateWhy = (*model)->templateWhy;
        }
        wake();
        auto reply = session->send(
            message, options,
            [&](std::string_view piece) {
                {
                    std::lock_guard lock(shared->mutex);
                    shared->pending += piece;
                }
                wake();
            },
            &shared->cancel);
        if (!reply.ok()) {
            finish(false, reply.error().message);
        } else {
            const bool cancelled = reply->stop == sample::StopReason::Cancelled;
            std::string why =
                std::to_string(reply->tokens) + (reply->tokens == 1 ? " token" : " tokens");
            if (reply->tokensPerSecond > 0)
                why += " at " + std::to_string(int(reply->tokensPerSecond + 0.5)) + " tokens/s";
            why += cancelled ? ", stopped"
                   : reply->stop == sample::StopReason::MaxTokens
                       ? ", reached the most tokens per reply"
                       : ", end of turn (" + reply->stoppedAt + ")";
            finish(true, why);
        }
        wake();
    });
    return true;
}

void ChatPresenter::stop() {
    if (m_shared) m_shared->cancel = true;
}

void ChatPresenter::drain() {
    if (!m_shared) return;
    m_shared->wakePending = false;
    std::string text;
    bool done = false, loaded = false;
    {
        std::lock_guard lock(m_shared->mutex);
        text.swap(m_shared->pending);
        done = m_shared->done;
        if (m_shared->loaded) {
            loaded = true;
            m_shared->loaded = false;
            m_templateName = QString::fromStdString(m_shared->templateName);
            m_templateWhy = QString::fromStdString(m_shared->templateWhy);
        }
    }
    if (loaded) emit modelLoaded(m_templateName, m_templateWhy);
    if (!text.empty()) emit replyText(QString::fromStdString(text));
    if (done) onWorkerDone();
}

void ChatPresenter::onWorkerDone() {
    if (m_worker.joinable()) m_worker.join();  // it has finished: only its return is left
    const auto shared = m_shared;
    m_session = shared->session;
    if (!m_session) {
        m_loaded = {};  // nothing loaded: the next send tries again
        m_templateName.clear();
        m_templateWhy.clear();
    } else {
        m_conversation = m_session->conversation();
    }
    emit replyFinished(shared->ok, QString::fromStdString(shared->message));
}

}  // namespace ws::ui
