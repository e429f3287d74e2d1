// SPDX-License-Identifier: GPL-3.0-or-later
// Loading and expanding a sweep (see space.h).
#include "engine/sweep/space.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

#include "engine/config/text_format.h"  // closestMatch for "did you mean" hints
#include "engine/config/yaml_flow.h"    // formatScalar: a swept value as override text

namespace ws::sweep {

namespace {

constexpr size_t kMaxAxisValues = 10000;
constexpr double kMaxExpandedTrials = 1e6;  // beyond this not even a confirmation helps
constexpr size_t kMaxReportedErrors = 30;

Error joinErrors(std::vector<std::string> errors) {
    // The same problem found in many trials is reported once.
    std::vector<std::string> unique;
    for (auto& e : errors)
        if (std::find(unique.begin(), unique.end(), e) == unique.end()) unique.push_back(e);
    std::string message = "the sweep has problems:";
    for (size_t i = 0; i < unique.size() && i < kMaxReportedErrors; ++i)
        message += "\n  - " + unique[i];
    if (unique.size() > kMaxReportedErrors)
        message += fmt::format("\n  ({} more not shown)", unique.size() - kMaxReportedErrors);
    return Error{message};
}

// Text of a computed value: integers without a fraction, others to 12 significant digits
// (so 0.1 + 2 * 0.1 reads 0.3).
std::string valueText(double v) {
    return fmt::format("{:.12g}", v);
}

// "--set key=value: unknown key ..." from applyOverride, said in the sweep's words.
std::string overrideProblem(const std::string& where, const Error& error) {
    std::string message = error.message;
    const size_t colon = message.find(": ");
    if (message.rfind("--set ", 0) == 0 && colon != std::string::npos)
        message = message.substr(colon + 2);
    return where + ": " + message;
}

std::string overrideText(const std::string& key, const std::string& value) {
    return key + "=" + config::formatScalar(value);
}

struct Axis {
    std::string key;
    std::vector<std::string> values;
    std::vector<std::pair<std::string, std::vector<std::string>>> with;  // companions
};

// splitmix64: a tiny, fully specified generator, so a seeded random sweep draws the same trials
// with every compiler and standard library.
uint64_t splitmix64(uint64_t& state) {
    uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

void checkSettings(const config::Config& c, const config::SweepConfig& s,
                   std::vector<std::string>& errors) {
    if (s.method == "random" && s.numTrials <= 0)
        errors.push_back("sweep.num_trials: method random needs num_trials >= 1");
    if (s.method == "grid" && s.numTrials > 0)
        errors.push_back(
            "sweep.num_trials is set but sweep.method is grid (which runs every combination): "
            "set method: random, or remove num_trials");
    const int64_t steps = s.maxSteps > 0 ? s.maxSteps : c.runconfig.maxSteps;
    if (steps <= 0)
        errors.push_back(
            "sweep.max_steps and runconfig.max_steps are both 0: trials would not train");
    const auto& rungs = s.earlyStopping.rungs;
    for (size_t i = 0; i < rungs.size(); ++i) {
        if (rungs[i] < 1)
            errors.push_back(
                fmt::format("sweep.early_stopping.rungs[{}] = {}: must be >= 1", i, rungs[i]));
        else if (i > 0 && rungs[i] <= rungs[i - 1])
            errors.push_back("sweep.early_stopping.rungs must increase: " +
                             fmt::format("{} follows {}", rungs[i], rungs[i - 1]));
        else if (rungs[i] >= steps)
            errors.push_back(fmt::format(
                "sweep.early_stopping.rungs[{}] = {}: a rung must come before the last step ({})",
                i, rungs[i], steps));
    }
    for (const auto& axis : s.parameters.axes) {
        const std::string where = "sweep.parameters." + axis.key;
        if (axis.key == kParametrizationKey)
            errors.push_back(where +
                             ": parametrizations are swept with sweep.parametrization "
                             "(names from sweep.parametrizations)");
        else if (axis.key.rfind("sweep", 0) == 0)
            errors.push_back(where + ": a sweep cannot sweep its own settings");
        if (axis.key == "runconfig.seed" && s.seeds > 1)
            errors.push_back(where +
                             " is swept and sweep.seeds > 1 also varies runconfig.seed: "
                             "use one of them");
        if (axis.key == "runconfig.max_steps" && s.maxSteps > 0)
            errors.push_back(where + " is swept and sweep.max_steps also sets it: use one of them");
    }
}

// One axis's values; errors for empty and malformed ranges.
std::optional<Axis> expandAxis(const config::SweepAxis& spec, std::vector<std::string>& errors) {
    const std::string where = "sweep.parameters." + spec.key;
    Axis axis{spec.key, {}, spec.with};
    if (!spec.range && !spec.log2Range) {
        if (spec.values.empty()) {
            errors.push_back(where + ".values is empty: give at least one value");
            return std::nullopt;
        }
        std::set<std::string> seen;
        for (const auto& v : spec.values) {
            if (!seen.insert(v).second) {
                errors.push_back(where + ".values lists " + v + " twice");
                return std::nullopt;
            }
        }
        axis.values = spec.values;
        return axis;
    }
    const bool log2 = spec.log2Range.has_value();
    const config::SweepRange& r = log2 ? *spec.log2Range : *spec.range;
    const std::string form = where + (log2 ? ".log2_range" : ".range");
    if (!(r.step > 0) || !std::isfinite(r.step)) {
        errors.push_back(form + ".step must be > 0");
        return std::nullopt;
    }
    if (r.min > r.max) {
        errors.push_back(fmt::format("{} is empty: min {} is above max {}", form, valueText(r.min),
                                     valueText(r.max)));
        return std::nullopt;
    }
    const double count = std::floor((r.max - r.min) / r.step + 1e-9) + 1;
    if (count > double(kMaxAxisValues)) {
        errors.push_back(fmt::format("{} has {:.0f} values (at most {}): use a larger step", form,
                                     count, kMaxAxisValues));
        return std::nullopt;
    }
    for (int64_t i = 0; i < int64_t(count); ++i) {
        const double x = r.min + double(i) * r.step;
        axis.values.push_back(valueText(log2 ? std::exp2(x) : x));
    }
    return axis;
}

}  // namespace

std::string TrialSpec::pointKey() const {
    std::string key;
    for (const auto& p : params) key += p.key + "=" + p.value + ";";
    return key + "seed=" + std::to_string(seed);
}

std::string TrialSpec::param(const std::string& key) const {
    for (const auto& p : params)
        if (p.key == key) return p.value;
    return {};
}

double log2Value(const std::string& value) {
    const std::optional<double> v = config::parseDouble(value);
    if (!v || !(*v > 0)) return std::numeric_limits<double>::quiet_NaN();
    return std::log2(*v);
}

Result<config::LoadedConfig> loadSweepFile(const std::filesystem::path& path,
                                           const std::vector<std::string>& overrides) {
    auto file = config::loadConfigFile(path);
    if (!file.ok()) return file.error();
    if (!file->config.sweep)
        return Error{path.string() +
                     ": no sweep: section; add one (see presets/mup-sweep.yaml) or give "
                     "a sweep file whose sweep.base names the config to sweep over"};
    config::LoadedConfig combined = std::move(file).value();
    if (!combined.config.sweep->base.empty()) {
        config::Config rest = combined.config;
        rest.sweep.reset();
        if (!(rest == config::Config{}))
            return Error{path.string() +
                         ": a sweep file with sweep.base holds only the sweep: section; put "
                         "other settings in the base config, in sweep.parameters or in --set"};
        std::filesystem::path basePath(combined.config.sweep->base);
        if (basePath.is_relative()) basePath = combined.sourceFile.parent_path() / basePath;
        auto base = config::loadConfigFile(basePath.lexically_normal());
        if (!base.ok()) return Error{path.string() + ": sweep.base: " + base.error().message};
        if (base->config.sweep)
            return Error{path.string() + ": sweep.base " + basePath.string() +
                         " has a sweep: section of its own; a base config cannot be a sweep"};
        config::LoadedConfig merged = std::move(base).value();
        merged.config.sweep = combined.config.sweep;
        merged.warnings.insert(merged.warnings.end(), combined.warnings.begin(),
                               combined.warnings.end());
        merged.sourceFile = combined.sourceFile;
        combined = std::move(merged);
    }
    std::vector<std::string> errors;
    for (const auto& o : overrides) {
        Status s = config::applyOverride(combined.config, o);
        if (!s.ok()) errors.push_back(s.error().message);
    }
    if (!errors.empty()) {
        std::string message;
        for (const auto& e : errors) message += (message.empty() ? "" : "\n") + e;
        return Error{message};
    }
    if (!combined.config.sweep) return Error{"--set sweep=null removed the sweep: nothing to run"};
    return combined;
}

namespace {

// Parametrizations: named bundles (sp is built in, empty), each override checked once on the
// base config. The keys they set go to bundleKeys.
std::vector<config::OverrideBundle> checkParametrizations(const config::SweepConfig& s,
                                                          const config::Config& base,
                                                          std::set<std::string>& bundleKeys,
                                                          std::vector<std::string>& errors) {
    std::vector<std::string> bundleNames;
    for (const auto& b : s.parametrizations.bundles) bundleNames.push_back(b.name);
    if (std::find(bundleNames.begin(), bundleNames.end(), "sp") == bundleNames.end())
        bundleNames.push_back("sp");
    std::vector<config::OverrideBundle> bundles;
    for (const auto& name : s.parametrization) {
        if (std::count(s.parametrization.begin(), s.parametrization.end(), name) > 1) {
            errors.push_back("sweep.parametrization lists " + name + " twice");
            break;
        }
        auto it = std::find_if(s.parametrizations.bundles.begin(), s.parametrizations.bundles.end(),
                               [&](const auto& b) { return b.name == name; });
        if (it == s.parametrizations.bundles.end() && name != "sp") {
            std::string message = "sweep.parametrization: " + name +
                                  " is not defined in sweep.parametrizations (defined: " +
                                  config::joinStrings(bundleNames, ", ") + ")";
            if (auto hint = config::closestMatch(name, bundleNames))
                message += "; did you mean " + *hint + "?";
            errors.push_back(message);
            continue;
        }
        config::OverrideBundle bundle =
            it == s.parametrizations.bundles.end() ? config::OverrideBundle{"sp", {}} : *it;
        for (const auto& [key, value] : bundle.overrides) {
            bundleKeys.insert(key);
            config::Config probe = base;
            if (Status st = config::applyOverride(probe, overrideText(key, value)); !st.ok())
                errors.push_back(
                    overrideProblem("sweep.parametrizations." + name + "." + key, st.error()));
        }
        bundles.push_back(std::move(bundle));
    }
    return bundles;
}

// An axis's companion keys (`with`): one value per value of the axis, not swept or set by a
// parametrization too, each value accepted by the base config. False when one is unusable.
bool checkCompanions(const Axis& axis, const config::SweepConfig& s, const config::Config& base,
                     const std::set<std::string>& bundleKeys, std::vector<std::string>& errors) {
    bool companionsOk = true;
    for (const auto& [key, list] : axis.with) {
        const std::string where = "sweep.parameters." + axis.key + ".with." + key;
        if (list.size() != axis.values.size()) {
            errors.push_back(fmt::format("{} has {} values but {} has {}: give one per value",
                                         where, list.size(), axis.key, axis.values.size()));
            companionsOk = false;
            continue;
        }
        for (const auto& other : s.parameters.axes)
            if (other.key == key)
                errors.push_back(where +
                                 " is also swept on its own: the two contradict each "
                                 "other");
        if (bundleKeys.count(key))
            errors.push_back(where +
                             " is also set by a parametrization in "
                             "sweep.parametrizations: the two contradict each other");
        for (const auto& v : list) {
            config::Config probe = base;
            if (Status st = config::applyOverride(probe, overrideText(key, v)); !st.ok()) {
                errors.push_back(overrideProblem(where, st.error()));
                companionsOk = false;
                break;
            }
        }
    }
    return companionsOk;
}

// Axes: values, each checked on the base config once; the usable ones, in declared order.
std::vector<Axis> checkAxes(const config::SweepConfig& s, const config::Config& base,
                            const std::set<std::string>& bundleKeys,
                            std::vector<std::string>& errors) {
    std::vector<Axis> axes;
    for (const auto& spec : s.parameters.axes) {
        std::optional<Axis> axis = expandAxis(spec, errors);
        if (!axis) continue;
        if (!checkCompanions(*axis, s, base, bundleKeys, errors)) continue;
        if (bundleKeys.count(axis->key))
            errors.push_back("sweep.parameters." + axis->key +
                             " is swept and also set by a parametrization in "
                             "sweep.parametrizations: the two contradict each other");
        bool keyOk = true;
        for (const auto& v : axis->values) {
            config::Config probe = base;
            if (Status st = config::applyOverride(probe, overrideText(axis->key, v)); !st.ok()) {
                errors.push_back(overrideProblem("sweep.parameters." + axis->key, st.error()));
                keyOk = false;
                break;
            }
        }
        if (keyOk) axes.push_back(std::move(*axis));
    }
    return axes;
}

// early_stopping.group_by names swept keys only; and the sweep sweeps something.
void checkGroupsAndSize(const config::SweepConfig& s, const std::vector<Axis>& axes,
                        bool parametrized, std::vector<std::string>& errors) {
    std::vector<std::string> axisKeys;
    for (const auto& a : axes) axisKeys.push_back(a.key);
    if (parametrized) axisKeys.push_back(kParametrizationKey);
    for (const auto& g : s.earlyStopping.groupBy) {
        if (std::find(axisKeys.begin(), axisKeys.end(), g) != axisKeys.end()) continue;
        std::string message =
            "sweep.early_stopping.group_by: " + g + " is not swept (swept: " +
            (axisKeys.empty() ? std::string("nothing") : config::joinStrings(axisKeys, ", ")) + ")";
        if (auto hint = config::closestMatch(g, axisKeys))
            message += "; did you mean " + *hint + "?";
        errors.push_back(message);
    }
    if (s.parameters.axes.empty() && s.parametrization.empty() && s.seeds <= 1)
        errors.push_back(
            "the sweep is empty: give sweep.parameters (e.g. optimizer.learning_rate: "
            "{log2_range: {min: -12, max: -4, step: 1}}), sweep.parametrization or seeds > 1");
}

// The grid points to run, in grid order: all of them, or with method random the first
// num_trials of a seeded shuffle. `sizes` are the grid's dimensions (the last fastest).
Result<std::vector<size_t>> gridPoints(const config::SweepConfig& s,
                                       const std::vector<size_t>& sizes) {
    double total = 1;
    for (size_t n : sizes) total *= double(n);
    if (total * s.seeds > kMaxExpandedTrials)
        return Error{fmt::format(
            "the sweep has {:.0f} trials, too many to plan (at most {:.0f}); sweep fewer values "
            "or use method: random with num_trials",
            total * s.seeds, kMaxExpandedTrials)};
    std::vector<size_t> order(static_cast<size_t>(total));
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    if (s.method == "random" && size_t(s.numTrials) < order.size()) {
        // Partial Fisher-Yates: the first num_trials of a seeded shuffle, then in grid order so
        // a chart fills in the same way every time.
        uint64_t state = static_cast<uint64_t>(s.seed);
        for (size_t i = 0; i < size_t(s.numTrials); ++i) {
            const size_t j = i + size_t(splitmix64(state) % (order.size() - i));
            std::swap(order[i], order[j]);
        }
        order.resize(size_t(s.numTrials));
        std::sort(order.begin(), order.end());
    }
    return order;
}

// The trial at grid point `point` with seed `seed`: the base config with the point's axis
// values, their companions, its parametrization's overrides, the seed and the step count; what
// its config does not accept goes to errors.
TrialSpec makeTrial(const config::LoadedConfig& base, const std::vector<Axis>& axes,
                    const std::vector<config::OverrideBundle>& bundles,
                    const std::vector<size_t>& sizes, size_t point, int64_t seed, int64_t steps,
                    std::vector<std::string>& errors) {
    TrialSpec trial;
    trial.seed = seed;
    trial.config = base;
    std::vector<size_t> digits(sizes.size());
    size_t rest = point;
    for (size_t d = sizes.size(); d-- > 0;) {
        digits[d] = rest % sizes[d];
        rest /= sizes[d];
    }
    std::vector<std::string> overrides;
    if (!bundles.empty()) {
        const auto& bundle = bundles[digits.back()];
        trial.parametrization = bundle.name;
        for (const auto& [key, value] : bundle.overrides)
            overrides.push_back(overrideText(key, value));
    }
    for (size_t a = 0; a < axes.size(); ++a) {
        const std::string& value = axes[a].values[digits[a]];
        trial.params.push_back({axes[a].key, value});
        overrides.push_back(overrideText(axes[a].key, value));
        for (const auto& [key, list] : axes[a].with)
            overrides.push_back(overrideText(key, list[digits[a]]));
    }
    if (!bundles.empty()) trial.params.push_back({kParametrizationKey, trial.parametrization});
    overrides.push_back("runconfig.seed=" + std::to_string(trial.seed));
    overrides.push_back("runconfig.max_steps=" + std::to_string(steps));
    std::string values;
    for (const auto& p : trial.params)
        values += (values.empty() ? "" : ", ") + p.key + "=" + p.value;
    for (const auto& o : overrides) {
        if (Status st = config::applyOverride(trial.config.config, o); !st.ok())
            errors.push_back(overrideProblem("trial " + values, st.error()));
    }
    for (const auto& problem : config::validate(trial.config.config))
        errors.push_back("the trial with " + values + ": " + problem);
    return trial;
}

}  // namespace

// Check → grid → trials: every problem of the definition is collected before any trial is
// made, then each trial's own config is checked.
Result<SweepPlan> planSweep(const config::LoadedConfig& definition) {
    if (!definition.config.sweep)
        return Error{"the config has no sweep: section (see presets/mup-sweep.yaml)"};
    SweepPlan plan;
    plan.definition = definition;
    plan.sweep = *definition.config.sweep;
    const config::SweepConfig& s = plan.sweep;
    std::vector<std::string> errors;
    checkSettings(definition.config, s, errors);

    config::LoadedConfig base = definition;
    base.config.sweep.reset();
    std::set<std::string> bundleKeys;
    const std::vector<config::OverrideBundle> bundles =
        checkParametrizations(s, base.config, bundleKeys, errors);
    const std::vector<Axis> axes = checkAxes(s, base.config, bundleKeys, errors);
    checkGroupsAndSize(s, axes, !bundles.empty(), errors);
    if (!errors.empty()) return joinErrors(std::move(errors));

    // The grid: axes in declared order (the last fastest), parametrization after them.
    std::vector<size_t> sizes;
    for (const auto& a : axes) sizes.push_back(a.values.size());
    if (!bundles.empty()) sizes.push_back(bundles.size());
    auto order = gridPoints(s, sizes);
    if (!order.ok()) return order.error();
    plan.points = order->size();

    const int64_t steps = s.maxSteps > 0 ? s.maxSteps : base.config.runconfig.maxSteps;
    const int64_t baseSeed = base.config.runconfig.seed;
    for (int seedIndex = 0; seedIndex < s.seeds; ++seedIndex) {
        for (size_t point : *order) {
            TrialSpec trial =
                makeTrial(base, axes, bundles, sizes, point, baseSeed + seedIndex, steps, errors);
            trial.index = static_cast<int>(plan.trials.size());
            plan.trials.push_back(std::move(trial));
        }
    }
    if (!errors.empty()) return joinErrors(std::move(errors));
    if (plan.trials.size() > size_t(s.maxTrials)) {
        plan.needsConfirmation = true;
        plan.confirmationMessage = fmt::format(
            "this sweep runs {} trials ({} points x {} seeds of up to {} steps), more than "
            "sweep.max_trials = {}; confirm to run it (wafer sweep --yes) or make it smaller",
            plan.trials.size(), plan.points, s.seeds, steps, s.maxTrials);
    }
    return plan;
}

}  // namespace ws::sweep
