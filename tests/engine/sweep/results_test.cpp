// SPDX-License-Identifier: GPL-3.0-or-later
// The μTransfer analysis on synthetic results: best log2 LR per width, drift in grid steps,
// transfer regret from seed means, and how diverged and pruned trials count.
#include "engine/sweep/results.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <functional>

namespace ws::sweep {
namespace {

std::string fmt(double v) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.12g", v);
    return buf;
}

// One trial per (parametrization, width, log2 lr, seed), with loss(width, log2 lr, seed).
std::vector<TrialResult> synthetic(const std::string& p, std::vector<int> widths,
                                   std::vector<int> log2Lrs, int seeds,
                                   const std::function<double(int, int, int)>& loss) {
    std::vector<TrialResult> out;
    for (int s = 0; s < seeds; ++s)
        for (int w : widths)
            for (int e : log2Lrs) {
                TrialResult t;
                t.trial = int(out.size());
                t.params = {{"model.hidden_size", std::to_string(w)},
                            {"optimizer.learning_rate", fmt(std::exp2(double(e)))},
                            {"parametrization", p}};
                t.parametrization = p;
                t.seed = s;
                t.status = TrialStatus::Finished;
                t.finalLoss = loss(w, e, s);
                out.push_back(t);
            }
    return out;
}

TEST(TransferAnalysis, OptimumPerWidthDriftAndRegret) {
    // sp: the optimum moves from 2^-6 at width 32 to 2^-9 at width 256 (3 grid steps);
    // mup: it stays at 2^-7.
    auto sp = synthetic("sp", {32, 64, 256}, {-10, -9, -8, -7, -6, -5}, 2, [](int w, int e, int s) {
        const int best = w == 32 ? -6 : w == 64 ? -7 : -9;
        return 2.0 + 0.1 * (e - best) * (e - best) + 0.01 * s;
    });
    auto mup = synthetic("mup", {32, 64, 256}, {-10, -9, -8, -7, -6, -5}, 2, [](int, int e, int s) {
        return 2.0 + 0.1 * (e + 7) * (e + 7) + 0.01 * s;
    });
    sp.insert(sp.end(), mup.begin(), mup.end());
    const auto analysis = analyzeTransfer(sp);
    ASSERT_EQ(analysis.size(), 2u);
    const auto& m = analysis[0].parametrization == "mup" ? analysis[0] : analysis[1];
    const auto& s = analysis[0].parametrization == "sp" ? analysis[0] : analysis[1];
    ASSERT_EQ(s.widths.size(), 3u);
    EXPECT_DOUBLE_EQ(s.widths[0].width, 32);
    EXPECT_DOUBLE_EQ(s.widths[0].bestLog2Lr, -6);
    EXPECT_DOUBLE_EQ(s.widths[2].bestLog2Lr, -9);
    EXPECT_DOUBLE_EQ(s.gridStep, 1.0);
    EXPECT_DOUBLE_EQ(s.driftSteps, 3.0);
    // Width 256 at 2^-6 (width 32's best): 3 steps off -> 0.9 above its own best.
    EXPECT_NEAR(s.regret, 0.9, 1e-12);
    EXPECT_DOUBLE_EQ(m.driftSteps, 0.0);
    EXPECT_NEAR(m.regret, 0.0, 1e-12);
    EXPECT_NEAR(m.widths[1].bestLoss, 2.005, 1e-12) << "the seed mean";
}

TEST(TransferAnalysis, DivergedSeedsMakeAPointInfiniteAndPrunedOnesAreLeftOut) {
    auto trials = synthetic("", {32, 128}, {-8, -7, -6}, 2,
                            [](int, int e, int) { return 3.0 - 0.1 * e; });  // best: -6
    for (auto& t : trials) {
        if (t.param("model.hidden_size") == "128" &&
            t.param("optimizer.learning_rate") == fmt(std::exp2(-6.0)) && t.seed == 1) {
            t.status = TrialStatus::Diverged;  // one seed of width 128 at 2^-6 diverged
            t.finalLoss = NAN;
        }
        if (t.param("model.hidden_size") == "32" &&
            t.param("optimizer.learning_rate") == fmt(std::exp2(-8.0)))
            t.status = TrialStatus::Pruned;
    }
    const auto analysis = analyzeTransfer(trials);
    ASSERT_EQ(analysis.size(), 1u);
    const auto& p = analysis[0];
    EXPECT_EQ(p.parametrization, "");
    EXPECT_EQ(p.widths[0].lossByLog2Lr.count(-8.0), 0u) << "pruned: no final loss";
    EXPECT_TRUE(std::isinf(p.widths[1].lossByLog2Lr.at(-6.0)));
    EXPECT_DOUBLE_EQ(p.widths[0].bestLog2Lr, -6);
    EXPECT_DOUBLE_EQ(p.widths[1].bestLog2Lr, -7);
    EXPECT_DOUBLE_EQ(p.driftSteps, 1.0);
    EXPECT_TRUE(std::isinf(p.regret)) << "the narrow optimum diverges on the wide model";
}

TEST(TransferAnalysis, OneWidthHasNoDrift) {
    auto trials = synthetic("sp", {64}, {-8, -7}, 1, [](int, int e, int) { return -double(e); });
    const auto analysis = analyzeTransfer(trials);
    ASSERT_EQ(analysis.size(), 1u);
    EXPECT_TRUE(std::isnan(analysis[0].driftSteps));
    EXPECT_TRUE(std::isnan(analysis[0].regret));
    EXPECT_FALSE(analysis[0].note.empty());
}

}  // namespace
}  // namespace ws::sweep
