// SPDX-License-Identifier: GPL-3.0-or-later
// Hugging Face LlamaConfig / MistralConfig / Qwen2Config (config.json) <-> our model config: rotary
// positions, RMSNorm, the SwiGLU MLP, grouped-query heads and the optional biases (see
// hf_config.h, which dispatches here on model_type / architectures).
//
// Reading: missing keys take the transformers class's defaults; what changes the computation and
// the engine does not do (an activation other than silu, rope types other than linear and
// llama3, partial rotary, mixture-of-experts or q/k-norm keys) is refused with the key and value.
// Writing: the keys transformers reads for the architecture the options describe (Qwen2 for q/k/v
// biases without an o_proj bias, Mistral for a sliding window without biases, Llama otherwise).
#include <fmt/format.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "engine/model/parameters.h"
#include "engine/modelio/hf_keys.h"

namespace ws::modelio::detail {
namespace {

using nlohmann::json;

// Keys whose presence (with a non-trivial value) means a variant the engine does not compute.
Status refuseVariants(const HfKeys& keys) {
    const json& j = keys.json();
    for (const char* key :
         {"num_local_experts", "num_experts", "n_routed_experts", "moe_intermediate_size"}) {
        auto it = j.find(key);
        if (it != j.end() && !it->is_null() && !(it->is_number() && it->get<double>() == 0))
            return keys.error(key, fmt::format("is {}: mixture-of-experts variants of the Llama "
                                               "family are not supported",
                                               it->dump()));
    }
    for (const char* key : {"use_qk_norm", "qk_layernorm", "use_qk_layernorm"}) {
        auto it = j.find(key);
        if (it != j.end() && it->is_boolean() && it->get<bool>())
            return keys.error(key, "is true: q/k normalization is not supported");
    }
    if (auto it = j.find("hidden_act"); it != j.end()) {
        if (!it->is_string() || it->get<std::string>() != "silu")
            return keys.error("hidden_act",
                              fmt::format("is {}; the engine's SwiGLU MLP computes "
                                          "down(silu(gate(x)) * up(x)), so only \"silu\" is "
                                          "supported",
                                          it->dump()));
    }
    if (auto it = j.find("partial_rotary_factor"); it != j.end() && !it->is_null()) {
        if (!it->is_number() || it->get<double>() != 1.0)
            return keys.error("partial_rotary_factor",
                              fmt::format("is {}; these architectures rotate the whole head "
                                          "(only 1.0 is supported)",
                                          it->dump()));
    }
    return Status::success();
}

// The network's shape: vocabulary, width, depth, heads, KV heads, head size, MLP width.
Status readShape(const HfKeys& keys, const std::string& family, config::ModelConfig& m) {
    // Defaults of LlamaConfig / MistralConfig / Qwen2Config.
    const bool llama = family == "llama", mistral = family == "mistral";
    struct IntField {
        const char* key;
        int fallback;
        int* target;
    };
    for (auto [key, fallback, target] : {IntField{"vocab_size",
                                                  llama     ? 32000
                                                  : mistral ? 32000
                                                            : 151936,
                                                  &m.vocabSize},
                                         IntField{"hidden_size", 4096, &m.hiddenSize},
                                         IntField{"intermediate_size",
                                                  llama     ? 11008
                                                  : mistral ? 14336
                                                            : 22016,
                                                  &m.filterSize},
                                         IntField{"num_hidden_layers", 32, &m.numHiddenLayers},
                                         IntField{"num_attention_heads", 32, &m.numHeads},
                                         IntField{"max_position_embeddings",
                                                  llama     ? 2048
                                                  : mistral ? 131072
                                                            : 32768,
                                                  &m.maxPositionEmbeddings}}) {
        auto v = keys.positive(key, fallback);
        if (!v.ok()) return v.error();
        *target = *v;
    }
    auto kv = keys.positive("num_key_value_heads", llama ? m.numHeads : mistral ? 8 : 32);
    if (!kv.ok()) return kv.error();
    if (m.numHeads % *kv != 0)
        return keys.error("num_key_value_heads", fmt::format("({}) does not divide "
                                                             "num_attention_heads ({})",
                                                             *kv, m.numHeads));
    if (*kv != m.numHeads) {
        m.attentionModule = "multiquery_attention";
        m.extraAttentionParams.numKvGroups = *kv;
    }
    const bool divides = m.hiddenSize % m.numHeads == 0;
    auto headDim = keys.positive("head_dim", divides ? m.hiddenSize / m.numHeads : 0);
    if (!headDim.ok()) return headDim.error();
    if (*headDim == 0)
        return keys.error("num_attention_heads",
                          fmt::format("({}) does not divide hidden_size ({}) and head_dim is "
                                      "not set",
                                      m.numHeads, m.hiddenSize));
    if (*headDim % 2 != 0)
        return keys.error("head_dim",
                          fmt::format("is {}; rotary embeddings need an even head size", *headDim));
    if (int64_t(*headDim) * m.numHeads != m.hiddenSize) m.attentionInnerDim = *headDim * m.numHeads;
    auto eps = keys.number("rms_norm_eps", 1e-6, 0.0, 1.0);
    if (!eps.ok()) return eps.error();
    m.layerNormEpsilon = *eps;
    auto tied = keys.boolean("tie_word_embeddings", false);
    if (!tied.ok()) return tied.error();
    m.shareEmbeddingWeights = *tied;
    return Status::success();
}

// One rope_scaling-style object (rope_scaling, or the newer rope_parameters): its type (rope_type
// or type) and factors. `key` names it in errors.
Status readRopeObject(const HfKeys& keys, const char* key, config::ModelConfig& m) {
    const json& j = keys.json();
    auto it = j.find(key);
    if (it == j.end() || it->is_null()) return Status::success();
    if (!it->is_object())
        return keys.error(key, fmt::format("is {}; expected an object or null", it->dump()));
    const json& r = *it;
    if (auto theta = r.find("rope_theta"); theta != r.end() && !theta->is_null()) {
        if (!theta->is_number() || !(theta->get<double>() >= 1.0))
            return keys.error(
                key, fmt::format("has rope_theta {}; it must be a number >= 1", theta->dump()));
        m.ropeTheta = theta->get<double>();
    }
    std::string type = "default";
    for (const char* typeKey : {"rope_type", "type"}) {
        if (auto t = r.find(typeKey); t != r.end() && t->is_string()) {
            type = t->get<std::string>();
            break;
        }
    }
    if (type == "default") return Status::success();
    if (type != "linear" && type != "llama3")
        return keys.error(key, fmt::format("has rope_type \"{}\"; only default, linear and "
                                           "llama3 rotary scaling are supported",
                                           type));
    const auto num = [&](const char* name, double fallback) -> Result<double> {
        auto v = r.find(name);
        if (v == r.end() || v->is_null()) return fallback;
        if (!v->is_number() || !(v->get<double>() > 0.0))
            return keys.error(
                key, fmt::format("has {} {}; it must be a positive number", name, v->dump()));
        return v->get<double>();
    };
    auto factor = num("factor", 1.0);
    if (!factor.ok()) return factor.error();
    if (*factor < 1.0)
        return keys.error(key, fmt::format("has factor {}; it must be at least 1", *factor));
    m.posScalingType = type;
    m.posScalingFactor = *factor;
    if (type == "llama3") {
        config::PosScalingExtraArgs extra;
        auto low = num("low_freq_factor", extra.lowFreqFactor);
        auto high = num("high_freq_factor", extra.highFreqFactor);
        auto original =
            num("original_max_position_embeddings", extra.originalMaxPositionEmbeddings);
        for (const auto* v : {&low, &high, &original})
            if (!v->ok()) return v->error();
        if (!(*high > *low))
            return keys.error(
                key, fmt::format("has high_freq_factor {} <= low_freq_factor {}", *high, *low));
        extra.lowFreqFactor = *low;
        extra.highFreqFactor = *high;
        extra.originalMaxPositionEmbeddings = int(*original);
        m.posScalingExtraArgs = extra;
    }
    return Status::success();
}

// rope_theta, rope_scaling / rope_parameters.
Status readRope(const HfKeys& keys, config::ModelConfig& m) {
    m.positionEmbeddingType = "rotary";
    m.rotaryDim = 0;
    // LlamaConfig's, MistralConfig's and Qwen2Config's default alike.
    auto theta = keys.number("rope_theta", 10000.0, 1.0, 1e12);
    if (!theta.ok()) return theta.error();
    m.ropeTheta = *theta;
    if (Status st = readRopeObject(keys, "rope_scaling", m); !st.ok()) return st;
    return readRopeObject(keys, "rope_parameters", m);
}

// The biases (attention_bias, mlp_bias; Qwen2's implicit q/k/v biases) and the sliding window.
Status readAttention(const HfKeys& keys, const std::string& family, HfModelConfig& out) {
    config::ModelConfig& m = out.model;
    bool qkv = false, oProj = false, mlp = false;
    if (family == "llama") {
        auto attn = keys.boolean("attention_bias", false);
        auto mlpBias = keys.boolean("mlp_bias", false);
        if (!attn.ok()) return attn.error();
        if (!mlpBias.ok()) return mlpBias.error();
        qkv = oProj = *attn;
        mlp = *mlpBias;
    } else if (family == "qwen2") {
        qkv = true;  // Qwen2Attention: q/k/v with bias, o_proj without
    }
    m.useProjectionBiasInAttention = qkv;
    m.useFfnBiasInAttention = oProj;
    m.useFfnBias = mlp;
    bool windowed = family == "mistral";
    if (family == "qwen2") {
        auto use = keys.boolean("use_sliding_window", false);
        if (!use.ok()) return use.error();
        windowed = *use;
    }
    m.attentionSlidingWindowLength = 0;
    if (windowed) {
        auto window = keys.positive("sliding_window", 0);
        if (!window.ok()) return window.error();
        m.attentionSlidingWindowLength = *window;
        if (*window > 0)
            out.notes.push_back(fmt::format(
                "sliding_window {}: sequences are limited to the window, where sliding-window "
                "attention equals full attention",
                *window));
    }
    auto drop = keys.number("attention_dropout", 0.0, 0.0, 0.99);
    if (!drop.ok()) return drop.error();
    m.attentionDropoutRate = *drop;
    m.dropoutRate = 0.0;
    if (auto range = keys.number("initializer_range", 0.02, 0.0, 10.0); range.ok()) {
        m.initializer.std = m.embeddingInitializer.std = *range;
        m.initializer.a = m.embeddingInitializer.a = -2 * *range;
        m.initializer.b = m.embeddingInitializer.b = 2 * *range;
    }
    return Status::success();
}

}  // namespace

Result<HfModelConfig> parseHfLlamaConfig(const HfKeys& keys, const std::string& family) {
    if (Status st = refuseVariants(keys); !st.ok()) return st.error();
    HfModelConfig out;
    config::ModelConfig& m = out.model;
    m.name = family;
    if (auto it = keys.json().find("_name_or_path");
        it != keys.json().end() && it->is_string() && !it->empty())
        m.name = it->get<std::string>();
    m.normType = "rmsnorm";
    m.nonlinearity = "swiglu";
    if (Status st = readShape(keys, family, m); !st.ok()) return st.error();
    if (Status st = readRope(keys, m); !st.ok()) return st.error();
    if (Status st = readAttention(keys, family, out); !st.ok()) return st.error();
    return out;
}

namespace {

// The architecture the block options describe: "llama", "mistral" or "qwen2", or why none.
Result<std::string> exportFamily(const config::ModelConfig& m) {
    const model::GptShape s = model::GptShape::fromConfig(m);
    auto refuse = [](std::string_view key, std::string_view value, std::string_view why) {
        return Error{
            fmt::format("model.{} is {}: {}; Hugging Face's LlamaForCausalLM, "
                        "MistralForCausalLM and Qwen2ForCausalLM cannot express it",
                        key, value, why)};
    };
    if (s.position != model::GptShape::Position::Rotary)
        return refuse("position_embedding_type", m.positionEmbeddingType,
                      "the Llama family uses rotary positions");
    if (s.norm != model::GptShape::Norm::RmsNorm)
        return refuse("norm_type", m.normType, "the Llama family uses rmsnorm");
    if (s.mlp != model::GptShape::Mlp::SwiGlu)
        return refuse("nonlinearity", m.nonlinearity, "the Llama family uses swiglu");
    if (s.rotaryDims() != s.headSize())
        return refuse("rotary_dim", std::to_string(m.rotaryDim),
                      "these architectures rotate the whole head");
    if (m.moe) return refuse("moe", "set", "no mixture-of-experts layout");
    if (s.qkvBias && !s.attnProjBias && !s.mlpBias) return std::string("qwen2");
    if (s.qkvBias != s.attnProjBias)
        return refuse("use_ffn_bias_in_attention", s.attnProjBias ? "true" : "false",
                      "Llama's attention_bias puts biases on q/k/v and o_proj together (Qwen2: "
                      "q/k/v only, without MLP biases)");
    if (m.attentionSlidingWindowLength > 0) {
        if (s.qkvBias || s.mlpBias)
            return refuse("attention_sliding_window_length",
                          std::to_string(m.attentionSlidingWindowLength),
                          "Mistral's sliding window comes without biases");
        return std::string("mistral");
    }
    return std::string("llama");
}

}  // namespace

Status checkHfLlamaExportable(const config::ModelConfig& m) {
    auto family = exportFamily(m);
    if (!family.ok()) return family.error();
    return Status::success();
}

std::string hfLlamaConfigJson(const config::ModelConfig& m, std::optional<int> eosTokenId) {
    const model::GptShape s = model::GptShape::fromConfig(m);
    const std::string family = exportFamily(m).ok() ? *exportFamily(m) : std::string("llama");
    const char* architecture = family == "qwen2"     ? "Qwen2ForCausalLM"
                               : family == "mistral" ? "MistralForCausalLM"
                                                     : "LlamaForCausalLM";
    json j = {
        {"architectures", {architecture}},
        {"model_type", family},
        {"hidden_act", "silu"},
        {"vocab_size", m.vocabSize},
        {"hidden_size", m.hiddenSize},
        {"intermediate_size", m.filterSize},
        {"num_hidden_layers", m.numHiddenLayers},
        {"num_attention_heads", m.numHeads},
        {"num_key_value_heads", s.kvHeadCount()},
        {"head_dim", s.headSize()},
        {"max_position_embeddings", m.maxPositionEmbeddings},
        {"rms_norm_eps", m.layerNormEpsilon},
        {"rope_theta", m.ropeTheta},
        {"tie_word_embeddings", m.shareEmbeddingWeights},
        {"attention_dropout", m.attentionDropoutRate},
        {"initializer_range", m.initializer.std},
        {"use_cache", true},
        {"torch_dtype", "float32"},
    };
    json scaling = nullptr;
    if (s.ropeScaling == model::GptShape::RopeScaling::Linear) {
        scaling = {{"rope_type", "linear"}, {"factor", s.ropeFactor}};
    } else if (s.ropeScaling == model::GptShape::RopeScaling::Llama3) {
        scaling = {{"rope_type", "llama3"},
                   {"factor", s.ropeFactor},
                   {"low_freq_factor", s.ropeLowFreqFactor},
                   {"high_freq_factor", s.ropeHighFreqFactor},
                   {"original_max_position_embeddings", s.ropeOriginalMaxPositions}};
    }
    j["rope_scaling"] = scaling;
    if (family == "llama") {
        j["attention_bias"] = s.qkvBias;
        j["mlp_bias"] = s.mlpBias;
        j["pretraining_tp"] = 1;
    } else if (family == "mistral") {
        j["sliding_window"] = m.attentionSlidingWindowLength > 0
                                  ? json(m.attentionSlidingWindowLength)
                                  : json(nullptr);
    } else {
        const bool windowed = m.attentionSlidingWindowLength > 0;
        j["use_sliding_window"] = windowed;
        j["sliding_window"] = windowed ? json(m.attentionSlidingWindowLength) : json(nullptr);
        j["max_window_layers"] = windowed ? 0 : m.numHiddenLayers;
    }
    j["bos_token_id"] = eosTokenId ? json(*eosTokenId) : json(nullptr);
    j["eos_token_id"] = eosTokenId ? json(*eosTokenId) : json(nullptr);
    return j.dump(2) + "\n";
}

}  // namespace ws::modelio::detail
