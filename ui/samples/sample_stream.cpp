// SPDX-License-Identifier: GPL-3.0-or-later
// SampleStream: see sample_stream.h.
#include "ui/samples/sample_stream.h"

#include <QLabel>
#include <QPlainTextEdit>
#include <QTextCursor>
#include <QTimer>
#include <atomic>
#include <mutex>

#include "engine/modelio/load_model.h"
#include "engine/sample/generator.h"

namespace ws::ui {

// What the worker and the GUI share; the worker never touches widgets.
struct SampleStream::Shared {
    std::mutex mutex;
    std::string pending;  // text generated but not yet shown
    std::string loaded;   // "step N" once the model is loaded, for the status line
    bool done = false;
    bool ok = false;
    std::string message;  // the error when !ok
    size_t tokens = 0;
    double tokensPerSecond = 0;
    bool cancelled = false;
    std::atomic<bool> cancel{false};
    std::atomic<bool> wakePending{false};
};

SampleStream::SampleStream(QPlainTextEdit* output, QLabel* status, QObject* parent)
    : QObject(parent), m_output(output), m_status(status) {
    m_drainTimer = new QTimer(this);
    m_drainTimer->setSingleShot(true);
    m_drainTimer->setInterval(33);
    connect(m_drainTimer, &QTimer::timeout, this, &SampleStream::drain);
}

SampleStream::~SampleStream() {
    if (m_shared) m_shared->cancel = true;
    if (m_worker.joinable()) m_worker.join();
}

bool SampleStream::start(const std::filesystem::path& model, const std::string& prompt,
                         const sample::SamplingOptions& options, bool adapters) {
    if (m_worker.joinable()) return false;
    m_output->setPlainText(QString::fromStdString(prompt));
    m_status->setText(tr("Loading %1…").arg(QString::fromStdString(model.string())));
    auto shared = std::make_shared<Shared>();
    m_shared = shared;
    SampleStream* self = this;  // the destructor joins the worker before `this` goes
    auto wake = [shared, self] {
        if (shared->wakePending.exchange(true)) return;
        QMetaObject::invokeMethod(
            self,
            [self] {
                if (!self->m_drainTimer->isActive()) self->m_drainTimer->start();
            },
            Qt::QueuedConnection);
    };
    m_worker = std::thread([shared, wake, model, prompt, options, adapters] {
        auto finish = [&](bool ok, std::string message) {
            std::lock_guard lock(shared->mutex);
            shared->done = true;
            shared->ok = ok;
            shared->message = std::move(message);
        };
        auto loaded = modelio::loadModel(model);
        if (!loaded.ok()) {
            finish(false, loaded.error().message);
            wake();
            return;
        }
        {
            std::lock_guard lock(shared->mutex);
            shared->loaded = loaded->step >= 0 ? "step " + std::to_string(loaded->step) : "";
        }
        sample::Generator generator(*loaded, adapters);
        auto result = generator.generate(
            prompt, options,
            [&](const sample::TokenEvent& e) {
                {
                    std::lock_guard lock(shared->mutex);
                    shared->pending += e.text;
                }
                wake();
            },
            &shared->cancel);
        if (!result.ok()) {
            finish(false, result.error().message);
        } else {
            {
                std::lock_guard lock(shared->mutex);
                shared->tokens = result->tokens.size();
                shared->tokensPerSecond = result->tokensPerSecond();
                shared->cancelled = result->stop == sample::StopReason::Cancelled;
            }
            finish(true, {});
        }
        wake();
    });
    return true;
}

void SampleStream::cancel() {
    if (m_shared) m_shared->cancel = true;
}

void SampleStream::drain() {
    if (!m_shared) return;
    m_shared->wakePending = false;
    std::string text;
    bool done = false;
    {
        std::lock_guard lock(m_shared->mutex);
        text.swap(m_shared->pending);
        done = m_shared->done;
    }
    if (!text.empty()) {
        QTextCursor cursor(m_output->document());
        cursor.movePosition(QTextCursor::End);
        cursor.insertText(QString::fromStdString(text));
        m_output->ensureCursorVisible();
    }
    if (done) onWorkerDone();
}

void SampleStream::onWorkerDone() {
    if (m_worker.joinable()) m_worker.join();  // it has finished: only its return is left
    const bool ok = m_shared->ok;
    const QString from =
        m_shared->loaded.empty()
            ? QString()
            : QStringLiteral(" · %1").arg(QString::fromStdString(m_shared->loaded));
    const QString message = ok ? tr("%1 tokens at %2 tokens/s%3%4")
                                     .arg(m_shared->tokens)
                                     .arg(m_shared->tokensPerSecond, 0, 'f', 0)
                                     .arg(m_shared->cancelled ? tr(", stopped") : QString(), from)
                               : tr("Error: %1").arg(QString::fromStdString(m_shared->message));
    m_status->setText(message);
    emit finished(ok, message);
}

}  // namespace ws::ui
