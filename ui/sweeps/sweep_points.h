// SPDX-License-Identifier: GPL-3.0-or-later
// SweepPoints: a sweep's finished trials grouped for the sweep views: per parametrization, per
// width and per log2 learning rate, the seeds' final losses (mean, min, max, sd) and how many
// seeds diverged. Diverged seeds are counted, never dropped; pruned trials are left out of the
// loss statistics (ASHA stopped them early, their loss is not a final one).
// Thread-safety: plain values and pure functions.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "engine/sweep/results.h"

namespace ws::ui {

inline constexpr const char* kLrKey = "optimizer.learning_rate";
inline constexpr const char* kWidthKey = "model.hidden_size";

struct SweepPoint {
    double log2Lr = 0.0;
    std::vector<double> losses;  // finite final losses, one per finished seed
    int diverged = 0;            // seeds that diverged (NaN or above sweep.max_loss)
    int pruned = 0;
    double mean() const;
    double min() const;
    double max() const;
    double sd() const;  // sample standard deviation; 0 with one seed
};

struct SweepWidthCurve {
    double width = 0.0;
    std::vector<SweepPoint> points;  // by ascending log2 LR
};

struct SweepPanelData {
    std::string parametrization;          // "" when the sweep names none
    std::vector<SweepWidthCurve> curves;  // by ascending width
};

// One entry per parametrization, in the order given (names missing from the results get an
// empty panel, so a live sweep's panels exist before its first trial ends).
std::vector<SweepPanelData> groupSweepPoints(const std::vector<sweep::TrialResult>& trials,
                                             const std::vector<std::string>& parametrizations);

// "2^-8" for powers of two, else the value in %g.
std::string learningRateLabel(double log2Lr);

}  // namespace ws::ui
