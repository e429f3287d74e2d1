// SPDX-License-Identifier: GPL-3.0-or-later
// ISO-8601 UTC timestamps for the run store ("2025-01-31T12:00:00Z", optionally with
// milliseconds). Thread-safe: pure functions.
#pragma once

#include <chrono>
#include <string>

namespace ws::store::detail {

std::string isoUtc(std::chrono::system_clock::time_point time, bool milliseconds);

}  // namespace ws::store::detail
