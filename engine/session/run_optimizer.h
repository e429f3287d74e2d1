// SPDX-License-Identifier: GPL-3.0-or-later
// RunOptimizer: the update of one run. The optimizer works on MemoryX's gradients and state (the
// parameters that train only, optim::GradientLayout::Trainable; shard 0's layers when MemoryX is
// sharded), with the learning-rate schedule over runconfig.max_steps. It says in the run log
// which parameters stay frozen (LoRA, freeze_embeddings, freeze_blocks).
// Not thread-safe: the session's worker thread; not movable (the executor refers to it).
#pragma once

#include <cstdint>
#include <string>

#include "engine/config/config.h"
#include "engine/optim/optimizer.h"
#include "engine/optim/schedule.h"
#include "engine/session/run_weights.h"

namespace ws::session {

class RunOptimizer {
public:
    RunOptimizer(const config::Config& config, RunWeights& weights);
    RunOptimizer(const RunOptimizer&) = delete;
    RunOptimizer& operator=(const RunOptimizer&) = delete;

    optim::Optimizer& optimizer() { return m_optimizer; }
    const optim::LearningRateSchedule& schedule() const { return m_schedule; }
    int64_t maxSteps() const { return m_maxSteps; }

    // "lora: rank 4 ... adapter parameters train ..." or "frozen: the embeddings (...)"; empty
    // when every parameter trains.
    static std::string describeFrozen(const config::Config& config,
                                      const std::vector<optim::ParamGroup>& groups,
                                      size_t totalParameters);

private:
    optim::Optimizer m_optimizer;
    int64_t m_maxSteps;
    optim::LearningRateSchedule m_schedule;
};

}  // namespace ws::session
