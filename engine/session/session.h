// SPDX-License-Identifier: GPL-3.0-or-later
// Session: one training run, from a loaded config to a finished model folder. It prepares the
// data (corpus -> tokenizer -> token cache), builds the model's parameters, trains on its own
// worker thread, records everything in the run store and publishes events (events.h).
// Thread-safety: create/start/wait from one controlling thread; requestStop, requestCheckpoint,
// setPaused, stepOnePhase, state and events() from any thread. Stop and pause act between layers (a
// step stopped before MemoryX's first update is dropped whole, a later one completes); a stop
// leaves the final weights, a final checkpoint (modelio/checkpoints.h), the metrics produced so far
// and a "stopped" status behind. Never aborts: bad input, a failed allocation anywhere in the run
// (out of memory) or any other exception become a Failed state with a message; the metrics and
// checkpoints written before it stay.
#pragma once

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "engine/comm/comm.h"
#include "engine/config/config_yaml.h"
#include "engine/core/result.h"
#include "engine/modelio/weights_io.h"
#include "engine/session/events.h"
#include "engine/wafer/layer_ops.h"

namespace ws::store {
class RunRecorder;
}
namespace ws::streaming {
struct StepResult;
}

namespace ws::session {

struct RunDataInput;  // run_data.h

struct SessionOptions {
    std::filesystem::path dbPath;    // empty: userDataDir()/runs.sqlite; run folders go beside it
    std::filesystem::path cacheDir;  // empty: userCacheDir()
    std::string runName;             // empty: "<model name> <date time>"
    std::string kind = "train";      // "finetune" for wafer finetune (finetune/finetune_plan.h)
    // The run this one builds on (a fine-tune's base run), recorded as parent_run in the store.
    std::optional<int64_t> parentRun;
    bool recordInStore = true;  // false: no run store (tests, benchmarks)
    // Where the run's record goes instead of the run store at dbPath (which is then not opened;
    // dbPath still places the default run folder): a sweep trial on another rank of an mpirun
    // job forwards it to rank 0's store (sweep/cluster.h). New runs only (a resume needs the
    // store itself). Must outlive the Session.
    store::RunRecorder* recorder = nullptr;
    // A checkpoint folder to resume from (resume.h resolves run ids and model folders to one):
    // weights, optimizer state and the step come from it, so the run continues exactly. The
    // config should be the checkpoint's (resumeConfig()); other settings that change training
    // are refused unless allowConfigChange.
    std::filesystem::path resumeFrom;
    bool allowConfigChange = false;
    // Stop, as requestStop() would, once the run reaches this global step (-1: never); the
    // run stays resumable. For stepping through a run in slices (teaching mode, tests).
    int64_t stopAfterStep = -1;
    std::optional<int64_t> sweepId;  // a sweep trial: the run of kind "sweep" it belongs to
    // The checkpoint a finished or stopped run writes at its end (checkpoint_keeper.h). Sweep
    // trials skip it: a stopped trial runs again from scratch, the weights are in
    // model.safetensors, and the optimizer state would triple a sweep's disk use.
    bool finalCheckpoint = true;
    // Evaluate the starting weights before the first step (fine-tuning: the base model's loss on
    // the new held-out text), logged and recorded as eval_loss at step 0.
    bool evaluateAtStart = false;
    // Tests of the out-of-memory path: step N (1-based) throws std::bad_alloc at its start, as an
    // allocation failing inside it would (-1: never).
    int64_t failAllocationAtStep = -1;
    // The job's processes when `mpirun` started several (comm/comm.h): this Session is rank 0's,
    // the others run runClusterWorker (cluster_worker.h) and compute their share of
    // runconfig.num_csx; before each step the Session sends them a step order, and it releases
    // them when training ends, however it ends. Null: one process.
    comm::Comm* comm = nullptr;
};

struct RunSummary {
    int64_t runId = -1;
    RunState state = RunState::Preparing;
    int64_t steps = 0;
    double finalLoss = 0.0;        // mean over the last log window
    double finalEvalLoss = 0.0;    // NaN when never evaluated
    double initialEvalLoss = 0.0;  // NaN unless SessionOptions::evaluateAtStart
    // finalEvalLoss in bits per byte of the evaluated text (see StepMetrics::evalBitsPerByte).
    double finalEvalBitsPerByte = 0.0;
    double tokensPerSec = 0.0;  // whole-run average
    double elapsedSec = 0.0;
    // The emulated wafer time of the steps this run trained (each step's own schedule: a
    // sequence-length switch or packed documents change it); 0 without the emulator.
    double emulatedSec = 0.0;
    int64_t parameterCount = 0;
    // Loss of the best context-free guess (the training split's unigram entropy): a model that
    // learned anything beyond token frequencies scores below it.
    double unigramEntropyNats = 0.0;
    std::filesystem::path modelDir;
    std::string detail;  // error or stop reason
    // With the emulator on: the training FLOPs of the steps this session ran, with the
    // multiply-adds of zero (pruned) weights skipped (forward, dX, dW).
    double emulatedFlops = 0.0;
};

class Session {
public:
    // Validates the config (cross-field rules) without touching data; errors list every problem.
    static Result<std::unique_ptr<Session>> create(config::LoadedConfig config,
                                                   SessionOptions options = {});
    ~Session();
    Session(const Session&) = delete;
    Session& operator=(const Session&) = delete;

    void start();  // prepares and trains on a worker thread
    void run();    // the same on the calling thread (blocking)
    void wait();   // joins the worker thread started by start()

    void requestStop() { m_stopRequested = true; }
    // Writes a checkpoint after the step in flight (the "checkpoint now" command).
    void requestCheckpoint() { m_checkpointRequested = true; }
    void setPaused(bool paused) {
        if (!paused) m_phaseSteps = 0;
        m_paused = paused;
    }
    // While paused: lets exactly one more layer phase run (one layer's forward or backward pass
    // of one micro-batch, with its stream-in, reduce and update), then the run is paused again -
    // the teaching "Step Layer" command. Repeated calls queue up; Continue clears them. The state
    // stays Paused throughout. No effect while running.
    void stepOnePhase() {
        if (m_paused) ++m_phaseSteps;
    }
    RunState state() const { return m_state.load(); }
    // How often the worker has stopped at a pause point while paused (once per pause, and again
    // after each stepOnePhase): a caller can wait for "paused again" instead of guessing with a
    // sleep. Once it has moved, no layer runs until the next step command or Continue.
    int64_t pauseStops() const { return m_pauseStops.load(); }
    // Where the run lives once its model folder is claimed (before the first step): its id in the
    // run store (-1 when not recorded) and the folder. Nullopt before that. For the run control
    // requests of other processes (run_control.h). Any thread.
    struct Place {
        int64_t runId = -1;
        std::filesystem::path modelDir;
    };
    std::optional<Place> place() const {
        if (!m_placeKnown.load(std::memory_order_acquire)) return std::nullopt;
        return m_place;
    }

    EventQueue& events() { return m_events; }
    const config::Config& config() const { return m_config.config; }
    const RunSummary& summary() const { return m_summary; }  // complete after run()/wait()

private:
    Session(config::LoadedConfig config, SessionOptions options);
    void setState(RunState state, std::string detail = {});
    void log(LogLine::Level level, std::string message);
    Status prepareAndTrain();

    // The phases of prepareAndTrain, in the order it runs them (session.cpp). `Prepared` holds
    // what the preparation builds for the loop, `Progress` the loop's running figures; both live
    // for one prepareAndTrain, on the worker thread. Each job is a class of its own
    // (session_state.h); these phases put them together.
    struct Prepared;
    struct Progress;
    Status prepareData(Prepared& p);
    Status prepareChatData(Prepared& p, const std::filesystem::path& cacheDir);
    Status prepareHdf5Data(Prepared& p, const std::filesystem::path& cacheDir);
    Status prepareEvalData(Prepared& p, const RunDataInput& input,
                           const std::filesystem::path& cacheDir);
    Status prepareMemoryX(Prepared& p);
    Status prepareSparsity(Prepared& p);
    void buildOptimizer(Prepared& p);
    Status prepareWafer(Prepared& p);
    Status startExecutor(Prepared& p);
    void prepareEvaluation(Prepared& p);
    Status openRunRecord(Prepared& p);
    Status claimModelFolder(Prepared& p);
    Status recordPlacement(const Prepared& p);
    Status startRunFolder(Prepared& p);
    void runTrainingLoop(Prepared& p, Progress& r);
    void setPauseHooks(Progress& r);
    bool trainStep(Prepared& p, Progress& r);
    // The attention length of step `step`'s rows (packed: data::attentionLength), for the
    // emulator; leaves the step's position ids in r.positionIds.
    double attentionLength(const Prepared& p, Progress& r, int64_t step);
    void afterStep(Prepared& p, Progress& r, const streaming::StepResult& result);
    void recordStep(Prepared& p, Progress& r, StepMetrics& m);
    struct Evaluation {
        double loss;         // nats per token; NaN when there is nothing to evaluate
        double bitsPerByte;  // the same loss per byte of the text the targets decode to
    };
    Evaluation evaluate(Prepared& p, int64_t afterStep);
    void finishTraining(Prepared& p, Progress& r);
    Status writeOutputs(Prepared& p, Progress& r);
    bool cluster() const { return m_options.comm && m_options.comm->size() > 1; }
    void releaseWorkers();

    struct Impl;
    std::unique_ptr<Impl> m_impl;
    config::LoadedConfig m_config;
    SessionOptions m_options;
    EventQueue m_events;
    RunSummary m_summary;
    std::thread m_thread;
    std::atomic<bool> m_stopRequested{false};
    std::atomic<bool> m_paused{false};
    std::atomic<int> m_phaseSteps{0};  // layer phases to let through while paused
    std::atomic<int64_t> m_pauseStops{0};
    std::atomic<bool> m_checkpointRequested{false};
    std::atomic<RunState> m_state{RunState::Preparing};
    Place m_place;  // written once, before m_placeKnown becomes true
    std::atomic<bool> m_placeKnown{false};
    // What the worker is doing ("training step 12"), for the message when memory runs out.
    std::string m_activity;
    bool m_workersReleased = false;  // across processes: the stop order has been sent
};

}  // namespace ws::session
