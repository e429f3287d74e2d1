// SPDX-License-Identifier: GPL-3.0-or-later
// Performing a lesson on a real training Session, without a GUI: the headless runner behind
// `wafer lesson run` and the lesson tests, and the reference for how the studio's Lessons panel
// drives its own session. For each step it applies the step's changes, performs its action
// (a new run of N steps; pausing at one layer phase with Session::setPaused + stepOnePhase,
// reading the phase from the session's Forward/Backward spans; stepping phases; switching the
// number of systems; a coord check, a sweep or a held-out answer check, run to the end on the
// calling thread), evaluates the step's `expect` checks, then does what the "try it" asks (its
// solution) and evaluates its check. A config change ends the run in flight (a run's config
// is fixed) and makes the current run `previous.*` in checks, until the next change.
// Thread-safety: one LessonRunner belongs to one thread; the Session it drives trains on its own
// worker thread.
#pragma once

#include <atomic>
#include <chrono>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/lesson/lesson.h"
#include "engine/mup/coord_check.h"
#include "engine/session/session.h"
#include "engine/sweep/runner.h"

namespace ws::lesson {

struct RunnerOptions {
    // Run folders (and the run store's place) go here; runs are not recorded in a store.
    std::filesystem::path workDir;
    std::filesystem::path cacheDir;  // token caches; empty: userCacheDir()
    // Longest time an action may go without progress (no event from its run: a run that never
    // starts, a stuck run, a pause that never comes) before it fails with a message naming
    // what it waited for.
    std::chrono::milliseconds timeout{std::chrono::seconds(600)};
};

struct CheckOutcome {
    std::string text;  // the condition as written
    std::string where;
    bool passed = false;
    std::string detail;  // "run.layer is 2"
};

struct StepOutcome {
    size_t index = 0;
    std::string error;  // the action or a change failed; empty when they worked
    std::vector<CheckOutcome> expect;
    // The try-it check before the learner acts: a check that already passes teaches nothing
    // (reported as a warning, not a failure).
    bool tryPassedBefore = false;
    std::vector<CheckOutcome> tryCheck;
    bool passed() const;
};

// "step 3 (\"Backward, in reverse\")": how errors name a step (index from 0).
std::string describeStep(const LessonStep& step, size_t index);
// "5 s", "250 ms"
std::string describeDuration(std::chrono::milliseconds d);

// A coord_check action as the coord check's options, and the config it checks (the step's,
// without its sweep: section); the same in the runner and the studio.
mup::CoordCheckOptions coordCheckOptions(const Action& coordCheck);
config::Config coordCheckBase(const config::Config& config);
// A finished sweep's analysis into the studies (`sweep.*` in checks).
void noteSweep(StudyObservation& studies, const sweep::SweepOutcome& outcome);

// A check_answers action on the run whose folder is `modelDir`: its model answers the first
// `cases` of its run's held-out records as the Answers tab asks them (sample/answer_check.h: its
// chat template, `auto` with the plain fallback, greedy, at most kCheckAnswersMaxNewTokens).
inline constexpr int kCheckAnswersMaxNewTokens = 32;
Result<RunObservation::Answers> checkRunAnswers(const std::filesystem::path& modelDir, int cases,
                                                const std::atomic<bool>* cancel = nullptr);

// Whether the last phase a run computed is the one a PauseAt action waits for. A PauseAt that a
// whole step of phases passes without reaching (a layer the model does not have) fails at once.
bool reached(const Action& pauseAt, const RunObservation& run);

// One action on a session the caller owns, without blocking: the studio's Lessons panel uses it
// with the run it shows, LessonRunner with its own. Call start() once, do what it says, then
// after every batch of events call next() and do what it says, until Done or Failed:
//     const int64_t stops = session.pauseStops();   // read BEFORE draining the events
//     drain the events into `run` (RunObservation::observe)
//     switch (driver.next(run, session.state(), stops)) { ... }
// (A phase's span is published before the pause stop that follows it is counted, so reading the
// count first guarantees the observation already holds that phase.)
class ActionDriver {
public:
    explicit ActionDriver(Action action) : m_action(action) {}

    struct Start {
        bool newRun = false;         // start a new run of the current config ...
        bool paused = false;         // ... paused before its first layer (Session::setPaused)
        int64_t stopAfterStep = -1;  // SessionOptions::stopAfterStep
        std::string error;           // the action cannot start (step_phases without a pause)
    };
    // pausedRunLive: a run of the current config is live and paused (its pauseStops given).
    Start start(bool pausedRunLive, int64_t pauseStops);

    enum class Next {
        Wait,          // nothing to do until more events arrive
        StepOnePhase,  // call Session::stepOnePhase() once
        Done,          // the action reached its state (a finished run: call wait())
        Failed,        // see error()
    };
    Next next(const RunObservation& run, session::RunState state, int64_t pauseStops);
    const std::string& error() const { return m_error; }
    // What the action waits for and where the run stands, for a timeout's message: "the run
    // to pause at the forward pass of layer 2 (the last phase computed: the backward pass of
    // layer 1 of step 3; the run is paused)".
    std::string waitingFor(const RunObservation& run, session::RunState state) const;

private:
    Action m_action;
    int64_t m_lastStops = -1;  // the pause stop our last command was given at
    int64_t m_remaining = 0;   // StepPhase: phases still to ask for
    int64_t m_firstStep = -1;  // PauseAt: the step of the first phase seen while stepping
    std::string m_error;
};

class LessonRunner {
public:
    // `lesson` must outlive the runner.
    LessonRunner(const Lesson& lesson, RunnerOptions options);
    ~LessonRunner();  // stops the run in flight
    LessonRunner(const LessonRunner&) = delete;
    LessonRunner& operator=(const LessonRunner&) = delete;

    // The pieces, in the order runStep uses them (a GUI does the same with its own session).
    // enterStep: step k's changes (and a Systems action) on the current config.
    Status enterStep(size_t k);
    Status perform(const Action& action);
    std::vector<CheckOutcome> evaluate(const std::vector<Condition>& checks) const;
    // A coord_check or sweep action, on the calling thread (it ends the run in flight first).
    Status performStudy(const Action& action);
    // A check_answers action on the current run's model, on the calling thread.
    Status performAnswerCheck(const Action& action);
    // The try-it's solution: its changes, then its action.
    Status applySolution(size_t k);

    // All of step k: enter, perform, expect, try (solution and check).
    StepOutcome runStep(size_t k);

    const config::LoadedConfig& config() const { return m_config; }
    const RunObservation& current() const { return m_current; }
    const RunObservation* previous() const { return m_previous ? &*m_previous : nullptr; }
    const StudyObservation& studies() const { return m_studies; }

private:
    Status applyConfigChanges(const std::vector<Change>& changes, const Action& action);
    Status startRun(bool paused, int64_t stopAfterStep);
    void endRun();
    size_t drain();  // the events taken
    bool runLive() const;

    const Lesson& m_lesson;
    RunnerOptions m_options;
    config::LoadedConfig m_config;
    std::unique_ptr<session::Session> m_session;
    RunObservation m_current;
    std::optional<RunObservation> m_previous;
    StudyObservation m_studies;
    int m_runs = 0;
};

}  // namespace ws::lesson
