// SPDX-License-Identifier: GPL-3.0-or-later
// What a training session tells the outside world, and the thread-safe queue it goes through.
// The engine's worker thread pushes; a front end (CLI loop, Qt timer) drains whole batches at a
// time and never blocks the engine. Thread-safe: any number of producers and consumers.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "engine/core/event_queue.h"
#include "engine/streaming/spans.h"
#include "engine/wafer/cycle_model.h"

namespace ws::session {

enum class RunState { Preparing, Running, Paused, Finished, Stopped, Diverged, Failed };
const char* runStateName(RunState state);  // the run store's status spelling: "running", ...

// One training step's numbers. NaN marks "not measured at this step" for evalLoss.
struct StepMetrics {
    int64_t step = 0;  // 1-based count of completed updates
    int64_t maxSteps = 0;
    double loss = 0.0;      // mean training cross-entropy of this step's batch (nats/token)
    double evalLoss = 0.0;  // mean validation loss, NaN unless evaluated after this step
    // evalLoss in bits per byte: the evaluated targets' nats / ln 2 / the bytes they decode to.
    // Compares models across tokenizers; with the byte tokenizer exactly evalLoss / ln 2.
    double evalBitsPerByte = 0.0;
    double learningRate = 0.0;
    double gradNorm = 0.0;  // global L2 norm before clipping
    // (layers + 2) L2 norm of each ParameterTable layer's gradient before clipping: embeddings,
    // h.0 ... h.{L-1}, head. Their squares sum to gradNorm². Kept in memory by front ends only
    // (the run store records gradNorm alone: L + 2 more keys per step would swamp it).
    std::vector<double> layerGradNorms;
    // Mixture of experts (model.moe; otherwise 0 and empty): the MoE blocks' summed
    // load-balancing loss (mean over the step's micro-batches; the objective trained is loss +
    // this; across processes rank 0's systems only), and per block (L entries, empty for dense
    // blocks) the tokens each expert computed this step after capacity drops, summed over
    // systems and micro-batches (across processes: every rank's, gathered on rank 0). The run
    // store gets "moe/lb_loss" every step and
    // "moe/h.<block>.expert_<e>_tokens" on log steps; the Wafer tab's tokens-per-expert chart
    // keeps every step's counts in memory.
    double loadBalancingLoss = 0.0;
    std::vector<std::vector<int64_t>> expertTokens;
    // With sparsity masks (the top-level sparsity section), on the steps it is measured (the
    // first, log steps, mask updates; else empty): per block h.0 ... h.{L-1}, the share of its
    // masked weights at zero, and the imbalance that causes on the wafer (the busiest output
    // column's nonzeros over the mean column's, worst matrix; 1 = balanced). The run store keeps
    // them as "sparsity/h.N" and "sparsity_imbalance/h.N".
    std::vector<double> blockSparsity, blockImbalance;
    double tokensPerSec = 0.0;  // over the last log window
    int64_t tokensSeen = 0;
    double elapsedSec = 0.0;  // wall time since training started
    bool logStep = false;     // a step the config asks to report (runconfig.log_steps)
};

struct LogLine {
    enum class Level { Info, Warning, Error } level = Level::Info;
    std::string message;
};

struct StateChange {
    RunState state = RunState::Preparing;
    std::string detail;  // why: the error message, "stopped by user", the NaN step...
};

// Coarse progress of slow preparation work (tokenizer training, token cache build).
struct PrepareProgress {
    double fraction = 0.0;
    std::string what;
};

// The emulated machine's view of one training step, published as the step starts (before its
// spans): the cycle model's prediction (the step's schedule, per-core utilization frames for
// every layer phase and for the whole step, where the time goes) and where the step starts on
// the emulated clock. A static config runs the same schedule every step, so all of a run's
// steps share one prediction (cheap to publish, cheap to keep for scrubbing).
struct EmulatedStep {
    int64_t step = 0;            // 0-based, as streaming::Span::step (StepMetrics::step - 1)
    double emulatedStart = 0.0;  // emulated seconds since the run's first step started
    std::shared_ptr<const wafer::StepPrediction> prediction;
};

// Streamed execution spans (stream-in, compute, stream-out, reduce, update; with emulated times
// when the emulator runs) are events too.
using Event =
    std::variant<StepMetrics, LogLine, StateChange, PrepareProgress, streaming::Span, EmulatedStep>;

// The session's event queue (core/event_queue.h): thread-safe, drained in whole batches.
using EventQueue = ws::EventQueue<Event>;

}  // namespace ws::session
