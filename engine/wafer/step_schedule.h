// SPDX-License-Identifier: GPL-3.0-or-later
// The cycle model's second phase (cycle_model.h: plan -> schedule -> simulate -> account): the
// order in which one system runs a step's layer phases. Per micro-batch: the embeddings, every
// block and the head forward, then the head and every block backward in reverse, then the
// embeddings' backward (left out with LoRA: the frozen embeddings need no gradient). With
// micro-batches every micro-batch streams the weights in again for its forward and backward;
// gradients stream out (and SwarmX reduces them) every micro-batch, MemoryX accumulates them and
// updates once, after the last (PhaseVisit::lastMicro).
// Thread-safety: plain values and pure functions.
#pragma once

#include <string>
#include <vector>

#include "engine/wafer/step_plan.h"

namespace ws::wafer {

// One visit of a layer phase in execution order.
struct PhaseVisit {
    int kind = 0;        // StepPlan::kinds index
    std::string layer;   // "embeddings", "h.3", "head"
    int layerIndex = 0;  // ParameterTable numbering: 0 embeddings, 1..L blocks, L + 1 head
    int micro = 0;
    bool lastMicro = false;
    double offloadBytes = 0;  // activations out after this forward / in before this backward
};

std::vector<PhaseVisit> scheduleStep(const model::GptShape& shape, const StepPlan& plan);

}  // namespace ws::wafer
