// SPDX-License-Identifier: GPL-3.0-or-later
// SweepController: see sweep_controller.h.
#include "ui/sweeps/sweep_controller.h"

#include "engine/session/events.h"

namespace ws::ui {

SweepController::SweepController(QObject* parent)
    : QObject(parent),
      m_pump(
          this, [this] { drainNow(); }, [this] { onWorkerJoined(); }) {}

SweepController::~SweepController() = default;  // the pump stops a running sweep and joins it

Result<sweep::SweepPlan> SweepController::plan(const config::LoadedConfig& definition) {
    return sweep::planSweep(definition);
}

bool SweepController::start(sweep::SweepPlan plan, sweep::RunnerOptions options, QString* error) {
    if (m_pump.worker()) {
        if (error) *error = tr("a sweep is already running; stop it first");
        return false;
    }
    return adopt(sweep::SweepRunner::create(std::move(plan), std::move(options)), error);
}

bool SweepController::resume(int64_t sweepRunId, sweep::RunnerOptions options, QString* error) {
    if (m_pump.worker()) {
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
    m_pump.adopt(std::move(created).value());
    emit started(m_pump.worker()->plan());
    m_pump.worker()->start();
    return true;
}

void SweepController::stop() {
    if (auto* runner = m_pump.worker()) runner->requestStop();
}

void SweepController::drainNow() {
    if (!m_pump.worker()) return;
    std::vector<sweep::SweepEvent> events;
    m_pump.takeEvents(events);
    bool ended = false;
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
            ended = true;
        }
    }
    flushProgress();
    if (ended) m_pump.joinWhenDone();
}

void SweepController::onWorkerJoined() {
    drainNow();
    const sweep::SweepOutcome outcome = m_pump.worker()->outcome();
    m_pump.reset();
    emit finished(outcome);
}

}  // namespace ws::ui
