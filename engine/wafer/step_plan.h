// SPDX-License-Identifier: GPL-3.0-or-later
// The cycle model's first phase (cycle_model.h: plan -> schedule -> simulate -> account): which
// distinct layer phases ("kinds") one training step has, each planned once onto the grid with
// its ops' cycles. Every block is the same on the wafer unless blocks carry their own sparsity
// or MoE routing; then each distinct block is a kind of its own. A recomputed block's backward
// (activation_memory.h) is a kind of its own too.
//
// Kinds are numbered: 0 embeddings forward, 1 head forward, 2 head backward, 3 embeddings
// backward, then each distinct block's forward (4 + 2i) and backward (5 + 2i), then the
// recomputed backwards (firstRecompute + i). The numbering is the order of the prediction's
// frames, so it must not change.
//
// Thread-safety: plain values and pure functions. Failure contract: planStep checks the whole
// input (spec, systems, shape, batch, micro-batch, MoE, per-block lists) and returns the first
// error, before the schedule or the timeline do any work.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "engine/core/result.h"
#include "engine/wafer/cycle_model.h"

namespace ws::wafer {

// One layer phase, planned: its ops' times and (optionally) every core's busy cycles.
struct PlannedLayer {
    LayerOps ops;
    double busyCycles = 0;     // sum over ops of max(compute, fabric) + fill
    double computeCycles = 0;  // sum over ops of compute
    double fabricCycles = 0;   // sum over ops of fabric excess + fill
    double tileSram = 0;
    std::vector<OpTiming> timings;      // one per op (startS / timeS not yet set)
    std::vector<float> coreBusyCycles;  // R x C, when frames are asked for
    std::vector<double> rowLinkBytes, colLinkBytes;
};

// An op's time in its phase: its busiest core or busiest link, whichever is longer, plus fill.
inline double opBusyCycles(const OpTiming& t) {
    return std::max(t.computeCycles, t.fabricCycles) + t.fillCycles;
}

// Maps one layer phase's ops onto the grid (planLayer) and sums their cycles: ops one after
// another, a run of consecutive MoE expert ops at once (the run lasts its slowest expert's
// chain). `frames`: also every core's busy cycles and every row's / column's link bytes.
Result<PlannedLayer> planLayerPhase(LayerOps ops, const WaferSpec& spec, bool frames);

struct StepPlan {
    static constexpr int kEmbeddingsForward = 0, kHeadForward = 1, kHeadBackward = 2,
                         kEmbeddingsBackward = 3, kFirstBlock = 4;

    int batchPerSystem = 0;  // B
    int microBatch = 0;      // sequences per wafer pass (divides B)
    int micros = 0;          // B / microBatch
    int seqLen = 0;          // T
    std::vector<PlannedLayer> kinds;
    std::vector<std::string> kindLabels;  // "embeddings forward", "h backward", ...
    std::vector<int> blockKindOf;         // (L) each block's distinct-block index
    int firstRecompute = 0;               // kinds[] index of the first recomputed backward
    std::vector<BlockActivation> blockActivations;  // (L, or empty: every block keeps)
    // MoE: per block (L; a dense block's empty) the tokens per expert the plan mapped, and
    // whether any block's split was assumed uniform (no routing given).
    std::vector<std::vector<int64_t>> expertTokens;
    bool uniformRouting = false;

    BlockActivation activationOf(int block) const;
    bool recomputes(int block) const;
    bool anyRecompute() const;
    // kinds[] index of a block's forward or backward phase.
    int blockKind(int block, bool backward) const;
    static bool isEmbedding(int kind) {
        return kind == kEmbeddingsForward || kind == kEmbeddingsBackward;
    }
};

// The plan of one step of `input` on `spec`; `frames` as PredictOptions::frames.
Result<StepPlan> planStep(const WaferSpec& spec, const StepInput& input, bool frames);

}  // namespace ws::wafer
