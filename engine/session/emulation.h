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
// utilization frames (`wafer validate` wants only the times).
Result<std::shared_ptr<const wafer::StepPrediction>> predictRunStep(
    const config::Config& cfg, const model::GptShape& shape, int microBatch,
    std::vector<wafer::BlockSparsity> perBlockSparsity, bool frames = true);

// The step a run of `cfg` plans, from the config alone: its micro-batch from the wafer fit (as
// the session chooses it), its LoRA shape; every block dense (a run's magnitude-pruned nonzeros
// depend on its weights). What the studio replays of a stored run, whose spans are not stored.
// A config this computer cannot train because its activations do not fit (fitOnWafer refuses it)
// gets the emulated wafer's activation plan instead (offload / recompute, activation_plan.h).
Result<std::shared_ptr<const wafer::StepPrediction>> predictConfigStep(const config::Config& cfg,
                                                                       bool frames = true);

}  // namespace ws::session
