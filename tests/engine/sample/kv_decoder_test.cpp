// SPDX-License-Identifier: GPL-3.0-or-later
// KvDecoder against the reference Gpt<float>::forward on the same prefix: token by token,
// batched prefill, prefill then tokens, untied head, bf16 mode, and cancellation.
#include "engine/sample/kv_decoder.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <vector>

#include "engine/model/gpt.h"
#include "sample_test_util.h"

namespace ws::sample {
namespace {

using testing::randomParams;
using testing::samplingShape;

std::vector<int32_t> randomTokens(int n, int vocab, uint64_t seed) {
    std::vector<int32_t> t(static_cast<size_t>(n));
    for (int i = 0; i < n; ++i) t[size_t(i)] = int32_t(model::rng::bits(seed, uint64_t(i)) % vocab);
    return t;
}

// The reference: logits (T, V) of a full forward over tokens.
std::vector<float> referenceLogits(const model::GptShape& s, const std::vector<float>& params,
                                   const std::vector<int32_t>& tokens) {
    const int T = int(tokens.size());
    model::Gpt<float> gpt(s, 1, T);
    gpt.forward(params.data(), tokens.data(), nullptr, false, 0);
    std::vector<float> out(size_t(T) * s.vocab);
    for (int t = 0; t < T; ++t) std::copy_n(gpt.logits(0, t), s.vocab, out.begin() + t * s.vocab);
    return out;
}

// Max |a - b| relative to the logits' scale.
double relativeDiff(const float* a, const float* b, int n) {
    double diff = 0.0, scale = 1.0;
    for (int i = 0; i < n; ++i) {
        diff = std::max(diff, double(std::abs(a[i] - b[i])));
        scale = std::max(scale, double(std::abs(b[i])));
    }
    return diff / scale;
}

void expectTokenByTokenMatches(const model::GptShape& s, double tolerance) {
    const auto params = randomParams(s, 3);
    const auto tokens = randomTokens(s.maxPositions, s.vocab, 5);
    const auto ref = referenceLogits(s, params, tokens);
    KvDecoder decoder(s, params.data());
    for (int t = 0; t < s.maxPositions; ++t) {
        ASSERT_TRUE(decoder.append(std::span<const int32_t>(&tokens[size_t(t)], 1)));
        EXPECT_EQ(decoder.position(), t + 1);
        EXPECT_LE(relativeDiff(decoder.logits(), ref.data() + t * s.vocab, s.vocab), tolerance)
            << "position " << t;
    }
}

TEST(KvDecoder, TokenByTokenMatchesFullForwardAtEveryPosition) {
    expectTokenByTokenMatches(samplingShape(), 1e-4);
}

TEST(KvDecoder, UntiedHeadMatchesFullForward) {
    expectTokenByTokenMatches(samplingShape(97, 16, false), 1e-4);
}

// A μP model samples with the multipliers it trained with (embeddings, logits, 1/d_head scores).
TEST(KvDecoder, MupMultipliersMatchFullForward) {
    auto s = samplingShape();
    s.mup = true;
    s.widthMult = 4.0;
    s.ffnWidthMult = 4.0;
    s.embeddingsScale = 10.0;
    s.outputLogitsScale = 0.5;
    s.scaleQkDotByD = true;
    s.attentionLogitsAlpha = 1.5;
    expectTokenByTokenMatches(s, 1e-4);
    auto untied = s;
    untied.tiedEmbedding = false;
    expectTokenByTokenMatches(untied, 1e-4);
}

TEST(KvDecoder, PrefillLongerThanARowBlockMatchesFullForward) {
    // 150 positions: the prefill's attention runs in blocks of 64 query rows.
    const auto s = samplingShape(50, 150);
    const auto params = randomParams(s, 4);
    const auto tokens = randomTokens(150, s.vocab, 6);
    const auto ref = referenceLogits(s, params, tokens);
    KvDecoder decoder(s, params.data());
    ASSERT_TRUE(decoder.append(tokens, true));
    for (int t = 0; t < 150; ++t) {
        EXPECT_LE(relativeDiff(decoder.logits(t), ref.data() + t * s.vocab, s.vocab), 1e-4)
            << "position " << t;
    }
}

TEST(KvDecoder, PrefillThenSingleTokensMatchesFullForward) {
    const auto s = samplingShape();
    const auto params = randomParams(s, 7);
    const auto tokens = randomTokens(s.maxPositions, s.vocab, 8);
    const auto ref = referenceLogits(s, params, tokens);
    KvDecoder decoder(s, params.data());
    ASSERT_TRUE(decoder.append(std::span<const int32_t>(tokens).first(9), true));
    for (int t = 0; t < 9; ++t) {
        EXPECT_LE(relativeDiff(decoder.logits(t), ref.data() + t * s.vocab, s.vocab), 1e-4);
    }
    for (int t = 9; t < s.maxPositions; ++t) {
        ASSERT_TRUE(decoder.append(std::span<const int32_t>(&tokens[size_t(t)], 1)));
        EXPECT_LE(relativeDiff(decoder.logits(), ref.data() + t * s.vocab, s.vocab), 1e-4);
    }
    // reset() starts over: the same prefix gives the same logits again.
    decoder.reset();
    ASSERT_TRUE(decoder.append(std::span<const int32_t>(tokens).first(5)));
    EXPECT_LE(relativeDiff(decoder.logits(), ref.data() + 4 * s.vocab, s.vocab), 1e-4);
}

void expectBf16MatchesGptBf16(model::GptShape s) {
    s.bf16 = true;
    const auto params = randomParams(s, 9);
    const auto tokens = randomTokens(s.maxPositions, s.vocab, 10);
    const auto ref = referenceLogits(s, params, tokens);
    auto fp32 = s;
    fp32.bf16 = false;
    const auto refFp32 = referenceLogits(fp32, params, tokens);
    KvDecoder decoder(s, params.data());
    double worst = 0.0, bf16VsFp32 = 0.0;
    for (int t = 0; t < s.maxPositions; ++t) {
        ASSERT_TRUE(decoder.append(std::span<const int32_t>(&tokens[size_t(t)], 1)));
        worst = std::max(worst, relativeDiff(decoder.logits(), ref.data() + t * s.vocab, s.vocab));
        bf16VsFp32 = std::max(bf16VsFp32, relativeDiff(ref.data() + t * s.vocab,
                                                       refFp32.data() + t * s.vocab, s.vocab));
    }
    // Prompts of up to 4 tokens prefill on the GEMV too (3 rows at once), longer ones on the
    // matmul backends (9 rows).
    decoder.reset();
    ASSERT_TRUE(decoder.append(std::span<const int32_t>(tokens).first(3), true));
    for (int t = 0; t < 3; ++t) {
        worst = std::max(worst, relativeDiff(decoder.logits(t), ref.data() + t * s.vocab, s.vocab));
    }
    ASSERT_TRUE(decoder.append(std::span<const int32_t>(tokens).subspan(3, 9), true));
    for (int t = 0; t < 9; ++t) {
        worst = std::max(worst,
                         relativeDiff(decoder.logits(t), ref.data() + (3 + t) * s.vocab, s.vocab));
    }
    // Reassociation can flip a bf16 rounding (one bf16 ulp, 2^-8 relative) now and then; the
    // decoder must be far closer to Gpt's bf16 mode than bf16 is to fp32.
    EXPECT_LE(worst, 2e-2);
    EXPECT_LT(worst, bf16VsFp32 / 4) << "bf16 vs fp32 differ by " << bf16VsFp32;
}

// Decoded tokens run on the bf16 GEMV (tensor/gemv_bf16.h), Gpt on the bf16 matmul backend: the
// same bf16 products, summed in other orders.
TEST(KvDecoder, Bf16ModeMatchesGptBf16Mode) {
    expectBf16MatchesGptBf16(samplingShape());
}

// Several GEMV panels (64 columns) with a partial last one: V = 200, 3C = 288, F = 320; untied.
TEST(KvDecoder, Bf16ModeMatchesGptBf16ModeOverSeveralPanels) {
    expectBf16MatchesGptBf16(::ws::testing::gptShape(200, 96, 2, 4, 320, 20, false));
}

// Mixture of experts: the decoder routes each token as the full forward does (evaluation keeps
// every assignment, so the capacity factor never drops a token of a prefix), top_k 1 and 2, with
// a dense block between MoE blocks.
model::GptShape moeSamplingShape(int k) {
    model::GptShape s = ::ws::testing::gptShape(97, 32, 3, 4, 64, 24);
    s.numExperts = 4;
    s.topK = k;
    s.moeEvery = 2;
    s.capacityFactor = 0.5;
    s.lbCoef = 0.01;
    return s;
}

TEST(KvDecoder, MoeTopOneMatchesFullForward) {
    expectTokenByTokenMatches(moeSamplingShape(1), 1e-4);
}

TEST(KvDecoder, MoeTopTwoMatchesFullForwardTokenByTokenAndPrefilled) {
    const auto s = moeSamplingShape(2);
    expectTokenByTokenMatches(s, 1e-4);
    const auto params = randomParams(s, 7);
    const auto tokens = randomTokens(s.maxPositions, s.vocab, 8);
    const auto ref = referenceLogits(s, params, tokens);
    KvDecoder decoder(s, params.data());
    ASSERT_TRUE(decoder.append(std::span<const int32_t>(tokens), true));
    for (int t = 0; t < s.maxPositions; ++t)
        EXPECT_LE(relativeDiff(decoder.logits(t), ref.data() + t * s.vocab, s.vocab), 1e-4) << t;
}

TEST(KvDecoder, MoeBf16ModeMatchesGptBf16Mode) {
    expectBf16MatchesGptBf16(moeSamplingShape(2));
}

TEST(KvDecoder, CancelLeavesTheCacheAsItWas) {
    const auto s = samplingShape();
    const auto params = randomParams(s, 11);
    const auto tokens = randomTokens(6, s.vocab, 12);
    const auto ref = referenceLogits(s, params, tokens);
    KvDecoder decoder(s, params.data());
    ASSERT_TRUE(decoder.append(std::span<const int32_t>(tokens).first(4)));
    std::atomic<bool> cancel{true};
    EXPECT_FALSE(decoder.append(std::span<const int32_t>(tokens).subspan(4), false, &cancel));
    EXPECT_EQ(decoder.position(), 4);
    ASSERT_TRUE(decoder.append(std::span<const int32_t>(tokens).subspan(4)));
    EXPECT_LE(relativeDiff(decoder.logits(), ref.data() + 5 * s.vocab, s.vocab), 1e-4);
}

// Llama-family blocks: rotary positions of the cached rows, RMSNorm, SwiGLU, grouped-query heads
// (the cache holds only the 2 KV heads), no biases; Qwen2's q/k/v biases; BTLM's ALiBi.
model::GptShape llamaSamplingShape() {
    auto s = samplingShape(97, 24, false);  // samplingShape's heads: 4
    s.position = model::GptShape::Position::Rotary;
    s.norm = model::GptShape::Norm::RmsNorm;
    s.mlp = model::GptShape::Mlp::SwiGlu;
    s.kvHeads = 2;
    s.qkvBias = s.attnProjBias = s.mlpBias = false;
    s.ropeTheta = 500.0;
    return s;
}

TEST(KvDecoder, LlamaBlocksMatchFullForward) {
    expectTokenByTokenMatches(llamaSamplingShape(), 1e-4);
    auto qwen = llamaSamplingShape();
    qwen.qkvBias = true;
    qwen.tiedEmbedding = true;
    qwen.kvHeads = 1;
    qwen.rotaryDim = 2;  // partial rotary
    expectTokenByTokenMatches(qwen, 1e-4);
    auto btlm = samplingShape();
    btlm.position = model::GptShape::Position::Alibi;
    btlm.mlp = model::GptShape::Mlp::SwiGlu;
    expectTokenByTokenMatches(btlm, 1e-4);
}

TEST(KvDecoder, LlamaBlocksInBf16MatchGptBf16) {
    expectBf16MatchesGptBf16(llamaSamplingShape());
}

// A cap below max_position_embeddings sizes the cache (and the rotary table) to it, and the first
// positions still match the full forward.
TEST(KvDecoder, ACappedContextHoldsThatManyPositionsAndMatches) {
    auto s = llamaSamplingShape();  // 24 positions
    const auto params = randomParams(s, 11);
    const auto tokens = randomTokens(10, s.vocab, 12);
    const auto ref = referenceLogits(s, params, tokens);
    KvDecoder decoder(s, params.data(), 10);
    EXPECT_EQ(decoder.capacity(), 10);
    EXPECT_EQ(KvDecoder(s, params.data(), 100).capacity(), 24);  // never above the model's
    ASSERT_TRUE(decoder.append(tokens, true));
    for (int t = 0; t < 10; ++t)
        EXPECT_LE(relativeDiff(decoder.logits(t), ref.data() + t * s.vocab, s.vocab), 1e-4) << t;
}

}  // namespace
}  // namespace ws::sample
