// Session internals shared by session.cpp (lifecycle and the preparation phases) and
// session_loop.cpp (the training loop and the run's outputs): what a run keeps (Impl), what the
// preparation phases build (Prepared) and the loop's running figures (Progress). Not a public
// header: only the session's own sources include it. Thread-safety: all of it lives on the
// session's worker thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/data/dataset.h"
#include "engine/data/token_cache.h"
#include "engine/model/gpt.h"
#include "engine/optim/optimizer.h"
#include "engine/optim/schedule.h"
#include "engine/optim/sparse_masks.h"
#include "engine/session/checkpoint_keeper.h"
#include "engine/session/cluster_worker.h"
#include "engine/session/folder_lock.h"
#include "engine/session/resume.h"
#include "engine/session/session.h"
#include "engine/session/vsl.h"
#include "engine/store/run_store.h"
#include "engine/streaming/executor.h"
#include "engine/streaming/fit.h"
#include "engine/tokenizer/tokenizer.h"
#include "engine/wafer/emulated_time.h"
#include "engine/wafer/sparsity.h"

namespace ws::session {
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

inline constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Everything the run builds once prepared; lives on the worker thread.
struct Session::Impl {
    std::unique_ptr<store::RunStore> store;  // opened by this run (recordInStore)
    store::RunRecorder* recorder = nullptr;  // where the run's record goes: `store`, or given
    bool lostRecordsReported = false;        // the store's lost writes were told (once)
    int64_t runId = -1;
    std::unique_ptr<tokenizer::Tokenizer> tokenizer;
    std::optional<data::TokenCache> trainCache;
    std::optional<data::Dataset> dataset;
    std::optional<data::TokenCache> evalCache;  // eval_input.data_dir given: its own corpus
    std::optional<data::Dataset> evalDataset;
    // use_vsl: where the documents start in trainCache / evalCache (vsl.h).
    std::optional<data::DocumentIndex> documents, evalDocuments;
    std::unique_ptr<model::ParameterTable> table;
    std::unique_ptr<streaming::MemoryX> memoryx;  // master weights and optimizer state
    // memoryx.shards > 1 across processes: memoryx is shard 0's part only (plan.begin(0) == 0)
    // and `shards` reaches the other shards' tensors, one at a time.
    streaming::ShardPlan plan;
    std::optional<ShardAccess> shards;
    // Every parameter's optimizer group (global offsets): which tensors train, and so where
    // MemoryX keeps gradients and optimizer state (optim::GradientLayout::Trainable).
    std::vector<optim::ParamGroup> groups;
    fs::path modelDir;

    void metric(int64_t step, const char* key, double value, double wall) {
        if (recorder) recorder->logMetric(runId, step, key, value, wall);
    }
};

// What the preparation phases build for the training loop, in the order they build it. One lives
// on the worker thread for one prepareAndTrain: the folder lock, the executor with its activations
// and the optimizer go when the run ends; what outlives the run is in Impl.
struct Session::Prepared {
    // prepareData
    int B = 0;                                // sequences per step
    int T = 0;                                // tokens per sequence
    const data::Dataset* evalData = nullptr;  // the held-out split, or eval_input's own corpus
    // prepareMemoryX
    model::GptShape shape;
    std::optional<ResumePlan> resume;
    int stateCopies = 0;       // optimizer state buffers per parameter
    float* weights = nullptr;  // MemoryX's master weights (null when MemoryX is sharded)
    std::vector<optim::ParamGroup> groups;  // every parameter's group (global offsets)
    // applySparsity, buildOptimizer
    std::optional<wafer::StaticSparsity> sparsity;
    // prepareMasks: the top-level sparsity section's masks (MemoryX's pruneMask bytes)
    std::optional<optim::SparseMasks> masks;
    uint8_t* pruned = nullptr;
    int64_t prunedWeights = 0;  // zero weights the wafer skips now (masks or static)
    std::optional<optim::Optimizer> optimizer;
    int64_t maxSteps = 0;
    std::optional<optim::LearningRateSchedule> schedule;
    // prepareWafer, startEmulator, prepareEvaluation
    streaming::FitResult fit;
    std::optional<wafer::SpanClock> emulatedClock;
    // MoE: the last per-pass routing the emulator planned, and its prediction (reused while the
    // routing repeats).
    std::vector<std::vector<int64_t>> emulatedRouting;
    std::shared_ptr<const wafer::StepPrediction> routedPrediction;
    // Steps that pack (vsl.h): each step timed at its own attention length; emulatedClock is
    // then the full-length step's.
    std::optional<EmulatedSteps> emulatedSteps;
    std::optional<streaming::StreamingExecutor> executor;
    int evalMicro = 1;  // sequences per evaluation forward pass
    std::optional<model::Gpt<float>> evalGpt;
    std::vector<int32_t> evalInputs, evalTargets;  // (eval batch, T)
    std::vector<int32_t> evalPositionIds;          // (eval batch, T), eval_input.use_vsl only
    std::vector<int32_t> tokenBytes;  // (V) bytes each token id decodes to, for bits per byte
    // openRunRecord, claimModelFolder, startRunFolder
    fs::path db;  // the run store's file; default run folders go beside it
    std::optional<ResumePlacement> placement;
    std::optional<FolderLock> folderLock;  // held until training ends
    int64_t startStep = 0;
    std::optional<CheckpointKeeper> checkpoints;

    int64_t tokensPerStep() const { return int64_t(B) * T; }
};

// The training loop's running figures: where it is, the current log window and how it ended.
struct Session::Progress {
    streaming::StepHooks hooks;            // pause and stop between layers
    std::vector<int32_t> inputs, targets;  // (B, T) the step's batch
    std::vector<int32_t> positionIds;      // (B, T) when the step packs (vsl.h)
    Clock::time_point trainStart;
    double wallStart = 0.0;  // the wall clock at trainStart, for the store's metric times
    // The log window: tokens/s and the logged loss are over the steps since its start.
    Clock::time_point windowStart;
    int64_t windowTokens = 0;
    double windowLossSum = 0.0;
    int windowSteps = 0;
    double lastWindowLoss = kNaN;
    int64_t step = 0;  // steps done
    RunState endState = RunState::Finished;
    std::string endDetail;

    bool end(RunState state, std::string detail) {
        endState = state;
        endDetail = std::move(detail);
        return false;
    }
};

}  // namespace ws::session
