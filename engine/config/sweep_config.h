// SPDX-License-Identifier: GPL-3.0-or-later
// The `sweep:` section: a hyperparameter sweep over any config keys, declared with the same
// visitor protocol as the rest of the config (config.h) so load, save, --set overrides, the field
// catalogue and the GUI form all see it. Two field types here are maps keyed by config key paths
// (SweepParameters, OverrideBundles); the config layer only reads and writes them; what the keys
// mean (that they exist, that the values fit) is checked when the sweep is planned
// (engine/sweep/space.h), through applyOverride, so a key added to the config later (μP's
// model.mup_*) is sweepable without touching this file.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "engine/config/fields.h"

namespace ws::config {

// An arithmetic range of values min, min + step, ... up to max (inclusive).
struct SweepRange {
    double min = 0.0;
    double max = 0.0;
    double step = 1.0;

    bool operator==(const SweepRange&) const = default;

    template <class V>
    void visit(V& v) {
        v.field(min, {.key = "min", .help = "First value"});
        v.field(max, {.key = "max", .help = "Last value (included when a step lands on it)"});
        v.field(step, {.key = "step", .help = "Distance between values", .min = 0});
    }
};

// One swept key: exactly one of values, range, log2_range; optionally `with` companion keys
// that take their i-th value together with the axis's i-th value (hidden_size 64 goes with
// num_heads 4 and filter_size 256), so linked settings are not multiplied into a grid.
struct SweepAxis {
    std::string key;                      // config key path, e.g. optimizer.learning_rate
    std::vector<std::string> values;      // YAML scalars as written ("32", "0.001", "cosine")
    std::optional<SweepRange> range;      // values min..max by step
    std::optional<SweepRange> log2Range;  // values 2^min..2^max, exponent by step
    std::vector<std::pair<std::string, std::vector<std::string>>> with;  // key -> one per value

    bool operator==(const SweepAxis&) const = default;
};

// sweep.parameters: {config.key: {values: [...]} | {range: {...}} | {log2_range: {...}}, ...},
// in the order written (the last key varies fastest in a grid).
struct SweepParameters {
    std::vector<SweepAxis> axes;
    bool operator==(const SweepParameters&) const = default;
};

// A named set of overrides applied together, e.g. mup: {model.mup_base_hidden_size: 32}.
struct OverrideBundle {
    std::string name;
    std::vector<std::pair<std::string, std::string>> overrides;  // key path -> YAML scalar text
    bool operator==(const OverrideBundle&) const = default;
};

struct OverrideBundles {
    std::vector<OverrideBundle> bundles;
    bool operator==(const OverrideBundles&) const = default;
};

// Asynchronous successive halving (ASHA): at each rung a trial continues only if its loss is
// among the best 1/reduction_factor of the trials (of its group) that reached that rung.
struct EarlyStoppingConfig {
    std::vector<int64_t> rungs;  // steps at which trials are compared; empty: no early stopping
    int reductionFactor = 3;
    std::vector<std::string> groupBy;  // keys whose trials are ranked only among themselves

    bool operator==(const EarlyStoppingConfig&) const = default;

    template <class V>
    void visit(V& v) {
        v.field(rungs, {.key = "rungs",
                        .help = "Steps at which trials are compared and the worse ones stopped "
                                "(empty: every trial runs to max_steps)",
                        .unit = "steps",
                        .min = 1});
        v.field(reductionFactor,
                {.key = "reduction_factor",
                 .help = "At each rung keep the best 1/reduction_factor of the trials that "
                         "reached it (stopping only once at least that many have)",
                 .min = 2});
        v.field(groupBy,
                {.key = "group_by",
                 .help = "Swept keys (or parametrization) whose values form separate "
                         "competitions, e.g. [parametrization, model.hidden_size] so every "
                         "width keeps its own best learning rates"});
    }
};

struct SweepConfig {
    std::string base;  // a separate sweep file: the config it sweeps over
    std::string method = "grid";
    int numTrials = 0;
    int64_t seed = 0;
    SweepParameters parameters;
    std::vector<std::string> parametrization;  // names of bundles; empty: the config as it is
    OverrideBundles parametrizations;
    int seeds = 1;
    int64_t maxSteps = 0;
    int parallelTrials = 1;
    double maxLoss = 0.0;
    int finalLossSteps = 10;
    int maxTrials = 200;
    EarlyStoppingConfig earlyStopping;

    bool operator==(const SweepConfig&) const = default;

    template <class V>
    void visit(V& v) {
        v.field(base, {.key = "base",
                       .help = "In a sweep file of its own: the config file it sweeps over "
                               "(relative to the sweep file); empty: this file's own sections"});
        v.field(method, {.key = "method",
                         .help = "grid: every combination; random: num_trials combinations drawn "
                                 "(seeded) from the same values",
                         .choices = {"grid", "random"}});
        v.field(numTrials, {.key = "num_trials",
                            .help = "random: how many combinations to draw (before seeds)",
                            .min = 0});
        v.field(seed, {.key = "seed",
                       .help = "random: seed of the draw (the same seed, the same trials)"});
        v.field(parameters, {.key = "parameters",
                             .help = "Swept keys: {config.key: {values: [...]} | {range: {min, "
                                     "max, step}} | {log2_range: {min, max, step}}}"});
        v.field(parametrization,
                {.key = "parametrization",
                 .help = "Parametrizations to run, names from parametrizations (sp is built "
                         "in: no overrides); a swept axis of its own"});
        v.field(parametrizations,
                {.key = "parametrizations",
                 .help = "Named override bundles: {name: {config.key: value, ...}}, e.g. mup: "
                         "{model.mup_base_hidden_size: 32}"});
        v.field(seeds, {.key = "seeds",
                        .help = "Repeat every point with this many seeds (runconfig.seed, "
                                "runconfig.seed + 1, ...)",
                        .min = 1,
                        .max = 100});
        v.field(maxSteps, {.key = "max_steps",
                           .help = "Training steps of each trial (0: runconfig.max_steps)",
                           .unit = "steps",
                           .min = 0});
        v.field(parallelTrials,
                {.key = "parallel_trials",
                 .help = "Trials run at once; the cores are shared out between them",
                 .min = 1,
                 .max = 64});
        v.field(maxLoss, {.key = "max_loss",
                          .help = "A trial whose training loss exceeds this is stopped and marked "
                                  "diverged (0: only NaN or infinite loss)",
                          .unit = "nats",
                          .min = 0});
        v.field(finalLossSteps, {.key = "final_loss_steps",
                                 .help = "A trial's final_loss is the mean training loss of its "
                                         "last this many steps",
                                 .unit = "steps",
                                 .min = 1});
        v.field(maxTrials, {.key = "max_trials",
                            .help = "Sweeps with more trials than this need an explicit "
                                    "confirmation (--yes)",
                            .min = 1});
        v.section(earlyStopping,
                  {.key = "early_stopping", .help = "Successive halving (ASHA) at rungs"});
    }
};

}  // namespace ws::config
