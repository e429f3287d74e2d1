// SPDX-License-Identifier: GPL-3.0-or-later
// Sampling a LoRA model (issue 16): the generator runs the KV decoder on the merged weights
// (model/lora_merge.h), so its logits must be the training forward's logits of the adapted model
// (Gpt<float> with the adapter path) within float rounding, at every position of a prefill and of
// token-by-token decoding; greedy generation follows the adapted model, and `adapters = false`
// samples the base exactly as a model without adapters does.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "engine/model/gpt.h"
#include "engine/model/lora_merge.h"
#include "engine/sample/generator.h"
#include "engine/sample/kv_decoder.h"
#include "sample_test_util.h"

namespace ws::sample {
namespace {

using modelio::LoadedModel;
using testing::samplingShape;
using testing::tinyModel;

model::GptShape loraShape() {
    model::GptShape s = samplingShape(256, 64);
    s.applyLora(config::LoraConfig{.rank = 4,
                                   .alpha = 8.0,
                                   .dropout = 0.0,
                                   .targets = {"c_attn", "attn.c_proj", "c_fc", "mlp.c_proj"}});
    return s;
}

// Adapters as a trained run has them: B far from zero, so the adapted logits differ from the
// base's by much more than the tolerance below (tinyModel draws every tensor, B included).
LoadedModel loraModel() {
    LoadedModel m = tinyModel(loraShape(), 7);
    m.config.lora = config::LoraConfig{.rank = 4, .alpha = 8.0};
    return m;
}

std::vector<int32_t> promptTokens() {
    std::vector<int32_t> p;
    for (char ch : std::string("LoRA adapters, merged")) p.push_back(int32_t(uint8_t(ch)));
    return p;
}

double maxAbsDiff(const float* a, const float* b, int n) {
    double worst = 0.0;
    for (int i = 0; i < n; ++i) worst = std::max(worst, std::abs(double(a[i]) - double(b[i])));
    return worst;
}

TEST(LoraSample, DecoderOnMergedWeightsGivesTheAdaptedForwardsLogits) {
    const LoadedModel m = loraModel();
    const std::vector<int32_t> prompt = promptTokens();
    const int T = int(prompt.size()), V = m.shape.vocab;
    model::Gpt<float> adapted(m.shape, 1, T);
    adapted.forward(m.params.data(), prompt.data(), nullptr, false, 0);

    const std::vector<float> merged = model::lora::mergeAdapters(m.shape, m.params.data());
    KvDecoder prefill(model::lora::baseShape(m.shape), merged.data());
    ASSERT_TRUE(prefill.append(prompt, true));
    KvDecoder stepwise(model::lora::baseShape(m.shape), merged.data());
    // The base alone, to show the adapters matter far beyond the tolerance.
    const std::vector<float> base = model::lora::baseWeights(m.shape, m.params.data());
    KvDecoder plain(model::lora::baseShape(m.shape), base.data());
    ASSERT_TRUE(plain.append(prompt, true));
    double worstBaseGap = 0.0;
    for (int t = 0; t < T; ++t) {
        ASSERT_TRUE(stepwise.append(std::span<const int32_t>(prompt).subspan(size_t(t), 1)));
        const float* ref = adapted.logits(0, t);
        EXPECT_LT(maxAbsDiff(prefill.logits(t), ref, V), 2e-4) << "prefill row " << t;
        EXPECT_LT(maxAbsDiff(stepwise.logits(), ref, V), 2e-4) << "decoded position " << t;
        worstBaseGap = std::max(worstBaseGap, maxAbsDiff(plain.logits(t), ref, V));
    }
    EXPECT_GT(worstBaseGap, 0.1);
}

// In bf16 mode the decoder rounds the merged weight W + scale·A·B to bf16 where Gpt rounds W and
// the adapters separately: the two differ by bf16 rounding, so the decoder must be as close to the
// bf16 adapted forward as that forward is to the fp32 one (bf16's own error), not closer to zero.
TEST(LoraSample, Bf16DecoderOnMergedWeightsIsWithinBf16Rounding) {
    LoadedModel m = loraModel();
    const std::vector<int32_t> prompt = promptTokens();
    const int T = int(prompt.size()), V = m.shape.vocab;
    model::Gpt<float> fp32(m.shape, 1, T);
    fp32.forward(m.params.data(), prompt.data(), nullptr, false, 0);
    m.shape.bf16 = true;
    model::Gpt<float> bf16(m.shape, 1, T);
    bf16.forward(m.params.data(), prompt.data(), nullptr, false, 0);
    const std::vector<float> merged = model::lora::mergeAdapters(m.shape, m.params.data());
    KvDecoder decoder(model::lora::baseShape(m.shape), merged.data());
    ASSERT_TRUE(decoder.append(prompt, true));
    double bf16Error = 0.0, mergeError = 0.0;
    for (int t = 0; t < T; ++t) {
        bf16Error = std::max(bf16Error, maxAbsDiff(bf16.logits(0, t), fp32.logits(0, t), V));
        mergeError = std::max(mergeError, maxAbsDiff(decoder.logits(t), bf16.logits(0, t), V));
    }
    EXPECT_GT(bf16Error, 0.0);
    EXPECT_LT(mergeError, 2.0 * bf16Error) << "bf16 itself: " << bf16Error;
}

TEST(LoraSample, GreedyGenerationFollowsTheAdaptedModel) {
    const LoadedModel m = loraModel();
    SamplingOptions o;
    o.temperature = 0.0;
    o.maxTokens = 12;
    Generator g(m);
    auto r = g.generateTokens(promptTokens(), o);
    ASSERT_TRUE(r.ok()) << r.error().message;
    // The reference: argmax of full adapted forwards over the growing context (fits in maxT).
    std::vector<int32_t> history = promptTokens();
    std::vector<int32_t> expected;
    for (int i = 0; i < o.maxTokens; ++i) {
        model::Gpt<float> gpt(m.shape, 1, int(history.size()));
        gpt.forward(m.params.data(), history.data(), nullptr, false, 0);
        const float* logits = gpt.logits(0, int(history.size()) - 1);
        const int32_t next = int32_t(std::max_element(logits, logits + 256) - logits);
        expected.push_back(next);
        history.push_back(next);
    }
    EXPECT_EQ(r->tokens, expected);
}

TEST(LoraSample, WithoutAdaptersSamplesTheBaseBitForBit) {
    const LoadedModel m = loraModel();
    LoadedModel base;
    base.config.model = m.config.model;
    base.shape = model::lora::baseShape(m.shape);
    base.tokenizer = m.tokenizer;
    base.params = model::lora::baseWeights(m.shape, m.params.data());
    SamplingOptions o;
    o.temperature = 0.9;
    o.seed = 5;
    o.maxTokens = 16;
    Generator baseColumn(m, false), adapterColumn(m), plain(base);
    auto a = baseColumn.generateTokens(promptTokens(), o);
    auto b = plain.generateTokens(promptTokens(), o);
    auto c = adapterColumn.generateTokens(promptTokens(), o);
    ASSERT_TRUE(a.ok() && b.ok() && c.ok());
    EXPECT_EQ(a->tokens, b->tokens);
    EXPECT_NE(a->tokens, c->tokens);  // the adapters change what is sampled
}

}  // namespace
}  // namespace ws::sample
