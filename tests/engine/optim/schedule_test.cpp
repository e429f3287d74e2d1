// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/optim/schedule.h"

#include <gtest/gtest.h>

#include <cmath>
#include <numbers>

namespace ws::optim {
namespace {

config::SchedulerConfig linear(double from, double to, int64_t steps) {
    config::SchedulerConfig s;
    s.scheduler = "Linear";
    s.initialLearningRate = from;
    s.endLearningRate = to;
    s.totalIters = steps;
    return s;
}

TEST(LearningRateSchedule, ConstantNumber) {
    config::LearningRate spec;
    spec.constant = 6e-4;
    LearningRateSchedule schedule(spec, 100);
    EXPECT_DOUBLE_EQ(schedule.at(0), 6e-4);
    EXPECT_DOUBLE_EQ(schedule.at(99), 6e-4);
}

TEST(LearningRateSchedule, WarmupThenCosineToEnd) {
    config::LearningRate spec;
    spec.schedule.push_back(linear(0.0, 1e-3, 10));
    config::SchedulerConfig cosine;
    cosine.scheduler = "Cosine";
    cosine.initialLearningRate = 1e-3;
    cosine.endLearningRate = 1e-4;
    cosine.totalIters = 0;  // until max_steps
    spec.schedule.push_back(cosine);
    LearningRateSchedule schedule(spec, 110);
    EXPECT_DOUBLE_EQ(schedule.at(0), 0.0);
    EXPECT_DOUBLE_EQ(schedule.at(5), 5e-4);
    EXPECT_DOUBLE_EQ(schedule.at(10), 1e-3);  // first step of the cosine piece
    EXPECT_NEAR(schedule.at(60), 1e-4 + 0.9e-3 * 0.5 * (1 + std::cos(std::numbers::pi * 0.5)),
                1e-15);
    EXPECT_NEAR(schedule.at(110), 1e-4, 1e-15);  // holds the end value afterwards
    EXPECT_NEAR(schedule.at(1000), 1e-4, 1e-15);
}

TEST(LearningRateSchedule, LinearDecayHoldsEndValue) {
    config::LearningRate spec;
    spec.schedule.push_back(linear(6e-4, 6e-5, 100));
    LearningRateSchedule schedule(spec, 500);
    EXPECT_DOUBLE_EQ(schedule.at(50), 6e-4 + (6e-5 - 6e-4) * 0.5);
    EXPECT_DOUBLE_EQ(schedule.at(300), 6e-5);
    EXPECT_NE(schedule.describe().find("Linear 0.0006 -> 6e-05 over 100 steps"), std::string::npos);
}

TEST(LearningRateSchedule, ConstantPiece) {
    config::LearningRate spec;
    spec.schedule.push_back(linear(0.0, 2e-3, 4));
    config::SchedulerConfig constant;
    constant.scheduler = "Constant";
    constant.learningRate = 2e-3;
    spec.schedule.push_back(constant);
    LearningRateSchedule schedule(spec, 20);
    EXPECT_DOUBLE_EQ(schedule.at(2), 1e-3);
    EXPECT_DOUBLE_EQ(schedule.at(19), 2e-3);
}

}  // namespace
}  // namespace ws::optim
