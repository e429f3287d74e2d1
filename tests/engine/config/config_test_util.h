// SPDX-License-Identifier: GPL-3.0-or-later
// Helpers shared by the config tests: parse YAML text with a fixed source name and base folder,
// and a temporary folder removed at the end of the test.
#pragma once

#include "support/temp_dir.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "engine/config/config_yaml.h"

namespace ws::config {
// gtest prints a Config in failure messages as its YAML text.
inline void PrintTo(const Config& config, std::ostream* os) {
    *os << "\n" << saveConfigYaml(config, YamlStyle::Plain);
}
}  // namespace ws::config

namespace ws::config::test {

inline Result<LoadedConfig> parseText(std::string_view text,
                                      const std::vector<std::string>& overrides = {}) {
    return parseConfig(text, "test.yaml", "/base/presets", overrides);
}

// The error message of a parse that must fail ("" and a test failure if it succeeded).
inline std::string parseError(std::string_view text,
                              const std::vector<std::string>& overrides = {}) {
    Result<LoadedConfig> result = parseText(text, overrides);
    EXPECT_FALSE(result.ok()) << "expected an error for:\n" << text;
    return result.ok() ? std::string() : result.error().message;
}

inline std::string overrideError(Config& config, std::string_view keyEqualsValue) {
    Status status = applyOverride(config, keyEqualsValue);
    EXPECT_FALSE(status.ok()) << "expected an error for --set " << keyEqualsValue;
    return status.ok() ? std::string() : status.error().message;
}

inline bool anyContains(const std::vector<std::string>& lines, std::string_view needle) {
    for (const std::string& line : lines)
        if (line.find(needle) != std::string::npos) return true;
    return false;
}

using ws::testing::TempDir;

}  // namespace ws::config::test
