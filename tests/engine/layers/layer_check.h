// SPDX-License-Identifier: GPL-3.0-or-later
// The engine's layer rule, checked from the source text: HACKING.md's Layout section lists the
// engine folders in numbered layers (lowest first); a file in engine/<folder>/ may include only
// engine folders on its own layer or a lower one, and nothing in engine/ may include Qt.
// readLayers() parses that list; checkIncludes() reads every #include line under an engine folder
// and reports each break of the rule with the file and line. Thread-safety: pure functions over
// their arguments (checkIncludes only reads files).
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace ws::layers {

struct Layers {
    std::map<std::string, int> layerOf;  // folder name -> layer number (1 = lowest)
    std::string error;                   // why the list could not be read (empty: it was)
};

// The numbered list of the "Layout" section of HACKING.md's text, one line per layer, each naming
// its folders in backticks: "1. `core`, `tensor`".
Layers readLayers(std::string_view readme);

struct Violation {
    std::filesystem::path file;  // as "engine/sample/x.cpp" or "ui/lessons/x.cpp"
    int line = 0;                // 1-based
    std::string message;         // "engine/sample/x.cpp:12: ..." (file and line included)
};

// Which tree is checked: the engine (no Qt; its layers in HACKING.md) or the studio's ui/ (Qt
// allowed; its layers in tests/engine/layers/ui_layers_test.cpp).
struct Tree {
    std::string root = "engine";  // includes name it: "engine/<folder>/..."
    bool qtAllowed = false;
    std::string listName = "HACKING.md's layer list";  // where `layers` come from, for messages
};

// Every #include line of the files under `dir` (its direct subfolders are the concepts) that
// reaches a higher layer, a folder missing from `layers`, or Qt (unless the tree allows it).
std::vector<Violation> checkIncludes(const std::filesystem::path& dir, const Layers& layers,
                                     const Tree& tree = {});

// Folders under `dir` that `layers` does not place, and listed folders that do not exist,
// one sentence each.
std::vector<std::string> unplacedFolders(const std::filesystem::path& dir, const Layers& layers,
                                         const Tree& tree = {});

}  // namespace ws::layers
