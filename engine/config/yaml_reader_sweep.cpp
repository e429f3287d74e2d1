// SPDX-License-Identifier: GPL-3.0-or-later
// YAML -> the sweep section's own field types (sweep_config.h): integer lists, the swept
// parameters keyed by config key, and named override bundles. Keys are read as written; whether
// they name real config keys is checked when the sweep is planned (engine/sweep/space.h).
#include <string>

#include "engine/config/text_format.h"
#include "engine/config/yaml_reader.h"

namespace ws::config {

namespace {

const char* const kAxisForms =
    "{values: [...]}, {range: {min, max, step}} or {log2_range: {min, max, step}}";

// Scalars only: a swept value becomes one `key=value` override.
bool readScalarList(const YAML::Node& node, std::vector<std::string>& out, const std::string& path,
                    ReadContext& ctx) {
    if (node.IsScalar()) {
        out = {node.Scalar()};
        return true;
    }
    if (!node.IsSequence()) {
        ctx.error(ctx.markOf(node), path,
                  "expected a list of values, found " + describeFound(node));
        return false;
    }
    std::vector<std::string> values;
    bool ok = true;
    for (size_t i = 0; i < node.size(); ++i) {
        const YAML::Node element = node[i];
        if (!element.IsScalar()) {
            ctx.error(
                ctx.markOf(element), indexPath(path, i),
                "expected a single value (a number or a word), found " + describeFound(element));
            ok = false;
            continue;
        }
        values.push_back(element.Scalar());
    }
    if (ok) out = std::move(values);
    return ok;
}

}  // namespace

void readValue(const YAML::Node& node, std::vector<int64_t>& value, const FieldInfo& info,
               const std::string& path, ReadContext& ctx) {
    if (node.IsNull()) {
        value.clear();
        return;
    }
    if (!node.IsSequence()) {
        ctx.error(ctx.markOf(node), path,
                  "expected a list of integers like [25, 75], found " + describeFound(node));
        return;
    }
    std::vector<int64_t> result(node.size(), 0);
    const size_t errorsBefore = ctx.errors.size();
    for (size_t i = 0; i < node.size(); ++i)
        readValue(node[i], result[i], info, indexPath(path, i), ctx);
    if (ctx.errors.size() == errorsBefore) value = std::move(result);
}

void readValue(const YAML::Node& node, SweepParameters& value, const FieldInfo& /*info*/,
               const std::string& path, ReadContext& ctx) {
    if (node.IsNull()) {
        value.axes.clear();
        return;
    }
    if (!node.IsMap()) {
        ctx.error(ctx.markOf(node), path,
                  std::string("expected a map {config.key: ") + kAxisForms + ", ...}, found " +
                      describeFound(node));
        return;
    }
    SweepParameters result;
    const size_t errorsBefore = ctx.errors.size();
    for (auto it = node.begin(); it != node.end(); ++it) {
        if (!it->first.IsScalar() || it->first.Scalar().empty()) {
            ctx.error(it->first.Mark(), path,
                      "keys must be config key paths like optimizer.learning_rate, found " +
                          describeFound(it->first));
            continue;
        }
        SweepAxis axis;
        axis.key = it->first.Scalar();
        ctx.keyMark = it->first.Mark();
        const std::string axisPath = childPath(path, axis.key);
        for (const SweepAxis& earlier : result.axes)
            if (earlier.key == axis.key)
                ctx.error(it->first.Mark(), axisPath, "this key is swept twice; keep one");
        const YAML::Node spec = it->second;
        if (spec.IsSequence()) {  // shorthand: key: [a, b] means key: {values: [a, b]}
            readScalarList(spec, axis.values, axisPath, ctx);
            result.axes.push_back(std::move(axis));
            continue;
        }
        if (!spec.IsMap()) {
            ctx.error(ctx.markOf(spec), axisPath,
                      std::string("expected ") + kAxisForms + ", found " + describeFound(spec));
            continue;
        }
        int forms = 0;
        bool unknown = false;
        for (auto f = spec.begin(); f != spec.end(); ++f) {
            const std::string form = f->first.IsScalar() ? f->first.Scalar() : std::string();
            const std::string formPath = childPath(axisPath, form);
            ctx.keyMark = f->first.Mark();
            ++forms;
            if (form == "values") {
                readScalarList(f->second, axis.values, formPath, ctx);
            } else if (form == "range" || form == "log2_range") {
                SweepRange range;
                readSection(f->second, range, formPath, ctx);
                (form == "range" ? axis.range : axis.log2Range) = range;
            } else if (form == "with") {
                --forms;
                const YAML::Node with = f->second;
                if (!with.IsMap()) {
                    ctx.error(ctx.markOf(with), formPath,
                              "expected {config.key: [one value per axis value], ...}, found " +
                                  describeFound(with));
                    continue;
                }
                for (auto w = with.begin(); w != with.end(); ++w) {
                    const std::string key = w->first.IsScalar() ? w->first.Scalar() : "";
                    std::vector<std::string> values;
                    if (!w->second.IsSequence())
                        ctx.error(ctx.markOf(w->second), childPath(formPath, key),
                                  "expected a list with one value per value of " + axis.key +
                                      ", found " + describeFound(w->second));
                    else if (readScalarList(w->second, values, childPath(formPath, key), ctx))
                        axis.with.emplace_back(key, std::move(values));
                }
            } else {
                --forms;
                unknown = true;
                std::string message = "unknown key; an axis is one of " + std::string(kAxisForms);
                if (auto hint = closestMatch(form, {"values", "range", "log2_range", "with"}))
                    message += "; did you mean `" + *hint + "`?";
                ctx.error(f->first.Mark(), formPath, message);
            }
        }
        if (forms > 1 || (forms == 0 && !unknown))
            ctx.error(spec.Mark(), axisPath,
                      forms == 0 ? std::string("no values given: write ") + kAxisForms
                                 : "give exactly one of values, range, log2_range");
        result.axes.push_back(std::move(axis));
    }
    if (ctx.errors.size() == errorsBefore) value = std::move(result);
}

void readValue(const YAML::Node& node, OverrideBundles& value, const FieldInfo& /*info*/,
               const std::string& path, ReadContext& ctx) {
    if (node.IsNull()) {
        value.bundles.clear();
        return;
    }
    if (!node.IsMap()) {
        ctx.error(
            ctx.markOf(node), path,
            "expected a map {name: {config.key: value, ...}, ...}, found " + describeFound(node));
        return;
    }
    OverrideBundles result;
    const size_t errorsBefore = ctx.errors.size();
    for (auto it = node.begin(); it != node.end(); ++it) {
        if (!it->first.IsScalar() || it->first.Scalar().empty()) {
            ctx.error(it->first.Mark(), path, "expected a name, found " + describeFound(it->first));
            continue;
        }
        OverrideBundle bundle;
        bundle.name = it->first.Scalar();
        ctx.keyMark = it->first.Mark();
        const std::string bundlePath = childPath(path, bundle.name);
        const YAML::Node overrides = it->second;
        if (!overrides.IsNull() && !overrides.IsMap()) {
            ctx.error(ctx.markOf(overrides), bundlePath,
                      "expected a map {config.key: value, ...} (or {} for none), found " +
                          describeFound(overrides));
            continue;
        }
        if (overrides.IsMap()) {
            for (auto o = overrides.begin(); o != overrides.end(); ++o) {
                const std::string key = o->first.IsScalar() ? o->first.Scalar() : std::string();
                if (key.empty() || !o->second.IsScalar()) {
                    ctx.error(o->first.Mark(), childPath(bundlePath, key),
                              "expected config.key: value with a single value, found " +
                                  describeFound(o->second));
                    continue;
                }
                bundle.overrides.emplace_back(key, o->second.Scalar());
            }
        }
        result.bundles.push_back(std::move(bundle));
    }
    if (ctx.errors.size() == errorsBefore) value = std::move(result);
}

}  // namespace ws::config
