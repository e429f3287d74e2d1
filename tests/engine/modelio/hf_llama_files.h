// SPDX-License-Identifier: GPL-3.0-or-later
// Test support: small random Llama-family checkpoints written as Hugging Face saves them
// (config.json + model.safetensors in HF names and nn.Linear's (out, in) layout), from a spec the
// test states, independently of engine/modelio's mapping. The float64 reference
// (hf_llama_reference_test.cpp) reads the same tensors.
#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <filesystem>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "engine/fileio/atomic_file.h"
#include "engine/fileio/safetensors.h"

namespace ws::modelio::testing {

struct HfLlamaSpec {
    std::string family = "llama";  // llama | mistral | qwen2
    int vocab = 37, hidden = 24, layers = 2, heads = 4, kvHeads = 2, headDim = 6, ffn = 20;
    int maxPositions = 64;
    bool tied = false;
    bool attentionBias = false;  // llama: q/k/v/o biases
    bool mlpBias = false;        // llama: gate/up/down biases
    int slidingWindow = 0;       // mistral: sliding_window (0: null)
    double ropeTheta = 10000.0;
    double rmsEps = 1e-6;
    std::string ropeScaling = "null";  // JSON text of rope_scaling

    bool qkvBias() const { return family == "qwen2" || (family == "llama" && attentionBias); }
    bool oBias() const { return family == "llama" && attentionBias; }
    bool mlpBiases() const { return family == "llama" && mlpBias; }
};

// An HF tensor: its shape and values, (out, in) for the projections.
struct HfArray {
    std::vector<int64_t> shape;
    std::vector<float> values;
};
using HfArrays = std::map<std::string, HfArray>;

inline std::string hfLlamaConfigText(const HfLlamaSpec& s) {
    const char* arch = s.family == "qwen2"     ? "Qwen2ForCausalLM"
                       : s.family == "mistral" ? "MistralForCausalLM"
                                               : "LlamaForCausalLM";
    std::string extra;
    if (s.family == "llama")
        extra = fmt::format(R"("attention_bias": {}, "mlp_bias": {},)", s.attentionBias, s.mlpBias);
    if (s.family == "mistral")
        extra = s.slidingWindow > 0 ? fmt::format(R"("sliding_window": {},)", s.slidingWindow)
                                    : std::string(R"("sliding_window": null,)");
    if (s.family == "qwen2") extra = R"("use_sliding_window": false, "sliding_window": 4096,)";
    return fmt::format(
        R"({{"architectures": ["{}"], "model_type": "{}", "hidden_act": "silu", {}
  "vocab_size": {}, "hidden_size": {}, "intermediate_size": {}, "num_hidden_layers": {},
  "num_attention_heads": {}, "num_key_value_heads": {}, "head_dim": {},
  "max_position_embeddings": {}, "rms_norm_eps": {}, "rope_theta": {}, "rope_scaling": {},
  "tie_word_embeddings": {}, "torch_dtype": "float32"}})",
        arch, s.family, extra, s.vocab, s.hidden, s.ffn, s.layers, s.heads, s.kvHeads, s.headDim,
        s.maxPositions, s.rmsEps, s.ropeTheta, s.ropeScaling, s.tied);
}

// Every tensor of the spec with random values (normal, std 0.3; norm weights around 1).
inline HfArrays randomHfLlama(const HfLlamaSpec& s, uint32_t seed) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> normal(0.0f, 0.3f);
    HfArrays out;
    auto add = [&](const std::string& name, std::vector<int64_t> shape, float base = 0.0f) {
        size_t n = 1;
        for (int64_t d : shape) n *= size_t(d);
        HfArray a{std::move(shape), std::vector<float>(n)};
        for (float& v : a.values) v = base + normal(rng);
        out[name] = std::move(a);
    };
    const int64_t C = s.hidden, Q = int64_t(s.heads) * s.headDim,
                  K = int64_t(s.kvHeads) * s.headDim, F = s.ffn, V = s.vocab;
    add("model.embed_tokens.weight", {V, C});
    for (int l = 0; l < s.layers; ++l) {
        const std::string p = fmt::format("model.layers.{}.", l);
        add(p + "input_layernorm.weight", {C}, 1.0f);
        add(p + "post_attention_layernorm.weight", {C}, 1.0f);
        add(p + "self_attn.q_proj.weight", {Q, C});
        add(p + "self_attn.k_proj.weight", {K, C});
        add(p + "self_attn.v_proj.weight", {K, C});
        add(p + "self_attn.o_proj.weight", {C, Q});
        if (s.qkvBias()) {
            add(p + "self_attn.q_proj.bias", {Q});
            add(p + "self_attn.k_proj.bias", {K});
            add(p + "self_attn.v_proj.bias", {K});
        }
        if (s.oBias()) add(p + "self_attn.o_proj.bias", {C});
        add(p + "mlp.gate_proj.weight", {F, C});
        add(p + "mlp.up_proj.weight", {F, C});
        add(p + "mlp.down_proj.weight", {C, F});
        if (s.mlpBiases()) {
            add(p + "mlp.gate_proj.bias", {F});
            add(p + "mlp.up_proj.bias", {F});
            add(p + "mlp.down_proj.bias", {C});
        }
    }
    add("model.norm.weight", {C}, 1.0f);
    if (!s.tied) add("lm_head.weight", {V, C});
    return out;
}

inline void writeHfArrays(const std::filesystem::path& file, const HfArrays& arrays) {
    std::vector<fileio::TensorView> views;
    for (const auto& [name, a] : arrays)
        views.push_back(
            {name, fileio::DType::F32, a.shape, a.values.data(), a.values.size() * sizeof(float)});
    if (Status st = fileio::writeSafetensors(file, views, {{"format", "pt"}}); !st.ok())
        throw std::runtime_error(st.error().message);
}

// config.json + model.safetensors in `dir`; returns the tensors written.
inline HfArrays writeHfLlamaFolder(const std::filesystem::path& dir, const HfLlamaSpec& s,
                                   uint32_t seed) {
    std::filesystem::create_directories(dir);
    HfArrays arrays = randomHfLlama(s, seed);
    writeHfArrays(dir / "model.safetensors", arrays);
    if (Status st = fileio::writeFileAtomically(dir / "config.json", hfLlamaConfigText(s));
        !st.ok())
        throw std::runtime_error(st.error().message);
    return arrays;
}

}  // namespace ws::modelio::testing
