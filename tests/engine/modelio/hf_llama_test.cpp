// SPDX-License-Identifier: GPL-3.0-or-later
// Llama-family Hugging Face checkpoints (LlamaForCausalLM, MistralForCausalLM, Qwen2ForCausalLM):
// config.json <-> ModelConfig (published configs, defaults, every refusal naming its key and
// value, write -> read giving the same config), and the tensors: HF names read into the
// parameter table through the weight-loading entry point (fused [q|k|v] and [gate|up] columns,
// transposed) and written back bit-identical, tensor by tensor, names and shapes.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "engine/fileio/safetensors.h"
#include "engine/model/parameters.h"
#include "engine/modelio/hf_config.h"
#include "engine/modelio/hf_llama_weights.h"
#include "engine/modelio/weights_io.h"
#include "hf_llama_files.h"
#include "support/temp_dir.h"

namespace ws::modelio {
namespace {

using testing::HfArrays;
using testing::HfLlamaSpec;

Result<HfModelConfig> parse(const std::string& text) {
    return parseHfConfig(text, "config.json");
}

void expectRefused(const std::string& text, const std::string& key, const std::string& value) {
    auto r = parse(text);
    ASSERT_FALSE(r.ok()) << text;
    const std::string& msg = r.error().message;
    EXPECT_NE(msg.find("config.json"), std::string::npos) << msg;
    EXPECT_NE(msg.find(key), std::string::npos) << msg;
    EXPECT_NE(msg.find(value), std::string::npos) << msg;
}

TEST(HfLlamaConfig, SmolLm135mAsOnTheHub) {
    auto r = parse(R"({"architectures": ["LlamaForCausalLM"], "attention_bias": false,
        "attention_dropout": 0.0, "bos_token_id": 0, "eos_token_id": 0, "hidden_act": "silu",
        "hidden_size": 576, "initializer_range": 0.02, "intermediate_size": 1536,
        "max_position_embeddings": 2048, "model_type": "llama", "num_attention_heads": 9,
        "num_hidden_layers": 30, "num_key_value_heads": 3, "pretraining_tp": 1,
        "rms_norm_eps": 1e-05, "rope_scaling": null, "rope_theta": 10000.0,
        "tie_word_embeddings": true, "torch_dtype": "float32", "transformers_version": "4.40.1",
        "use_cache": true, "vocab_size": 49152})");
    ASSERT_TRUE(r.ok()) << r.error().message;
    const config::ModelConfig& m = r->model;
    EXPECT_EQ(m.hiddenSize, 576);
    EXPECT_EQ(m.numHiddenLayers, 30);
    EXPECT_EQ(m.numHeads, 9);
    EXPECT_EQ(m.attentionModule, "multiquery_attention");
    EXPECT_EQ(m.extraAttentionParams.numKvGroups, 3);
    EXPECT_EQ(m.attentionInnerDim, 0);  // head_dim absent: 576 / 9
    EXPECT_EQ(m.filterSize, 1536);
    EXPECT_EQ(m.vocabSize, 49152);
    EXPECT_EQ(m.maxPositionEmbeddings, 2048);
    EXPECT_EQ(m.positionEmbeddingType, "rotary");
    EXPECT_EQ(m.normType, "rmsnorm");
    EXPECT_EQ(m.nonlinearity, "swiglu");
    EXPECT_DOUBLE_EQ(m.layerNormEpsilon, 1e-5);
    EXPECT_DOUBLE_EQ(m.ropeTheta, 10000.0);
    EXPECT_DOUBLE_EQ(m.posScalingFactor, 1.0);
    EXPECT_TRUE(m.shareEmbeddingWeights);
    EXPECT_FALSE(m.useProjectionBiasInAttention);
    EXPECT_FALSE(m.useFfnBiasInAttention);
    EXPECT_FALSE(m.useFfnBias);
    EXPECT_EQ(m.attentionSlidingWindowLength, 0);
    // The published parameter count of SmolLM-135M.
    EXPECT_EQ(model::ParameterTable(model::GptShape::fromConfig(m)).totalSize(), 134515008u);
}

TEST(HfLlamaConfig, Qwen25HasImplicitQkvBiases) {
    auto r = parse(R"({"architectures": ["Qwen2ForCausalLM"], "hidden_act": "silu",
        "hidden_size": 896, "intermediate_size": 4864, "max_position_embeddings": 32768,
        "max_window_layers": 24, "model_type": "qwen2", "num_attention_heads": 14,
        "num_hidden_layers": 24, "num_key_value_heads": 2, "rms_norm_eps": 1e-06,
        "rope_theta": 1000000.0, "sliding_window": 32768, "tie_word_embeddings": true,
        "use_sliding_window": false, "vocab_size": 151936})");
    ASSERT_TRUE(r.ok()) << r.error().message;
    const config::ModelConfig& m = r->model;
    EXPECT_TRUE(m.useProjectionBiasInAttention);
    EXPECT_FALSE(m.useFfnBiasInAttention);
    EXPECT_FALSE(m.useFfnBias);
    EXPECT_EQ(m.extraAttentionParams.numKvGroups, 2);
    EXPECT_DOUBLE_EQ(m.ropeTheta, 1e6);
    EXPECT_DOUBLE_EQ(m.layerNormEpsilon, 1e-6);
    EXPECT_EQ(m.attentionSlidingWindowLength, 0);  // use_sliding_window false
    EXPECT_TRUE(m.shareEmbeddingWeights);
    // Qwen2.5-0.5B's published 494,032,768 parameters.
    EXPECT_EQ(model::ParameterTable(model::GptShape::fromConfig(m)).totalSize(), 494032768u);
}

TEST(HfLlamaConfig, MistralSlidingWindowAndDefaults) {
    auto r = parse(R"({"architectures": ["MistralForCausalLM"], "model_type": "mistral",
        "hidden_size": 4096, "intermediate_size": 14336, "num_attention_heads": 32,
        "num_hidden_layers": 32, "num_key_value_heads": 8, "sliding_window": 4096,
        "max_position_embeddings": 32768, "rope_theta": 10000.0})");
    ASSERT_TRUE(r.ok()) << r.error().message;
    EXPECT_EQ(r->model.attentionSlidingWindowLength, 4096);
    EXPECT_EQ(r->model.vocabSize, 32000);               // MistralConfig's default
    EXPECT_DOUBLE_EQ(r->model.layerNormEpsilon, 1e-6);  // rms_norm_eps default
    EXPECT_FALSE(r->model.shareEmbeddingWeights);
    ASSERT_EQ(r->notes.size(), 1u);
    EXPECT_NE(r->notes[0].find("sliding_window 4096"), std::string::npos);

    auto none = parse(R"({"model_type": "mistral", "sliding_window": null})");
    ASSERT_TRUE(none.ok()) << none.error().message;
    EXPECT_EQ(none->model.attentionSlidingWindowLength, 0);
    EXPECT_EQ(none->model.extraAttentionParams.numKvGroups, 8);
}

TEST(HfLlamaConfig, Llama3RopeScalingInBothSpellings) {
    // Llama-3.2-1B: rope_scaling with rope_type; newer transformers write rope_parameters.
    const std::string shape = R"("model_type": "llama", "hidden_size": 2048,
        "intermediate_size": 8192, "num_attention_heads": 32, "num_hidden_layers": 16,
        "num_key_value_heads": 8, "vocab_size": 128256, "max_position_embeddings": 131072,
        "tie_word_embeddings": true, "head_dim": 64,)";
    for (const std::string& rope :
         {std::string(R"("rope_theta": 500000.0, "rope_scaling": {"factor": 32.0,
            "high_freq_factor": 4.0, "low_freq_factor": 1.0,
            "original_max_position_embeddings": 8192, "rope_type": "llama3"}})"),
          std::string(R"("rope_parameters": {"rope_theta": 500000.0, "factor": 32.0,
            "high_freq_factor": 4.0, "low_freq_factor": 1.0,
            "original_max_position_embeddings": 8192, "rope_type": "llama3"}})")}) {
        auto r = parse("{" + shape + rope);
        ASSERT_TRUE(r.ok()) << r.error().message;
        const config::ModelConfig& m = r->model;
        EXPECT_DOUBLE_EQ(m.ropeTheta, 500000.0);
        EXPECT_EQ(m.posScalingType, "llama3");
        EXPECT_DOUBLE_EQ(m.posScalingFactor, 32.0);
        ASSERT_TRUE(m.posScalingExtraArgs.has_value());
        EXPECT_DOUBLE_EQ(m.posScalingExtraArgs->lowFreqFactor, 1.0);
        EXPECT_DOUBLE_EQ(m.posScalingExtraArgs->highFreqFactor, 4.0);
        EXPECT_EQ(m.posScalingExtraArgs->originalMaxPositionEmbeddings, 8192);
        // Llama-3.2-1B's published 1,235,814,400 parameters.
        EXPECT_EQ(model::ParameterTable(model::GptShape::fromConfig(m)).totalSize(), 1235814400u);
    }
    // The older "type" spelling, linear.
    auto linear = parse(R"({"model_type": "llama", "rope_scaling": {"type": "linear",
        "factor": 2.0}})");
    ASSERT_TRUE(linear.ok()) << linear.error().message;
    EXPECT_EQ(linear->model.posScalingType, "linear");
    EXPECT_DOUBLE_EQ(linear->model.posScalingFactor, 2.0);
}

TEST(HfLlamaConfig, HeadDimOtherThanWidthOverHeads) {
    auto r = parse(R"({"model_type": "llama", "hidden_size": 24, "num_attention_heads": 4,
        "num_key_value_heads": 2, "head_dim": 8, "intermediate_size": 40})");
    ASSERT_TRUE(r.ok()) << r.error().message;
    EXPECT_EQ(r->model.attentionInnerDim, 32);
    const model::GptShape s = model::GptShape::fromConfig(r->model);
    EXPECT_EQ(s.headSize(), 8);
    EXPECT_EQ(s.qkvWidth(), 32 + 2 * 16);
}

TEST(HfLlamaConfig, RefusalsNameTheKeyAndValue) {
    expectRefused(R"({"model_type": "llama", "hidden_act": "gelu"})", "hidden_act", "gelu");
    expectRefused(R"({"model_type": "llama", "rope_scaling": {"rope_type": "yarn",
        "factor": 4.0}})",
                  "rope_scaling", "yarn");
    expectRefused(R"({"model_type": "llama", "rope_parameters": {"rope_type": "dynamic",
        "factor": 2.0}})",
                  "rope_parameters", "dynamic");
    expectRefused(R"({"model_type": "llama", "rope_scaling": {"type": "longrope"}})",
                  "rope_scaling", "longrope");
    expectRefused(R"({"architectures": ["MistralForCausalLM"], "num_local_experts": 8})",
                  "num_local_experts", "8");
    expectRefused(R"({"model_type": "qwen2", "num_experts": 60})", "num_experts", "60");
    expectRefused(R"({"model_type": "llama", "use_qk_norm": true})", "use_qk_norm", "true");
    expectRefused(R"({"model_type": "llama", "partial_rotary_factor": 0.5})",
                  "partial_rotary_factor", "0.5");
    expectRefused(R"({"model_type": "llama", "num_attention_heads": 6,
        "num_key_value_heads": 4, "hidden_size": 48})",
                  "num_key_value_heads", "(4)");
    expectRefused(R"({"model_type": "llama", "hidden_size": 30, "num_attention_heads": 4})",
                  "num_attention_heads", "(4)");
    expectRefused(R"({"model_type": "llama", "head_dim": 5, "hidden_size": 20,
        "num_attention_heads": 4})",
                  "head_dim", "5");
    expectRefused(R"({"model_type": "llama", "tie_word_embeddings": "yes"})", "tie_word_embeddings",
                  "true or false");
    // Other Llama-like architectures are not taken for Llama.
    expectRefused(R"({"model_type": "mixtral"})", "model_type", "mixtral");
    expectRefused(R"({"model_type": "qwen3"})", "model_type", "qwen3");
    expectRefused(R"({"architectures": ["Qwen2MoeForCausalLM"]})", "architectures",
                  "Qwen2MoeForCausalLM");
}

// config.json as written for export, read back: the same model config.
void expectConfigRoundTrip(const HfLlamaSpec& spec, const std::string& family) {
    auto first = parse(testing::hfLlamaConfigText(spec));
    ASSERT_TRUE(first.ok()) << first.error().message;
    ASSERT_TRUE(checkHfExportable(first->model).ok())
        << checkHfExportable(first->model).error().message;
    const std::string written = hfConfigJson(first->model, 7);
    EXPECT_NE(written.find("\"model_type\": \"" + family + "\""), std::string::npos) << written;
    auto second = parse(written);
    ASSERT_TRUE(second.ok()) << second.error().message << "\n" << written;
    config::ModelConfig a = first->model, b = second->model;
    a.name = b.name = "";
    EXPECT_EQ(a, b) << written;
}

TEST(HfLlamaConfig, WrittenConfigReadsBackTheSame) {
    HfLlamaSpec llama;
    llama.ropeScaling = R"({"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
        "high_freq_factor": 4.0, "original_max_position_embeddings": 32})";
    llama.attentionBias = true;
    llama.mlpBias = true;
    expectConfigRoundTrip(llama, "llama");
    HfLlamaSpec qwen;
    qwen.family = "qwen2";
    qwen.tied = true;
    qwen.ropeTheta = 1e6;
    expectConfigRoundTrip(qwen, "qwen2");
    HfLlamaSpec mistral;
    mistral.family = "mistral";
    mistral.slidingWindow = 32;
    mistral.kvHeads = 4;
    mistral.ropeScaling = R"({"type": "linear", "factor": 2.0})";
    expectConfigRoundTrip(mistral, "mistral");
}

TEST(HfLlamaConfig, ExportRefusesWhatTheLlamaFamilyCannotExpress) {
    auto base = parse(testing::hfLlamaConfigText(HfLlamaSpec{}));
    ASSERT_TRUE(base.ok());
    auto refused = [&](auto edit, const std::string& key) {
        config::ModelConfig m = base->model;
        edit(m);
        Status st = checkHfExportable(m);
        ASSERT_FALSE(st.ok()) << key;
        EXPECT_NE(st.error().message.find("model." + key), std::string::npos) << st.error().message;
    };
    refused([](config::ModelConfig& m) { m.normType = "layernorm"; }, "norm_type");
    refused([](config::ModelConfig& m) { m.nonlinearity = "gelu"; }, "nonlinearity");
    refused([](config::ModelConfig& m) { m.positionEmbeddingType = "alibi"; },
            "position_embedding_type");
    refused([](config::ModelConfig& m) { m.rotaryDim = 2; }, "rotary_dim");
    refused([](config::ModelConfig& m) { m.useFfnBiasInAttention = true; },
            "use_ffn_bias_in_attention");
    refused(
        [](config::ModelConfig& m) {
            m.attentionSlidingWindowLength = 16;
            m.useFfnBias = true;
        },
        "attention_sliding_window_length");
    refused([](config::ModelConfig& m) { m.mupBaseHiddenSize = 12; }, "mup_base_hidden_size");
}

// ---- tensors ----

model::ParameterTable tableOf(const HfLlamaSpec& spec) {
    auto cfg = parse(testing::hfLlamaConfigText(spec));
    if (!cfg.ok()) throw std::runtime_error(cfg.error().message);
    return model::ParameterTable(model::GptShape::fromConfig(cfg->model));
}

// HF file -> table (loadWeights) -> HF tensors: every tensor back with its name, shape and bits.
void expectBitExactRoundTrip(const HfLlamaSpec& spec) {
    ws::testing::TempDir dir("hf-llama");
    const HfArrays written = testing::writeHfLlamaFolder(dir.path(), spec, 33);
    const model::ParameterTable table = tableOf(spec);
    std::vector<float> params(table.totalSize(), std::nanf(""));
    Status st = loadWeights(dir / "model.safetensors", table, params.data());
    ASSERT_TRUE(st.ok()) << st.error().message;
    for (float v : params) ASSERT_FALSE(std::isnan(v)) << "a table element was not filled";

    // The fused layout, spot-checked: c_attn (C, Q+2K) column Q + o of row i is k_proj[o][i];
    // c_fc (C, 2F) column F + o is up_proj[o][i]; c_proj (Q, C) row q is o_proj[:, q].
    const model::GptShape& s = table.shape();
    const size_t C = size_t(s.channels), Q = size_t(s.qWidth()), K = size_t(s.kvWidth()),
                 F = size_t(s.ffn);
    const float* cAttn = params.data() + table.find("h.1.attn.c_attn.weight")->offset;
    const auto& k = written.at("model.layers.1.self_attn.k_proj.weight").values;
    const auto& v = written.at("model.layers.1.self_attn.v_proj.weight").values;
    for (size_t i = 0; i < C; ++i)
        for (size_t o = 0; o < K; ++o) {
            ASSERT_EQ(cAttn[i * (Q + 2 * K) + Q + o], k[o * C + i]);
            ASSERT_EQ(cAttn[i * (Q + 2 * K) + Q + K + o], v[o * C + i]);
        }
    const float* cFc = params.data() + table.find("h.0.mlp.c_fc.weight")->offset;
    const auto& up = written.at("model.layers.0.mlp.up_proj.weight").values;
    for (size_t i = 0; i < C; ++i)
        for (size_t o = 0; o < F; ++o) ASSERT_EQ(cFc[i * 2 * F + F + o], up[o * C + i]);
    const float* oProj = params.data() + table.find("h.0.attn.c_proj.weight")->offset;
    const auto& o = written.at("model.layers.0.self_attn.o_proj.weight").values;
    for (size_t q = 0; q < Q; ++q)
        for (size_t c = 0; c < C; ++c) ASSERT_EQ(oProj[q * C + c], o[c * Q + q]);

    auto back = toHfLlamaTensors(table, params.data());
    ASSERT_TRUE(back.ok()) << back.error().message;
    ASSERT_EQ(back->size(), written.size());
    for (const HfTensor& t : *back) {
        const auto it = written.find(t.name);
        ASSERT_NE(it, written.end()) << t.name;
        EXPECT_EQ(t.shape, it->second.shape) << t.name;
        ASSERT_EQ(t.values.size(), it->second.values.size()) << t.name;
        EXPECT_EQ(
            std::memcmp(t.values.data(), it->second.values.data(), t.values.size() * sizeof(float)),
            0)
            << t.name;
    }
}

TEST(HfLlamaWeights, LlamaWithGqaAndUntiedHeadRoundTripsBitExact) {
    HfLlamaSpec spec;  // 4 heads, 2 KV heads, head_dim 6 (Q = 24), untied
    spec.attentionBias = true;
    spec.mlpBias = true;
    expectBitExactRoundTrip(spec);
}

TEST(HfLlamaWeights, Qwen2WithQkvBiasesAndTiedHeadRoundTripsBitExact) {
    HfLlamaSpec spec;
    spec.family = "qwen2";
    spec.tied = true;
    spec.kvHeads = 1;
    spec.headDim = 8;  // Q = 32 > C = 24
    expectBitExactRoundTrip(spec);
}

TEST(HfLlamaWeights, MistralRoundTripsBitExact) {
    HfLlamaSpec spec;
    spec.family = "mistral";
    spec.slidingWindow = 32;
    spec.kvHeads = 4;
    expectBitExactRoundTrip(spec);
}

TEST(HfLlamaWeights, MissingOrMisshapedTensorsAreNamed) {
    ws::testing::TempDir dir("hf-llama");
    HfLlamaSpec spec;
    HfArrays arrays = testing::randomHfLlama(spec, 5);
    const model::ParameterTable table = tableOf(spec);
    std::vector<float> params(table.totalSize());

    HfArrays missing = arrays;
    missing.erase("model.layers.1.mlp.up_proj.weight");
    testing::writeHfArrays(dir / "missing.safetensors", missing);
    Status st = loadWeights(dir / "missing.safetensors", table, params.data());
    ASSERT_FALSE(st.ok());
    EXPECT_NE(st.error().message.find("model.layers.1.mlp.up_proj.weight is missing"),
              std::string::npos)
        << st.error().message;

    HfArrays transposed = arrays;
    auto& k = transposed.at("model.layers.0.self_attn.k_proj.weight");
    std::swap(k.shape[0], k.shape[1]);  // (in, out): a Conv1D-style file
    testing::writeHfArrays(dir / "transposed.safetensors", transposed);
    st = loadWeights(dir / "transposed.safetensors", table, params.data());
    ASSERT_FALSE(st.ok());
    EXPECT_NE(st.error().message.find("k_proj.weight has shape [24, 12]"), std::string::npos)
        << st.error().message;

    // A tied model's file must not need lm_head; an untied one's must have it.
    HfArrays noHead = arrays;
    noHead.erase("lm_head.weight");
    testing::writeHfArrays(dir / "nohead.safetensors", noHead);
    st = loadWeights(dir / "nohead.safetensors", table, params.data());
    ASSERT_FALSE(st.ok());
    EXPECT_NE(st.error().message.find("lm_head.weight is missing"), std::string::npos);
}

TEST(HfLlamaWeights, OwnFilesInTableNamesStillLoad) {
    // What a Llama-family training run writes: the table's own names (saveWeights).
    ws::testing::TempDir dir("hf-llama");
    HfLlamaSpec spec;
    const model::ParameterTable table = tableOf(spec);
    std::vector<float> params(table.totalSize());
    for (size_t i = 0; i < params.size(); ++i) params[i] = float(i % 97) * 0.01f;
    config::Config cfg;
    cfg.model = parse(testing::hfLlamaConfigText(spec))->model;
    ASSERT_TRUE(saveWeights(dir / "w.safetensors", table, params.data(), cfg, 3).ok());
    std::vector<float> back(table.totalSize());
    Status st = loadWeights(dir / "w.safetensors", table, back.data());
    ASSERT_TRUE(st.ok()) << st.error().message;
    EXPECT_EQ(back, params);
}

}  // namespace
}  // namespace ws::modelio
