// SPDX-License-Identifier: GPL-3.0-or-later
// Where the engine keeps per-user files (XDG base directories) and where it finds the files
// shipped with the app (presets, wafer specs, corpus, base model, lessons, the guide).
// Thread-safe: pure functions of the environment and the file system.
#pragma once

#include <filesystem>
#include <string>

namespace ws {

// $XDG_CACHE_HOME/wafer-studio (default ~/.cache/wafer-studio): token caches, trained tokenizers.
std::filesystem::path userCacheDir();
// $XDG_DATA_HOME/wafer-studio (default ~/.local/share/wafer-studio): the run store, run folders.
std::filesystem::path userDataDir();

// The app's shared data: presets/, resources/ and docs/ (the user guide the studio's Help shows).
struct AppDataLocation {
    std::filesystem::path dir;
    // "WAFER_STUDIO_HOME", "install prefix" or "build tree" when found; "not found" otherwise,
    // and then `dir` is where an installed program expects it, so that errors name a real place.
    std::string foundBy;
    bool found = false;
};
// Found from where the running program is, never from the folder it was compiled in (a package
// keeps working with the source tree gone): $WAFER_STUDIO_HOME if set; else the first
// <prefix>/share/wafer-studio holding presets/, <prefix> being the executable's folder or one of
// its first four parents. That covers an installed program (/usr/bin/wafer finds
// /usr/share/wafer-studio, a relocated prefix alike) and a build tree, where CMake links
// <build>/share/wafer-studio to the sources' presets/, resources/, docs/ and the README.
AppDataLocation locateAppData();
// locateAppData().dir.
std::filesystem::path appDataDir();

// `path` made absolute (against the working folder) and lexically normal, never throwing: a
// path read from a file may be anything, and the working folder may be gone; then `path` is
// returned normalised as it is, and opening it reports the real problem.
std::filesystem::path absoluteNormal(const std::filesystem::path& path);

}  // namespace ws
