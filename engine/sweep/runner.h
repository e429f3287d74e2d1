// SPDX-License-Identifier: GPL-3.0-or-later
// SweepRunner: runs a planned sweep's trials as Sessions, up to sweep.parallel_trials at once,
// each a run of kind "sweep-trial" in the run store tied to the sweep's own run (kind "sweep");
// applies ASHA at the rungs and the divergence bound at every step; records every trial's
// verdict (sweep_records.h) so that a stopped sweep resumes where it stopped; and publishes
// events for the CLI's table and the GUI's charts.
//
// Decisions are exact: a trial's step events are handled on its own worker thread as they are
// pushed, so a trial stopped at rung r (or above max_loss at step s) ends right after that step.
// Compute threads: when runconfig.num_threads is 0, each trial gets cores / parallel_trials
// threads (at least one), so parallel trials share the cores instead of fighting over them.
//
// Across processes (RunnerOptions::comm of several ranks, cluster.h): every rank runs one trial
// at a time (rank 0 too; sweep.parallel_trials is for one process), rank 0 decides everything and
// keeps the store; with runconfig.num_threads 0 a trial gets its rank's cores / ranks on its host.
//
// Thread-safety: create/start/run/wait from one controlling thread; requestStop and events()
// from any thread. Never aborts on bad input: failures end the sweep with an error message.
#pragma once

#include <atomic>
#include <condition_variable>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <variant>
#include <vector>

#include "engine/comm/comm.h"
#include "engine/core/event_queue.h"
#include "engine/core/result.h"
#include "engine/sweep/results.h"
#include "engine/sweep/space.h"

namespace ws::sweep {

struct TrialStarted {
    int trial = 0;
    std::vector<TrialParam> params;
    std::string parametrization;
    int64_t seed = 0;
    int64_t maxSteps = 0;
    int threads = 1;  // compute threads it was given
};

struct TrialProgress {
    int trial = 0;
    int64_t step = 0;
    int64_t maxSteps = 0;
    double loss = 0.0;  // this step's training loss
};

struct TrialFinished {
    TrialResult result;
    bool fromEarlierSession = false;  // settled before a resume: not run again
};

struct SweepLog {
    bool warning = false;
    std::string message;
    // Set on the message announcing a stop: the sweep run that continues it. The engine names
    // no command; each front end says how to resume in its own terms (the CLI's --resume, the
    // studio's Run menu).
    int64_t resumableSweepRunId = -1;
};

struct SweepDone {
    std::string status;  // finished | stopped | failed
    std::string detail;  // the error when failed
};

using SweepEvent = std::variant<TrialStarted, TrialProgress, TrialFinished, SweepLog, SweepDone>;

// Thread-safe queue of sweep events, drained by a front end (core/event_queue.h).
using SweepEventQueue = EventQueue<SweepEvent>;

struct RunnerOptions {
    std::filesystem::path dbPath;    // empty: userDataDir()/runs.sqlite
    std::filesystem::path cacheDir;  // empty: userCacheDir()
    std::string name;                // the sweep run's name; empty: "sweep <date time>"
    bool confirmed = false;          // the user accepted a sweep above sweep.max_trials
    int cores = 0;                   // cores to share out; 0: those this process may use
    // The processes of an `mpirun` job, this being rank 0 (the others run runSweepWorker,
    // cluster.h); null or one rank: trials run in this process only.
    comm::Comm* comm = nullptr;
    // Across processes: a worker not heard from for this long is lost; its trial runs again.
    std::chrono::milliseconds workerTimeout{10000};
};

struct SweepOutcome {
    int64_t sweepRunId = -1;
    std::string status;  // finished | stopped | failed
    std::string detail;
    std::vector<TrialResult> trials;  // every trial with a result, by index
    std::vector<ParametrizationTransfer> transfer;
    double elapsedSec = 0.0;
    // Across processes: the worker ranks that were lost (their trials ran again elsewhere). The
    // process should then end without MPI_Finalize, which would wait for them.
    std::vector<int> lostRanks;
};

class SweepRunner {
public:
    // A new sweep. Fails when the plan needs a confirmation that options.confirmed does not give.
    static Result<std::unique_ptr<SweepRunner>> create(SweepPlan plan, RunnerOptions options);
    // Continues the sweep recorded as run `sweepRunId` in options.dbPath: plans it again from its
    // stored definition and runs only the trials without a settled result (finished, pruned,
    // diverged); those are published first as TrialFinished{fromEarlierSession = true}.
    static Result<std::unique_ptr<SweepRunner>> resume(int64_t sweepRunId, RunnerOptions options);

    ~SweepRunner();
    SweepRunner(const SweepRunner&) = delete;
    SweepRunner& operator=(const SweepRunner&) = delete;

    void start();  // runs on a worker thread
    void run();    // the same on the calling thread (blocking)
    void wait();

    // Stops every running trial (between layers, as Session::requestStop) and starts no more;
    // stopped trials run again when the sweep resumes.
    void requestStop() { m_stopRequested = true; }

    SweepEventQueue& events() { return m_events; }
    const SweepPlan& plan() const { return m_plan; }
    const SweepOutcome& outcome() const { return m_outcome; }  // complete after run()/wait()

private:
    struct Active;
    struct Cluster;
    SweepRunner(SweepPlan plan, RunnerOptions options);
    // runSweep's phases (runner.cpp), in order.
    struct Schedule;
    Status runSweep();
    // The sweep's run in the store (new, or resumed), locked; on resume the trials already
    // settled become results. The settled ones by trial index.
    Result<std::vector<bool>> openSweepRecord(const std::filesystem::path& db);
    Status restoreSettledTrials(std::vector<bool>& settled);
    Schedule planSchedule(const std::filesystem::path& db, const std::vector<bool>& settled);
    void stopRunningTrials(Schedule& schedule);
    Status launchTrials(Schedule& schedule);
    Status launchTrial(Schedule& schedule, const TrialSpec& spec, int rank);
    int freeWorker();
    void waitForTrialEvent(bool stopping);
    void takeBackLostTrials(Schedule& schedule);
    void collectEndedTrials(Schedule& schedule);
    Status concludeSweep(bool stopping);
    void onTrialEvents(Active& active);
    // A step of a trial, local or remote: the loss window, progress, the divergence bound and
    // ASHA at rungs. True when the trial must stop after it. Called under active.mutex.
    bool onTrialStep(Active& active, int64_t step, int64_t maxSteps, double loss);
    TrialResult finishTrial(Active& active);
    // Across processes (runner_cluster.cpp).
    void startCluster();
    void receiveFromWorkers();
    void handleWorkerMessage(const comm::Message& message);
    bool sendTrial(Active& active, const config::LoadedConfig& trialConfig,
                   const std::string& runName);
    std::vector<int> lostWorkers();  // newly lost: their trials are taken back
    void heartbeatWorkers();
    void stopCluster();

    SweepPlan m_plan;
    RunnerOptions m_options;
    std::optional<int64_t> m_resumeId;
    SweepEventQueue m_events;
    SweepOutcome m_outcome;
    std::thread m_thread;
    std::atomic<bool> m_stopRequested{false};
    std::mutex m_mutex;  // the ASHA scheduler and the wake-up flag below
    std::condition_variable m_wake;
    bool m_trialEnded = false;
    struct Shared;
    std::unique_ptr<Shared> m_shared;
    std::unique_ptr<Cluster> m_cluster;  // across processes only
};

}  // namespace ws::sweep
