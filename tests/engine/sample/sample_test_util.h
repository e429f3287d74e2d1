// SPDX-License-Identifier: GPL-3.0-or-later
// Helpers for sample tests: a tiny random GPT, a LoadedModel around it, and a run folder on disk
// written the way a training session writes one.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "engine/config/config_yaml.h"
#include "engine/model/parameters.h"
#include "engine/model/random.h"
#include "engine/modelio/load_model.h"
#include "engine/modelio/model_folder.h"
#include "engine/modelio/weights_io.h"
#include "engine/sample/sampler.h"
#include "engine/tokenizer/tokenizer.h"
#include "support/test_shapes.h"

namespace ws::sample::testing {

using ::ws::testing::samplingShape;

// Every parameter random (LayerNorm gains around 1), large enough that the logits are far from
// uniform, so greedy and sampled continuations actually depend on the context.
inline std::vector<float> randomParams(const model::GptShape& s, uint64_t seed) {
    const model::ParameterTable table(s);
    std::vector<float> p(table.totalSize());
    for (const auto& t : table.tensors()) {
        const bool gain =
            t.name.find("ln_") != std::string::npos && t.name.find(".weight") != std::string::npos;
        for (size_t i = 0; i < t.size; ++i) {
            const double z = model::rng::standardNormal(seed, t.offset + i);
            p[t.offset + i] = float(gain ? 1.0 + 0.1 * z : 0.3 * z);
        }
    }
    return p;
}

// Greedy sampling of maxTokens tokens.
inline SamplingOptions greedy(int maxTokens) {
    SamplingOptions o;
    o.temperature = 0.0;
    o.maxTokens = maxTokens;
    return o;
}

// The model always predicts `token`: ln_f outputs its bias whatever the input (gain 0), and only
// that token's lm_head row lines up with it (an untied head). Its logits are then exactly C for
// `token` and 0 for every other id.
inline void alwaysPredict(modelio::LoadedModel& m, int32_t token) {
    const model::ParameterTable table(m.shape);
    const auto* gain = table.find("ln_f.weight");
    const auto* bias = table.find("ln_f.bias");
    const auto* head = table.find("lm_head.weight");
    ASSERT_TRUE(gain && bias && head);
    const int C = m.shape.channels;
    for (int c = 0; c < C; ++c) {
        m.params[gain->offset + c] = 0.0f;
        m.params[bias->offset + c] = 1.0f;
    }
    for (int v = 0; v < m.shape.vocab; ++v)
        for (int c = 0; c < C; ++c)
            m.params[head->offset + size_t(v) * C + c] = v == token ? 1.0f : 0.0f;
}

inline modelio::LoadedModel tinyModel(const model::GptShape& s, uint64_t seed = 1) {
    modelio::LoadedModel m;
    m.config.model = ::ws::testing::modelConfigOf(s);
    m.shape = s;
    m.tokenizer = tokenizer::makeByteTokenizer();
    m.params = randomParams(s, seed);
    return m;
}

inline std::string tinyConfigYaml(const model::GptShape& s) {
    return "model:\n  hidden_size: " + std::to_string(s.channels) +
           "\n  num_hidden_layers: " + std::to_string(s.layers) +
           "\n  num_heads: " + std::to_string(s.heads) +
           "\n  filter_size: " + std::to_string(s.ffn) +
           "\n  vocab_size: " + std::to_string(s.vocab) +
           "\n  max_position_embeddings: " + std::to_string(s.maxPositions) +
           "\n  share_embedding_weights: " + (s.tiedEmbedding ? "true" : "false") +
           (s.hasMoe() ? "\n  moe: {num_experts: " + std::to_string(s.numExperts) +
                             ", top_k: " + std::to_string(s.topK) +
                             ", moe_layer_frequency: " + std::to_string(s.moeEvery) + "}"
                       : std::string()) +
           "\ntrain_input:\n  tokenizer: {type: byte}\n";
}

// Writes dir/{model.safetensors, config.yaml, tokenizer.json} for model m (byte tokenizer).
inline void writeRunFolder(const std::filesystem::path& dir, const modelio::LoadedModel& m) {
    std::filesystem::create_directories(dir);
    auto cfg = config::parseConfig(tinyConfigYaml(m.shape), "tiny.yaml", dir);
    ASSERT_TRUE(cfg.ok()) << cfg.error().message;
    const model::ParameterTable table(m.shape);
    ASSERT_TRUE(modelio::writeModelFolder(dir, table, m.params.data(), cfg->config, 3,
                                          {m.tokenizer.get(), {}, {}})
                    .ok());
}

}  // namespace ws::sample::testing
