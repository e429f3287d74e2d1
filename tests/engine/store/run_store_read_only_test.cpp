// SPDX-License-Identifier: GPL-3.0-or-later
// RunStore on a folder that cannot be written (issue 19): opening it fails with an error that
// names the file, says why (read-only) and the way out, and nothing in the folder changes.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <sstream>

#include "engine/store/run_store.h"
#include "support/read_only_folder.h"
#include "support/temp_dir.h"

namespace ws::store {
namespace {

namespace fs = std::filesystem;

std::map<std::string, std::string> contents(const fs::path& folder) {
    std::map<std::string, std::string> files;
    for (const auto& entry : fs::directory_iterator(folder)) {
        std::ifstream in(entry.path(), std::ios::binary);
        std::ostringstream text;
        text << in.rdbuf();
        files[entry.path().filename().string()] = text.str();
    }
    return files;
}

TEST(RunStoreReadOnly, OpeningAStoreOnAReadOnlyFolderSaysSoAndChangesNothing) {
    testing::TempDir dir("store_ro");
    const fs::path folder = dir / "store";
    const fs::path path = folder / "runs.sqlite";
    {
        auto store = RunStore::open(path);
        ASSERT_TRUE(store.ok()) << store.error().message;
        NewRun run;
        run.name = "kept";
        ASSERT_TRUE((*store)->createRun(run).ok());
    }
    const auto before = contents(folder);
    testing::ReadOnlyFolder readOnly(folder);
    if (!readOnly.ok()) GTEST_SKIP() << readOnly.reason();
    auto opened = RunStore::open(path);
    ASSERT_FALSE(opened.ok());
    const std::string& message = opened.error().message;
    EXPECT_NE(message.find(path.string()), std::string::npos) << message;
    EXPECT_TRUE(message.find("read-only") != std::string::npos ||
                message.find("not writable") != std::string::npos)
        << message;
    EXPECT_NE(message.find("--db"), std::string::npos) << message;
    // A new store in the read-only folder is refused the same way.
    auto fresh = RunStore::open(folder / "other.sqlite");
    ASSERT_FALSE(fresh.ok());
    EXPECT_NE(fresh.error().message.find("--db"), std::string::npos) << fresh.error().message;
    EXPECT_EQ(contents(folder), before);
}

}  // namespace
}  // namespace ws::store
