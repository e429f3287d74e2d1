// SPDX-License-Identifier: GPL-3.0-or-later
// What a sweep produces: one TrialResult per trial, and the μTransfer analysis over them (per
// parametrization: the best log2 learning rate of each width, the drift of that optimum across
// widths, and the transfer regret). Used by the runner, the CLI's summary and the GUI's charts.
// Thread-safety: plain values and pure functions.
#pragma once

#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/sweep/space.h"

namespace ws::sweep {

enum class TrialStatus { Running, Finished, Pruned, Diverged, Stopped, Failed };
const char* trialStatusName(TrialStatus status);  // "finished", "pruned", ...
std::optional<TrialStatus> parseTrialStatus(std::string_view name);
// Finished, pruned and diverged trials are results; the others run again when a sweep resumes.
bool isSettled(TrialStatus status);

struct TrialResult {
    int trial = 0;
    std::vector<TrialParam> params;
    std::string parametrization;
    int64_t seed = 0;
    TrialStatus status = TrialStatus::Running;
    int64_t steps = 0;
    // Mean training loss of the last sweep.final_loss_steps steps; NaN when not finite (a
    // diverged trial) or when the trial never trained.
    double finalLoss = std::numeric_limits<double>::quiet_NaN();
    std::string reason;  // why it was pruned, diverged, stopped or failed
    int64_t runId = -1;
    std::map<int64_t, double> rungLosses;  // loss at each ASHA rung it reached
    // Training wall time; NaN for a trial settled before a resume (see its run's summary).
    double elapsedSec = std::numeric_limits<double>::quiet_NaN();

    std::string param(const std::string& key) const;
};

struct WidthOptimum {
    double width = 0;
    double bestLog2Lr = std::numeric_limits<double>::quiet_NaN();  // NaN: no usable point
    double bestLoss = std::numeric_limits<double>::quiet_NaN();    // seed-mean final loss there
    // Seed-mean final loss per log2 LR (+inf when a seed diverged; pruned seeds left out).
    std::map<double, double> lossByLog2Lr;
};

struct ParametrizationTransfer {
    std::string parametrization;                                 // "" when the sweep names none
    std::vector<WidthOptimum> widths;                            // by ascending width
    double gridStep = std::numeric_limits<double>::quiet_NaN();  // of log2 LR
    // (max - min) of the best log2 LR across widths, in grid steps; NaN with fewer than 2 widths.
    double driftSteps = std::numeric_limits<double>::quiet_NaN();
    // Seed-mean loss of the widest model at the narrowest model's best LR minus the widest
    // model's own best; NaN when unknown (see note), +inf when that point diverged.
    double regret = std::numeric_limits<double>::quiet_NaN();
    std::string note;  // why drift or regret is unknown
};

// Groups trials by parametrization, width (widthKey) and log2 learning rate (lrKey); trials
// that lack either key are ignored. Empty when no trial has both.
std::vector<ParametrizationTransfer> analyzeTransfer(
    const std::vector<TrialResult>& trials, const std::string& lrKey = "optimizer.learning_rate",
    const std::string& widthKey = "model.hidden_size");

}  // namespace ws::sweep
