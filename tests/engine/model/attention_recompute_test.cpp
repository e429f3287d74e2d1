// SPDX-License-Identifier: GPL-3.0-or-later
// Attention that recomputes its probabilities in the backward (engine/model/attention.cpp) against
// the implementation that stored them (stored_attention_reference.h, the previous code kept as a
// test-only reference): the output and the gradient of q, k and v must be the same bits, in fp32,
// in bf16 mode (stored probabilities rounded to bf16 as Gpt did) and in double, with and without
// dropout, for sequence lengths below, at and across the 64-row blocks. Gpt's forward and backward
// are otherwise unchanged, so equal attention bits mean equal training bits.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

#include "engine/model/ops.h"
#include "engine/model/random.h"
#include "engine/tensor/bf16.h"
#include "stored_attention_reference.h"

namespace ws::model {
namespace {

struct Case {
    int B, T, C, NH;
    double dropout;
    bool bf16;
    double scoreScale = 1.0;  // times 1/sqrt(hs): > 1 pushes exp into its clamp
};

ops::AttentionShape shapeOf(const Case& c) {
    return {c.NH, c.NH, c.C / c.NH};
}

template <typename Real>
std::vector<Real> uniformVector(size_t n, uint64_t stream, double lo, double hi, bool bf16) {
    std::vector<Real> v(n);
    for (size_t i = 0; i < n; ++i) v[i] = Real(lo + (hi - lo) * rng::uniform(stream, i));
    if constexpr (std::is_same_v<Real, float>) {
        if (bf16) tensor::roundToBf16(v.data(), n);  // Gpt rounds qkv in bf16 mode
    }
    return v;
}

// Index of the first element whose bits differ, or -1.
template <typename Real>
int64_t firstDifference(const std::vector<Real>& a, const std::vector<Real>& b) {
    for (size_t i = 0; i < a.size(); ++i) {
        if (std::memcmp(&a[i], &b[i], sizeof(Real)) != 0) return int64_t(i);
    }
    return -1;
}

template <typename Real>
void expectSameBitsAsStoredProbabilities(const Case& c, uint64_t seed) {
    SCOPED_TRACE(::testing::Message() << "B=" << c.B << " T=" << c.T << " C=" << c.C << " NH="
                                      << c.NH << " dropout=" << c.dropout << " bf16=" << c.bf16
                                      << (std::is_same_v<Real, float> ? " float" : " double"));
    const size_t n = size_t(c.B) * c.T * c.C;
    const std::vector<Real> qkv = uniformVector<Real>(3 * n, seed, -2.0, 2.0, c.bf16);
    const std::vector<Real> dout = uniformVector<Real>(n, seed + 1, -1.0, 1.0, false);
    const Real scale = Real(c.scoreScale / std::sqrt(double(c.C / c.NH)));
    const uint64_t key = 0xA77E0000u + seed;

    std::vector<Real> outRef(n), probs(size_t(c.B) * c.NH * c.T * c.T), dqkvRef(3 * n);
    testing::storedAttentionForward(outRef.data(), probs.data(), qkv.data(), c.B, c.T, c.C, c.NH,
                                    scale, c.dropout, key, c.bf16);
    testing::storedAttentionBackward(dqkvRef.data(), dout.data(), qkv.data(), probs.data(), c.B,
                                     c.T, c.C, c.NH, scale, c.dropout, key, c.bf16);

    std::vector<Real> out(n, Real(7)), rowMax(size_t(c.B) * c.NH * c.T), rowSum(rowMax.size());
    std::vector<Real> dqkv(3 * n, Real(7));  // both overwritten
    ops::attentionForward(out.data(), rowMax.data(), rowSum.data(), qkv.data(), c.B, c.T,
                          shapeOf(c), scale, c.dropout, key, c.bf16);
    ops::attentionBackward(dqkv.data(), dout.data(), qkv.data(), rowMax.data(), rowSum.data(), c.B,
                           c.T, shapeOf(c), scale, c.dropout, key, c.bf16);

    double outNorm = 0, gradNorm = 0;  // not a comparison of zeros
    for (Real x : outRef) outNorm += double(x) * double(x);
    for (Real x : dqkvRef) gradNorm += double(x) * double(x);
    ASSERT_GT(outNorm, 0.0);
    ASSERT_GT(gradNorm, 0.0);
    const int64_t outAt = firstDifference(out, outRef);
    EXPECT_EQ(outAt, -1) << "out[" << outAt << "] = " << out[size_t(std::max<int64_t>(outAt, 0))]
                         << " vs " << outRef[size_t(std::max<int64_t>(outAt, 0))];
    const int64_t gradAt = firstDifference(dqkv, dqkvRef);
    EXPECT_EQ(gradAt, -1) << "dqkv[" << gradAt
                          << "] = " << dqkv[size_t(std::max<int64_t>(gradAt, 0))] << " vs "
                          << dqkvRef[size_t(std::max<int64_t>(gradAt, 0))];
}

// Lengths: one token, under a block, exactly one block, one past it, several blocks with a
// ragged last one (none a multiple of the SIMD width either).
constexpr int kLengths[] = {1, 7, 63, 64, 65, 130, 201};

TEST(AttentionRecompute, Fp32MatchesStoredProbabilitiesBitForBit) {
    uint64_t seed = 100;
    for (int T : kLengths) {
        for (double dropout : {0.0, 0.25}) {
            expectSameBitsAsStoredProbabilities<float>({2, T, 48, 3, dropout, false}, seed++);
        }
    }
    // GPT-2's head size (64), and scores large enough that exp(score - max) hits its clamp.
    expectSameBitsAsStoredProbabilities<float>({1, 150, 128, 2, 0.1, false}, seed++);
    expectSameBitsAsStoredProbabilities<float>({1, 97, 32, 2, 0.0, false, 30.0}, seed++);
}

TEST(AttentionRecompute, Bf16ModeMatchesStoredRoundedProbabilitiesBitForBit) {
    uint64_t seed = 200;
    for (int T : kLengths) {
        for (double dropout : {0.0, 0.25}) {
            expectSameBitsAsStoredProbabilities<float>({2, T, 48, 3, dropout, true}, seed++);
        }
    }
    expectSameBitsAsStoredProbabilities<float>({1, 150, 128, 2, 0.1, true}, seed++);
    expectSameBitsAsStoredProbabilities<float>({1, 97, 32, 2, 0.0, true, 30.0}, seed++);
}

TEST(AttentionRecompute, DoubleMatchesStoredProbabilitiesBitForBit) {
    uint64_t seed = 300;
    for (int T : {1, 64, 65, 130}) {
        for (double dropout : {0.0, 0.25}) {
            expectSameBitsAsStoredProbabilities<double>({2, T, 24, 2, dropout, false}, seed++);
        }
    }
}

// The statistics are all the forward keeps per head: they must be what a later backward needs
// even after other attention calls reused the threads' scratch in between.
TEST(AttentionRecompute, BackwardNeedsOnlyTheSavedStatistics) {
    const Case c{2, 70, 32, 2, 0.2, false};
    const size_t n = size_t(c.B) * c.T * c.C;
    const std::vector<float> qkv = uniformVector<float>(3 * n, 400, -2.0, 2.0, false);
    const std::vector<float> other = uniformVector<float>(3 * n, 401, -3.0, 3.0, false);
    const std::vector<float> dout = uniformVector<float>(n, 402, -1.0, 1.0, false);
    const float scale = 0.25f;
    std::vector<float> out(n), rowMax(size_t(c.B) * c.NH * c.T), rowSum(rowMax.size());
    std::vector<float> out2(n), rowMax2(rowMax.size()), rowSum2(rowMax.size());
    std::vector<float> first(3 * n), second(3 * n);
    ops::attentionForward(out.data(), rowMax.data(), rowSum.data(), qkv.data(), c.B, c.T,
                          shapeOf(c), scale, c.dropout, 9);
    ops::attentionBackward(first.data(), dout.data(), qkv.data(), rowMax.data(), rowSum.data(), c.B,
                           c.T, shapeOf(c), scale, c.dropout, 9);
    // Another layer's forward in between (different qkv, its own statistics).
    ops::attentionForward(out2.data(), rowMax2.data(), rowSum2.data(), other.data(), c.B, c.T,
                          shapeOf(c), scale, c.dropout, 10);
    ops::attentionBackward(second.data(), dout.data(), qkv.data(), rowMax.data(), rowSum.data(),
                           c.B, c.T, shapeOf(c), scale, c.dropout, 9);
    EXPECT_EQ(firstDifference(first, second), -1);
    EXPECT_NE(firstDifference(rowMax, rowMax2), -1);
}

}  // namespace
}  // namespace ws::model
