// SPDX-License-Identifier: GPL-3.0-or-later
// The training mask (issue 34): a target < 0 is a position not trained on. The cross-entropy
// ops give such rows loss 0 and a zero gradient and leave the other rows' bits alone; the model's
// loss is the trained rows' sum / D (by default their count, or the caller's D) and its gradient
// that loss's, checked by bit-identity under changes of the masked labels, against a loss
// computed over the trained positions alone from the logits, by finite differences, in bf16
// against fp32, and with LoRA, a frozen base, MoE and packed position ids.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <climits>
#include <cmath>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "engine/model/gpt.h"
#include "engine/model/ops.h"
#include "engine/model/random.h"
#include "gpt_test_support.h"
#include "gradcheck.h"
#include "support/test_shapes.h"

namespace ws::model {
namespace {

using testing::convert;
using testing::expectGradientMatches;
using testing::initialWeights;
using testing::tokens;
using ws::testing::gptShape;
using ws::testing::gradcheckShape;

template <typename Real>
bool sameBits(const std::vector<Real>& a, const std::vector<Real>& b) {
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(Real)) == 0;
}

template <typename Real>
bool sameBits(Real a, Real b) {
    return std::memcmp(&a, &b, sizeof(Real)) == 0;
}

// ---- The ops.

template <typename Real>
void expectMaskedRowsZeroAndOthersUnchanged(int N, int V) {
    std::vector<Real> logits(size_t(N) * V);
    for (size_t i = 0; i < logits.size(); ++i) logits[i] = Real(4.0 * rng::standardNormal(31, i));
    const std::vector<int32_t> labels = tokens(N, V, 32);
    std::vector<int32_t> masked = labels;
    const int32_t negatives[] = {-1, -100, INT32_MIN, -7};
    int maskedRows = 0;
    for (int n = 0; n < N; ++n) {
        if (n % 3 == 1) {
            masked[size_t(n)] = negatives[(n / 3) % 4];
            ++maskedRows;
        }
    }
    ASSERT_GT(maskedRows, 0);
    std::vector<Real> lossesA(N), lseA(N), lossesB(N), lseB(N);
    ops::crossEntropyForward(lossesA.data(), lseA.data(), logits.data(), labels.data(), N, V);
    ops::crossEntropyForward(lossesB.data(), lseB.data(), logits.data(), masked.data(), N, V);
    std::vector<Real> gradA = logits, gradB = logits;  // in place, as the model does
    const Real scale = Real(1) / Real(7);
    ops::crossEntropyBackward(gradA.data(), gradA.data(), lseA.data(), labels.data(), scale, N, V);
    ops::crossEntropyBackward(gradB.data(), gradB.data(), lseB.data(), masked.data(), scale, N, V);
    EXPECT_TRUE(sameBits(lseA, lseB));  // the log-sum-exp is every row's
    for (int n = 0; n < N; ++n) {
        const auto row = [&](const std::vector<Real>& g) {
            return std::vector<Real>(g.begin() + ptrdiff_t(n) * V,
                                     g.begin() + ptrdiff_t(n + 1) * V);
        };
        if (masked[size_t(n)] < 0) {
            EXPECT_EQ(lossesB[size_t(n)], Real(0)) << n;
            EXPECT_TRUE(sameBits(row(gradB), std::vector<Real>(size_t(V), Real(0)))) << n;
            EXPECT_GT(lossesA[size_t(n)], Real(0)) << n;  // the same row trained has a loss
        } else {
            EXPECT_TRUE(sameBits(lossesA[size_t(n)], lossesB[size_t(n)])) << n;
            EXPECT_TRUE(sameBits(row(gradA), row(gradB))) << n;
        }
    }
}

TEST(LossMaskOps, MaskedRowsHaveNoLossNorGradientFloat) {
    expectMaskedRowsZeroAndOthersUnchanged<float>(7, 37);
    expectMaskedRowsZeroAndOthersUnchanged<float>(96, 515);  // large enough for several threads
}

TEST(LossMaskOps, MaskedRowsHaveNoLossNorGradientDouble) {
    expectMaskedRowsZeroAndOthersUnchanged<double>(7, 37);
    expectMaskedRowsZeroAndOthersUnchanged<double>(96, 515);
}

// ---- The model.

// A mask like a chat example's: each row's first `prompt` positions are not trained on, and one
// later position (a turn boundary) neither. trained[i] for the (B,T) positions.
std::vector<bool> chatMask(int B, int T) {
    std::vector<bool> trained(size_t(B) * T, true);
    for (int b = 0; b < B; ++b) {
        const int prompt = 1 + (2 * b + 1) % (T / 2);
        for (int t = 0; t < T; ++t) {
            if (t < prompt || t == prompt + 2) trained[size_t(b) * T + t] = false;
        }
    }
    return trained;
}

// labels with every untrained position replaced by code(label, position) (< 0).
std::vector<int32_t> applyMask(const std::vector<int32_t>& labels, const std::vector<bool>& trained,
                               const std::function<int32_t(int32_t, size_t)>& code) {
    std::vector<int32_t> out = labels;
    for (size_t i = 0; i < out.size(); ++i)
        if (!trained[i]) out[i] = code(labels[i], i);
    return out;
}

template <typename Real>
struct StepOut {
    Real loss = 0;
    double crossEntropy = 0;
    int64_t tokens = 0;
    std::vector<Real> grads;
};

template <typename Real>
StepOut<Real> runStep(Gpt<Real>& gpt, const std::vector<Real>& p, const std::vector<int32_t>& in,
                      const std::vector<int32_t>& tg, bool training) {
    StepOut<Real> out;
    out.grads.assign(p.size(), Real(0));
    out.loss = gpt.forward(p.data(), in.data(), tg.data(), training, 77);
    out.crossEntropy = gpt.lastCrossEntropy();
    out.tokens = gpt.lastLossTokens();
    gpt.backward(p.data(), out.grads.data());
    return out;
}

// The reference: -log softmax(logits)[label] averaged over the trained positions, from a forward
// without targets, in double.
template <typename Real>
double referenceLoss(Gpt<Real>& gpt, const std::vector<Real>& p, const std::vector<int32_t>& in,
                     const std::vector<int32_t>& labels, const std::vector<bool>& trained) {
    gpt.forward(p.data(), in.data(), nullptr, false, 0);
    const int V = gpt.shape().vocab;
    double sum = 0;
    int count = 0;
    for (int b = 0; b < gpt.batch(); ++b) {
        for (int t = 0; t < gpt.seqLen(); ++t) {
            const size_t i = size_t(b) * gpt.seqLen() + t;
            if (!trained[i]) continue;
            const Real* row = gpt.logits(b, t);
            double m = row[0];
            for (int v = 1; v < V; ++v) m = std::max(m, double(row[v]));
            double s = 0;
            for (int v = 0; v < V; ++v) s += std::exp(double(row[v]) - m);
            sum += m + std::log(s) - double(row[labels[i]]);
            ++count;
        }
    }
    return sum / count;
}

struct Setup {
    GptShape shape;
    int B = 2, T = 7;
    std::vector<int32_t> positionIds = {};  // empty: dense
    std::vector<bool> frozen = {};          // empty: all train
    bool training = false;
};

template <typename Real>
std::unique_ptr<Gpt<Real>> makeGpt(const Setup& st) {
    auto gpt = std::make_unique<Gpt<Real>>(st.shape, st.B, st.T);
    if (!st.positionIds.empty()) gpt->setPositionIds(st.positionIds.data());
    if (!st.frozen.empty()) gpt->setFrozen(st.frozen);
    return gpt;
}

// Weights with every entry perturbed (LoRA's B starts at zero, and must not stay there).
std::vector<float> perturbedWeights(const GptShape& s, uint64_t seed) {
    std::vector<float> p = initialWeights(s, 0.3, seed);
    for (size_t i = 0; i < p.size(); ++i) p[i] += float(0.05 * rng::standardNormal(seed + 7, i));
    return p;
}

// (a) the masked positions' labels and negative codes change no bit of the loss or gradient,
// while the mask itself does change them; (b) the loss is the reference over the trained
// positions alone; the count and the cross-entropy follow.
template <typename Real>
void expectMaskExact(const Setup& st, double referenceTolerance) {
    auto gpt = makeGpt<Real>(st);
    const std::vector<Real> p = convert<Real>(perturbedWeights(st.shape, 5));
    const int N = st.B * st.T;
    const auto in = tokens(N, st.shape.vocab, 1);
    const auto labels = tokens(N, st.shape.vocab, 2);
    const std::vector<bool> trained = chatMask(st.B, st.T);
    // The same positions with other real labels under them.
    std::vector<int32_t> otherLabels = labels;
    for (size_t i = 0; i < otherLabels.size(); ++i)
        if (!trained[i]) otherLabels[i] = (labels[i] + 1 + int32_t(i)) % st.shape.vocab;
    const int64_t trainedCount = std::count(trained.begin(), trained.end(), true);
    ASSERT_GT(trainedCount, 0);
    ASSERT_LT(trainedCount, N);

    const auto minusOne = applyMask(labels, trained, [](int32_t, size_t) { return -1; });
    const StepOut<Real> base = runStep(*gpt, p, in, minusOne, st.training);
    EXPECT_EQ(base.tokens, trainedCount);
    const std::vector<std::vector<int32_t>> variants = {
        applyMask(labels, trained, [](int32_t, size_t) { return -100; }),
        applyMask(labels, trained, [](int32_t, size_t) { return INT32_MIN; }),
        applyMask(otherLabels, trained, [](int32_t l, size_t) { return -1 - l; }),
        applyMask(otherLabels, trained, [](int32_t, size_t i) { return -1 - int32_t(i % 5); }),
    };
    for (size_t v = 0; v < variants.size(); ++v) {
        const StepOut<Real> o = runStep(*gpt, p, in, variants[v], st.training);
        EXPECT_TRUE(sameBits(o.loss, base.loss)) << "variant " << v;
        EXPECT_TRUE(sameBits(o.grads, base.grads)) << "variant " << v;
        EXPECT_EQ(o.tokens, trainedCount);
    }
    // The mask matters: training on every position gives another loss and gradient.
    const StepOut<Real> all = runStep(*gpt, p, in, labels, st.training);
    EXPECT_EQ(all.tokens, N);
    EXPECT_NE(all.crossEntropy, base.crossEntropy);
    EXPECT_FALSE(sameBits(all.grads, base.grads));

    // (b) Training forwards with dropout differ from the evaluation forward the reference uses.
    if (!st.training) {
        auto ref = makeGpt<Real>(st);
        const double expected = referenceLoss(*ref, p, in, labels, trained);
        EXPECT_NEAR(base.crossEntropy, expected, referenceTolerance * expected);
        EXPECT_NEAR(double(base.loss), expected, referenceTolerance * expected);
        // Over every position the value is another one: the reference is sensitive to the mask.
        const double unmasked =
            referenceLoss(*ref, p, in, labels, std::vector<bool>(size_t(N), true));
        EXPECT_GT(std::abs(unmasked - expected), 100 * referenceTolerance * expected);
    }
}

TEST(LossMaskModel, MaskedLabelsChangeNothingAndLossIsTheTrainedMeanDouble) {
    expectMaskExact<double>({.shape = gradcheckShape(false)}, 1e-12);
    expectMaskExact<double>({.shape = gradcheckShape(true)}, 1e-12);
}

TEST(LossMaskModel, MaskedLabelsChangeNothingAndLossIsTheTrainedMeanFloat) {
    expectMaskExact<float>({.shape = gradcheckShape(false)}, 1e-5);
    // Large enough for the multithreaded kernels.
    expectMaskExact<float>({.shape = gptShape(97, 64, 2, 4, 256, 96), .B = 3, .T = 40}, 1e-5);
}

TEST(LossMaskModel, WithDropoutTheMaskedLabelsStillChangeNothing) {
    GptShape s = gradcheckShape(true);
    s.dropout = 0.2;
    s.attnDropout = 0.25;
    expectMaskExact<double>({.shape = s, .training = true}, 0);
    expectMaskExact<float>({.shape = s, .training = true}, 0);
}

GptShape loraShape() {
    GptShape s = gradcheckShape(true);
    s.applyLora(config::LoraConfig{
        .rank = 2, .alpha = 4.0, .dropout = 0.0, .targets = {"c_attn", "c_fc", "mlp.c_proj"}});
    EXPECT_GT(ParameterTable(s).tensors().size(),
              ParameterTable(gradcheckShape(true)).tensors().size());
    return s;
}

// Only the LoRA adapters train (a fine-tune's usual set-up).
std::vector<bool> frozenBase(const GptShape& s) {
    const ParameterTable table(s);
    std::vector<bool> frozen;
    for (const TensorSlice& t : table.tensors())
        frozen.push_back(t.name.find("lora_") == std::string::npos);
    EXPECT_NE(std::count(frozen.begin(), frozen.end(), false), 0);
    return frozen;
}

TEST(LossMaskModel, LoraWithAFrozenBase) {
    const GptShape s = loraShape();
    expectMaskExact<double>({.shape = s}, 1e-12);
    expectMaskExact<double>({.shape = s, .frozen = frozenBase(s)}, 1e-12);
    expectMaskExact<float>({.shape = s, .frozen = frozenBase(s)}, 1e-5);
}

GptShape moeShape() {
    GptShape s = gradcheckShape(true);
    s.numExperts = 3;
    s.topK = 2;
    s.moeEvery = 1;
    s.capacityFactor = 2.0;
    s.lbCoef = 0.01;
    return s;
}

TEST(LossMaskModel, MixtureOfExpertsKeepsItsLoadBalancingTerm) {
    expectMaskExact<double>({.shape = moeShape()}, 1e-12);
    // Training: the loss adds the load-balancing term, which the mask does not touch.
    expectMaskExact<double>({.shape = moeShape(), .training = true}, 0);
    Gpt<double> gpt(moeShape(), 2, 7);
    const std::vector<double> p = convert<double>(perturbedWeights(moeShape(), 5));
    const auto in = tokens(14, 11, 1);
    const auto tg =
        applyMask(tokens(14, 11, 2), chatMask(2, 7), [](int32_t, size_t) { return -1; });
    const double loss = gpt.forward(p.data(), in.data(), tg.data(), true, 3);
    EXPECT_GT(gpt.loadBalancingLoss(), 0.0);
    EXPECT_DOUBLE_EQ(loss, gpt.lastCrossEntropy() + gpt.loadBalancingLoss());
}

// Packed rows: documents of 3 and 4 in row 0, one of 7 in row 1.
std::vector<int32_t> packedIds() {
    return {0, 1, 2, 0, 1, 2, 3, 0, 1, 2, 3, 4, 5, 6};
}

TEST(LossMaskModel, PackedPositionIds) {
    expectMaskExact<double>({.shape = gradcheckShape(true), .positionIds = packedIds()}, 1e-12);
    expectMaskExact<float>({.shape = gradcheckShape(true), .positionIds = packedIds()}, 1e-5);
}

// (c) Finite differences of the masked loss, with the default denominator and a fixed one.
void checkMaskedGradient(const Setup& st, double denominator) {
    auto gpt = makeGpt<double>(st);
    gpt->setLossDenominator(denominator);
    std::vector<double> params = convert<double>(perturbedWeights(st.shape, 5));
    const int N = st.B * st.T;
    const auto in = tokens(N, st.shape.vocab, 1);
    const auto tg = applyMask(tokens(N, st.shape.vocab, 2), chatMask(st.B, st.T),
                              [](int32_t, size_t) { return -1; });
    auto loss = [&] { return gpt->forward(params.data(), in.data(), tg.data(), st.training, 77); };
    const double l0 = loss();
    EXPECT_GT(l0, 0.1);
    std::vector<double> grads(params.size(), 0.0);
    gpt->backward(params.data(), grads.data());
    const double worst = expectGradientMatches(params, grads, loss, "dparams (masked)");
    ::testing::Test::RecordProperty("worst_relative_error", ::testing::PrintToString(worst));
}

TEST(LossMaskModel, FiniteDifferenceGradients) {
    checkMaskedGradient({.shape = gradcheckShape(false)}, 0.0);
    checkMaskedGradient({.shape = gradcheckShape(true), .positionIds = packedIds()}, 0.0);
    checkMaskedGradient({.shape = loraShape()}, 0.0);
}

TEST(LossMaskModel, FiniteDifferenceGradientsWithDropoutAndAFixedDenominator) {
    GptShape s = gradcheckShape(true);
    s.dropout = 0.2;
    s.attnDropout = 0.25;
    checkMaskedGradient({.shape = s, .training = true}, 3.5);
    checkMaskedGradient({.shape = moeShape(), .training = true}, 0.0);
}

// A fixed D scales the cross-entropy and its gradient by count / D, and D = B·T with nothing
// masked is the default's bits exactly.
TEST(LossMaskModel, FixedDenominatorScalesTheLossAndGradient) {
    const GptShape s = gradcheckShape(false);
    const int B = 2, T = 7, N = B * T;
    const std::vector<double> p = convert<double>(perturbedWeights(s, 5));
    const auto in = tokens(N, s.vocab, 1), labels = tokens(N, s.vocab, 2);
    const auto tg = applyMask(labels, chatMask(B, T), [](int32_t, size_t) { return -1; });
    Gpt<double> byCount(s, B, T), fixed(s, B, T);
    const auto a = runStep(byCount, p, in, tg, false);
    fixed.setLossDenominator(20.0);
    const auto b = runStep(fixed, p, in, tg, false);
    const double ratio = double(a.tokens) / 20.0;
    EXPECT_NEAR(b.loss, a.loss * ratio, 1e-14);
    for (size_t i = 0; i < p.size(); ++i) ASSERT_NEAR(b.grads[i], a.grads[i] * ratio, 1e-14);

    const GptShape big = gptShape(97, 64, 2, 4, 256, 96);
    const std::vector<float> pf = perturbedWeights(big, 6);
    const auto inF = tokens(3 * 40, big.vocab, 3), tgF = tokens(3 * 40, big.vocab, 4);
    Gpt<float> plain(big, 3, 40), pinned(big, 3, 40);
    pinned.setLossDenominator(3 * 40);
    const auto x = runStep(plain, pf, inF, tgF, true);
    const auto y = runStep(pinned, pf, inF, tgF, true);
    EXPECT_TRUE(sameBits(x.loss, y.loss));
    EXPECT_TRUE(sameBits(x.grads, y.grads));
}

// A forward whose targets are all masked: loss 0 and a zero gradient, by count or fixed D.
TEST(LossMaskModel, EverythingMaskedGivesZeroLossAndGradient) {
    const GptShape s = gradcheckShape(false);
    const int B = 2, T = 7, N = B * T;
    const std::vector<float> p = perturbedWeights(s, 5);
    const auto in = tokens(N, s.vocab, 1);
    const std::vector<int32_t> none(size_t(N), -1);
    for (double D : {0.0, 9.0}) {
        Gpt<float> gpt(s, B, T);
        gpt.setLossDenominator(D);
        const auto o = runStep(gpt, p, in, none, true);
        EXPECT_EQ(o.loss, 0.0f);
        EXPECT_EQ(o.crossEntropy, 0.0);
        EXPECT_EQ(o.tokens, 0);
        EXPECT_TRUE(sameBits(o.grads, std::vector<float>(p.size(), 0.0f)));
    }
}

// (d) bf16 against fp32 with a mask, within bf16_step_test.cpp's whole-step tolerances.
TEST(LossMaskModel, Bf16MatchesFp32WithinTheBf16Tolerance) {
    const GptShape s = ws::testing::nanoShape();
    const int B = 2, T = 64, N = B * T;
    const ParameterTable table(s);
    std::vector<float> p(table.totalSize());
    initParameters(table, ws::testing::modelConfigOf(s), 3, p.data());
    const auto in = tokens(N, s.vocab, 21);
    const auto tg =
        applyMask(tokens(N, s.vocab, 22), chatMask(B, T), [](int32_t, size_t) { return -1; });
    GptShape bf = s;
    bf.bf16 = true;
    Gpt<float> fp32(s, B, T), bf16(bf, B, T);
    const auto a = runStep(fp32, p, in, tg, true);
    const auto b = runStep(bf16, p, in, tg, true);
    EXPECT_EQ(b.tokens, a.tokens);
    const double u = std::ldexp(1.0, -8);
    const double sites = 10.0 * s.layers + 3;
    const double lossTol = 4 * u * std::sqrt(sites / 3);
    const double gradTol = 4 * u * std::sqrt(2 * sites / 3);
    EXPECT_LT(std::abs(double(b.loss) - a.loss) / a.loss, lossTol);
    double diff = 0, norm = 0;
    for (size_t i = 0; i < p.size(); ++i) {
        diff += (double(b.grads[i]) - a.grads[i]) * (double(b.grads[i]) - a.grads[i]);
        norm += double(a.grads[i]) * a.grads[i];
    }
    EXPECT_LT(std::sqrt(diff / norm), gradTol);
    EXPECT_GT(diff, 0.0);
    // The masked labels change no bit in bf16 either.
    const auto other =
        applyMask(tokens(N, s.vocab, 22), chatMask(B, T), [](int32_t l, size_t) { return -1 - l; });
    const auto c = runStep(bf16, p, in, other, true);
    EXPECT_TRUE(sameBits(c.loss, b.loss));
    EXPECT_TRUE(sameBits(c.grads, b.grads));
}

}  // namespace
}  // namespace ws::model
