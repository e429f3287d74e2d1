// SPDX-License-Identifier: GPL-3.0-or-later
// The whole Gpt step: finite-difference gradients of every parameter in double (tied and untied
// heads, with and without dropout), float against double, bit-identical repeats, the per-layer
// entry points against the full step, bf16 mode, and a tiny model overfitting a sequence.
#include "engine/model/gpt.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "engine/model/random.h"
#include "engine/tensor/bf16.h"
#include "gpt_test_support.h"
#include "gradcheck.h"
#include "repeated_sequence.h"
#include "support/test_shapes.h"

namespace ws::model {
namespace {

using testing::checkWholeModelGradient;
using testing::convert;
using testing::expectGradientMatches;
using testing::initialWeights;
using testing::tokens;

using ws::testing::gptShape;
using ws::testing::gradcheckShape;

TEST(GptGradcheck, WholeModelTiedHead) {
    checkWholeModelGradient(gradcheckShape(true), false);
}

TEST(GptGradcheck, WholeModelUntiedHead) {
    checkWholeModelGradient(gradcheckShape(false), false);
}

TEST(GptGradcheck, WholeModelWithDropoutMasksFixedBySeed) {
    GptShape s = gradcheckShape(true);
    s.dropout = 0.2;
    s.attnDropout = 0.25;
    checkWholeModelGradient(s, true);
}

TEST(GptTest, FloatForwardAgreesWithDouble) {
    const GptShape s = gradcheckShape(false);
    const int B = 2, T = 7;
    Gpt<float> f(s, B, T);
    Gpt<double> d(s, B, T);
    const std::vector<float> pf = initialWeights(s, 0.3, 9);
    const std::vector<double> pd = convert<double>(pf);
    const auto in = tokens(B * T, s.vocab, 3), tg = tokens(B * T, s.vocab, 4);
    const float lf = f.forward(pf.data(), in.data(), tg.data(), false, 0);
    const double ld = d.forward(pd.data(), in.data(), tg.data(), false, 0);
    EXPECT_NEAR(lf, ld, 1e-5 * std::abs(ld));
    for (int b = 0; b < B; ++b) {
        for (int t = 0; t < T; ++t) {
            for (int v = 0; v < s.vocab; ++v) {
                const double e = d.logits(b, t)[v];
                ASSERT_NEAR(f.logits(b, t)[v], e, 1e-5 * (1 + std::abs(e)));
            }
        }
    }
    std::vector<float> gf(pf.size(), 0.0f);
    std::vector<double> gd(pd.size(), 0.0);
    f.backward(pf.data(), gf.data());
    d.backward(pd.data(), gd.data());
    double maxAbs = 0;
    for (double g : gd) maxAbs = std::max(maxAbs, std::abs(g));
    for (size_t i = 0; i < gd.size(); ++i) ASSERT_NEAR(gf[i], gd[i], 1e-5 * maxAbs) << i;
}

GptShape mediumShape() {
    GptShape s = gptShape(97, 64, 2, 4, 256, 96);
    s.dropout = 0.1;
    s.attnDropout = 0.1;
    return s;
}

TEST(GptTest, RepeatedStepsAreBitIdentical) {
    const GptShape s = mediumShape();  // large enough for every kernel to run multithreaded
    const int B = 4, T = 80;
    const std::vector<float> p = initialWeights(s, 0.05, 11);
    const auto in = tokens(B * T, s.vocab, 5), tg = tokens(B * T, s.vocab, 6);
    auto step = [&](Gpt<float>& gpt, std::vector<float>& grads) {
        std::fill(grads.begin(), grads.end(), 0.0f);
        const float loss = gpt.forward(p.data(), in.data(), tg.data(), true, 1234);
        gpt.backward(p.data(), grads.data());
        return loss;
    };
    Gpt<float> a(s, B, T), b(s, B, T);
    std::vector<float> g1(p.size()), g2(p.size()), g3(p.size());
    const float l1 = step(a, g1), l2 = step(a, g2), l3 = step(b, g3);
    EXPECT_EQ(std::bit_cast<uint32_t>(l1), std::bit_cast<uint32_t>(l2));
    EXPECT_EQ(std::bit_cast<uint32_t>(l1), std::bit_cast<uint32_t>(l3));
    EXPECT_EQ(std::memcmp(g1.data(), g2.data(), g1.size() * sizeof(float)), 0);
    EXPECT_EQ(std::memcmp(g1.data(), g3.data(), g1.size() * sizeof(float)), 0);
    // Another dropout seed gives another step; evaluation mode uses no dropout at all.
    std::fill(g2.begin(), g2.end(), 0.0f);
    EXPECT_NE(a.forward(p.data(), in.data(), tg.data(), true, 1235), l1);
    GptShape noDropout = s;
    noDropout.dropout = noDropout.attnDropout = 0.0;
    Gpt<float> plain(noDropout, B, T);
    EXPECT_EQ(a.forward(p.data(), in.data(), tg.data(), false, 1234),
              plain.forward(p.data(), in.data(), tg.data(), true, 1234));
}

TEST(GptTest, PerLayerEntryPointsOnSeparateBuffersMatchTheFullStep) {
    GptShape s = mediumShape();
    for (bool tied : {true, false}) {
        s.tiedEmbedding = tied;
        const int B = 2, T = 33;
        Gpt<float> full(s, B, T), layered(s, B, T);
        const ParameterTable& table = full.table();
        const std::vector<float> p = initialWeights(s, 0.05, 12);
        const auto in = tokens(B * T, s.vocab, 7), tg = tokens(B * T, s.vocab, 8);
        std::vector<float> grads(p.size(), 0.0f);
        const float loss = full.forward(p.data(), in.data(), tg.data(), true, 42);
        full.backward(p.data(), grads.data());

        // Each layer's weights and gradients in their own buffer, as the streaming executor has.
        std::vector<std::vector<float>> w, g;
        for (const LayerSlice& l : table.layers()) {
            w.emplace_back(p.begin() + ptrdiff_t(l.offset),
                           p.begin() + ptrdiff_t(l.offset + l.size));
            g.emplace_back(l.size, 0.0f);
        }
        const int L = s.layers, head = table.headLayer();
        layered.beginStep(true, 42);
        layered.embedForward(w[0].data(), in.data());
        for (int l = 0; l < L; ++l) layered.blockForward(l, w[size_t(1 + l)].data());
        const float loss2 = layered.headForward(w[size_t(head)].data(), w[0].data(), tg.data());
        EXPECT_EQ(loss, loss2);
        layered.headBackward(w[size_t(head)].data(), w[0].data(), g[size_t(head)].data(),
                             tied ? g[0].data() : nullptr);
        for (int l = L - 1; l >= 0; --l) {
            layered.blockBackward(l, w[size_t(1 + l)].data(), g[size_t(1 + l)].data());
        }
        layered.embedBackward(g[0].data());
        for (size_t li = 0; li < table.layers().size(); ++li) {
            const LayerSlice& l = table.layers()[li];
            EXPECT_EQ(std::memcmp(g[li].data(), grads.data() + l.offset, l.size * sizeof(float)), 0)
                << l.name;
        }
    }
}

// bf16 mode: layer slices packed to bf16 bits once (as weight streaming puts them on the wafer)
// compute exactly what the fp32 slices do, packed by Gpt on every visit: same loss, activations
// and (fp32) gradients, bit for bit. The tied head's wte comes as its own packed buffer.
TEST(GptTest, Bf16PackedLayerSlicesMatchTheFullStepBitForBit) {
    GptShape s = mediumShape();
    s.bf16 = true;
    for (bool tied : {true, false}) {
        s.tiedEmbedding = tied;
        const int B = 2, T = 33;
        Gpt<float> full(s, B, T), layered(s, B, T);
        const ParameterTable& table = full.table();
        const std::vector<float> p = initialWeights(s, 0.05, 12);
        const auto in = tokens(B * T, s.vocab, 7), tg = tokens(B * T, s.vocab, 8);
        std::vector<float> grads(p.size(), 0.0f);
        const float loss = full.forward(p.data(), in.data(), tg.data(), true, 42);
        const std::vector<float> acts(
            full.activationData(), full.activationData() + full.activationSlices().back().offset +
                                       full.activationSlices().back().size);
        full.backward(p.data(), grads.data());

        std::vector<std::vector<uint16_t>> w;
        std::vector<std::vector<float>> g;
        for (const LayerSlice& l : table.layers()) {
            w.emplace_back(l.size);
            tensor::floatToBf16(p.data() + l.offset, w.back().data(), l.size);
            g.emplace_back(l.size, 0.0f);
        }
        std::vector<uint16_t> wte(table.find("wte.weight")->size);
        tensor::floatToBf16(p.data() + table.find("wte.weight")->offset, wte.data(), wte.size());
        using W = LayerWeights<float>;
        const W wteBits = tied ? W::packed(wte.data()) : W{};
        const int L = s.layers, head = table.headLayer();
        layered.beginStep(true, 42);
        layered.embedForward(W::packed(w[0].data()), in.data());
        for (int l = 0; l < L; ++l) layered.blockForward(l, W::packed(w[size_t(1 + l)].data()));
        EXPECT_EQ(loss, layered.headForward(W::packed(w[size_t(head)].data()), wteBits, tg.data()));
        EXPECT_EQ(std::memcmp(acts.data(), layered.activationData(), acts.size() * sizeof(float)),
                  0);
        layered.headBackward(W::packed(w[size_t(head)].data()), wteBits, g[size_t(head)].data(),
                             tied ? g[0].data() : nullptr);
        for (int l = L - 1; l >= 0; --l) {
            layered.blockBackward(l, W::packed(w[size_t(1 + l)].data()), g[size_t(1 + l)].data());
        }
        layered.embedBackward(g[0].data());
        for (size_t li = 0; li < table.layers().size(); ++li) {
            const LayerSlice& l = table.layers()[li];
            EXPECT_EQ(std::memcmp(g[li].data(), grads.data() + l.offset, l.size * sizeof(float)), 0)
                << l.name;
        }
    }
}

TEST(GptTest, BackwardAccumulatesIntoGrads) {
    const GptShape s = gradcheckShape(true);
    Gpt<double> gpt(s, 2, 5);
    const std::vector<double> p = convert<double>(initialWeights(s, 0.3, 13));
    const auto in = tokens(10, s.vocab, 9), tg = tokens(10, s.vocab, 10);
    std::vector<double> once(p.size(), 0.0), twice(p.size(), 0.0);
    gpt.forward(p.data(), in.data(), tg.data(), false, 0);
    gpt.backward(p.data(), once.data());
    for (int i = 0; i < 2; ++i) {
        gpt.forward(p.data(), in.data(), tg.data(), false, 0);
        gpt.backward(p.data(), twice.data());
    }
    for (size_t i = 0; i < p.size(); ++i) ASSERT_NEAR(twice[i], 2 * once[i], 1e-12) << i;
}

TEST(GptTest, LogitsWithoutTargetsAndActivationNames) {
    const GptShape s = gradcheckShape(true);
    Gpt<float> gpt(s, 2, 6);
    const std::vector<float> p = initialWeights(s, 0.3, 14);
    const auto in = tokens(12, s.vocab, 11), tg = tokens(12, s.vocab, 12);
    EXPECT_EQ(gpt.forward(p.data(), in.data(), nullptr, false, 0), 0.0f);
    const std::vector<float> noTargets(gpt.logits(1, 4), gpt.logits(1, 4) + s.vocab);
    const float loss = gpt.forward(p.data(), in.data(), tg.data(), false, 0);
    EXPECT_EQ(noTargets, std::vector<float>(gpt.logits(1, 4), gpt.logits(1, 4) + s.vocab));
    // The loss is the mean of -log softmax at the targets.
    double sum = 0;
    for (int n = 0; n < 12; ++n) {
        const float* z = gpt.logits(n / 6, n % 6);
        double m = z[0], e = 0;
        for (int v = 0; v < s.vocab; ++v) m = std::max(m, double(z[v]));
        for (int v = 0; v < s.vocab; ++v) e += std::exp(z[v] - m);
        sum += m + std::log(e) - z[tg[size_t(n)]];
    }
    EXPECT_NEAR(loss, sum / 12, 1e-5);
    ASSERT_NE(gpt.activation("h.1.attn.qkv"), nullptr);
    EXPECT_EQ(gpt.activation("nope"), nullptr);
    const ActivationSlice& last = gpt.activationSlices().back();
    EXPECT_EQ(last.name, "losses");
    EXPECT_EQ(
        gpt.activation("h.1.residual_mlp"),
        gpt.activationData() +
            std::find_if(gpt.activationSlices().begin(), gpt.activationSlices().end(),
                         [](const ActivationSlice& a) { return a.name == "h.1.residual_mlp"; })
                ->offset);
}

// Attention keeps per-row softmax statistics, not the (B,NH,T,T) probabilities: the activation
// buffer grows linearly with T once T dominates nothing else.
TEST(GptTest, AttentionKeepsStatisticsLinearInT) {
    const GptShape s = mediumShape();
    auto sliceOf = [](const Gpt<float>& gpt, const std::string& name) {
        const auto& slices = gpt.activationSlices();
        return *std::find_if(slices.begin(), slices.end(),
                             [&](const ActivationSlice& a) { return a.name == name; });
    };
    auto totalSize = [](const Gpt<float>& gpt) {
        return gpt.activationSlices().back().offset + gpt.activationSlices().back().size;
    };
    const Gpt<float> short_(s, 2, 48), long_(s, 2, 96);
    EXPECT_EQ(long_.activation("h.1.attn.probs"), nullptr);
    for (const char* name : {"h.1.attn.row_max", "h.1.attn.row_sum"}) {
        EXPECT_EQ(sliceOf(long_, name).shape, (std::vector<int64_t>{2, s.heads, 96})) << name;
    }
    EXPECT_EQ(totalSize(long_), 2 * totalSize(short_));
}

TEST(GptTest, CheckTokensNamesTheBadToken) {
    const std::vector<int32_t> ok = {0, 5, 10}, bad = {0, 11, 3};
    EXPECT_TRUE(checkTokens(ok.data(), ok.size(), 11).ok());
    const Status st = checkTokens(bad.data(), bad.size(), 11);
    ASSERT_FALSE(st.ok());
    EXPECT_NE(st.error().message.find("token 11 at position 1"), std::string::npos);
    EXPECT_NE(st.error().message.find("vocab_size"), std::string::npos);
}

bool isBf16Valued(const float* x, size_t n) {
    for (size_t i = 0; i < n; ++i) {
        if ((std::bit_cast<uint32_t>(x[i]) & 0xFFFFu) != 0) return false;
    }
    return true;
}

TEST(GptTest, Bf16ModeRoundsWeightsAndActivationsButNotTheResidualStream) {
    GptShape s = mediumShape();
    s.dropout = s.attnDropout = 0.0;
    GptShape sb = s;
    sb.bf16 = true;
    const int B = 2, T = 32;
    Gpt<float> fp32(s, B, T), bf16(sb, B, T);
    const std::vector<float> p = initialWeights(s, 0.05, 15);
    const auto in = tokens(B * T, s.vocab, 13), tg = tokens(B * T, s.vocab, 14);
    const float l32 = fp32.forward(p.data(), in.data(), tg.data(), true, 0);
    const float l16 = bf16.forward(p.data(), in.data(), tg.data(), true, 0);
    EXPECT_NE(l32, l16);
    EXPECT_NEAR(l16, l32, 1e-2 * l32);
    const size_t nc = size_t(B) * T * s.channels;
    for (const char* name :
         {"h.0.ln_1", "h.1.attn.qkv", "h.1.attn.out", "h.0.mlp.gelu", "ln_f", "logits"}) {
        EXPECT_TRUE(isBf16Valued(bf16.activation(name), nc)) << name;
        EXPECT_FALSE(isBf16Valued(fp32.activation(name), nc)) << name;
    }
    EXPECT_FALSE(isBf16Valued(bf16.activation("h.1.residual_mlp"), nc));
    std::vector<float> g32(p.size(), 0.0f), g16(p.size(), 0.0f);
    fp32.backward(p.data(), g32.data());
    bf16.backward(p.data(), g16.data());
    double dotp = 0, n32 = 0, n16 = 0;
    for (size_t i = 0; i < p.size(); ++i) {
        ASSERT_TRUE(std::isfinite(g16[i]));
        dotp += double(g32[i]) * g16[i];
        n32 += double(g32[i]) * g32[i];
        n16 += double(g16[i]) * g16[i];
    }
    EXPECT_GT(dotp / std::sqrt(n32 * n16), 0.99);  // same direction, bf16 noise only
    EXPECT_NE(g32, g16);
}

TEST(GptTest, TinyModelOverfitsARepeatedSequence) {
    const GptShape s = gptShape(16, 32, 2, 4, 128, 32);
    std::vector<float> p(ParameterTable(s).totalSize());
    initParameters(ParameterTable(s), testing::configFor(s, 0.1), 3, p.data());
    const auto losses = testing::overfitRepeatedSequence(s, p, 60);
    EXPECT_NEAR(losses.first, std::log(16.0f), 0.3f);
    EXPECT_LT(losses.last, 0.25f * losses.first)
        << "first " << losses.first << " last " << losses.last;
}

// The activation table (activationLayout) is Gpt's buffer: back to back, the embedding sum first,
// then every block from its ln_1, then the head from ln_f; blockSize and headSize tile it, and
// everything scales with the batch. Dense, MoE and LoRA blocks alike.
TEST(ActivationLayout, IsGptsBufferTiledByEmbeddingBlocksAndHead) {
    GptShape moe = ws::testing::gradcheckShape(true);
    moe.numExperts = 4;
    moe.topK = 2;
    moe.moeEvery = 2;
    GptShape lora = ws::testing::gradcheckShape(false);
    lora.applyLora(config::LoraConfig{.rank = 2, .targets = {"c_attn", "mlp.c_proj"}});
    for (const GptShape& shape : {ws::testing::gradcheckShape(true), moe, lora}) {
        const int B = 2, T = 5;
        const ActivationLayout layout = activationLayout(shape, B, T);
        const Gpt<float> gpt(shape, B, T);
        ASSERT_EQ(gpt.activationSlices().size(), layout.slices.size());
        size_t next = 0;
        for (size_t i = 0; i < layout.slices.size(); ++i) {
            const ActivationSlice& a = layout.slices[i];
            EXPECT_EQ(a.offset, next) << a.name;
            next += a.size;
            EXPECT_EQ(gpt.activationSlices()[i].name, a.name);
            EXPECT_EQ(gpt.activationSlices()[i].offset, a.offset) << a.name;
        }
        EXPECT_EQ(layout.size(), next);
        EXPECT_EQ(layout.encoded, 0u);
        size_t tiled = layout.slices.front().size + layout.headSize();
        for (int l = 0; l < shape.layers; ++l) {
            const auto first = std::find_if(
                layout.slices.begin(), layout.slices.end(),
                [&](const auto& a) { return a.offset == layout.blocks[size_t(l)].ln1; });
            ASSERT_NE(first, layout.slices.end());
            EXPECT_EQ(first->name, "h." + std::to_string(l) + ".ln_1");
            tiled += layout.blockSize(l);
        }
        EXPECT_EQ(tiled, layout.size());
        EXPECT_EQ(layout.slices[layout.slices.size() - 6].name, "ln_f");
        EXPECT_EQ(layout.slices[layout.slices.size() - 6].offset, layout.lnf);
        EXPECT_EQ(activationLayout(shape, 1, T).size() * B, layout.size());
    }
    // LoRA keeps dropout(x)·A (N,R) per adapted linear of each block; MoE blocks keep more than
    // dense ones (block 0 is MoE, block 1 dense).
    EXPECT_EQ(activationLayout(lora, 1, 5).blockSize(0),
              activationLayout(ws::testing::gradcheckShape(false), 1, 5).blockSize(0) + 2 * 5 * 2);
    EXPECT_GT(activationLayout(moe, 1, 5).blockSize(0), activationLayout(moe, 1, 5).blockSize(1));
}

}  // namespace
}  // namespace ws::model
