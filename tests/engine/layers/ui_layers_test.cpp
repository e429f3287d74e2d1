// SPDX-License-Identifier: GPL-3.0-or-later
// The studio keeps its layers as the engine does (DESIGN "Layout": common pieces below the tabs,
// the features above them, the shell on top): no ui/ folder includes one above it, and every ui/
// folder is placed. The checker is run on a planted tree too, so the check provably fails, with
// the file and line, when the rule is broken.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>

#include "layer_check.h"
#include "support/temp_dir.h"

namespace ws::layers {
namespace {

namespace fs = std::filesystem;

const fs::path kSource = WAFER_SOURCE_DIR;

// The studio's layers, lowest first. A folder includes only folders on its own line or a lower
// one: the tabs share only common/; Run on Cluster, the lessons and the teaching aids (presenter
// mode, auto-step) use the tabs; only the shell puts everything together. The lessons reach the
// studio through ui/lessons/lesson_host.h, which the shell implements.
constexpr const char* kUiLayers =
    "## Layout\n"
    "1. `common`\n"
    "2. `config`, `training`, `samples`, `chat`, `sweeps`, `wafer`, `answers`\n"
    "3. `cluster`, `lessons`, `teaching`\n"
    "4. `shell`\n";

const Tree kUi{"ui", true, "the studio's layer list (tests/engine/layers/ui_layers_test.cpp)"};

void writeText(const fs::path& file, const std::string& text) {
    fs::create_directories(file.parent_path());
    std::ofstream(file) << text;
}

TEST(UiLayers, NoFolderIncludesAHigherLayer) {
    const Layers layers = readLayers(kUiLayers);
    ASSERT_TRUE(layers.error.empty()) << layers.error;
    std::string report;
    for (const Violation& v : checkIncludes(kSource / "ui", layers, kUi))
        report += v.message + "\n";
    EXPECT_TRUE(report.empty()) << report;
}

TEST(UiLayers, EveryUiFolderIsInTheLayerList) {
    const Layers layers = readLayers(kUiLayers);
    ASSERT_TRUE(layers.error.empty()) << layers.error;
    std::string report;
    for (const std::string& problem : unplacedFolders(kSource / "ui", layers, kUi))
        report += problem + "\n";
    EXPECT_TRUE(report.empty()) << report;
}

// A planted tree: lessons including the shell, a tab including another feature, and allowed
// includes (Qt, the engine, common, a tab from a feature, the same layer).
TEST(UiLayers, ThePlantedViolationsAreReportedWithFileAndLine) {
    ws::testing::TempDir dir("ui_layers");
    const fs::path ui = dir / "ui";
    writeText(ui / "common" / "plot_theme.h", "#pragma once\n#include <QColor>\n");
    writeText(ui / "lessons" / "lessons_panel.cpp",
              "#include \"ui/lessons/lessons_panel.h\"\n"
              "#include <QWidget>\n"
              "#include \"engine/lesson/lesson.h\"\n"
              "#include \"ui/config/config_tab.h\"\n"
              "#include \"ui/teaching/auto_step.h\"\n"
              "#include \"ui/shell/main_window.h\"\n");
    writeText(ui / "config" / "config_tab.h",
              "#pragma once\n#include \"ui/common/plot_theme.h\"\n#include \"ui/wafer/x.h\"\n"
              "#include \"ui/cluster/cluster_job.h\"\n");
    writeText(ui / "shell" / "main_window.h",
              "#pragma once\n#include \"ui/lessons/lesson_host.h\"\n");
    const Layers layers = readLayers(kUiLayers);
    ASSERT_TRUE(layers.error.empty()) << layers.error;

    const std::vector<Violation> found = checkIncludes(ui, layers, kUi);
    std::string all;
    for (const Violation& v : found) all += v.message + "\n";
    ASSERT_EQ(found.size(), 2u) << all;
    EXPECT_EQ(found[0].file, fs::path("ui/config/config_tab.h"));
    EXPECT_EQ(found[0].line, 4);
    EXPECT_EQ(found[0].message,
              "ui/config/config_tab.h:4: #include \"ui/cluster/cluster_job.h\": config (layer 2) "
              "includes cluster (layer 3), a layer above it; move the shared code down or the "
              "includer up");
    EXPECT_EQ(found[1].file, fs::path("ui/lessons/lessons_panel.cpp"));
    EXPECT_EQ(found[1].line, 6);
    EXPECT_EQ(found[1].message,
              "ui/lessons/lessons_panel.cpp:6: #include \"ui/shell/main_window.h\": lessons "
              "(layer 3) includes shell (layer 4), a layer above it; move the shared code down "
              "or the includer up");

    writeText(ui / "stray" / "x.cpp", "#include \"ui/common/plot_theme.h\"\n");
    const std::vector<std::string> unplaced = unplacedFolders(ui, layers, kUi);
    ASSERT_EQ(unplaced.size(), 9u);  // stray/, and the eight listed folders not planted
    EXPECT_NE(
        std::find_if(unplaced.begin(), unplaced.end(),
                     [](const std::string& p) { return p.rfind("ui/stray/ is not", 0) == 0; }),
        unplaced.end());
}

}  // namespace
}  // namespace ws::layers
