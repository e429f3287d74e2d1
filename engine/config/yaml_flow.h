// SPDX-License-Identifier: GPL-3.0-or-later
// Config values as YAML text: flow-style (one line) formatting per field type, as the YAML writer,
// the field catalogue's defaults and validation messages write them, and as other modules write a
// config value as `key=value` override text (sweep trials, checkpoint metadata). Public API of
// wafer::config.
// Thread-safe: pure functions.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "engine/config/config.h"

namespace ws::config {

std::string formatFlow(const std::string& value);
std::string formatFlow(bool value);
std::string formatFlow(int value);
std::string formatFlow(int64_t value);
std::string formatFlow(double value);
std::string formatFlow(const std::array<double, 2>& value);
std::string formatFlow(const std::vector<std::string>& value);
std::string formatFlow(const LearningRate& value);
// The sweep section's types (sweep_config.h); defined in yaml_writer_sweep.cpp.
std::string formatFlow(const std::vector<int64_t>& value);
std::string formatFlow(const SweepParameters& value);
std::string formatFlow(const OverrideBundles& value);
// open + body + close, e.g. enclose('[', "1, 2", ']').
std::string enclose(char open, const std::string& body, char close);
// A YAML scalar as text that reads back as the same scalar: numbers and booleans plain, the rest
// double-quoted.
std::string formatScalar(const std::string& text);

}  // namespace ws::config
