// SPDX-License-Identifier: GPL-3.0-or-later
// RunController: owns the training Session the studio runs and carries its events to the GUI
// thread through an EnginePump (engine_pump.h): the engine's worker thread only sets an atomic flag
// and posts one queued wake-up; the GUI then drains the whole batch at most every 33 ms and emits
// it as a few signals (metrics and spans in batches). Pause, resume and stop set the engine's
// atomic flags directly, so the GUI never waits on the engine; the finished worker is joined on a
// helper thread. Like `wafer train`, it also follows the run control requests other processes
// leave in the run's folder (session/run_control.h: another studio's Pause on this run, `wafer
// runs control`), read every 200 ms. GUI thread only (except the pump's notify hook, which is
// thread-safe).
#pragma once

#include <QObject>
#include <QString>
#include <memory>
#include <vector>

#include "engine/session/run_control.h"
#include "engine/session/session.h"
#include "ui/common/engine_pump.h"

class QTimer;

namespace ws::ui {

class RunController : public QObject {
    Q_OBJECT
public:
    explicit RunController(QObject* parent = nullptr);
    ~RunController() override;  // stops a running session and joins it

    // Starts training `config`; false (and `error` set) when the session cannot be created or a
    // run is already active. `paused`: the run pauses before its first layer (Session::setPaused
    // before it starts; the Lessons panel's pause_at).
    bool start(config::LoadedConfig config, session::SessionOptions options, QString* error,
               bool paused = false);
    void pause();
    void resume();
    // While paused: one more layer phase, then paused again (Session::stepOnePhase).
    void stepLayer();
    void stop();
    // Writes a checkpoint after the step in flight; the log then names the folder.
    void requestCheckpoint();
    bool isActive() const { return m_pump.worker() != nullptr; }
    session::RunState state() const { return m_state; }
    // Drains queued events now (normally the 33 ms timer does).
    void drainNow();
    // The session training now (null when none): for reading its state and pause stops.
    session::Session* session() const { return m_pump.worker(); }
    // How many runs start() has started: a new value means a new run.
    int64_t runSerial() const { return m_runSerial; }

signals:
    void metrics(const std::vector<ws::session::StepMetrics>& batch);
    void logLine(int level, const QString& message);  // session::LogLine::Level as int
    void stateChanged(ws::session::RunState state, const QString& detail);
    void prepareProgress(double fraction, const QString& what);
    // Streamed execution spans, batched per drain (emulated times attached when the emulator
    // runs). A step's EmulatedStep is emitted before its spans.
    void spans(const std::vector<ws::streaming::Span>& batch);
    void emulatedStep(const ws::session::EmulatedStep& step);
    // The worker has been joined; the summary is complete (runId -1 when not recorded).
    void finished(const ws::session::RunSummary& summary);
    // Every drained batch as the engine sent it (after the signals above), with the session's
    // pauseStops() read before the batch was taken (lesson/lesson_runner.h, ActionDriver). Also
    // emitted for an empty batch when drainNow() is called directly.
    void eventBatch(const std::vector<ws::session::Event>& events, int64_t pauseStopsBefore);

private:
    void onWorkerJoined();

    EnginePump<session::Session> m_pump;
    QTimer* m_controlTimer;
    std::unique_ptr<session::RunControlFollower> m_control;  // while a session runs
    session::RunState m_state = session::RunState::Finished;
    int64_t m_runSerial = 0;
};

}  // namespace ws::ui
