// SPDX-License-Identifier: GPL-3.0-or-later
// RunController: see run_controller.h.
#include "ui/common/run_controller.h"

#include <QTimer>

namespace ws::ui {
namespace {
bool isTerminal(session::RunState s) {
    return s == session::RunState::Finished || s == session::RunState::Stopped ||
           s == session::RunState::Diverged || s == session::RunState::Failed;
}
}  // namespace

RunController::RunController(QObject* parent)
    : QObject(parent),
      m_pump(
          this, [this] { drainNow(); }, [this] { onWorkerJoined(); }),
      m_controlTimer(new QTimer(this)) {
    m_controlTimer->setInterval(200);
    connect(m_controlTimer, &QTimer::timeout, this, [this] {
        if (!m_pump.worker() || !m_control) return;
        for (const std::string& line : m_control->poll())
            emit logLine(int(session::LogLine::Level::Info),
                         tr("control: %1").arg(QString::fromStdString(line)));
    });
}

RunController::~RunController() = default;  // the pump stops a running session and joins it

bool RunController::start(config::LoadedConfig config, session::SessionOptions options,
                          QString* error, bool paused) {
    if (m_pump.worker()) {
        if (error) *error = tr("a run is already active; stop it first");
        return false;
    }
    auto created = session::Session::create(std::move(config), std::move(options));
    if (!created.ok()) {
        if (error) *error = QString::fromStdString(created.error().message);
        return false;
    }
    m_pump.adopt(std::move(created).value());
    m_state = session::RunState::Preparing;
    ++m_runSerial;
    if (paused) m_pump.worker()->setPaused(true);
    m_pump.worker()->start();
    m_control = std::make_unique<session::RunControlFollower>(*m_pump.worker(),
                                                              std::chrono::milliseconds(0));
    m_controlTimer->start();
    return true;
}

void RunController::pause() {
    if (auto* session = m_pump.worker()) session->setPaused(true);
}

void RunController::resume() {
    if (auto* session = m_pump.worker()) session->setPaused(false);
}

void RunController::stepLayer() {
    if (auto* session = m_pump.worker()) session->stepOnePhase();
}

void RunController::stop() {
    auto* session = m_pump.worker();
    if (!session) return;
    session->setPaused(false);
    session->requestStop();
}

void RunController::requestCheckpoint() {
    if (auto* session = m_pump.worker()) session->requestCheckpoint();
}

void RunController::drainNow() {
    if (!m_pump.worker()) return;
    const int64_t pauseStops = m_pump.worker()->pauseStops();
    std::vector<session::Event> events;
    m_pump.takeEvents(events);
    bool ended = false;
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
            if (isTerminal(s->state)) ended = true;
        } else if (const auto* p = std::get_if<session::PrepareProgress>(&event)) {
            emit prepareProgress(p->fraction, QString::fromStdString(p->what));
        }
    }
    if (!spanBatch.empty()) emit spans(spanBatch);
    if (!batch.empty()) emit metrics(batch);
    emit eventBatch(events, pauseStops);
    if (ended) m_pump.joinWhenDone();
}

void RunController::onWorkerJoined() {
    drainNow();  // anything pushed after the terminal state (nothing today, but cheap)
    const session::RunSummary summary = m_pump.worker()->summary();
    m_controlTimer->stop();
    m_control.reset();
    m_pump.reset();
    emit finished(summary);
}

}  // namespace ws::ui
