// SPDX-License-Identifier: GPL-3.0-or-later
// The field catalogue: every config key with its type, default, help, unit, bounds and choices,
// produced by a visitor over the same declarations that drive load and save. For the CLI's
// `--help-config` and the GUI's config form. Thread-safe: pure function.
#pragma once

#include <string>
#include <vector>

namespace ws::config {

struct FieldDescription {
    // Dotted key path: "model.hidden_size"; schedule pieces appear once as
    // "optimizer.learning_rate[N].scheduler" (N: any piece index).
    std::string path;
    // string | bool | int | int64 | double | double[2] | string[] | learning_rate (a number or a
    // list of pieces) | section | optional_section (a section that may be left out)
    std::string type;
    std::string defaultValue;  // YAML text of the default ("128", "[0.9, 0.999]", "\"byte\"")
    std::string help;
    std::string unit;
    double min;  // -infinity / +infinity when unbounded
    double max;
    std::vector<std::string> choices;  // allowed values of a string field (empty: any)
    std::vector<std::string> aliases;  // older key names accepted on load
};

// Sections come before their fields, in declaration order (the order of the saved YAML).
std::vector<FieldDescription> describeFields();

}  // namespace ws::config
