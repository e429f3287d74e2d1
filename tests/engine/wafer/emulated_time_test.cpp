// SPDX-License-Identifier: GPL-3.0-or-later
// SpanClock: real spans of the streamed execution get the emulated times of their twins in the
// cycle model's schedule, shifted by whole steps; work the emulated machine does not do stays
// untimed.
#include <gtest/gtest.h>

#include "engine/wafer/emulated_time.h"

namespace ws::wafer {
namespace {
using streaming::Span;
using streaming::SpanKind;

std::shared_ptr<const StepPrediction> schedule() {
    auto p = std::make_shared<StepPrediction>();
    p->stepS = 10.0;
    p->spans = {{0, 0, 1, SpanKind::StreamIn, false, 0.0, 1.0},
                {0, 0, 1, SpanKind::StreamIn, true, 5.0, 6.0},
                {0, 0, 1, SpanKind::Forward, false, 1.0, 2.0},
                {1, 0, 1, SpanKind::Forward, false, 1.5, 2.5},
                {-1, 0, 1, SpanKind::Update, true, 8.0, 9.0}};
    return p;
}

TEST(SpanClock, GivesEachSpanItsTwinsTimeShiftedByWholeSteps) {
    const SpanClock clock(schedule());
    Span in{.step = 2, .micro = 0, .system = 0, .layer = 1, .kind = SpanKind::StreamIn};
    ASSERT_TRUE(clock.attach(in));
    EXPECT_DOUBLE_EQ(in.emuStart, 20.0);
    EXPECT_DOUBLE_EQ(in.emuEnd, 21.0);
    in.backwardPass = true;  // the same layer's weights again, for its backward
    ASSERT_TRUE(clock.attach(in));
    EXPECT_DOUBLE_EQ(in.emuStart, 25.0);
    Span fwd{.step = 0, .micro = 0, .system = 1, .layer = 1, .kind = SpanKind::Forward};
    ASSERT_TRUE(clock.attach(fwd));
    EXPECT_DOUBLE_EQ(fwd.emuStart, 1.5);  // system 1's own twin
    Span update{.step = 1, .micro = 0, .system = -1, .layer = 1, .kind = SpanKind::Update};
    ASSERT_TRUE(clock.attach(update));  // the pass flag only tells stream-ins apart
    EXPECT_DOUBLE_EQ(update.emuEnd, 19.0);
    EXPECT_DOUBLE_EQ(clock.stepStart(3), 30.0);
}

TEST(SpanClock, WorkWithoutATwinStaysUntimed) {
    const SpanClock clock(schedule());
    Span reduce{.step = 0, .micro = 0, .system = -1, .layer = 1, .kind = SpanKind::Reduce};
    EXPECT_FALSE(clock.attach(reduce));  // one system: no SwarmX reduce on the real machine
    EXPECT_LT(reduce.emuStart, 0);
    Span otherMicro{.step = 0, .micro = 1, .system = 0, .layer = 1, .kind = SpanKind::Forward};
    EXPECT_FALSE(clock.attach(otherMicro));
}

}  // namespace
}  // namespace ws::wafer
