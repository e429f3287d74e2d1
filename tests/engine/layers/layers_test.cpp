// SPDX-License-Identifier: GPL-3.0-or-later
// The engine keeps its layers: no folder includes one above it in the layer list (HACKING.md,
// "Layout"), no file includes Qt, and every
// engine folder is placed in the list. The checker itself is tested
// on a planted tree, so the check provably fails when the rule is broken.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "layer_check.h"
#include "support/temp_dir.h"

namespace ws::layers {
namespace {

namespace fs = std::filesystem;

const fs::path kSource = WAFER_SOURCE_DIR;

std::string readText(const fs::path& file) {
    std::ifstream in(file);
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

void writeText(const fs::path& file, const std::string& text) {
    fs::create_directories(file.parent_path());
    std::ofstream(file) << text;
}

Layers readmeLayers() {
    return readLayers(readText(kSource / "HACKING.md"));
}

TEST(EngineLayers, NoFolderIncludesAHigherLayerOrQt) {
    const Layers layers = readmeLayers();
    ASSERT_TRUE(layers.error.empty()) << layers.error;
    std::string report;
    for (const Violation& v : checkIncludes(kSource / "engine", layers)) report += v.message + "\n";
    EXPECT_TRUE(report.empty()) << report;
}

TEST(EngineLayers, EveryEngineFolderIsInTheReadmesLayerList) {
    const Layers layers = readmeLayers();
    ASSERT_TRUE(layers.error.empty()) << layers.error;
    std::string report;
    for (const std::string& problem : unplacedFolders(kSource / "engine", layers))
        report += problem + "\n";
    EXPECT_TRUE(report.empty()) << report;
}

TEST(EngineLayers, ReadsTheNumberedListOfTheLayoutSection) {
    const Layers layers = readLayers(R"(# Project
## Build
1. `ignored`, not the layout section
## Layout
| folder | owns |
|---|---|
| `engine/` | everything |

Layers, lowest first:
1. `core`, `tensor/`
2. `config`
3. `model` and `modelio`

2. `later`, another list
## Next
)");
    ASSERT_TRUE(layers.error.empty()) << layers.error;
    const std::map<std::string, int> want = {
        {"core", 1}, {"tensor", 1}, {"config", 2}, {"model", 3}, {"modelio", 3}};
    EXPECT_EQ(layers.layerOf, want);

    EXPECT_NE(readLayers("# X\n## Layout\nno list\n").error.find("numbered list"),
              std::string::npos);
    EXPECT_NE(readLayers("## Layout\n1. `a`\n3. `b`\n").error.find("number the layers"),
              std::string::npos);
    EXPECT_NE(readLayers("## Layout\n1. `a`\n2. `a`\n").error.find("two layers"),
              std::string::npos);
}

// A planted tree: a lower folder including a higher one, a Qt include, and allowed includes
// (same folder, same layer, lower layer, a relative path into a higher folder).
TEST(EngineLayers, ThePlantedViolationsAreReportedWithFileAndLine) {
    ws::testing::TempDir dir("layers");
    const fs::path engine = dir / "engine";
    writeText(engine / "core" / "result.h", "#pragma once\n");
    writeText(engine / "model" / "gpt.cpp",
              "// the model\n"
              "#include \"engine/model/gpt.h\"\n"
              "#include \"engine/core/result.h\"\n"
              "#include \"engine/optim/optimizer.h\"\n"
              "#include <vector>\n"
              "#include \"engine/session/session.h\"\n");
    writeText(engine / "optim" / "optimizer.h", "#pragma once\n#include \"../session/events.h\"\n");
    writeText(engine / "core" / "paths.cpp", "#include <QString>\n#include <QtCore/QDir>\n");
    writeText(engine / "session" / "session.h", "#pragma once\n#include \"engine/model/gpt.h\"\n");
    writeText(engine / "stray" / "x.cpp", "#include \"engine/core/result.h\"\n");
    const Layers layers = readLayers("## Layout\n1. `core`\n2. `model`, `optim`\n3. `session`\n");
    ASSERT_TRUE(layers.error.empty()) << layers.error;

    const std::vector<Violation> found = checkIncludes(engine, layers);
    std::string all;
    for (const Violation& v : found) all += v.message + "\n";
    ASSERT_EQ(found.size(), 5u) << all;
    EXPECT_EQ(found[0].file, fs::path("engine/core/paths.cpp"));
    EXPECT_EQ(found[0].line, 1);
    EXPECT_EQ(found[0].message,
              "engine/core/paths.cpp:1: #include <QString>: the engine never includes Qt "
              "(DESIGN: engine/ links no GUI toolkit)");
    EXPECT_EQ(found[1].file, fs::path("engine/core/paths.cpp"));
    EXPECT_EQ(found[1].line, 2);
    EXPECT_EQ(found[2].file, fs::path("engine/model/gpt.cpp"));
    EXPECT_EQ(found[2].line, 6);
    EXPECT_EQ(found[2].message,
              "engine/model/gpt.cpp:6: #include \"engine/session/session.h\": model (layer 2) "
              "includes session (layer 3), a layer above it; move the shared code down or the "
              "includer up");
    EXPECT_EQ(found[3].file, fs::path("engine/optim/optimizer.h"));
    EXPECT_EQ(found[3].line, 2);
    EXPECT_NE(found[3].message.find("optim (layer 2) includes session (layer 3)"),
              std::string::npos)
        << found[3].message;
    EXPECT_EQ(found[4].file, fs::path("engine/stray/x.cpp"));
    EXPECT_NE(found[4].message.find("stray is not in HACKING.md's layer list"), std::string::npos)
        << found[4].message;

    const std::vector<std::string> unplaced = unplacedFolders(engine, layers);
    ASSERT_EQ(unplaced.size(), 1u);
    EXPECT_NE(unplaced[0].find("engine/stray/"), std::string::npos) << unplaced[0];
    const Layers extra =
        readLayers("## Layout\n1. `core`\n2. `model`, `optim`, `stray`\n3. `session`, `gone`\n");
    ASSERT_EQ(unplacedFolders(engine, extra).size(), 1u);
    EXPECT_NE(unplacedFolders(engine, extra)[0].find("`gone`"), std::string::npos);
}

}  // namespace
}  // namespace ws::layers
