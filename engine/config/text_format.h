// SPDX-License-Identifier: GPL-3.0-or-later
// Scalars as config text, for every module that reads or writes values the way config files do:
// number formatting that round-trips exactly, YAML string quoting, strict YAML 1.1 scalar parsing
// (--set values, sweep overrides), case-insensitive matching and the edit distance behind "did you
// mean" hints. Public API of wafer::config.
// Thread-safe: pure functions.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ws::config {

// Shortest text that parses back to exactly `value`, always recognisable as a floating-point
// number by YAML 1.1 readers too (PyYAML needs the dot: "6.0e-04", "1.0", never "6e-04" or "1").
std::string formatDouble(double value);
// Shortest text for messages and ranges ("0.999", "1", "2048").
std::string formatNumberShort(double value);
// A YAML double-quoted scalar with escapes ("a\"b").
std::string quoteYaml(std::string_view text);

// Strict number parsing of a whole scalar (leading '+' allowed, surrounding blanks trimmed).
std::optional<double> parseDouble(std::string_view text);
// Integers: an integer literal, or a number with no fractional part ("2048", "1.0e3").
// `isNumber` tells apart "not a number" from "a number with a fraction".
std::optional<long long> parseInteger(std::string_view text, bool* isNumber = nullptr);
// YAML 1.1 booleans: true/false, yes/no, on/off in any letter case.
std::optional<bool> parseBool(std::string_view text);

bool equalsIgnoreCase(std::string_view a, std::string_view b);
std::string toLower(std::string_view text);
// Optimal string alignment distance (transpositions count as one edit), case-insensitive.
size_t editDistance(std::string_view a, std::string_view b);
// The candidate closest to `word` if it is close enough to be a plausible typo, else nullopt.
std::optional<std::string> closestMatch(std::string_view word,
                                        const std::vector<std::string>& candidates);
std::string joinStrings(const std::vector<std::string>& parts, std::string_view separator);

}  // namespace ws::config
