// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/optim/optimizer.h"

#include <gtest/gtest.h>

#include "engine/tensor/threads.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace ws::optim {
namespace {

config::OptimizerConfig adamw(double wd) {
    config::OptimizerConfig c;
    c.optimizerType = "adamw";
    c.betas = {0.9, 0.95};
    c.eps = 1e-8;
    c.weightDecay = wd;
    return c;
}

// Reference AdamW in double, written from the PyTorch documentation's pseudo-code.
struct AdamRef {
    double p, m = 0, v = 0;
    void step(double g, double lr, double wd, double b1, double b2, double eps, int t) {
        p *= 1 - lr * wd;
        m = b1 * m + (1 - b1) * g;
        v = b2 * v + (1 - b2) * g * g;
        const double mhat = m / (1 - std::pow(b1, t));
        const double vhat = v / (1 - std::pow(b2, t));
        p -= lr * mhat / (std::sqrt(vhat) + eps);
    }
};

TEST(AdamW, MatchesReferenceAndSkipsDecayWhereAsked) {
    const std::vector<float> start = {0.5f, -1.0f, 2.0f, 0.25f};
    std::vector<float> params = start;
    // Elements 0-1 decay (a weight matrix), 2-3 do not (a bias).
    Optimizer opt(adamw(0.1), {{0, 2, true}, {2, 2, false}}, 4);
    std::vector<AdamRef> ref;
    for (float p : start) ref.push_back({p});
    const double lr = 1e-2;
    for (int t = 1; t <= 5; ++t) {
        std::vector<float> grads = {0.1f * t, -0.2f, 0.3f / t, -0.05f * t};
        opt.update(params.data(), grads.data(), lr, 1.0, t);
        for (int i = 0; i < 4; ++i) {
            ref[i].step(grads[i], lr, i < 2 ? 0.1 : 0.0, 0.9, 0.95, 1e-8, t);
        }
    }
    for (int i = 0; i < 4; ++i) EXPECT_NEAR(params[i], ref[i].p, 2e-6) << "element " << i;
}

TEST(AdamW, LargeUpdatesAndNormsRunOnTheComputePoolWithTheSameBits) {
    // The update's loops use the engine's compute threads (--threads), not a second pool of
    // OpenMP threads that ran even with --threads 1 and spun on the cores the step needs after
    // every loop; the result is the same bit for bit on 1 thread and on 2.
    const size_t n = size_t{1} << 18;
    std::vector<float> start(n), grads(n);
    for (size_t i = 0; i < n; ++i) {
        start[i] = std::sin(float(i) * 0.01f);
        grads[i] = std::cos(float(i) * 0.37f);
    }
    std::vector<float> one = start, two = start;
    double normOne = 0, normTwo = 0;
    tensor::setComputeThreads(1);
    Optimizer a(adamw(0.1), {{0, n, true}}, n);
    a.update(one.data(), grads.data(), 1e-3, 0.5, 1);
    normOne = globalNorm(grads.data(), n);
    tensor::setComputeThreads(2);
    const tensor::PoolStats before = tensor::poolStats();
    Optimizer b(adamw(0.1), {{0, n, true}}, n);
    b.update(two.data(), grads.data(), 1e-3, 0.5, 1);
    normTwo = globalNorm(grads.data(), n);
    EXPECT_EQ(tensor::poolStats().regions - before.regions, 2);  // the update and the norm
    EXPECT_EQ(one, two);
    EXPECT_EQ(normOne, normTwo);
    tensor::setComputeThreads(0);
}

TEST(AdamW, UpdateRangeTouchesOnlyThatRange) {
    std::vector<float> params = {1, 1, 1, 1, 1, 1};
    std::vector<float> grads = {1, 1, 1, 1, 1, 1};
    Optimizer opt(adamw(0.0), {{0, 6, true}}, 6);
    opt.updateRange(params.data(), grads.data(), 2, 4, 0.1, 1.0, 1);
    EXPECT_EQ(params[0], 1.0f);
    EXPECT_EQ(params[1], 1.0f);
    EXPECT_LT(params[2], 1.0f);
    EXPECT_LT(params[3], 1.0f);
    EXPECT_EQ(params[4], 1.0f);
    EXPECT_EQ(opt.firstMoment()[4], 0.0f);
}

TEST(AdamW, LayerByLayerEqualsWholeBuffer) {
    std::vector<float> a(1000), b(1000), g(1000);
    for (int i = 0; i < 1000; ++i) {
        a[i] = b[i] = std::sin(i * 0.1f);
        g[i] = std::cos(i * 0.37f);
    }
    Optimizer whole(adamw(0.1), {{0, 600, true}, {600, 400, false}}, 1000);
    Optimizer layered(adamw(0.1), {{0, 600, true}, {600, 400, false}}, 1000);
    for (int t = 1; t <= 3; ++t) {
        whole.update(a.data(), g.data(), 1e-3, 0.5, t);
        for (size_t begin : {0, 250, 700}) {
            const size_t end = begin == 0 ? 250 : begin == 250 ? 700 : 1000;
            layered.updateRange(b.data(), g.data(), begin, end, 1e-3, 0.5, t);
        }
    }
    EXPECT_EQ(a, b);  // bit-identical: the update is element-wise
}

TEST(Sgd, MomentumAndL2DecayFollowPyTorch) {
    config::OptimizerConfig c;
    c.optimizerType = "sgd";
    c.momentum = 0.9;
    c.weightDecay = 0.01;
    std::vector<float> p = {1.0f};
    Optimizer opt(c, {{0, 1, true}}, 1);
    double refP = 1.0, buf = 0.0;
    for (int t = 1; t <= 4; ++t) {
        std::vector<float> g = {0.5f};
        opt.update(p.data(), g.data(), 0.1, 1.0, t);
        const double d = 0.5 + 0.01 * refP;
        buf = t == 1 ? d : 0.9 * buf + d;
        refP -= 0.1 * buf;
    }
    EXPECT_NEAR(p[0], refP, 1e-6);
}

TEST(Clipping, NormAndFactor) {
    std::vector<float> g(10000, 0.01f);
    EXPECT_NEAR(globalNorm(g.data(), g.size()), 1.0, 1e-6);
    EXPECT_DOUBLE_EQ(clipFactor(0.5, 1.0), 1.0);
    EXPECT_DOUBLE_EQ(clipFactor(5.0, 0.0), 1.0);
    EXPECT_NEAR(clipFactor(4.0, 1.0), 0.25, 1e-6);
    // A NaN norm is not "below the limit": it passes through unchanged so divergence stays visible.
    EXPECT_DOUBLE_EQ(clipFactor(std::nan(""), 1.0), 1.0);
}

// The Trainable layout (gradients and state of unfrozen groups only, packed): the same updates,
// norms and per-range norms, bit for bit, as the Full layout; and the pieces that say where each
// trainable run's gradients live.
TEST(GradientLayout, TrainableEqualsFullBitForBit) {
    // Groups: 0-99 frozen, 100-299 trains, 300-399 frozen, 400-469 trains (no decay), 470-499
    // trains, at larger sizes too so the parallel paths run.
    for (size_t scale : {size_t(1), size_t(1000)}) {
        const std::vector<ParamGroup> groups = {{0, 100 * scale, true, 1.0, true},
                                                {100 * scale, 200 * scale, true, 1.0, false},
                                                {300 * scale, 100 * scale, true, 1.0, true},
                                                {400 * scale, 70 * scale, false, 0.5, false},
                                                {470 * scale, 30 * scale, true, 1.0, false}};
        const size_t P = 500 * scale, T = 300 * scale;
        EXPECT_EQ(trainableSize(groups), T);
        const auto pieces = trainablePieces(groups, 0, P);
        ASSERT_EQ(pieces.size(), 2u);  // 400-499 is one run: adjacent in both layouts
        EXPECT_EQ(pieces[0].offset, 100 * scale);
        EXPECT_EQ(pieces[0].stateOffset, 0u);
        EXPECT_EQ(pieces[1].offset, 400 * scale);
        EXPECT_EQ(pieces[1].stateOffset, 200 * scale);
        EXPECT_EQ(pieces[1].size, 100 * scale);
        std::vector<float> start(P), fullGrads(P, 0.0f), packed(T);
        for (size_t i = 0; i < P; ++i) start[i] = std::sin(float(i)) * 0.5f;
        Optimizer full(adamw(0.1), groups, P);
        Optimizer compact(adamw(0.1), groups, P, GradientLayout::Trainable);
        EXPECT_EQ(compact.stateSize(), T);
        EXPECT_EQ(full.stateSize(), P);
        std::vector<float> a = start, b = start;
        for (int step = 1; step <= 3; ++step) {
            for (size_t i = 0; i < P; ++i) fullGrads[i] = std::cos(float(i * step)) * 0.1f;
            for (const auto& piece : pieces)
                std::copy_n(fullGrads.begin() + std::ptrdiff_t(piece.offset), piece.size,
                            packed.begin() + std::ptrdiff_t(piece.stateOffset));
            EXPECT_EQ(full.gradientNorm(fullGrads.data()), compact.gradientNorm(packed.data()));
            const std::vector<BufferRange> ranges = {{0, 250 * scale}, {250 * scale, 250 * scale}};
            EXPECT_EQ(full.rangeGradientNorms(fullGrads.data(), ranges),
                      compact.rangeGradientNorms(packed.data(), ranges));
            full.update(a.data(), fullGrads.data(), 1e-2, 0.5, step);
            compact.update(b.data(), packed.data(), 1e-2, 0.5, step);
        }
        EXPECT_TRUE(a == b);
        for (size_t i = 0; i < 100 * scale; ++i) ASSERT_EQ(b[i], start[i]);  // frozen
    }
}

}  // namespace
}  // namespace ws::optim
