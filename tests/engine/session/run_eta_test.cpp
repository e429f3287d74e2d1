// SPDX-License-Identifier: GPL-3.0-or-later
// The one ETA of a training run (engine/session/run_eta.h), as the studio and the CLI show it.
#include "engine/session/run_eta.h"

#include <gtest/gtest.h>

#include <cmath>

namespace ws::session {
namespace {

TEST(RemainingSeconds, StepsLeftTimesTimePerStep) {
    EXPECT_DOUBLE_EQ(remainingSeconds(0, 100, 0.5), 50.0);
    EXPECT_DOUBLE_EQ(remainingSeconds(40, 100, 0.5), 30.0);
    EXPECT_DOUBLE_EQ(remainingSeconds(99, 100, 2.0), 2.0);
}

TEST(RemainingSeconds, DoneIsZeroUnknownIsNan) {
    EXPECT_EQ(remainingSeconds(100, 100, 0.5), 0.0);
    EXPECT_EQ(remainingSeconds(120, 100, std::nan("")), 0.0);  // past the end: nothing left
    EXPECT_TRUE(std::isnan(remainingSeconds(10, 100, 0.0)));
    EXPECT_TRUE(std::isnan(remainingSeconds(10, 100, -1.0)));
    EXPECT_TRUE(std::isnan(remainingSeconds(10, 100, std::nan(""))));
    EXPECT_TRUE(std::isnan(remainingSeconds(10, 100, INFINITY)));
    EXPECT_TRUE(std::isnan(remainingSeconds(-1, 100, 0.5)));
}

StepMetrics metrics(int64_t step, int64_t maxSteps, int64_t tokensPerStep, double tokensPerSec,
                    double elapsedSec) {
    StepMetrics m;
    m.step = step;
    m.maxSteps = maxSteps;
    m.tokensSeen = step * tokensPerStep;
    m.tokensPerSec = tokensPerSec;
    m.elapsedSec = elapsedSec;
    return m;
}

TEST(EtaSeconds, FollowsTheRecentPaceNotTheStartUp) {
    // 1024 tokens a step at 2048 tokens/s: 0.5 s a step, 60 steps left. The first 40 steps took
    // 100 s (a slow start-up): the average since the start (2.5 s a step) would say 150 s.
    EXPECT_DOUBLE_EQ(etaSeconds(metrics(40, 100, 1024, 2048.0, 100.0)), 30.0);
}

TEST(EtaSeconds, AResumedRunCountsOnlyItsOwnPace) {
    // Resumed at step 900 of 1000, 10 steps in 5 s since: the step count began long before this
    // process, so time since the start over steps (5 s / 910) would say 0.5 s for 90 steps.
    EXPECT_DOUBLE_EQ(etaSeconds(metrics(910, 1000, 256, 512.0, 5.0)), 45.0);
}

TEST(EtaSeconds, UnknownBeforeARateAndZeroAtTheEnd) {
    EXPECT_TRUE(std::isnan(etaSeconds(metrics(0, 100, 1024, 0.0, 0.0))));
    EXPECT_TRUE(std::isnan(etaSeconds(metrics(5, 100, 1024, 0.0, 3.0))));
    EXPECT_EQ(etaSeconds(metrics(100, 100, 1024, 2048.0, 60.0)), 0.0);
}

}  // namespace
}  // namespace ws::session
