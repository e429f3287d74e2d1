// SPDX-License-Identifier: GPL-3.0-or-later
// The sweep section's own field types (sweep_config.h) as one-line YAML, read back by
// yaml_reader_sweep.cpp to equal values.
#include <cctype>

#include "engine/config/text_format.h"
#include "engine/config/yaml_flow.h"

namespace ws::config {

namespace {

std::string formatRange(const SweepRange& range) {
    return "{min: " + formatDouble(range.min) + ", max: " + formatDouble(range.max) +
           ", step: " + formatDouble(range.step) + "}";
}

// Config key paths are plain words joined by dots; quote anything else.
std::string formatKey(const std::string& key) {
    for (char c : key) {
        const bool plain = std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' ||
                           c == '[' || c == ']' || c == '-';
        if (!plain) return quoteYaml(key);
    }
    return key.empty() ? quoteYaml(key) : key;
}

}  // namespace

std::string formatScalar(const std::string& text) {
    if (parseDouble(text) || parseBool(text)) return text;
    return quoteYaml(text);
}

std::string formatFlow(const std::vector<int64_t>& value) {
    std::vector<std::string> parts;
    for (int64_t v : value) parts.push_back(std::to_string(v));
    return enclose('[', joinStrings(parts, ", "), ']');
}

std::string formatFlow(const SweepParameters& value) {
    std::vector<std::string> axes;
    for (const SweepAxis& axis : value.axes) {
        std::string spec;
        if (axis.range) {
            spec = "{range: " + formatRange(*axis.range) + "}";
        } else if (axis.log2Range) {
            spec = "{log2_range: " + formatRange(*axis.log2Range) + "}";
        } else {
            std::vector<std::string> values;
            for (const std::string& v : axis.values) values.push_back(formatScalar(v));
            spec = "{values: " + enclose('[', joinStrings(values, ", "), ']') + "}";
        }
        if (!axis.with.empty()) {
            std::vector<std::string> companions;
            for (const auto& [key, list] : axis.with) {
                std::vector<std::string> values;
                for (const std::string& v : list) values.push_back(formatScalar(v));
                companions.push_back(formatKey(key) + ": " +
                                     enclose('[', joinStrings(values, ", "), ']'));
            }
            spec.pop_back();  // the closing brace
            spec += ", with: " + enclose('{', joinStrings(companions, ", "), '}') + "}";
        }
        axes.push_back(formatKey(axis.key) + ": " + spec);
    }
    return enclose('{', joinStrings(axes, ", "), '}');
}

std::string formatFlow(const OverrideBundles& value) {
    std::vector<std::string> bundles;
    for (const OverrideBundle& bundle : value.bundles) {
        std::vector<std::string> overrides;
        for (const auto& [key, text] : bundle.overrides)
            overrides.push_back(formatKey(key) + ": " + formatScalar(text));
        bundles.push_back(formatKey(bundle.name) + ": " +
                          enclose('{', joinStrings(overrides, ", "), '}'));
    }
    return enclose('{', joinStrings(bundles, ", "), '}');
}

}  // namespace ws::config
