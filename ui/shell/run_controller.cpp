// RunController: see run_controller.h.
#include "ui/shell/run_controller.h"

#include <QTimer>

namespace ws::ui {
namespace {
bool isTerminal(session::RunState s) {
    return s == session::RunState::Finished || s == session::RunState::Stopped ||
           s == session::RunState::Diverged || s == session::RunState::Failed;
}
}  // namespace

RunController::RunController(QObject* parent) : QObject(parent) {
    m_drainTimer = new QTimer(this);
    m_drainTimer->setSingleShot(true);
    m_drainTimer->setInterval(33);
    connect(m_drainTimer, &QTimer::timeout, this, &RunController::drainNow);
}

RunController::~RunController() {
    if (m_session) m_session->requestStop();
    if (m_joiner.joinable()) m_joiner.join();
    m_session.reset();  // joins the worker if the joiner never started
}

bool RunController::start(config::LoadedConfig config, session::SessionOptions options,
                          QString* error) {
    if (m_session) {
        if (error) *error = tr("a run is already active; stop it first");
        return false;
    }
    auto created = session::Session::create(std::move(config), std::move(options));
    if (!created.ok()) {
        if (error) *error = QString::fromStdString(created.error().message);
        return false;
    }
    m_session = std::move(created).value();
    m_ended = false;
    m_joinStarted = false;
    m_state = session::RunState::Preparing;
    // One queued wake-up per drain: the flag stays set until the GUI has drained.
    auto pending = std::make_shared<std::atomic<bool>>(false);
    m_wakePending = pending;
    // `this` as the context: Qt drops the queued call if the controller is gone, and the
    // session (hence this hook) never outlives the controller.
    RunController* self = this;
    m_session->events().setNotify([pending, self] {
        if (pending->exchange(true)) return;
        QMetaObject::invokeMethod(
            self, [self] { self->scheduleDrain(); }, Qt::QueuedConnection);
    });
    m_session->start();
    return true;
}

void RunController::scheduleDrain() {
    if (!m_drainTimer->isActive()) m_drainTimer->start();
}

void RunController::pause() {
    if (m_session) m_session->setPaused(true);
}

void RunController::resume() {
    if (m_session) m_session->setPaused(false);
}

void RunController::stepLayer() {
    if (m_session) m_session->stepOnePhase();
}

void RunController::stop() {
    if (!m_session) return;
    m_session->setPaused(false);
    m_session->requestStop();
}

void RunController::requestCheckpoint() {
    if (m_session) m_session->requestCheckpoint();
}

void RunController::drainNow() {
    if (!m_session) return;
    m_wakePending->store(false);
    std::vector<session::Event> events;
    m_session->events().drain(events);
    std::vector<session::StepMetrics> batch;
    std::vector<streaming::Span> spanBatch;
    for (auto& event : events) {
        // Batches keep the queue's order: a step's spans reach the views before its metrics
        // (a screenshot taken on a metrics batch shows the whole step).
        if (auto* m = std::get_if<session::StepMetrics>(&event)) {
            if (!spanBatch.empty()) {
                emit spans(spanBatch);
                spanBatch.clear();
            }
            batch.push_back(*m);
            continue;
        }
        if (auto* sp = std::get_if<streaming::Span>(&event)) {
            if (!batch.empty()) {
                emit metrics(batch);
                batch.clear();
            }
            spanBatch.push_back(*sp);
            continue;
        }
        // The same order relative to everything else (a step's EmulatedStep before its spans,
        // the last spans before the terminal state).
        if (!batch.empty()) {
            emit metrics(batch);
            batch.clear();
        }
        if (!spanBatch.empty()) {
            emit spans(spanBatch);
            spanBatch.clear();
        }
        if (const auto* es = std::get_if<session::EmulatedStep>(&event)) {
            emit emulatedStep(*es);
        } else if (const auto* l = std::get_if<session::LogLine>(&event)) {
            emit logLine(int(l->level), QString::fromStdString(l->message));
        } else if (const auto* s = std::get_if<session::StateChange>(&event)) {
            m_state = s->state;
            emit stateChanged(s->state, QString::fromStdString(s->detail));
            if (isTerminal(s->state)) m_ended = true;
        } else if (const auto* p = std::get_if<session::PrepareProgress>(&event)) {
            emit prepareProgress(p->fraction, QString::fromStdString(p->what));
        }
    }
    if (!spanBatch.empty()) emit spans(spanBatch);
    if (!batch.empty()) emit metrics(batch);
    if (m_ended && !m_joinStarted) {
        m_joinStarted = true;
        // The worker is past its last event (a store flush at most): join it off the GUI thread.
        session::Session* s = m_session.get();
        RunController* self = this;  // the destructor joins this thread before `this` goes
        m_joiner = std::thread([s, self] {
            s->wait();
            QMetaObject::invokeMethod(
                self, [self] { self->onWorkerJoined(); }, Qt::QueuedConnection);
        });
    }
}

void RunController::onWorkerJoined() {
    if (m_joiner.joinable()) m_joiner.join();
    if (!m_session) return;
    drainNow();  // anything pushed after the terminal state (nothing today, but cheap)
    const session::RunSummary summary = m_session->summary();
    m_session.reset();
    emit finished(summary);
}

}  // namespace ws::ui
