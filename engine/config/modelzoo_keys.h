// SPDX-License-Identifier: GPL-3.0-or-later
// Keys that real Cerebras ModelZoo params files contain (GPT-2, GPT-3, Cerebras-GPT; legacy
// layout) but Wafer Studio does not implement. Loading such a file succeeds: each of these keys
// is skipped with a warning that names it and says what Wafer Studio does instead, while any
// other unknown key stays an error. Internal to wafer::config. Thread-safe: constant data.
#pragma once

#include <string>
#include <string_view>

namespace ws::config::detail {

struct IgnoredModelZooKey {
    // Where the key lives: "" (top-level section), "model", "optimizer", "input" (train_input and
    // eval_input), "runconfig", "schedule" (one optimizer.learning_rate piece).
    std::string_view section;
    std::string_view key;
    std::string_view behaviour;  // what Wafer Studio does instead, for the warning
    // The value Wafer Studio always behaves as ("true"), or empty when no single value applies.
    // When the file asks for something else the warning says so, since the run will differ.
    std::string_view implementedValue = {};
};

// The table section for a reader path ("train_input" -> "input",
// "optimizer.learning_rate[2]" -> "schedule"); empty string_view for the top level.
std::string sectionKind(std::string_view path);
const IgnoredModelZooKey* findIgnoredModelZooKey(std::string_view sectionKind,
                                                 std::string_view key);

}  // namespace ws::config::detail
