// SPDX-License-Identifier: GPL-3.0-or-later
// Session internals shared by session.cpp (lifecycle and the preparation phases), session_data.cpp
// (the run's data) and session_loop.cpp (the training loop and the run's outputs): what a run
// keeps (Impl), what the preparation phases build (Prepared) and the loop's running figures
// (Progress). The jobs themselves are classes of their own: RunWeights (MemoryX, whole or
// sharded), RunSparsity, RunOptimizer, EmulatorFeed, Evaluator, RunRecord (the run store) and
// RunFolder (the model folder); the Session composes them and runs the loop. Not a public
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

#include "engine/data/batch_source.h"
#include "engine/data/dataset.h"
#include "engine/data/token_cache.h"
#include "engine/session/checkpoint_keeper.h"
#include "engine/session/emulator_feed.h"
#include "engine/session/evaluator.h"
#include "engine/session/hdf5_run_data.h"
#include "engine/session/resume.h"
#include "engine/session/run_folder.h"
#include "engine/session/run_optimizer.h"
#include "engine/session/run_record.h"
#include "engine/session/run_sparsity.h"
#include "engine/session/run_weights.h"
#include "engine/session/session.h"
#include "engine/session/vsl.h"
#include "engine/streaming/executor.h"
#include "engine/streaming/fit.h"
#include "engine/tokenizer/tokenizer.h"

namespace ws::session {
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

inline constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// What outlives one preparation: the run's record, its data and its weights.
struct Session::Impl {
    RunRecord record;  // the run store's record of the run (empty: none)
    std::shared_ptr<const tokenizer::Tokenizer> tokenizer;
    std::optional<data::TokenCache> trainCache;
    std::optional<data::Dataset> dataset;
    std::optional<data::TokenCache> evalCache;  // eval_input.data_dir given: its own corpus
    std::optional<data::Dataset> evalDataset;
    // use_vsl: where the documents start in trainCache / evalCache (vsl.h).
    std::optional<data::DocumentIndex> documents, evalDocuments;
    // Instruction and chat data (chat_run_data.h): the examples' batches instead of the token
    // cache's windows, for training and evaluation.
    std::unique_ptr<data::BatchSource> source;
    // The chat template's tokens that got ids past the tokenizer's vocabulary, for the log of a
    // vocabulary that grows (ChatRunData::addedTokens).
    std::string addedTokens;
    // ModelZoo's HDF5 samples (hdf5_run_data.h), instead of the token cache and its windows.
    std::optional<Hdf5RunData> hdf5;
    // The batch source training reads, when not the token cache's windows.
    const data::BatchSource* trainSource() const {
        return hdf5 ? static_cast<const data::BatchSource*>(hdf5->train.get()) : source.get();
    }
    std::unique_ptr<RunWeights> weights;  // master weights and optimizer state in MemoryX
};

// What the preparation phases build for the training loop, in the order they build it. One lives
// on the worker thread for one prepareAndTrain: the folder lock, the executor with its activations
// and the optimizer go when the run ends; what outlives the run is in Impl.
struct Session::Prepared {
    // prepareData
    int B = 0;                                // sequences per step
    int T = 0;                                // tokens per sequence
    const data::Dataset* evalData = nullptr;  // the held-out split, or eval_input's own corpus
    const data::BatchSource* evalSource = nullptr;  // instead of evalData: a source's held-out
    // prepareMemoryX
    model::GptShape shape;
    std::optional<ResumePlan> resume;
    // prepareSparsity, buildOptimizer
    std::optional<RunSparsity> sparsity;
    std::optional<RunOptimizer> optimizer;
    // prepareWafer, prepareEvaluation
    streaming::FitResult fit;
    std::optional<EmulatorFeed> emulator;
    std::optional<streaming::StreamingExecutor> executor;
    std::optional<Evaluator> evaluator;
    // openRunRecord, claimModelFolder, startRunFolder
    fs::path db;  // the run store's file; default run folders go beside it
    std::optional<ResumePlacement> placement;
    std::optional<RunFolder> folder;  // locked until training ends
    int64_t startStep = 0;
    std::optional<CheckpointKeeper> checkpoints;

    int64_t tokensPerStep() const { return int64_t(B) * T; }
    int64_t maxSteps() const { return optimizer->maxSteps(); }
    const ResumePlan* resumePlan() const { return resume ? &*resume : nullptr; }
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
