// SPDX-License-Identifier: GPL-3.0-or-later
// Does a step's activation memory fit on the wafer, and which micro-batch to use: the decision
// the real system makes before a run. Per system, the wafer holds the weight buffer
// (weight_buffer_layers slots of the largest layer's weights, as they stream in: fp32, or bf16 in
// bf16 mode) and every activation the
// backward pass needs for one micro-batch. Pure functions.
// Which "does it fit" this is: the run's own, on this computer (the executor's fp32 activations of
// one micro-batch beside the weight buffer; wafer::fitOnWafer asks it of a config). The others ask
// different questions with different byte counts: wafer::activationFit (cycle_model.h) whether the
// emulated hardware keeps a whole batch's 16-bit activations; wafer::planActivations
// (activation_plan.h) how it keeps, offloads to MemoryX (within MemoryX's capacity) or recomputes
// them when not; wafer::planOp (layer_ops.h) whether one op's tile fits a core's SRAM.
#pragma once

#include <cstdint>
#include <string>

#include "engine/core/result.h"
#include "engine/model/parameters.h"

namespace ws::streaming {

struct FitInput {
    model::GptShape shape;
    int seqLen = 0;
    int perSystemBatch = 0;         // batch_size / num_csx
    std::string microBatchSetting;  // "auto", "none" or a number (validated by the config)
    int64_t sramBytes = 0;          // the wafer's memory
    int64_t weightBufferBytes = 0;  // weight_buffer_layers x the largest layer's weights
    int weightBufferLayers = 0;     // wafer.weight_buffer_layers (0: not known, for messages)
};

struct FitResult {
    int microBatch = 0;           // sequences per micro-batch
    int64_t activationBytes = 0;  // per micro-batch on one system
    int64_t bytesPerSequence = 0;
};

// "none" and numbers are taken as given (an error if they do not fit); "auto" picks the largest
// divisor of the per-system batch that fits. When not even one sequence fits, the error names
// the largest consumer (which layer), what it needs, what is available and what would fit; when
// the weight buffer alone fills the SRAM, it says so and how many slots would leave room. Sizes
// are in binary units, as every front end writes them (engine/core/units.h).
Result<FitResult> chooseMicroBatch(const FitInput& input);

}  // namespace ws::streaming
