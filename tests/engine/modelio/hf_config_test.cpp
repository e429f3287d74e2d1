// SPDX-License-Identifier: GPL-3.0-or-later
// GPT2Config (config.json) parsing and writing: defaults, Cerebras-GPT's "gelu", and the clear
// refusals (wrong architecture or activation, bad types, invalid JSON, non-UTF-8 bytes).
#include <gtest/gtest.h>

#include "engine/modelio/hf_config.h"
#include "support/test_shapes.h"

namespace ws::modelio {
namespace {

Result<HfModelConfig> parse(const std::string& text) {
    return parseHfConfig(text, "config.json");
}

void expectRefused(const std::string& text, const std::string& needle) {
    auto r = parse(text);
    ASSERT_FALSE(r.ok()) << text;
    EXPECT_NE(r.error().message.find("config.json"), std::string::npos) << r.error().message;
    EXPECT_NE(r.error().message.find(needle), std::string::npos) << r.error().message;
}

TEST(HfConfig, Gpt2SmallAsOnTheHub) {
    auto r = parse(R"({"activation_function": "gelu_new", "architectures": ["GPT2LMHeadModel"],
        "attn_pdrop": 0.1, "bos_token_id": 50256, "embd_pdrop": 0.1, "eos_token_id": 50256,
        "initializer_range": 0.02, "layer_norm_epsilon": 1e-05, "model_type": "gpt2",
        "n_ctx": 1024, "n_embd": 768, "n_head": 12, "n_inner": null, "n_layer": 12,
        "n_positions": 1024, "resid_pdrop": 0.1, "vocab_size": 50257,
        "task_specific_params": {"text-generation": {"do_sample": true}}})");
    ASSERT_TRUE(r.ok()) << r.error().message;
    const auto& m = r->model;
    EXPECT_EQ(m.hiddenSize, 768);
    EXPECT_EQ(m.numHiddenLayers, 12);
    EXPECT_EQ(m.numHeads, 12);
    EXPECT_EQ(m.filterSize, 3072);  // n_inner null: 4 x n_embd
    EXPECT_EQ(m.maxPositionEmbeddings, 1024);
    EXPECT_EQ(m.vocabSize, 50257);
    EXPECT_TRUE(m.shareEmbeddingWeights);
    EXPECT_DOUBLE_EQ(m.dropoutRate, 0.1);
    EXPECT_TRUE(r->notes.empty());
}

TEST(HfConfig, CerebrasGeluIsAcceptedWithANote) {
    auto r = parse(R"({"model_type": "gpt2", "activation_function": "gelu", "n_embd": 768,
        "n_layer": 10, "n_head": 12, "n_inner": 3072, "n_positions": 2048, "vocab_size": 50257,
        "embd_pdrop": 0.0, "resid_pdrop": 0.0, "attn_pdrop": 0.0})");
    ASSERT_TRUE(r.ok()) << r.error().message;
    EXPECT_EQ(r->model.maxPositionEmbeddings, 2048);
    ASSERT_EQ(r->notes.size(), 1u);
    EXPECT_NE(r->notes[0].find("tanh approximation"), std::string::npos);
}

TEST(HfConfig, Refusals) {
    expectRefused(R"({"model_type": "gptj"})", "model_type");
    // A number beyond double's range (fuzz_hf_config; tests/fuzz/regressions/hf_config/).
    expectRefused(R"({"model_type": "gpt2", "n_positions": 21e308})", "21e308");
    // 4 x n_embd (n_inner's default) beyond int: signed overflow (UBSan, fuzz_hf_config).
    expectRefused(R"({"model_type": "gpt2", "n_embd": 666666666})", "4 x n_embd");
    expectRefused(R"({"architectures": ["BertModel"]})", "architectures");
    expectRefused(R"({"n_embd": 64})", "neither model_type nor architectures");
    expectRefused(R"({"model_type": "gpt2", "activation_function": "relu"})", "relu");
    expectRefused(R"({"model_type": "gpt2", "n_embd": "768"})", "n_embd");
    expectRefused(R"({"model_type": "gpt2", "n_layer": 0})", "n_layer");
    expectRefused(R"({"model_type": "gpt2", "n_embd": 100, "n_head": 3})", "n_head");
    expectRefused(R"({"model_type": "gpt2", "scale_attn_by_inverse_layer_idx": true})",
                  "scale_attn_by_inverse_layer_idx");
    expectRefused(R"({"model_type": "gpt2", "scale_attn_weights": false})", "scale_attn_weights");
    expectRefused(R"({"model_type": "gpt2", "tie_word_embeddings": "yes"})", "tie_word_embeddings");
    expectRefused(R"({"model_type": "gpt2", "n_embd": 64,)", "not valid JSON");
    expectRefused("[1, 2]", "JSON object");
    expectRefused("{\"model_type\": \"gpt2\", \"_name_or_path\": \"caf\xe9\"}", "not UTF-8");
}

TEST(HfConfig, WrittenConfigReadsBack) {
    config::ModelConfig m = ws::testing::modelConfig(256, 48, 3, 6, 100, 64);
    m.shareEmbeddingWeights = false;
    m.layerNormEpsilon = 1e-6;
    auto r = parse(hfConfigJson(m, std::nullopt));
    ASSERT_TRUE(r.ok()) << r.error().message;
    EXPECT_EQ(r->model.vocabSize, 256);
    EXPECT_EQ(r->model.hiddenSize, 48);
    EXPECT_EQ(r->model.numHiddenLayers, 3);
    EXPECT_EQ(r->model.numHeads, 6);
    EXPECT_EQ(r->model.filterSize, 100);
    EXPECT_EQ(r->model.maxPositionEmbeddings, 64);
    EXPECT_FALSE(r->model.shareEmbeddingWeights);
    EXPECT_DOUBLE_EQ(r->model.layerNormEpsilon, 1e-6);
    EXPECT_NE(hfConfigJson(m, 255).find("\"eos_token_id\": 255"), std::string::npos);
}

TEST(HfConfig, MupModelsAreNotExportable) {
    config::ModelConfig m;
    EXPECT_TRUE(checkHfExportable(m).ok());
    m.mupBaseHiddenSize = 64;
    m.mupBaseFilterSize = 256;
    auto st = checkHfExportable(m);
    ASSERT_FALSE(st.ok());
    EXPECT_NE(st.error().message.find("mup_base_hidden_size"), std::string::npos);
}

}  // namespace
}  // namespace ws::modelio
