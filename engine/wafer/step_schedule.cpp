// SPDX-License-Identifier: GPL-3.0-or-later
// The schedule phase of the cycle model (step_schedule.h).
#include "engine/wafer/step_schedule.h"

#include <fmt/format.h>

namespace ws::wafer {

std::vector<PhaseVisit> scheduleStep(const model::GptShape& S, const StepPlan& plan) {
    const int L = S.layers, micros = plan.micros;
    std::vector<PhaseVisit> order;
    for (int u = 0; u < micros; ++u) {
        const bool last = u + 1 == micros;
        order.push_back({StepPlan::kEmbeddingsForward, "embeddings", 0, u, last});
        const double tokens = double(plan.microBatch) * plan.seqLen;
        for (int l = 0; l < L; ++l)
            order.push_back({plan.blockKind(l, false), fmt::format("h.{}", l), l + 1, u, last,
                             blockOffloadBytes(S, tokens, plan.activationOf(l))});
        order.push_back({StepPlan::kHeadForward, "head", L + 1, u, last});
        order.push_back({StepPlan::kHeadBackward, "head", L + 1, u, last});
        for (int l = L - 1; l >= 0; --l)
            order.push_back({plan.blockKind(l, true), fmt::format("h.{}", l), l + 1, u, last,
                             blockOffloadBytes(S, tokens, plan.activationOf(l))});
        // LoRA: the frozen embeddings need no gradient, so their backward is not scheduled.
        if (!S.hasLora())
            order.push_back({StepPlan::kEmbeddingsBackward, "embeddings", 0, u, last});
    }
    return order;
}

}  // namespace ws::wafer
