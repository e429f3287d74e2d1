// SPDX-License-Identifier: GPL-3.0-or-later
// Synthetic sweep results for the sweep views' GUI tests and benchmark: trials over width x rate x
// heads x {sp, mup} with a loss bowl around 2^-8 that μP deepens with width, one diverged trial
// (NaN) and one pruned at an early rung. No training; the same trials on every call.
// Header-only; pure functions, safe from any thread.
#pragma once

#include <QString>
#include <cmath>
#include <string>
#include <vector>

#include "engine/sweep/results.h"

namespace ws::testing {

inline constexpr int kDivergedTrial = 13;
inline constexpr int kPrunedTrial = 17;

// The swept keys of syntheticTrials(), in axis order.
inline const std::vector<std::string>& syntheticTrialKeys() {
    static const std::vector<std::string> keys = {"model.hidden_size", "optimizer.learning_rate",
                                                  "model.num_heads"};
    return keys;
}

// A value as the sweep records it, to 17 significant digits.
inline std::string trialNumber(double v) {
    return QString::number(v, 'g', 17).toStdString();
}

inline std::vector<sweep::TrialResult> syntheticTrials(int count = 20) {
    using sweep::TrialStatus;
    std::vector<sweep::TrialResult> trials;
    for (int i = 0; i < count; ++i) {
        sweep::TrialResult t;
        t.trial = i;
        const double width = 32 << (i % 3);
        const int exponent = -10 + (i * 7) % 5;
        const int heads = 2 << ((i / 2) % 3);
        t.parametrization = i % 2 ? "mup" : "sp";
        t.params = {{"model.hidden_size", trialNumber(width)},
                    {"optimizer.learning_rate", trialNumber(std::exp2(exponent))},
                    {"model.num_heads", trialNumber(heads)},
                    {"parametrization", t.parametrization}};
        t.seed = 7;
        t.status = TrialStatus::Finished;
        t.steps = 100;
        const double bowl = 0.12 * (exponent + 8) * (exponent + 8);
        t.finalLoss = 2.1 + bowl - (i % 2 ? 0.08 : 0.02) * std::log2(width / 32) + 0.01 * (i % 7) +
                      0.04 * (heads == 8);
        if (i == kDivergedTrial) {
            t.status = TrialStatus::Diverged;
            t.finalLoss = std::nan("");
            t.reason = "loss is NaN at step 41";
        } else if (i == kPrunedTrial) {
            t.status = TrialStatus::Pruned;
            t.finalLoss = std::nan("");
            t.rungLosses = {{25, 3.35}};
            t.reason = "below the top third at rung 25";
        }
        trials.push_back(t);
    }
    return trials;
}

}  // namespace ws::testing
