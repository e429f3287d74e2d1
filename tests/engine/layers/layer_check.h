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
    std::filesystem::path file;  // relative to the folder checked, as "engine/sample/x.cpp"
    int line = 0;                // 1-based
    std::string message;         // "engine/sample/x.cpp:12: ..." (file and line included)
};

// Every #include line of the files under `engineDir` (its direct subfolders are the concepts)
// that reaches a higher layer, an engine folder missing from `layers`, or Qt.
std::vector<Violation> checkIncludes(const std::filesystem::path& engineDir, const Layers& layers);

// Folders under `engineDir` that `layers` does not place, and listed folders that do not exist,
// one sentence each.
std::vector<std::string> unplacedFolders(const std::filesystem::path& engineDir,
                                         const Layers& layers);

}  // namespace ws::layers
