// SPDX-License-Identifier: GPL-3.0-or-later
// The activation planner: how a step's activations get from each block's forward to its
// backward when they do not all fit the wafer's SRAM, as the Cerebras compiler decides it per
// configuration (CSoft 2.0 added dynamic activation offload to MemoryX). The choices
// (activation_memory.h has the byte accounting, cycle_model.h the schedule):
//   micro-batching     every block keeps its activations; the batch runs in micro-batches small
//                      enough to fit, each streaming all the weights in again (ModelZoo's
//                      micro_batch_size);
//   recompute          every block keeps only its input and runs its forward again in backward;
//   offload            every block's activations go out to MemoryX and come back;
//   recompute+offload  the block inputs go to MemoryX and come back, the rest is recomputed;
//   keep+recompute     as many blocks keep their activations as SRAM allows, the rest recompute
//                      (their inputs on the wafer; "keep+recompute+offload" when even those do not
//                      fit and go to MemoryX).
// Each at the largest micro-batch (a divisor of the per-system batch) whose resident activations
// fit the SRAM (and whose offloaded bytes fit MemoryX beside the weights and optimizer state);
// keep+recompute at the micro-batch a roofline estimate likes best. Every candidate is then timed
// by the cycle model (predictStep) and the fastest wins, except that within 1% of the fastest a
// plan whose weight streaming hides behind compute is preferred to one bound by the MemoryX link
// (the link is modelled at its nominal line rate: a link-bound time is the optimistic end of its
// range); ties go to the earlier in the list above, so the choice is deterministic. A batch whose
// activations all fit at once is left alone (the whole batch, every block keeping: today's
// prediction, bit for bit) without timing anything. When nothing fits, the plan falls back to
// micro-batches of one sequence, activations assumed resident, and says so. Thread-safety: pure
// functions. Cost: one predictStep per candidate (at most five).
#pragma once

#include <string>
#include <vector>

#include "engine/core/result.h"
#include "engine/wafer/activation_memory.h"
#include "engine/wafer/cycle_model.h"

namespace ws::wafer {

struct ActivationCandidate {
    std::string strategy;  // "micro-batching", "recompute", ...
    int microBatch = 0;
    ActivationCounts counts;
    double residentBytes = 0;
    double stepS = 0;              // the cycle model's step time
    bool streamingHidden = false;  // StepPrediction::weightStreamingHidden
    double streamingS = 0;         // TimeSplit::streaming: waiting on the inbound link
};

struct ActivationPlan {
    std::string strategy;  // the winner's, or "fits" (the whole batch keeps everything)
    int microBatch = 0;    // sequences per wafer pass (divides the per-system batch)
    std::vector<BlockActivation> blockActivations;  // empty: every block keeps
    ActivationCounts counts;
    bool fits = false;          // false only in the fallback (nothing fits)
    double storedBytes = 0;     // the whole batch keeping everything (ActivationFit)
    double residentBytes = 0;   // the plan's peak per system
    double availableBytes = 0;  // SRAM the activations may use
    double offloadBytesPerMicroBatch = 0;
    double memoryxBytesNeeded = 0;  // weights + optimizer state + one micro-batch's offload
    std::string note;               // one line: what was chosen and why
    std::vector<ActivationCandidate> considered;  // timed, in the order above
};

// `in` is the step without a plan (its microBatch and blockActivations are ignored);
// availableBytes <= 0: the wafer's whole SRAM. Errors: those of predictStep.
Result<ActivationPlan> planActivations(const WaferSpec& spec, const StepInput& in,
                                       double availableBytes = 0);

// Puts the plan into a step: micro-batch, per-block activations and the note.
void applyActivationPlan(const ActivationPlan& plan, StepInput& in);

// The short name of a strategy for tables ("micro-batch", "recompute", "offload", ...).
std::string shortStrategy(const ActivationPlan& plan);

}  // namespace ws::wafer
