// SPDX-License-Identifier: GPL-3.0-or-later
// The update of one run: optimizer over MemoryX and the schedule (see run_optimizer.h).
#include "engine/session/run_optimizer.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace ws::session {

namespace {

// Sharded: the optimizer updates shard 0's layers, at their offsets in its MemoryX.
std::vector<optim::ParamGroup> localGroups(const RunWeights& weights) {
    if (weights.sharded()) return weights.shardPlan().localGroups(weights.groups(), 0);
    return weights.groups();
}

}  // namespace

RunOptimizer::RunOptimizer(const config::Config& config, RunWeights& weights)
    // Gradients and state of the parameters that train only (MemoryX's layout).
    : m_optimizer(config.optimizer, localGroups(weights), weights.shardPlan().count(0),
                  weights.memoryx().optimizerState(), optim::GradientLayout::Trainable),
      m_maxSteps(config.runconfig.maxSteps),
      m_schedule(config.optimizer.learningRate, m_maxSteps) {}

std::string RunOptimizer::describeFrozen(const config::Config& cfg,
                                         const std::vector<optim::ParamGroup>& groups,
                                         size_t totalParameters) {
    if (cfg.lora) {
        size_t trained = 0, rows = 0;  // rows: of the added tokens (frozenPrefix groups)
        for (const auto& g : groups) {
            trained += g.frozen ? 0 : g.size - g.frozenPrefix;
            rows += g.frozen || g.frozenPrefix == 0 ? 0 : g.size - g.frozenPrefix;
        }
        return fmt::format(
            "lora: rank {}, alpha {:g} on {}: {} adapter parameters{} train, {} base parameters "
            "are frozen",
            cfg.lora->rank, cfg.lora->alpha, fmt::join(cfg.lora->targets, ", "), trained - rows,
            rows > 0 ? fmt::format(" and the {} of the embedding rows of token ids {} and up", rows,
                                   cfg.lora->trainableTokensFrom)
                     : std::string(),
            totalParameters - trained);
    }
    if (cfg.optimizer.freezeEmbeddings || cfg.optimizer.freezeBlocks > 0) {
        size_t frozen = 0;
        for (const auto& g : groups) frozen += g.frozen ? g.size : 0;
        return fmt::format(
            "frozen: {}{}{} ({} of {} parameters are never updated)",
            cfg.optimizer.freezeEmbeddings ? "the embeddings" : "",
            cfg.optimizer.freezeEmbeddings && cfg.optimizer.freezeBlocks > 0 ? " and " : "",
            cfg.optimizer.freezeBlocks > 0
                ? fmt::format("the first {} block(s)", cfg.optimizer.freezeBlocks)
                : std::string(),
            frozen, totalParameters);
    }
    return {};
}

}  // namespace ws::session
