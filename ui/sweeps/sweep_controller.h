// SPDX-License-Identifier: GPL-3.0-or-later
// SweepController: owns the SweepRunner the studio runs (engine/sweep/runner.h) and carries its
// events to the GUI thread through the same EnginePump (engine_pump.h) RunController uses for one
// Session: the runner's threads only set an atomic flag and post one queued wake-up; the GUI
// drains the whole SweepEventQueue at most every 33 ms and re-emits the batch as signals. Stop
// sets the runner's atomic flag (the stopped trials run again when the sweep is resumed); the
// finished runner is joined on a helper thread, so the GUI never waits on the engine. GUI thread
// only (except the pump's notify hook).
#pragma once

#include <QObject>
#include <QString>
#include <memory>
#include <vector>

#include "engine/sweep/runner.h"
#include "ui/common/engine_pump.h"

namespace ws::ui {

class SweepController : public QObject {
    Q_OBJECT
public:
    explicit SweepController(QObject* parent = nullptr);
    ~SweepController() override;  // stops a running sweep and joins it

    // Plans the sweep in `definition` (a config with its sweep: section, base merged). Errors
    // are the engine's, one per line.
    static Result<sweep::SweepPlan> plan(const config::LoadedConfig& definition);
    // Starts a planned sweep; `confirmed` accepts a plan above sweep.max_trials. False (and
    // `error` set) when the runner cannot be created or a sweep is already active.
    bool start(sweep::SweepPlan plan, sweep::RunnerOptions options, QString* error);
    // Continues the stopped sweep stored as run `sweepRunId`.
    bool resume(int64_t sweepRunId, sweep::RunnerOptions options, QString* error);
    void stop();
    bool isActive() const { return m_pump.worker() != nullptr; }
    const sweep::SweepPlan* currentPlan() const {
        return m_pump.worker() ? &m_pump.worker()->plan() : nullptr;
    }
    void drainNow();  // normally the 33 ms timer does

signals:
    void started(const ws::sweep::SweepPlan& plan);
    void trialStarted(const ws::sweep::TrialStarted& trial);
    void trialProgress(const std::vector<ws::sweep::TrialProgress>& batch);
    void trialFinished(const ws::sweep::TrialResult& result);
    void logLine(int level, const QString& message);  // session::LogLine::Level as int
    // The runner has been joined; the outcome is complete.
    void finished(const ws::sweep::SweepOutcome& outcome);

private:
    bool adopt(Result<std::unique_ptr<sweep::SweepRunner>> created, QString* error);
    void onWorkerJoined();

    EnginePump<sweep::SweepRunner> m_pump;
};

}  // namespace ws::ui
