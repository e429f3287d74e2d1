// SPDX-License-Identifier: GPL-3.0-or-later
// The whole decoder with Llama-family blocks (Llama / Mistral / Qwen2: rotary, RMSNorm, SwiGLU,
// grouped-query heads, no or q/k/v-only biases, untied head; BTLM: ALiBi, SwiGLU, LayerNorm):
// finite-difference gradients of every parameter in double, float against double, per-layer
// entry points (fp32 and bf16-packed slices, as weight streaming passes them) against the full
// step bit for bit, and a small Llama learning a repeated sequence.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "engine/model/gpt.h"
#include "engine/tensor/bf16.h"
#include "gpt_test_support.h"
#include "repeated_sequence.h"
#include "support/test_shapes.h"

namespace ws::model {
namespace {

using testing::checkWholeModelGradient;
using testing::convert;
using testing::initialWeights;
using testing::tokens;

// A tiny Llama: V 11, C 16, 2 blocks, 4 query heads of 4 sharing 2 KV heads, SwiGLU of 24,
// RMSNorm, rotary over whole heads, no biases, untied head.
GptShape tinyLlama() {
    GptShape s = ws::testing::gptShape(11, 16, 2, 4, 24, 8, /*tied=*/false);
    s.position = GptShape::Position::Rotary;
    s.norm = GptShape::Norm::RmsNorm;
    s.mlp = GptShape::Mlp::SwiGlu;
    s.kvHeads = 2;
    s.qkvBias = s.attnProjBias = s.mlpBias = false;
    s.ropeTheta = 100.0;  // short wavelengths, so 5 positions rotate visibly
    return s;
}

TEST(LlamaGradcheck, RotaryRmsNormSwiGluGroupedQueryUntied) {
    checkWholeModelGradient(tinyLlama(), false);
}

TEST(LlamaGradcheck, QwenStyleQkvBiasesTiedHeadMultiQuery) {
    GptShape s = tinyLlama();
    s.qkvBias = true;
    s.tiedEmbedding = true;
    s.kvHeads = 1;
    checkWholeModelGradient(s, false);
}

TEST(LlamaGradcheck, PartialRotaryWithLlama3ScalingAndAWiderInnerDim) {
    GptShape s = tinyLlama();
    s.headDim = 6;    // Q = 24 > C = 16, as HF's head_dim allows
    s.rotaryDim = 4;  // the last 2 dims of each head pass through
    s.ropeScaling = GptShape::RopeScaling::Llama3;
    s.ropeFactor = 4.0;
    s.ropeOriginalMaxPositions = 4;  // bands fall inside the few positions used
    checkWholeModelGradient(s, false);
}

TEST(LlamaGradcheck, BtlmStyleAlibiSwiGluLayerNormWithDropout) {
    GptShape s = ws::testing::gptShape(11, 16, 2, 4, 24, 8, true);
    s.position = GptShape::Position::Alibi;
    s.mlp = GptShape::Mlp::SwiGlu;
    s.scaleQkDotByD = true;  // BTLM's μP attention scale
    s.dropout = 0.2;
    s.attnDropout = 0.25;
    checkWholeModelGradient(s, true);
}

TEST(LlamaGradcheck, PackedSequencesRestartTheRotaryPositions) {
    // Row 0: documents of 3 and 2 tokens; row 1: one of 5.
    const std::vector<int32_t> positions = {0, 1, 2, 0, 1, 0, 1, 2, 3, 4};
    checkWholeModelGradient(tinyLlama(), false, positions.data());
}

TEST(LlamaModelTest, FloatAgreesWithDouble) {
    const GptShape s = tinyLlama();
    const int B = 2, T = 7;
    Gpt<float> f(s, B, T);
    Gpt<double> d(s, B, T);
    const std::vector<float> pf = initialWeights(s, 0.3, 9);
    const std::vector<double> pd = convert<double>(pf);
    const auto in = tokens(B * T, s.vocab, 3), tg = tokens(B * T, s.vocab, 4);
    const float lf = f.forward(pf.data(), in.data(), tg.data(), false, 0);
    const double ld = d.forward(pd.data(), in.data(), tg.data(), false, 0);
    EXPECT_NEAR(lf, ld, 1e-5 * std::abs(ld));
    std::vector<float> gf(pf.size(), 0.0f);
    std::vector<double> gd(pd.size(), 0.0);
    f.backward(pf.data(), gf.data());
    d.backward(pd.data(), gd.data());
    double maxAbs = 0;
    for (double g : gd) maxAbs = std::max(maxAbs, std::abs(g));
    for (size_t i = 0; i < gd.size(); ++i) ASSERT_NEAR(gf[i], gd[i], 1e-5 * maxAbs) << i;
}

// Weight streaming hands each layer its own buffer (fp32, or bf16 bits packed once): the same
// loss, activations and gradients as the full step, bit for bit, for every block option.
TEST(LlamaModelTest, PerLayerSlicesMatchTheFullStepInFp32AndBf16) {
    GptShape base = tinyLlama();
    base.channels = 64;  // large enough for the kernels to split work over threads
    base.ffn = 96;
    base.heads = 8;
    base.kvHeads = 2;
    base.dropout = 0.1;
    for (bool bf16 : {false, true}) {
        for (bool tied : {true, false}) {
            GptShape s = base;
            s.bf16 = bf16;
            s.tiedEmbedding = tied;
            const int B = 2, T = 33;
            Gpt<float> full(s, B, T), layered(s, B, T);
            const ParameterTable& table = full.table();
            const std::vector<float> p = initialWeights(s, 0.05, 12);
            const auto in = tokens(B * T, s.vocab, 7), tg = tokens(B * T, s.vocab, 8);
            std::vector<float> grads(p.size(), 0.0f);
            const float loss = full.forward(p.data(), in.data(), tg.data(), true, 42);
            full.backward(p.data(), grads.data());

            std::vector<std::vector<float>> w, g;
            std::vector<std::vector<uint16_t>> bits;
            for (const LayerSlice& l : table.layers()) {
                w.emplace_back(p.begin() + ptrdiff_t(l.offset),
                               p.begin() + ptrdiff_t(l.offset + l.size));
                bits.emplace_back(l.size);
                tensor::floatToBf16(w.back().data(), bits.back().data(), l.size);
                g.emplace_back(l.size, 0.0f);
            }
            using W = LayerWeights<float>;
            auto weights = [&](size_t layer) {
                return bf16 ? W::packed(bits[layer].data()) : W(w[layer].data());
            };
            // The tied head's wte: the embedding slice starts with it.
            const W wte = tied ? weights(0) : W{};
            const int L = s.layers, head = table.headLayer();
            layered.beginStep(true, 42);
            layered.embedForward(weights(0), in.data());
            for (int l = 0; l < L; ++l) layered.blockForward(l, weights(size_t(1 + l)));
            EXPECT_EQ(loss, layered.headForward(weights(size_t(head)), wte, tg.data()));
            layered.headBackward(weights(size_t(head)), wte, g[size_t(head)].data(),
                                 tied ? g[0].data() : nullptr);
            for (int l = L - 1; l >= 0; --l)
                layered.blockBackward(l, weights(size_t(1 + l)), g[size_t(1 + l)].data());
            layered.embedBackward(g[0].data());
            for (size_t li = 0; li < table.layers().size(); ++li) {
                const LayerSlice& l = table.layers()[li];
                EXPECT_EQ(
                    std::memcmp(g[li].data(), grads.data() + l.offset, l.size * sizeof(float)), 0)
                    << l.name << (bf16 ? " bf16" : " fp32") << (tied ? " tied" : " untied");
            }
        }
    }
}

// bf16 mode stays close to fp32 (the rounding points are the GPT-2 path's plus the rotation).
TEST(LlamaModelTest, Bf16StepStaysCloseToFp32) {
    GptShape s = tinyLlama();
    const int B = 2, T = 8;
    const std::vector<float> p = initialWeights(s, 0.1, 21);
    const auto in = tokens(B * T, s.vocab, 1), tg = tokens(B * T, s.vocab, 2);
    Gpt<float> fp32(s, B, T);
    s.bf16 = true;
    Gpt<float> bf16(s, B, T);
    const float a = fp32.forward(p.data(), in.data(), tg.data(), false, 0);
    const float b = bf16.forward(p.data(), in.data(), tg.data(), false, 0);
    EXPECT_NE(a, b);  // bf16 really rounds
    EXPECT_NEAR(a, b, 0.02 * std::abs(a));
}

TEST(LlamaModelTest, SmallLlamaLearnsARepeatedSequence) {
    GptShape s = ws::testing::gptShape(16, 32, 2, 4, 96, 32, false);
    s.position = GptShape::Position::Rotary;
    s.norm = GptShape::Norm::RmsNorm;
    s.mlp = GptShape::Mlp::SwiGlu;
    s.kvHeads = 2;
    s.qkvBias = s.attnProjBias = s.mlpBias = false;
    std::vector<float> p(ParameterTable(s).totalSize());
    initParameters(ParameterTable(s), testing::configFor(s, 0.1), 3, p.data());
    const auto losses = testing::overfitRepeatedSequence(s, p, 60);
    EXPECT_NEAR(losses.first, std::log(16.0f), 0.3f);
    EXPECT_LT(losses.last, 0.25f * losses.first)
        << "first " << losses.first << " last " << losses.last;
}

}  // namespace
}  // namespace ws::model
