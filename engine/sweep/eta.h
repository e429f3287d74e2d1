// SPDX-License-Identifier: GPL-3.0-or-later
// SweepEta: how long a sweep has left, from what it measured so far. Trials of different shapes
// (widths, depths, batch) cost differently, so the estimate is built per trial, not from a mean
// trial: each trial's steps left times the seconds per step measured for its shape (trials of
// one shape share it; a shape not measured yet gets a fit of seconds per step against FLOPs per
// step over the measured shapes), plus the start-up time measured per trial, laid out on the
// sweep's lanes (the trials that run at once) in the order the runner starts them. Trials that
// end early (diverged, pruned) are expected to, at the rate measured so far. Before any trial
// has run, a calibration (a few timed steps of each shape, calibrateSweep) gives the same
// estimate for the confirmation a front end asks before it starts.
//
// Used by the studio's Sweeps tab and status bar and by `wafer sweep`'s progress line, so both
// say the same. Times are seconds on any clock the caller keeps (the caller passes `now`).
// Thread-safety: SweepEta is a plain value, one thread at a time; the free functions are
// thread-safe (calibrateSweep trains on the calling thread).
#pragma once

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "engine/core/result.h"
#include "engine/sweep/space.h"

namespace ws::sweep {

// What one trial will cost, known from its config before it runs.
struct TrialCost {
    int trial = 0;
    std::string shape;          // trials with equal shapes cost the same per step
    double flopsPerStep = 0.0;  // training FLOPs of one step (6·N·tokens + attention)
    int64_t maxSteps = 0;
};

// The cost of every trial of a plan, in run order.
std::vector<TrialCost> trialCosts(const SweepPlan& plan);

// Timed steps of each shape before a sweep starts (calibrateSweep): a prior for SweepEta.
struct SweepCalibration {
    std::map<std::string, double> secondsPerStep;  // by TrialCost::shape
    double startupSeconds = 0.0;                   // from a trial's start to its first step
};

class SweepEta {
public:
    // `lanes`: trials that run at once (sweep.parallel_trials, or the ranks across processes);
    // more trials seen running at once than that raise it.
    SweepEta(std::vector<TrialCost> trials, int lanes,
             std::optional<SweepCalibration> prior = std::nullopt);

    void started(int trial, double now);
    void progress(int trial, int64_t step, double now);
    // Any end: finished, pruned, diverged, failed, stopped. A trial never started here (settled
    // before a resume) only stops counting as work left.
    void finished(int trial, int64_t stepsRun, double now);

    // Seconds until the last trial ends; NaN while nothing (no measurement, no prior) says how
    // fast a step is; 0 when no work is left.
    double remainingSeconds(double now) const;
    // Trials that ended (here or before a resume) and trials in total.
    size_t endedTrials() const;
    size_t totalTrials() const { return m_trials.size(); }

private:
    struct Seen {
        double startedAt = -1;   // <0: not started here
        int64_t firstStep = -1;  // first progress seen: (step, time)
        double firstAt = 0;
        int64_t lastStep = 0;  // last progress seen
        double lastAt = 0;
        bool ended = false;
        int64_t stepsRun = 0;
        double endAt = 0;
    };
    // What the measurements say so far, computed once per estimate.
    struct Rates {
        std::map<std::string, double> measured;         // seconds per step by shape
        std::vector<std::pair<double, double>> points;  // (FLOPs, seconds) of measured shapes
        bool fitted = false;  // seconds per step = intercept + slope * FLOPs
        double intercept = 0, slope = 0;
        std::map<std::string, double> stepShare;  // of max_steps the ended trials ran, by shape
        double defaultShare = 1.0;                // the same over every ended trial
        double startup = 0;                       // from a trial's start to its first step
        double windDown = 0;                      // from its last step to its end
    };
    Rates rates() const;
    // Seconds per step of a shape: measured, else the prior's, else the fit over the measured
    // shapes by FLOPs (or, with one shape or no fit, proportional to the nearest one); NaN when
    // nothing is known.
    double secondsPerStep(const Rates& rates, const TrialCost& cost) const;

    std::vector<TrialCost> m_trials;
    std::map<int, size_t> m_index;  // trial -> position in m_trials
    std::vector<Seen> m_seen;
    int m_lanes = 1;
    std::optional<SweepCalibration> m_prior;
};

// Times each distinct shape of `plan` for a few steps on this machine (sessions not recorded in
// any store, with the compute threads a trial will get), for an estimate before the sweep
// starts. `stop` (may be null) cancels it. Errors: a trial config that does not train.
struct CalibrationOptions {
    std::filesystem::path cacheDir;  // token caches (empty: userCacheDir())
    int cores = 0;                   // cores the sweep shares out (0: those this process may use)
    int steps = 4;                   // timed steps per shape (the first is warm-up)
    const std::atomic<bool>* stop = nullptr;
};
Result<SweepCalibration> calibrateSweep(const SweepPlan& plan, const CalibrationOptions& options);

// The whole sweep's estimated wall time from a calibration (SweepEta at its start).
double estimateSweepSeconds(const SweepPlan& plan, const SweepCalibration& calibration);

}  // namespace ws::sweep
