// SPDX-License-Identifier: GPL-3.0-or-later
// model::deriveFacts on Llama-family shapes (issue 33): the parameter counts of the presets that
// carry published shapes equal the published models' (counted by hand from their Hugging Face
// configs below), the KV cache holds only the KV heads, and the attention FLOPs follow the
// query width. GPT-2's figures are unchanged (llm.c's 6 N + 6 L C T).
#include <gtest/gtest.h>

#include "engine/config/config_yaml.h"
#include "engine/model/model_facts.h"
#include "support/test_shapes.h"

namespace ws::model {
namespace {

config::Config preset(const std::string& name) {
    auto loaded = config::loadConfigFile(WAFER_PRESETS_DIR "/" + name);
    EXPECT_TRUE(loaded.ok()) << name << ": " << (loaded.ok() ? "" : loaded.error().message);
    return loaded.ok() ? loaded->config : config::Config{};
}

// SmolLM-135M: wte 49152 x 576; per block 2 x 576 (RMSNorm gains) + 576 x (576 + 2 x 192) (q | k
// | v, 3 KV heads of 64) + 576 x 576 (o) + 3 x 576 x 1536 (gate, up, down) = 3,540,096; 30
// blocks; the final norm 576; tied: 134,515,008 (HF reports 134.5 M).
TEST(ModelFacts, SmolLmPresetHasThePublishedParameterCount) {
    const ModelFacts f = deriveFacts(preset("smollm-135m.yaml"));
    EXPECT_EQ(f.parameters, 49152LL * 576 + 30LL * 3540096 + 576);
    EXPECT_EQ(f.parameters, 134515008);
    EXPECT_EQ(f.embeddingParameters, 49152LL * 576);  // wte only: no wpe, tied head
    // K and V of 3 heads of 64, 30 layers, fp32.
    EXPECT_EQ(f.kvCacheBytesPerToken, 2LL * 30 * 3 * 64 * 4);
    EXPECT_EQ(f.kvCacheBytes, f.kvCacheBytesPerToken * 2048);
}

// Llama-2 70B: wte and lm_head 32000 x 8192 each; per block 2 x 8192 + 8192 x (8192 + 2 x 1024)
// + 8192 x 8192 + 3 x 8192 x 28672 = 855,654,400; 80 blocks; the final norm 8192:
// 68,976,648,192 (the published "70B").
TEST(ModelFacts, Llama2SeventyBPresetHasThePublishedParameterCount) {
    const ModelFacts f = deriveFacts(preset("llama-2-70b.yaml"));
    EXPECT_EQ(f.parameters, 2LL * 32000 * 8192 + 80LL * 855654400 + 8192);
    EXPECT_EQ(f.parameters, 68976648192LL);
    EXPECT_EQ(f.embeddingParameters, 2LL * 32000 * 8192);  // untied: wte + lm_head
    EXPECT_EQ(f.kvCacheBytesPerToken, 2LL * 80 * 8 * 128 * 4);
    EXPECT_DOUBLE_EQ(f.trainingFlopsPerToken, 6.0 * 68976648192.0 + 6.0 * 80 * 8192 * 4096);
}

// Llama-2 7B: multi-head (32 KV heads of 128), MLP 11008, untied: 6,738,415,616.
TEST(ModelFacts, Llama2SevenBPresetHasThePublishedParameterCount) {
    const ModelFacts f = deriveFacts(preset("llama-2-7b.yaml"));
    EXPECT_EQ(f.parameters, 6738415616LL);
    EXPECT_EQ(f.kvCacheBytesPerToken, 2LL * 32 * 4096 * 4);
}

// Fewer KV heads: a narrower c_attn and a smaller cache, the same attention FLOPs; GPT-2's
// figures stay llm.c's.
TEST(ModelFacts, KeyValueHeadsShrinkTheCacheNotTheAttention) {
    config::Config c;
    c.model = ws::testing::modelConfig(256, 128, 4, 8, 512, 64);
    c.trainInput.maxSequenceLength = 64;
    const ModelFacts gpt2 = deriveFacts(c);
    EXPECT_DOUBLE_EQ(gpt2.trainingFlopsPerToken,
                     6.0 * double(gpt2.parameters) + 6.0 * 4 * 128 * 64);
    EXPECT_EQ(gpt2.kvCacheBytesPerToken, 2LL * 4 * 128 * 4);
    c.model.attentionModule = "multiquery_attention";
    c.model.extraAttentionParams.numKvGroups = 2;
    const ModelFacts gqa = deriveFacts(c);
    EXPECT_EQ(gqa.kvCacheBytesPerToken, 2LL * 4 * 2 * 16 * 4);
    EXPECT_EQ(gpt2.parameters - gqa.parameters, 4LL * (128 + 1) * 2 * (128 - 32));
    EXPECT_DOUBLE_EQ(gqa.trainingFlopsPerToken - 6.0 * double(gqa.parameters), 6.0 * 4 * 128 * 64);
}

}  // namespace
}  // namespace ws::model
