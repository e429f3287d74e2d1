// SPDX-License-Identifier: GPL-3.0-or-later
// μP in the model, one test per rule (init std, LR multipliers, embedding, attention and output
// multipliers), finite-difference gradients through every multiplier, and the anchor: a μP model
// at width multiplier 1 is bit-for-bit the SP model with the same base values.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "engine/model/gpt.h"
#include "engine/model/random.h"
#include "gradcheck.h"
#include "support/test_shapes.h"

namespace ws::model {
namespace {

using testing::expectGradientMatches;

// A μP model: base 32 wide with a 128-wide MLP, here 4x wider (m_d = m_ffn = 4).
config::ModelConfig mupConfig(int width, int base = 32) {
    config::ModelConfig m;
    m.vocabSize = 256;
    m.hiddenSize = width;
    m.numHiddenLayers = 2;
    m.numHeads = 2;
    m.filterSize = 4 * width;
    m.maxPositionEmbeddings = 16;
    m.embeddingInitializer = {"normal", 0.0, 0.08, -1, 1};
    m.initializer = {"normal", 0.0, 0.08, -1, 1};
    m.mupBaseHiddenSize = base;
    m.mupBaseFilterSize = 4 * base;
    m.embeddingsScale = 10.0;
    m.outputLogitsAlpha = 2.0;
    m.scaleQkDotByD = true;
    m.attentionLogitsAlpha = 1.5;
    return m;
}

double stdOf(const float* x, size_t n) {
    double sum = 0, sq = 0;
    for (size_t i = 0; i < n; ++i) sum += x[i];
    const double mean = sum / double(n);
    for (size_t i = 0; i < n; ++i) sq += (x[i] - mean) * (x[i] - mean);
    return std::sqrt(sq / double(n));
}

std::vector<int32_t> tokens(int n, int vocab, uint64_t seed) {
    std::vector<int32_t> ids(static_cast<size_t>(n));
    for (int i = 0; i < n; ++i) ids[size_t(i)] = int32_t(rng::bits(seed, uint64_t(i)) % vocab);
    return ids;
}

TEST(MupShape, MultipliersComeFromTheBaseShape) {
    const GptShape s = GptShape::fromConfig(mupConfig(128));
    EXPECT_TRUE(s.mup);
    EXPECT_EQ(s.widthMult, 4.0);
    EXPECT_EQ(s.ffnWidthMult, 4.0);
    EXPECT_EQ(s.embeddingsScale, 10.0);
    EXPECT_EQ(s.outputLogitsScale, 2.0 / 4.0);                 // output_logits_alpha / m_d
    EXPECT_DOUBLE_EQ(s.attentionScale<double>(), 1.5 / 64.0);  // alpha / d_head, d_head = 64

    config::ModelConfig bySqrt = mupConfig(128);
    bySqrt.scaleOutputLogitsByD = false;
    bySqrt.scaleQkDotByD = false;
    const GptShape t = GptShape::fromConfig(bySqrt);
    EXPECT_EQ(t.outputLogitsScale, 2.0 / 2.0);                // alpha / sqrt(m_d)
    EXPECT_DOUBLE_EQ(t.attentionScale<double>(), 1.5 / 8.0);  // alpha / sqrt(d_head)

    // Without μP: no width multipliers, no logit multiplier; the plain options still apply.
    config::ModelConfig sp = mupConfig(128);
    sp.mupBaseHiddenSize = 0;
    sp.mupBaseFilterSize = 0;
    const GptShape u = GptShape::fromConfig(sp);
    EXPECT_FALSE(u.mup);
    EXPECT_EQ(u.widthMult, 1.0);
    EXPECT_EQ(u.outputLogitsScale, 1.0);
    EXPECT_EQ(u.embeddingsScale, 10.0);
    EXPECT_DOUBLE_EQ(u.attentionScale<double>(), 1.5 / 64.0);
    // GPT-2 exactly: 1/sqrt(hs) computed in the compute type.
    EXPECT_EQ(GptShape::fromConfig(config::ModelConfig{}).attentionScale<float>(),
              1.0f / std::sqrt(64.0f));
}

TEST(MupRules, HiddenLearningRatesAreDividedByTheWidthMultipliers) {
    config::ModelConfig m = mupConfig(128);
    m.filterSize = 256;  // m_ffn = 2, unlike m_d = 4
    const ParameterTable table(GptShape::fromConfig(m));
    for (const TensorSlice& t : table.tensors()) {
        double expected = 1.0;  // embeddings, lm_head, biases, LayerNorm: the base LR
        if (t.name.ends_with("attn.c_attn.weight") || t.name.ends_with("attn.c_proj.weight") ||
            t.name.ends_with("mlp.c_fc.weight"))
            expected = 1.0 / 4.0;
        if (t.name.ends_with("mlp.c_proj.weight")) expected = 1.0 / 2.0;
        EXPECT_EQ(t.lrScale, expected) << t.name;
    }
}

TEST(MupRules, HiddenInitStdIsDividedBySqrtOfTheWidthMultipliers) {
    config::ModelConfig m = mupConfig(512);
    m.shareEmbeddingWeights = false;
    m.vocabSize = 2000;
    m.filterSize = 1024;  // m_ffn = 8
    const ParameterTable table(GptShape::fromConfig(m));
    std::vector<float> p(table.totalSize());
    initParameters(table, m, 7, p.data());
    auto stdOfTensor = [&](const char* name) {
        const TensorSlice* t = table.find(name);
        return stdOf(p.data() + t->offset, t->size);
    };
    const double sigma = 0.08, L = 2, md = 16, mffn = 8;
    EXPECT_NEAR(stdOfTensor("wte.weight"), sigma, 0.01 * sigma);
    EXPECT_NEAR(stdOfTensor("wpe.weight"), sigma, 0.05 * sigma);
    EXPECT_NEAR(stdOfTensor("lm_head.weight"), sigma, 0.01 * sigma);
    EXPECT_NEAR(stdOfTensor("h.1.attn.c_attn.weight"), sigma / std::sqrt(md),
                0.01 * sigma / std::sqrt(md));
    EXPECT_NEAR(stdOfTensor("h.1.mlp.c_fc.weight"), sigma / std::sqrt(md),
                0.01 * sigma / std::sqrt(md));
    const double attnOut = sigma / std::sqrt(2 * md * L), ffnOut = sigma / std::sqrt(2 * mffn * L);
    EXPECT_NEAR(stdOfTensor("h.0.attn.c_proj.weight"), attnOut, 0.01 * attnOut);
    EXPECT_NEAR(stdOfTensor("h.0.mlp.c_proj.weight"), ffnOut, 0.01 * ffnOut);
}

// The forward multipliers, each against the SP model on the same weights.
TEST(MupRules, EmbeddingAndOutputLogitMultipliers) {
    config::ModelConfig m = mupConfig(64);  // m_d = 2
    m.outputLogitsAlpha = 3.0;
    m.scaleQkDotByD = false;
    m.attentionLogitsAlpha = 1.0;
    const GptShape mup = GptShape::fromConfig(m);
    GptShape sp = mup;
    sp.embeddingsScale = 1.0;
    sp.outputLogitsScale = 1.0;
    const int B = 2, T = 8;
    const ParameterTable table(mup);
    std::vector<float> f(table.totalSize());
    initParameters(table, m, 3, f.data());
    std::vector<double> p(f.size());
    for (size_t i = 0; i < f.size(); ++i) p[i] = f[i];
    const auto in = tokens(B * T, mup.vocab, 1);
    Gpt<double> a(mup, B, T), b(sp, B, T);
    a.forward(p.data(), in.data(), nullptr, false, 0);
    b.forward(p.data(), in.data(), nullptr, false, 0);
    const double* ea = a.activation("encoded");
    const double* eb = b.activation("encoded");
    for (size_t i = 0; i < size_t(B) * T * mup.channels; ++i)
        ASSERT_DOUBLE_EQ(ea[i], 10.0 * eb[i]) << i;

    // Same residual stream into the head: logits differ by exactly output_logits_alpha / m_d.
    GptShape spLogits = mup;
    spLogits.outputLogitsScale = 1.0;
    Gpt<double> c(spLogits, B, T);
    c.forward(p.data(), in.data(), nullptr, false, 0);
    for (int t = 0; t < T; ++t)
        for (int v = 0; v < mup.vocab; ++v)
            ASSERT_DOUBLE_EQ(a.logits(1, t)[v], (3.0 / 2.0) * c.logits(1, t)[v]);
}

// The anchor of μTransfer: at m_d = m_ffn = 1 every μP rule is the identity, so the μP model is
// the SP model with the same base values, bit for bit (init, LR multipliers, loss, gradients).
// embeddings_scale and attention_logits_alpha apply to both; 1/d_head vs 1/sqrt(d_head) does not
// coincide at m = 1, so scale_qk_dot_by_d is off here and tested on its own (ops and gradchecks).
TEST(MupRules, MupAtWidthMultiplierOneIsExactlyStandardParameterization) {
    config::ModelConfig mupCfg = mupConfig(32);
    mupCfg.scaleQkDotByD = false;
    mupCfg.outputLogitsAlpha = 1.0;
    config::ModelConfig spCfg = mupCfg;
    spCfg.mupBaseHiddenSize = 0;
    spCfg.mupBaseFilterSize = 0;
    const GptShape mup = GptShape::fromConfig(mupCfg), sp = GptShape::fromConfig(spCfg);
    ASSERT_TRUE(mup.mup);
    ASSERT_FALSE(sp.mup);
    const ParameterTable tm(mup), ts(sp);
    std::vector<float> pm(tm.totalSize()), ps(ts.totalSize());
    initParameters(tm, mupCfg, 11, pm.data());
    initParameters(ts, spCfg, 11, ps.data());
    ASSERT_EQ(pm.size(), ps.size());
    EXPECT_EQ(std::memcmp(pm.data(), ps.data(), pm.size() * sizeof(float)), 0);
    for (size_t i = 0; i < tm.tensors().size(); ++i)
        EXPECT_EQ(tm.tensors()[i].lrScale, ts.tensors()[i].lrScale) << tm.tensors()[i].name;

    const int B = 2, T = 8;
    const auto in = tokens(B * T, mup.vocab, 5), tg = tokens(B * T, mup.vocab, 6);
    Gpt<float> a(mup, B, T), b(sp, B, T);
    const float la = a.forward(pm.data(), in.data(), tg.data(), false, 0);
    const float lb = b.forward(ps.data(), in.data(), tg.data(), false, 0);
    EXPECT_EQ(la, lb);
    std::vector<float> ga(pm.size(), 0.0f), gb(ps.size(), 0.0f);
    a.backward(pm.data(), ga.data());
    b.backward(ps.data(), gb.data());
    EXPECT_EQ(std::memcmp(ga.data(), gb.data(), ga.size() * sizeof(float)), 0);
}

// Finite differences through every μP multiplier at once (m_d = 4, m_emb, alpha / m logits,
// alpha / d_head scores), with a tied and an untied head and with dropout.
void checkMupGradient(bool tied, double dropout) {
    GptShape s = ws::testing::gradcheckShape(tied);
    s.dropout = dropout;
    s.attnDropout = dropout;
    s.mup = true;
    s.widthMult = 4.0;
    s.ffnWidthMult = 4.0;
    s.embeddingsScale = 3.0;
    s.outputLogitsScale = 1.5 / 4.0;
    s.scaleQkDotByD = true;
    s.attentionLogitsAlpha = 1.7;
    const int B = 2, T = 5;
    const ParameterTable table(s);
    std::vector<double> params(table.totalSize());
    for (size_t i = 0; i < params.size(); ++i) params[i] = 0.3 * rng::standardNormal(17, i);
    for (const TensorSlice& t : table.tensors())  // LayerNorm gains near 1
        if (t.name.find("ln_") != std::string::npos && t.name.ends_with(".weight"))
            for (size_t i = 0; i < t.size; ++i) params[t.offset + i] += 1.0;
    Gpt<double> gpt(s, B, T);
    const auto in = tokens(B * T, s.vocab, 1), tg = tokens(B * T, s.vocab, 2);
    auto loss = [&] { return gpt.forward(params.data(), in.data(), tg.data(), dropout > 0, 77); };
    loss();
    std::vector<double> grads(params.size(), 0.0);
    gpt.backward(params.data(), grads.data());
    // Every index, given explicitly: GCC 12 -O3 reports a false -Wnull-dereference in the
    // helper's "all indices" default when it is inlined here.
    std::vector<size_t> all(params.size());
    for (size_t i = 0; i < all.size(); ++i) all[i] = i;
    expectGradientMatches(params, grads, loss, "dparams", all);
}

TEST(MupGradcheck, WholeModelTiedHead) {
    checkMupGradient(true, 0.0);
}

TEST(MupGradcheck, WholeModelUntiedHead) {
    checkMupGradient(false, 0.0);
}

TEST(MupGradcheck, WholeModelWithDropout) {
    checkMupGradient(true, 0.2);
}

}  // namespace
}  // namespace ws::model
