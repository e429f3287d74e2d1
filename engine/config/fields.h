// SPDX-License-Identifier: GPL-3.0-or-later
// FieldInfo: what a config field declares about itself once (key, help text, unit, bounds,
// allowed values). Every config visitor (YAML load and save, defaults, validation, CLI --set
// overrides, the GUI form) reads these, so a field is declared in exactly one place.
#pragma once

#include <initializer_list>
#include <limits>
#include <string_view>
#include <vector>

namespace ws::config {

// An older or vendor spelling of one of a field's choices, accepted on load and saved as `to`
// (ModelZoo writes CosineDecay where we say Cosine). Loading reports each use as a warning.
struct ValueAlias {
    std::string_view from;
    std::string_view to;
};

struct FieldInfo {
    std::string_view key;   // YAML key (ModelZoo's name where ModelZoo has one)
    std::string_view help;  // one sentence for tooltips and `wafer validate --help-config`
    std::string_view unit = {};
    double min = -std::numeric_limits<double>::infinity();
    double max = std::numeric_limits<double>::infinity();
    std::vector<std::string_view> choices = {};  // allowed values of a string field
    std::vector<std::string_view> aliases = {};  // older ModelZoo spellings accepted on load
    std::vector<ValueAlias> valueAliases = {};   // older spellings of a choice (see ValueAlias)
};

}  // namespace ws::config
