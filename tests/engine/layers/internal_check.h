// SPDX-License-Identifier: GPL-3.0-or-later
// The engine's privacy rule, checked from the source text: what a module keeps to itself stays
// inside its folder. A module's internals are its `detail` namespace (ws::<folder>::detail) and its
// internal headers. A header is internal when its opening comment says so ("internal to <module>"
// or "not a public header", any letter case) or when it declares the module's detail namespace at
// file scope (`namespace ws::<folder>::detail {`). checkInternals() reads every file under
// engine/, app/ and ui/ and reports, with file and line, each #include of another engine folder's
// internal header and each use of another engine folder's detail namespace (`config::detail`).
// Tests may use internals (they are not scanned). Thread-safety: pure functions over their
// arguments (they only read files).
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "layer_check.h"

namespace ws::layers {

// Whether the header at `path` is internal to its folder (see above).
bool isInternalHeader(const std::filesystem::path& path);

// Every use of another engine folder's internals in the files under `sourceDir`/engine, /app and
// /ui (those that exist). Messages name the file as "engine/sweep/space.cpp:12: ...".
std::vector<Violation> checkInternals(const std::filesystem::path& sourceDir);

}  // namespace ws::layers
