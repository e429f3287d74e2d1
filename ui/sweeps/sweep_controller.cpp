// SweepController: see sweep_controller.h.
#include "ui/sweeps/sweep_controller.h"

#include <QTimer>

#include "engine/session/events.h"

namespace ws::ui {

SweepController::SweepController(QObject* parent) : QObject(parent) {
    m_drainTimer = new QTimer(this);
    m_drainTimer->setSingleShot(true);
    m_drainTimer->setInterval(33);
    connect(m_drainTimer, &QTimer::timeout, this, &SweepController::drainNow);
}

SweepController::~SweepController() {
    if (m_runner) m_runner->requestStop();
    if (m_joiner.joinable()) m_joiner.join();
    if (m_runner) m_runner->wait();
    m_runner.reset();
}

Result<sweep::SweepPlan> SweepController::plan(const config::LoadedConfig& definition) {
    return sweep::planSweep(definition);
}

bool SweepController::start(sweep::SweepPlan plan, sweep::RunnerOptions options, QString* error) {
    if (m_runner) {
        if (error) *error = tr("a sweep is already running; stop it first");
        return false;
    }
    return adopt(sweep::SweepRunner::create(std::move(plan), std::move(options)), error);
}

bool SweepController::resume(int64_t sweepRunId, sweep::RunnerOptions options, QString* error) {
    if (m_runner) {
        if (error) *error = tr("a sweep is already running; stop it first");
        return false;
    }
    return adopt(sweep::SweepRunner::resume(sweepRunId, std::move(options)), error);
}

bool SweepController::adopt(Result<std::unique_ptr<sweep::SweepRunner>> created, QString* error) {
    if (!created.ok()) {
        if (error) *error = QString::fromStdString(created.error().message);
        return false;
    }
    m_runner = std::move(created).value();
    m_ended = false;
    m_joinStarted = false;
    auto pending = std::make_shared<std::atomic<bool>>(false);
    m_wakePending = pending;
    SweepController* self = this;  // the runner (hence this hook) never outlives the controller
    m_runner->events().setNotify([pending, self] {
        if (pending->exchange(true)) return;
        QMetaObject::invokeMethod(
            self, [self] { self->scheduleDrain(); }, Qt::QueuedConnection);
    });
    emit started(m_runner->plan());
    m_runner->start();
    return true;
}

void SweepController::scheduleDrain() {
    if (!m_drainTimer->isActive()) m_drainTimer->start();
}

void SweepController::stop() {
    if (m_runner) m_runner->requestStop();
}

void SweepController::drainNow() {
    if (!m_runner) return;
    m_wakePending->store(false);
    std::vector<sweep::SweepEvent> events;
    m_runner->events().drain(events);
    std::vector<sweep::TrialProgress> progress;
    auto flushProgress = [&] {
        if (!progress.empty()) emit trialProgress(progress);
        progress.clear();
    };
    for (const auto& event : events) {
        if (const auto* p = std::get_if<sweep::TrialProgress>(&event)) {
            progress.push_back(*p);
            continue;
        }
        flushProgress();
        if (const auto* s = std::get_if<sweep::TrialStarted>(&event)) {
            emit trialStarted(*s);
        } else if (const auto* f = std::get_if<sweep::TrialFinished>(&event)) {
            emit trialFinished(f->result);
        } else if (const auto* l = std::get_if<sweep::SweepLog>(&event)) {
            QString message = QString::fromStdString(l->message);
            // The engine names no command: in the studio a sweep resumes from the Run menu.
            if (l->resumableSweepRunId >= 0)
                message += tr("; resume it with Run ▸ Resume Run… (F8) with sweep %1 selected "
                              "in Runs")
                               .arg(l->resumableSweepRunId);
            emit logLine(
                int(l->warning ? session::LogLine::Level::Warning : session::LogLine::Level::Info),
                message);
        } else if (std::holds_alternative<sweep::SweepDone>(event)) {
            m_ended = true;
        }
    }
    flushProgress();
    if (m_ended && !m_joinStarted) {
        m_joinStarted = true;
        sweep::SweepRunner* r = m_runner.get();
        SweepController* self = this;  // the destructor joins this thread before `this` goes
        m_joiner = std::thread([r, self] {
            r->wait();
            QMetaObject::invokeMethod(
                self, [self] { self->onWorkerJoined(); }, Qt::QueuedConnection);
        });
    }
}

void SweepController::onWorkerJoined() {
    if (m_joiner.joinable()) m_joiner.join();
    if (!m_runner) return;
    drainNow();
    const sweep::SweepOutcome outcome = m_runner->outcome();
    m_runner.reset();
    emit finished(outcome);
}

}  // namespace ws::ui
