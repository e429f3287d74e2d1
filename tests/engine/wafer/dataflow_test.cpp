// SPDX-License-Identifier: GPL-3.0-or-later
// Exact dataflow mode: the per-core SUMMA (forward, dX) and token-stationary dW of a block's
// four weight matmuls, on the teaching wafer, equal a plain matmul within the fp32 rounding
// bound; and the per-core work matches the mapping's uneven tiles.
//
// Tolerance: both sides compute sum_k x_ik w_kj; the dataflow accumulates in fp32 (in a
// different order for dW), the reference in double. The standard bound for a float dot product
// of length K is |fl - exact| <= gamma_K * sum_k |x_ik w_kj|, gamma_K = K u / (1 - K u), u = 2^-24;
// the double reference's own error is ~2^-29 times smaller. We assert that bound per element.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "engine/wafer/dataflow.h"
#include "engine/wafer/grid_mapping.h"
#include "engine/wafer/layer_ops.h"

namespace ws::wafer {
namespace {

const std::string kPresets = WAFER_PRESETS_DIR "/wafers/";

std::vector<float> randomMatrix(int rows, int cols, uint32_t seed) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> d(0.0f, 1.0f);
    std::vector<float> m(size_t(rows) * cols);
    for (auto& v : m) v = d(rng);
    return m;
}

// Y = op(A) op(B) in double, and the bound sum |a||b| per element. a(i,k), b(k,j) accessors.
template <class A, class B>
void expectWithinBound(const std::vector<float>& got, int M, int K, int N, A a, B b,
                       const char* what) {
    ASSERT_EQ(got.size(), size_t(M) * N) << what << ": the result is not M x N";
    const double u = std::ldexp(1.0, -24);
    const double gamma = K * u / (1 - K * u);
    for (int i = 0; i < M; ++i)
        for (int j = 0; j < N; ++j) {
            double exact = 0, magnitude = 0;
            for (int k = 0; k < K; ++k) {
                exact += double(a(i, k)) * double(b(k, j));
                magnitude += std::fabs(double(a(i, k)) * double(b(k, j)));
            }
            ASSERT_LE(std::fabs(got[size_t(i) * N + j] - exact), gamma * magnitude + 1e-30)
                << what << " element (" << i << ", " << j << ")";
        }
}

const WaferOp& findOp(const LayerOps& l, const std::string& name) {
    for (const auto& op : l.ops)
        if (op.name == name) return op;
    throw std::runtime_error("no op " + name);
}

TEST(Dataflow, BlockForwardAndBackwardMatchThePlainMatmul) {
    auto spec = loadWaferSpecFile(kPresets + "teaching-16x16.yaml");
    ASSERT_TRUE(spec.ok()) << spec.error().message;
    // A block of width C = 40, ffn F = 160 over M = 2 x 25 tokens: none divides 16 evenly. The
    // dataflow runs on exactly the mappings the cycle model chose for this block (folds too).
    model::GptShape shape{
        .vocab = 64, .channels = 40, .layers = 1, .heads = 5, .ffn = 160, .maxPositions = 32};
    const int M = 50, C = 40, F = 160;
    LayerOps fwd = blockOps(shape, 2, 25, Pass::Forward, *spec, nullptr);
    LayerOps bwd = blockOps(shape, 2, 25, Pass::Backward, *spec, nullptr);
    ASSERT_TRUE(planLayer(fwd, *spec).ok());
    ASSERT_TRUE(planLayer(bwd, *spec).ok());
    struct Mm {
        std::string name;
        int K, N;
    } matmuls[] = {{"qkv", C, 3 * C}, {"attn_proj", C, C}, {"fc", C, F}, {"fc_proj", F, C}};
    uint32_t seed = 1;
    int foldedSeen = 0;
    for (const auto& mm : matmuls) {
        SCOPED_TRACE(mm.name);
        const WaferOp& yOp = findOp(fwd, mm.name);
        const WaferOp& dxOp = findOp(bwd, mm.name + ".dX");
        const WaferOp& dwOp = findOp(bwd, mm.name + ".dW");
        ASSERT_EQ(yOp.chunks, 1);
        foldedSeen += yOp.mapping.folds > 1;
        const auto X = randomMatrix(M, mm.K, seed++);
        const auto W = randomMatrix(mm.K, mm.N, seed++);
        const auto dY = randomMatrix(M, mm.N, seed++);
        // Forward: Y = X W.
        DataflowStats st;
        auto Y = summaMatmul(*spec, yOp.mapping, X.data(), W.data(), M, mm.K, mm.N, &st);
        ASSERT_TRUE(Y.ok()) << Y.error().message;
        expectWithinBound(
            *Y, M, mm.K, mm.N, [&](int i, int k) { return X[size_t(i) * mm.K + k]; },
            [&](int k, int j) { return W[size_t(k) * mm.N + j]; }, "Y");
        // The busiest core did what the cycle model charges it: its tile x K multiply-adds.
        EXPECT_EQ(st.maxCoreFmacs, yOp.mapping.m.block * yOp.mapping.n.block * mm.K);
        EXPECT_DOUBLE_EQ(maxCoreCycles(yOp, *spec),
                         double(st.maxCoreFmacs + yOp.mapping.m.block * yOp.mapping.n.block) /
                             (spec->fmacsPerCycle * spec->computeEfficiency));
        EXPECT_EQ(st.steps, mm.K);
        // Backward, input gradient: dX = dY W^T, by the same SUMMA on W^T.
        std::vector<float> Wt(W.size());
        for (int k = 0; k < mm.K; ++k)
            for (int j = 0; j < mm.N; ++j) Wt[size_t(j) * mm.K + k] = W[size_t(k) * mm.N + j];
        auto dX = summaMatmul(*spec, dxOp.mapping, dY.data(), Wt.data(), M, mm.N, mm.K, &st);
        ASSERT_TRUE(dX.ok()) << dX.error().message;
        expectWithinBound(
            *dX, M, mm.N, mm.K, [&](int i, int j) { return dY[size_t(i) * mm.N + j]; },
            [&](int j, int k) { return W[size_t(k) * mm.N + j]; }, "dX");
        EXPECT_EQ(st.maxCoreFmacs, dxOp.mapping.m.block * dxOp.mapping.n.block * mm.N);
        // Backward, weight gradient: dW = X^T dY, token-stationary with column reductions.
        auto dW =
            tokenStationaryWeightGrad(*spec, dwOp.mapping, X.data(), dY.data(), M, mm.K, mm.N, &st);
        ASSERT_TRUE(dW.ok()) << dW.error().message;
        expectWithinBound(
            *dW, mm.K, M, mm.N, [&](int k, int i) { return X[size_t(i) * mm.K + k]; },
            [&](int i, int j) { return dY[size_t(i) * mm.N + j]; }, "dW");
        EXPECT_EQ(st.maxCoreFmacs, dwOp.mapping.m.block * dwOp.mapping.n.block * mm.K);
        EXPECT_GT(st.maxColLinkBytes, 0);
    }
    EXPECT_GT(foldedSeen, 0);  // the folded mappings are exercised, not only the plain grid
}

TEST(Dataflow, TextbookSummaOnThePlainGridLeavesEdgeCoresIdle) {
    auto spec = loadWaferSpecFile(kPresets + "teaching-16x16.yaml");
    ASSERT_TRUE(spec.ok());
    const auto X = randomMatrix(50, 40, 11), W = randomMatrix(40, 40, 12);
    DataflowStats st;
    auto Y = summaMatmul(*spec, X.data(), W.data(), 50, 40, 40, &st);
    ASSERT_TRUE(Y.ok());
    expectWithinBound(
        *Y, 50, 40, 40, [&](int i, int k) { return X[size_t(i) * 40 + k]; },
        [&](int k, int j) { return W[size_t(k) * 40 + j]; }, "Y");
    EXPECT_EQ(st.maxCoreFmacs, 4 * 3 * 40);  // blocks of ceil(50/16) x ceil(40/16)
    EXPECT_EQ(st.minCoreFmacs, 0);           // rows 13..15 of the grid own nothing
}

TEST(Dataflow, RefusesBigWafers) {
    auto spec = loadWaferSpecFile(kPresets + "wse2.yaml");
    ASSERT_TRUE(spec.ok());
    const std::vector<float> a(4, 1.0f);
    auto y = summaMatmul(*spec, a.data(), a.data(), 2, 2, 2);
    ASSERT_FALSE(y.ok());
    EXPECT_NE(y.error().message.find("teaching-16x16"), std::string::npos);
}

}  // namespace
}  // namespace ws::wafer
