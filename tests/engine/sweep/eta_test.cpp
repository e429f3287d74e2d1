// SPDX-License-Identifier: GPL-3.0-or-later
// SweepEta: the time a sweep has left. On made-up timings: trials of a wider shape cost more per
// step than the narrow ones measured first (the old mean-trial estimate read 3:13, then 4:37, then
// 6:24 for a 14-minute sweep), lanes fill in run order, a trial settled before a resume is no
// work, early ends (diverged) shorten the trials still waiting. On a recorded sweep (a real
// mup-sweep's store, saved as data/mup_sweep_timings.csv by record_sweep_timings.py): the
// estimates made at 25, 50 and 75% of its wall time are within the stated tolerance of the time
// it really had left.
#include "engine/sweep/eta.h"
#include "engine/core/units.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

namespace ws::sweep {
namespace {

TrialCost cost(int trial, const std::string& shape, double flops, int64_t steps) {
    return TrialCost{trial, shape, flops, steps};
}

TEST(SweepEta, UnknownUntilAStepIsTimedThenZeroWhenAllEnded) {
    SweepEta eta({cost(0, "a", 1e6, 10), cost(1, "a", 1e6, 10)}, 1);
    EXPECT_TRUE(std::isnan(eta.remainingSeconds(0)));
    eta.started(0, 0);
    eta.progress(0, 1, 1.0);
    EXPECT_TRUE(std::isnan(eta.remainingSeconds(1.0)));  // one step: no rate yet
    eta.progress(0, 3, 3.0);                             // 1 s per step
    // Trial 0: 7 steps left; trial 1: start-up (1 s to step 1, less that step: 0) + 10 steps.
    EXPECT_NEAR(eta.remainingSeconds(3.0), 7.0 + 10.0, 1e-9);
    EXPECT_NEAR(eta.remainingSeconds(4.0), 6.0 + 10.0, 1e-9);  // time passes between events
    eta.finished(0, 10, 10.0);
    eta.started(1, 10.0);
    eta.finished(1, 10, 20.0);
    EXPECT_EQ(eta.remainingSeconds(20.0), 0.0);
    EXPECT_EQ(eta.endedTrials(), 2u);
}

TEST(SweepEta, WiderShapesCostTheirOwnTimePerStep) {
    // Narrow (1e6 FLOPs) trials run first, then wide ones (8e6). Measured: the narrow at 1 s per
    // step, and a half-wide shape at 2.75 s (a = 0.5 s fixed + 0.5 s per 1e6 FLOPs... fitted).
    std::vector<TrialCost> trials = {cost(0, "n", 1e6, 10), cost(1, "m", 4e6, 10),
                                     cost(2, "w", 8e6, 10), cost(3, "w", 8e6, 10)};
    SweepEta eta(trials, 1);
    eta.started(0, 0);
    eta.progress(0, 1, 1.0);
    eta.progress(0, 10, 10.0);  // 1 s per step
    eta.finished(0, 10, 10.0);
    eta.started(1, 10.0);
    eta.progress(1, 1, 12.5);
    eta.progress(1, 5, 22.5);  // 2.5 s per step
    // The fit through (1e6, 1 s) and (4e6, 2.5 s): 0.5 s + 0.5 s per 1e6 FLOPs; wide: 4.5 s.
    // Start-up: trial 0 took 1 s to step 1 (= one step), trial 1 2.5 s (= one step): 0.
    EXPECT_NEAR(eta.remainingSeconds(22.5), 5 * 2.5 + 2 * 10 * 4.5, 1e-6);
    // A mean over the trials so far (10 s per trial) would say 10 + 2 * 10 = 30 s here.
    eta.finished(1, 10, 35.0);
    eta.started(2, 35.0);
    eta.progress(2, 1, 41.0);
    eta.progress(2, 2, 47.0);  // measured: 6 s per step, not the fit's 4.5
    EXPECT_NEAR(eta.remainingSeconds(47.0), 8 * 6.0 + 10 * 6.0, 1e-6);
}

TEST(SweepEta, LanesFillInRunOrderAndSeenParallelismRaisesThem) {
    std::vector<TrialCost> trials;
    for (int i = 0; i < 5; ++i) trials.push_back(cost(i, "a", 1e6, 10));
    SweepEta eta(trials, 2);
    eta.started(0, 0);
    eta.started(1, 0);
    eta.progress(0, 1, 1.0);
    eta.progress(1, 1, 1.0);
    eta.progress(0, 2, 2.0);
    eta.progress(1, 2, 2.0);  // 1 s per step, no start-up
    // Two lanes: both running end at +8; trials 2, 3 then run side by side (+10), 4 alone.
    EXPECT_NEAR(eta.remainingSeconds(2.0), 8.0 + 10.0 + 10.0, 1e-9);
    // A third trial running at once (another rank): three lanes from now on.
    eta.started(2, 2.0);
    EXPECT_NEAR(eta.remainingSeconds(2.0), 8.0 + 10.0, 1e-9);
}

TEST(SweepEta, TrialsSettledBeforeAResumeAreNoWork) {
    SweepEta eta({cost(0, "a", 1e6, 10), cost(1, "a", 1e6, 10), cost(2, "a", 1e6, 10)}, 1);
    eta.finished(0, 10, 0.0);  // from the earlier session: never started here
    eta.started(1, 0.0);
    eta.progress(1, 1, 1.0);
    eta.progress(1, 2, 2.0);
    EXPECT_NEAR(eta.remainingSeconds(2.0), 8.0 + 10.0, 1e-9);
    EXPECT_EQ(eta.endedTrials(), 1u);
}

TEST(SweepEta, EarlyEndsShortenTheTrialsStillWaiting) {
    std::vector<TrialCost> trials;
    for (int i = 0; i < 4; ++i) trials.push_back(cost(i, "a", 1e6, 10));
    SweepEta eta(trials, 1);
    for (int i = 0; i < 2; ++i) {
        eta.started(i, 10.0 * i);
        eta.progress(i, 1, 10.0 * i + 1);
        eta.progress(i, 5, 10.0 * i + 5);  // 1 s per step; both diverge at step 5
        eta.finished(i, 5, 10.0 * i + 5);
    }
    // The ended trials ran half their steps: the two waiting are expected to as well.
    EXPECT_NEAR(eta.remainingSeconds(15.0), 2 * 5.0, 1e-9);
}

TEST(SweepEta, ACalibrationEstimatesBeforeAnythingRuns) {
    SweepCalibration prior;
    prior.secondsPerStep = {{"n", 0.1}, {"w", 0.4}};
    prior.startupSeconds = 0.5;
    SweepEta eta({cost(0, "n", 1e6, 100), cost(1, "w", 8e6, 100), cost(2, "n", 1e6, 100)}, 2,
                 prior);
    // Lane 1: n (10.5 s) then n (10.5 s); lane 2: w (40.5 s).
    EXPECT_NEAR(eta.remainingSeconds(0), 40.5, 1e-9);
}

// A recorded sweep: the preset and overrides it ran, and its trials' events in time order.
struct Recorded {
    std::string preset;
    std::vector<std::string> overrides;
    struct Event {
        int trial;
        std::string kind;  // start | step | end
        int64_t step;
        double at;
    };
    std::vector<Event> events;
};

Recorded readRecording(const std::filesystem::path& path) {
    Recorded r;
    std::ifstream in(path);
    EXPECT_TRUE(in) << "cannot read " << path;
    std::string line;
    while (std::getline(in, line)) {
        if (line.rfind("# preset: ", 0) == 0) r.preset = line.substr(10);
        if (line.rfind("# override: ", 0) == 0) r.overrides.push_back(line.substr(12));
        if (line.empty() || line[0] == '#' || line.rfind("trial,", 0) == 0) continue;
        std::stringstream fields(line);
        Recorded::Event e{};
        std::string part;
        std::getline(fields, part, ',');
        e.trial = std::stoi(part);
        std::getline(fields, e.kind, ',');
        std::getline(fields, part, ',');
        e.step = std::stoll(part);
        std::getline(fields, part, ',');
        e.at = std::stod(part);
        r.events.push_back(e);
    }
    std::stable_sort(r.events.begin(), r.events.end(),
                     [](const auto& a, const auto& b) { return a.at < b.at; });
    return r;
}

// The estimate the Sweeps tab made before: the mean duration of the finished trials times the
// trials left over the parallel ones (for the comparison printed below).
double meanTrialEstimate(const Recorded& r, double now, size_t total, int parallel) {
    std::map<int, double> started;
    std::vector<double> durations;
    size_t ended = 0;
    for (const auto& e : r.events) {
        if (e.at > now) break;
        if (e.kind == "start") started[e.trial] = e.at;
        if (e.kind == "end") {
            ++ended;
            durations.push_back(e.at - started[e.trial]);
        }
    }
    if (durations.empty()) return std::nan("");
    double mean = 0;
    for (double d : durations) mean += d;
    mean /= double(durations.size());
    return mean * double(total - ended) / parallel;
}

TEST(SweepEta, EstimatesARecordedSweepWithinTolerance) {
    // data/mup_sweep_timings.csv: the real mup-sweep preset's trials (its store's step times),
    // written by data/record_sweep_timings.py. At 25, 50 and 75% of its wall time the estimate
    // must be within 20% of the time it really had left.
    constexpr double kTolerance = 0.20;
    const Recorded rec = readRecording(WAFER_SWEEP_DATA_DIR "/mup_sweep_timings.csv");
    ASSERT_FALSE(rec.events.empty());
    auto loaded = loadSweepFile(std::string(WAFER_PRESETS_DIR) + "/" + rec.preset, rec.overrides);
    ASSERT_TRUE(loaded.ok()) << loaded.error().message;
    auto plan = planSweep(*loaded);
    ASSERT_TRUE(plan.ok()) << plan.error().message;
    const double total = rec.events.back().at;
    for (double share : {0.25, 0.5, 0.75}) {
        const double now = share * total;
        SweepEta eta(trialCosts(*plan), plan->sweep.parallelTrials);
        for (const auto& e : rec.events) {
            if (e.at > now) break;
            if (e.kind == "start") eta.started(e.trial, e.at);
            if (e.kind == "step") eta.progress(e.trial, e.step, e.at);
            if (e.kind == "end") eta.finished(e.trial, e.step, e.at);
        }
        const double estimate = eta.remainingSeconds(now);
        const double actual = total - now;
        const double old =
            meanTrialEstimate(rec, now, plan->trials.size(), plan->sweep.parallelTrials);
        std::printf("at %2.0f%% (%s of %s): %s left, estimated %s (the mean-trial estimate: %s)\n",
                    100 * share, formatClock(now).c_str(), formatClock(total).c_str(),
                    formatClock(actual).c_str(), formatClock(estimate).c_str(),
                    formatClock(old).c_str());
        EXPECT_NEAR(estimate, actual, kTolerance * actual) << "at " << share * 100 << "%";
    }
}

}  // namespace
}  // namespace ws::sweep
