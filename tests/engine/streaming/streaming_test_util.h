// SPDX-License-Identifier: GPL-3.0-or-later
// Shared pieces of the streaming tests: a small GPT, a deterministic batch and the plain
// (non-streamed) training step that streamed training must reproduce.
#pragma once

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "engine/model/gpt.h"
#include "engine/model/model_facts.h"
#include "engine/optim/optimizer.h"
#include "engine/streaming/executor.h"
#include "engine/streaming/memoryx.h"
#include "support/test_shapes.h"

namespace ws::streaming::testing {

using ::ws::testing::streamingShape;

inline config::OptimizerConfig adamw(double maxNorm) {
    config::OptimizerConfig c;
    c.optimizerType = "adamw";
    c.betas = {0.9, 0.95};
    c.weightDecay = 0.1;
    c.maxGradientNorm = maxNorm;
    return c;
}

inline std::vector<optim::ParamGroup> groupsOf(const model::ParameterTable& table) {
    std::vector<optim::ParamGroup> groups;
    for (const auto& t : table.tensors()) groups.push_back({t.offset, t.size, t.decay, t.lrScale});
    return groups;
}

// One group per tensor, frozen where model::isFrozenTensor says under `freeze` (with LoRA
// adapters: every base tensor).
inline std::vector<optim::ParamGroup> groupsFor(const model::ParameterTable& table,
                                                const config::OptimizerConfig& freeze) {
    std::vector<optim::ParamGroup> groups;
    for (const auto& t : table.tensors())
        groups.push_back(
            {t.offset, t.size, t.decay, t.lrScale, model::isFrozenTensor(table, t, freeze)});
    return groups;
}

// Starting weights: the initializers, and with LoRA B nonzero so every adapter gradient flows.
inline std::vector<float> startWeights(const model::ParameterTable& table) {
    std::vector<float> w(table.totalSize());
    model::initParameters(table, config::ModelConfig{}, 42, w.data());
    for (const auto& t : table.tensors())
        if (t.name.find("lora_B") != std::string::npos)
            for (size_t i = 0; i < t.size; ++i) w[t.offset + i] = 0.01f * float(i % 7) - 0.03f;
    return w;
}

// A RAM MemoryX holding `weights`, with gradients and optimizer state in the Trainable layout
// of `groups`, the optimizer over it, and an executor of `systems` x micro-batches of
// `microBatch` sequences (0: one per system) for (B,T) batches training those groups.
struct TrainableStore {
    std::unique_ptr<MemoryX> memoryx;
    std::unique_ptr<optim::Optimizer> optimizer;
    std::unique_ptr<StreamingExecutor> executor;
};

inline TrainableStore trainableStore(const model::GptShape& shape,
                                     const std::vector<optim::ParamGroup>& groups,
                                     const config::OptimizerConfig& oc,
                                     const std::vector<float>& weights, int systems, int microBatch,
                                     int B, int T) {
    const model::ParameterTable table(shape);
    auto mx = MemoryX::create(config::MemoryXConfig{}, table.totalSize(),
                              optim::Optimizer::stateCopies(oc), largestLayerSize(table),
                              optim::trainableSize(groups));
    if (!mx.ok()) throw std::runtime_error(mx.error().message);
    TrainableStore store;
    store.memoryx = std::move(mx).value();
    std::copy(weights.begin(), weights.end(), store.memoryx->weights());
    store.optimizer = std::make_unique<optim::Optimizer>(oc, groups, table.totalSize(),
                                                         store.memoryx->optimizerState(),
                                                         optim::GradientLayout::Trainable);
    StreamingOptions options;
    options.systems = systems;
    options.microBatch = microBatch;
    options.groups = groups;
    store.executor =
        std::make_unique<StreamingExecutor>(shape, B, T, options, *store.memoryx, *store.optimizer);
    return store;
}

// Tokens of step `step`: a fixed pseudo-random pattern, (B,T) inputs and next-token targets.
inline void batch(int64_t step, int B, int T, int vocab, std::vector<int32_t>& in,
                  std::vector<int32_t>& out) {
    in.resize(size_t(B) * T);
    out.resize(size_t(B) * T);
    for (int i = 0; i < B * T + 1; ++i) {
        const int32_t token = int32_t((i * 7 + step * 13 + (i / 5) * 3) % vocab);
        if (i < B * T) in[size_t(i)] = token;
        if (i > 0) out[size_t(i - 1)] = token;
    }
}

}  // namespace ws::streaming::testing
