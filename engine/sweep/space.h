// SPDX-License-Identifier: GPL-3.0-or-later
// A sweep's space: loading a sweep definition (a `sweep:` section in a config, or a sweep file
// naming its `base:` config) and expanding it into trials, each a full config ready for a
// Session. Every value reaches the config through applyOverride(), so a swept key that does not
// exist gets the config's own "did you mean" error, and every trial config is validated before
// anything runs. Thread-safe: pure functions of their arguments.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "engine/config/config_yaml.h"
#include "engine/core/result.h"

namespace ws::sweep {

// The axis name of sweep.parametrization in a trial's parameters (and in --json output).
inline constexpr const char* kParametrizationKey = "parametrization";

struct TrialParam {
    std::string key;    // config key path, or "parametrization"
    std::string value;  // YAML scalar text as applied ("32", "0.000244140625", "mup")
};

struct TrialSpec {
    int index = 0;                   // position in run order (seed-major: a first pass over
                                     // every point before any point's second seed)
    std::vector<TrialParam> params;  // one per axis, in the order the sweep declares them
    std::string parametrization;     // "" when the sweep names none
    int64_t seed = 0;                // runconfig.seed of this trial
    config::LoadedConfig config;     // the trial's whole config (its sweep section removed)

    // Canonical "key=value;...;seed=N": the trial's identity when a sweep resumes.
    std::string pointKey() const;
    // The value of one parameter, or "" when the trial has no such parameter.
    std::string param(const std::string& key) const;
};

struct SweepPlan {
    config::LoadedConfig definition;  // the base config with its sweep section, as loaded
    config::SweepConfig sweep;
    std::vector<TrialSpec> trials;
    size_t points = 0;  // distinct parameter combinations (trials = points x seeds)
    // Set when the sweep has more trials than sweep.max_trials: running it needs a confirmation
    // (the CLI's --yes, a dialog in the GUI); the message says so and how big it is.
    bool needsConfirmation = false;
    std::string confirmationMessage;
};

// Loads a sweep definition: a config file with a `sweep:` section, or a file holding only a
// `sweep:` section whose `base:` names the config to sweep over (relative to the file). The
// overrides ("key.path=value", also sweep.* keys) apply after both are combined.
Result<config::LoadedConfig> loadSweepFile(const std::filesystem::path& path,
                                           const std::vector<std::string>& overrides = {});

// Expands and checks the sweep in `definition.config.sweep`. Errors (all found, one per line):
// no sweep section, an empty axis or range, contradictory settings (a key swept and also set by
// a parametrization, runconfig.seed swept while seeds > 1, method grid with num_trials, ...), an
// unknown key (with a did-you-mean), a parametrization nobody defined, a trial config that fails
// validation (naming the trial's values), a space too large to expand at all.
Result<SweepPlan> planSweep(const config::LoadedConfig& definition);

// log2 of a swept value if it is a positive number, else NaN (for charts and analysis).
double log2Value(const std::string& value);

}  // namespace ws::sweep
