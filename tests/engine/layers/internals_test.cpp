// SPDX-License-Identifier: GPL-3.0-or-later
// No module uses another's internals: no file in engine/, app/ or ui/ includes another engine
// folder's internal header or names another folder's detail namespace (internal_check.h says how
// a header is internal). The checker is tested on a planted tree, so it provably fails when the
// rule is broken.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "internal_check.h"
#include "support/temp_dir.h"

namespace ws::layers {
namespace {

namespace fs = std::filesystem;

void writeText(const fs::path& file, const std::string& text) {
    fs::create_directories(file.parent_path());
    std::ofstream(file) << text;
}

TEST(EngineInternals, NoModuleUsesAnothersDetailNamespaceOrInternalHeader) {
    std::string report;
    for (const Violation& v : checkInternals(WAFER_SOURCE_DIR)) report += v.message + "\n";
    EXPECT_TRUE(report.empty()) << report;
}

TEST(EngineInternals, AHeaderIsInternalByItsOpeningCommentOrItsDetailNamespace) {
    ws::testing::TempDir dir("internals_marker");
    writeText(dir / "a.h", "// Parsing helpers (internal to wafer::config).\n#pragma once\n");
    writeText(dir / "b.h", "// The GIF quantizer (Not a public header).\n#pragma once\n");
    writeText(dir / "c.h", "// Store rows.\n#pragma once\nnamespace ws::store::detail {\n}\n");
    writeText(dir / "d.h",
              "// The public reader.\n#pragma once\n// internal to nobody: not the opening\n"
              "namespace ws::store {\nnamespace detail {\n}\n}\n");
    EXPECT_TRUE(isInternalHeader(dir / "a.h"));
    EXPECT_TRUE(isInternalHeader(dir / "b.h"));
    EXPECT_TRUE(isInternalHeader(dir / "c.h"));
    // A public header may keep a few test hooks in a nested detail block: still public.
    EXPECT_FALSE(isInternalHeader(dir / "d.h"));
}

// A planted tree: uses of another folder's detail namespace and internal header from engine/ and
// app/, beside allowed ones (a folder's own internals, public headers, comments, non-engine names).
TEST(EngineInternals, ThePlantedUsesAreReportedWithFileAndLine) {
    ws::testing::TempDir dir("internals");
    writeText(dir / "engine" / "config" / "text_format.h",
              "// Scalars as config text. Public API of wafer::config.\n#pragma once\n");
    writeText(dir / "engine" / "config" / "keys.h",
              "// Known keys. Internal to wafer::config.\n#pragma once\n");
    writeText(dir / "engine" / "config" / "reader.cpp",
              "#include \"engine/config/keys.h\"\n"
              "int a = config::detail::x;  // its own detail\n");
    writeText(dir / "engine" / "store" / "rows.h",
              "// Rows.\n#pragma once\nnamespace ws::store::detail {\n}\n");
    writeText(dir / "engine" / "sweep" / "space.cpp",
              "#include \"engine/config/text_format.h\"\n"
              "#include \"engine/config/keys.h\"\n"
              "// config::detail in a comment is fine\n"
              "#include \"../store/rows.h\"\n"
              "double v = config::detail::parseDouble(t) + std::detail::y;\n");
    writeText(dir / "app" / "cli" / "sweep.cpp",
              "namespace ws::config::detail { int hack; }\n"
              "#include <engine/config/keys.h>\n");
    const std::vector<Violation> found = checkInternals(dir.path());
    std::string all;
    for (const Violation& v : found) all += v.message + "\n";
    ASSERT_EQ(found.size(), 5u) << all;
    EXPECT_EQ(found[0].file, fs::path("app/cli/sweep.cpp"));
    EXPECT_EQ(found[0].line, 1);
    EXPECT_EQ(found[0].message,
              "app/cli/sweep.cpp:1: config::detail: the detail namespace is internal to config; "
              "use its public API, or make public (in config or a lower layer) what this file "
              "needs");
    EXPECT_EQ(found[1].line, 2);
    EXPECT_NE(found[1].message.find("app/cli/sweep.cpp:2: #include <engine/config/keys.h>"),
              std::string::npos)
        << found[1].message;
    EXPECT_EQ(found[2].file, fs::path("engine/sweep/space.cpp"));
    EXPECT_EQ(found[2].line, 2);
    EXPECT_EQ(found[2].message,
              "engine/sweep/space.cpp:2: #include \"engine/config/keys.h\": engine/config/keys.h "
              "is internal to config; include its public headers, or make public (in config or a "
              "lower layer) what this file needs");
    EXPECT_EQ(found[3].file, fs::path("engine/sweep/space.cpp"));
    EXPECT_EQ(found[3].line, 4);
    EXPECT_NE(found[3].message.find("engine/store/rows.h is internal to store"), std::string::npos)
        << found[3].message;
    EXPECT_EQ(found[4].file, fs::path("engine/sweep/space.cpp"));
    EXPECT_EQ(found[4].line, 5);
    EXPECT_NE(found[4].message.find("config::detail: the detail namespace is internal to config"),
              std::string::npos)
        << found[4].message;
}

}  // namespace
}  // namespace ws::layers
