// SPDX-License-Identifier: GPL-3.0-or-later
// Sweep trials in the run store: a sweep is a run of kind "sweep"; each trial is a run of kind
// "sweep-trial" whose sweep_id names it, plus one sweep_trials row (schema.cpp) holding the
// trial's place in the sweep, its parameters and the sweep's verdict on it. The sweep runner
// (engine/sweep/) writes these rows; the CLI and GUI read them.
// Thread-safety and failures as RunStore's (these go through its writer thread and reader).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "engine/core/result.h"
#include "engine/store/run_store.h"

namespace ws::store {

struct SweepTrialRecord {
    int64_t sweepRun = 0;
    int trial = 0;
    std::string pointKey;    // canonical "key=value;...;seed=N", compared on resume
    std::string paramsJson;  // {"config.key": value, ...}
    int64_t seed = 0;
    std::optional<int64_t> run;  // the trial's own run, once created
    std::string status;          // running|finished|pruned|diverged|stopped|failed
    int64_t steps = 0;
    double finalLoss = 0.0;  // NaN when not finite / unknown
    std::string rungLossesJson = "{}";
    std::string reason;
};

// Inserts or replaces the row (sweep_run, trial).
Status saveSweepTrial(RunStore& store, const SweepTrialRecord& record);
// Every trial row of one sweep, by trial index.
Result<std::vector<SweepTrialRecord>> sweepTrials(const RunStore& store, int64_t sweepRun);

}  // namespace ws::store
