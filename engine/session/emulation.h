// SPDX-License-Identifier: GPL-3.0-or-later
// The wafer emulator beside a training session: the cycle model's prediction of one step of
// this run (its wafer spec, systems, micro-batch and, with static sparsity, every block's own
// nonzeros), which gives each streamed span its emulated time and each step its utilization
// frames (events.h: EmulatedStep).
// Thread-safety: pure function.
#pragma once

#include <memory>
#include <vector>

#include "engine/config/config.h"
#include "engine/core/result.h"
#include "engine/model/parameters.h"
#include "engine/wafer/cycle_model.h"

namespace ws::session {

// perBlockSparsity: empty (dense) or one entry per block. Errors name the problem (a spec that
// does not load, a layer whose tile cannot fit a core's SRAM, ...). frames = false skips the
// utilization frames (`wafer validate` wants only the times). expertTokens (MoE): one wafer
// pass's tokens per expert per block (wafer::StepInput::expertTokens); empty: uniform routing.
// attentionLength: packed documents or short sequences (wafer::StepInput::attentionLength);
// 0 = train_input.max_sequence_length.
Result<std::shared_ptr<const wafer::StepPrediction>> predictRunStep(
    const config::Config& cfg, const model::GptShape& shape, int microBatch,
    std::vector<wafer::BlockSparsity> perBlockSparsity, bool frames = true,
    std::vector<std::vector<int64_t>> expertTokens = {}, int attentionLength = 0);

// MoE: one wafer pass's tokens per expert from a step's routing over its whole global batch
// (per block, per expert, summed over systems and micro-batches): each block's counts divided by
// `passes` (systems x micro-batches), rounded by largest remainder so the block keeps
// round(total / passes). The emulator maps one pass; every pass is taken to route alike.
std::vector<std::vector<int64_t>> perPassExpertTokens(
    const std::vector<std::vector<int64_t>>& stepTokens, int passes);

// The step a run of `cfg` plans, from the config alone: its micro-batch from the wafer fit (as
// the session chooses it), its LoRA shape; every block dense (a run's magnitude-pruned nonzeros
// depend on its weights). What the studio replays of a stored run, whose spans are not stored.
// A config this computer cannot train because its activations do not fit (fitOnWafer refuses it)
// gets the emulated wafer's activation plan instead (offload / recompute, activation_plan.h).
Result<std::shared_ptr<const wafer::StepPrediction>> predictConfigStep(const config::Config& cfg,
                                                                       bool frames = true);

}  // namespace ws::session
