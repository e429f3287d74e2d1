// SPDX-License-Identifier: GPL-3.0-or-later
// readLayers / checkIncludes / unplacedFolders (see layer_check.h).
#include "layer_check.h"

#include <algorithm>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

namespace ws::layers {
namespace fs = std::filesystem;

namespace {

// The level of a Markdown heading ("## Layout" is 2), 0 for any other line.
int headingLevel(const std::string& line) {
    const size_t hashes = line.find_first_not_of('#');
    return hashes > 0 && hashes != std::string::npos && line[hashes] == ' ' ? int(hashes) : 0;
}

bool isSourceFile(const fs::path& p) {
    static const std::set<std::string> kExtensions = {".h", ".hpp", ".cpp", ".cc", ".inc"};
    return kExtensions.count(p.extension().string()) > 0;
}

// The engine folder a path below `engineDir` lies in ("" when it is not below one).
std::string folderOf(const fs::path& engineDir, const fs::path& path) {
    const fs::path rel = path.lexically_normal().lexically_relative(engineDir.lexically_normal());
    if (rel.empty() || *rel.begin() == ".." || std::distance(rel.begin(), rel.end()) < 2) return {};
    return rel.begin()->string();
}

}  // namespace

Layers readLayers(std::string_view readme) {
    Layers layers;
    std::istringstream in{std::string(readme)};
    std::string line;
    bool inLayout = false, inList = false, done = false, inCode = false;
    int layoutLevel = 0;
    const std::regex item(R"(^\s*(\d+)\.\s+(.*)$)");
    const std::regex name("`([A-Za-z0-9_]+)/?`");
    int expected = 1;
    while (!done && std::getline(in, line)) {
        if (line.rfind("```", 0) == 0) inCode = !inCode;
        if (inCode) continue;
        if (const int level = headingLevel(line); level > 0) {
            if (inLayout && level <= layoutLevel) break;  // the next section
            if (!inLayout && line.find("Layout") != std::string::npos) {
                inLayout = true;
                layoutLevel = level;
            }
            continue;
        }
        if (!inLayout) continue;
        std::smatch m;
        if (!std::regex_match(line, m, item)) {
            done = inList;  // the first numbered list of the section ends here
            continue;
        }
        inList = true;
        if (std::stoi(m[1]) != expected) {
            layers.error = "layer " + m[1].str() + " follows layer " +
                           std::to_string(expected - 1) +
                           " in HACKING.md's layer list; number the layers 1, 2, 3, ...";
            return layers;
        }
        const std::string names = m[2];
        int count = 0;
        for (auto it = std::sregex_iterator(names.begin(), names.end(), name);
             it != std::sregex_iterator(); ++it, ++count) {
            const std::string folder = (*it)[1];
            if (layers.layerOf.count(folder)) {
                layers.error = "`" + folder + "` is on two layers of HACKING.md's layer list";
                return layers;
            }
            layers.layerOf[folder] = expected;
        }
        if (count == 0) {
            layers.error = "layer " + std::to_string(expected) +
                           " of HACKING.md's layer list names no folder (write them as `name`)";
            return layers;
        }
        ++expected;
    }
    if (!inLayout && layers.layerOf.empty()) {
        layers.error = "HACKING.md has no Layout section";
    } else if (layers.layerOf.empty()) {
        layers.error = "HACKING.md's Layout section has no numbered list of engine layers";
    }
    return layers;
}

std::vector<Violation> checkIncludes(const fs::path& engineDir, const Layers& layers,
                                     const Tree& tree) {
    const std::string prefix = tree.root + "/";
    std::vector<Violation> found;
    const std::regex include(R"(^\s*#\s*include\s*([<"])([^">]+)[">])");
    const std::regex qt(R"(^(Qt|Q[A-Z]))");
    std::vector<fs::path> files;
    for (const auto& entry : fs::recursive_directory_iterator(engineDir)) {
        if (entry.is_regular_file() && isSourceFile(entry.path())) files.push_back(entry.path());
    }
    std::sort(files.begin(), files.end());
    for (const fs::path& file : files) {
        const std::string own = folderOf(engineDir, file);  // "" for a file directly in engine/
        const fs::path shown = tree.root / file.lexically_relative(engineDir);
        const auto ownLayer = layers.layerOf.find(own);
        std::ifstream in(file);
        std::string line;
        for (int number = 1; std::getline(in, line); ++number) {
            std::smatch m;
            if (!std::regex_search(line, m, include)) continue;
            const std::string target = m[2];
            const auto report = [&](const std::string& why) {
                found.push_back({shown, number,
                                 shown.string() + ":" + std::to_string(number) + ": " +
                                     m[0].str().substr(m[0].str().find('#')) + ": " + why});
            };
            if (!tree.qtAllowed && std::regex_search(target, qt)) {
                report("the engine never includes Qt (DESIGN: engine/ links no GUI toolkit)");
                continue;
            }
            // The engine folder the include names: "engine/<folder>/..." or a relative path.
            std::string folder;
            if (target.rfind(prefix, 0) == 0) {
                folder = folderOf(engineDir, engineDir / target.substr(prefix.size()));
            } else if (m[1] == "\"") {
                folder = folderOf(engineDir, file.parent_path() / target);
            }
            if (own.empty() || folder.empty() || folder == own) continue;
            const auto theirs = layers.layerOf.find(folder);
            if (ownLayer == layers.layerOf.end()) {
                report(own + " is not in " + tree.listName + "; place it there");
            } else if (theirs == layers.layerOf.end()) {
                report(folder + " is not in " + tree.listName + "; place it there");
            } else if (theirs->second > ownLayer->second) {
                report(own + " (layer " + std::to_string(ownLayer->second) + ") includes " +
                       folder + " (layer " + std::to_string(theirs->second) +
                       "), a layer above it; move the shared code down or the includer up");
            }
        }
    }
    return found;
}

std::vector<std::string> unplacedFolders(const fs::path& engineDir, const Layers& layers,
                                         const Tree& tree) {
    std::vector<std::string> problems;
    std::set<std::string> present;
    for (const auto& entry : fs::directory_iterator(engineDir)) {
        if (entry.is_directory()) present.insert(entry.path().filename().string());
    }
    for (const std::string& folder : present) {
        if (!layers.layerOf.count(folder)) {
            problems.push_back(tree.root + "/" + folder + "/ is not in " + tree.listName +
                               (tree.root == "engine" ? " (Layout section)" : "") +
                               "; add it to the layer whose folders it may include");
        }
    }
    for (const auto& [folder, layer] : layers.layerOf) {
        if (!present.count(folder)) {
            problems.push_back(tree.listName + " names `" + folder + "` (layer " +
                               std::to_string(layer) + "), but " + tree.root + "/" + folder +
                               "/ does not exist");
        }
    }
    return problems;
}

}  // namespace ws::layers
