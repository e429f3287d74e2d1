// SPDX-License-Identifier: GPL-3.0-or-later
// Editing a config's YAML text in place instead of regenerating it. patchConfigYaml() rewrites
// only the values that differ between two configs (replacing just that value's text, inserting a
// missing key under its section with the section's indentation, adding a missing section at the
// end), so the user's comments, key order and spellings survive a change made in the GUI form.
// The result is re-parsed and must give the intended config back; a layout the patcher cannot
// follow falls back to the whole saveConfigYaml() text, and says so.
// Thread-safe: pure functions of their arguments.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

#include "engine/config/config.h"

namespace ws::config {

struct YamlPatch {
    std::string text;
    bool regenerated = false;  // text is saveConfigYaml(after): the minimal patch did not fit
    std::string note;          // why it was regenerated, for the log; empty when patched
};

// Rewrites `text`, whose config is `before`, so that it reads back as `after`. Relative paths in
// the text resolve against `baseDir` when it is checked (as parseConfig() does).
YamlPatch patchConfigYaml(std::string_view text, const Config& before, const Config& after,
                          const std::filesystem::path& baseDir);

// The same text with every relative path that loading resolves against `fromDir` (data_dir,
// tokenizer vocab_file and merges_file, runconfig.checkpoint_path) written as an absolute path, so
// it means the same once saved in another folder. Text that does not parse comes back unchanged.
std::string absolutizeConfigPaths(std::string_view text, const std::filesystem::path& fromDir);

}  // namespace ws::config
