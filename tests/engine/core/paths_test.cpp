// SPDX-License-Identifier: GPL-3.0-or-later
// Where the programs find the app's data and keep the user's (engine/core/paths.h). Installed
// layouts (the .deb, another prefix, a moved prefix) are checked by tests/installer.
#include "engine/core/paths.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <optional>
#include <string>

namespace ws {
namespace {
namespace fs = std::filesystem;

// Sets an environment variable for one test and puts back what was there.
class ScopedEnv {
public:
    ScopedEnv(const char* name, const char* value) : m_name(name) {
        if (const char* old = std::getenv(name)) m_old = old;
        if (value)
            ::setenv(name, value, 1);
        else
            ::unsetenv(name);
    }
    ~ScopedEnv() {
        if (m_old)
            ::setenv(m_name, m_old->c_str(), 1);
        else
            ::unsetenv(m_name);
    }

private:
    const char* m_name;
    std::optional<std::string> m_old;
};

TEST(AppData, FoundThroughTheBuildTreesShareFolder) {
    ScopedEnv home("WAFER_STUDIO_HOME", nullptr);
    const AppDataLocation data = locateAppData();
    ASSERT_TRUE(data.found) << data.dir;
    EXPECT_EQ(data.foundBy, "build tree");
    // <build>/share/wafer-studio, linked by CMake to the sources' presets and resources.
    EXPECT_EQ(data.dir.filename(), "wafer-studio");
    EXPECT_EQ(data.dir.parent_path().filename(), "share");
    EXPECT_TRUE(fs::exists(data.dir.parent_path().parent_path() / "CMakeCache.txt"));
    EXPECT_TRUE(fs::is_regular_file(data.dir / "presets" / "gpt-nano.yaml"));
    EXPECT_TRUE(fs::is_regular_file(data.dir / "presets" / "wafers" / "wse3.yaml"));
    EXPECT_TRUE(fs::is_directory(data.dir / "resources" / "corpus"));
    EXPECT_TRUE(fs::is_regular_file(data.dir / "resources" / "base-model" / "model.safetensors"));
    EXPECT_TRUE(fs::is_regular_file(data.dir / "README.md"));
    EXPECT_EQ(appDataDir(), data.dir);
}

TEST(AppData, WaferStudioHomeWins) {
    ScopedEnv home("WAFER_STUDIO_HOME", "/srv/wafer-data");
    const AppDataLocation data = locateAppData();
    EXPECT_TRUE(data.found);
    EXPECT_EQ(data.dir, fs::path("/srv/wafer-data"));
    EXPECT_EQ(data.foundBy, "WAFER_STUDIO_HOME");
}

TEST(UserDirs, FollowXdgVariablesElseHome) {
    {
        ScopedEnv data("XDG_DATA_HOME", "/x/data");
        ScopedEnv cache("XDG_CACHE_HOME", "/x/cache");
        EXPECT_EQ(userDataDir(), fs::path("/x/data/wafer-studio"));
        EXPECT_EQ(userCacheDir(), fs::path("/x/cache/wafer-studio"));
    }
    ScopedEnv data("XDG_DATA_HOME", nullptr);
    ScopedEnv cache("XDG_CACHE_HOME", nullptr);
    ScopedEnv home("HOME", "/home/ada");
    EXPECT_EQ(userDataDir(), fs::path("/home/ada/.local/share/wafer-studio"));
    EXPECT_EQ(userCacheDir(), fs::path("/home/ada/.cache/wafer-studio"));
}

}  // namespace
}  // namespace ws
