// Where the engine keeps per-user files (XDG base directories) and where it finds the files
// shipped with the app (presets, corpus). Thread-safe: pure functions of the environment.
#pragma once

#include <filesystem>

namespace ws {

// $XDG_CACHE_HOME/wafer-studio (default ~/.cache/wafer-studio): token caches, trained tokenizers.
std::filesystem::path userCacheDir();
// $XDG_DATA_HOME/wafer-studio (default ~/.local/share/wafer-studio): the run store, run folders.
std::filesystem::path userDataDir();
// The folder holding presets/ and resources/: $WAFER_STUDIO_HOME if set, else the installed
// share folder next to the executable, else the source tree the binary was built from.
std::filesystem::path appDataDir();

}  // namespace ws
