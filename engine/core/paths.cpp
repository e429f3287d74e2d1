// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/core/paths.h"

#include <unistd.h>

#include <cstdlib>
#include <system_error>

#ifndef WAFER_DATA_SUBDIR
#error \
    "WAFER_DATA_SUBDIR (the share folder relative to a prefix) comes from engine/core/CMakeLists.txt"
#endif

namespace ws {
namespace fs = std::filesystem;

namespace {
fs::path xdgDir(const char* variable, const char* fallbackUnderHome) {
    if (const char* v = std::getenv(variable); v && *v) return fs::path(v) / "wafer-studio";
    const char* home = std::getenv("HOME");
    std::error_code ec;  // a TMPDIR that is not a folder must not throw out of here
    fs::path base = (home && *home) ? fs::path(home) : fs::temp_directory_path(ec);
    if (base.empty()) base = "/tmp";
    return base / fallbackUnderHome / "wafer-studio";
}

fs::path executableDir() {
    std::error_code ec;
    fs::path exe = fs::read_symlink("/proc/self/exe", ec);
    return ec ? fs::path() : exe.parent_path();
}

// A build tree holds the same share folder as an install (links made by CMake) and a
// CMakeCache.txt at its top, where an installed prefix has none.
bool isBuildTree(const fs::path& prefix) {
    std::error_code ec;
    return fs::exists(prefix / "CMakeCache.txt", ec);
}
}  // namespace

fs::path userCacheDir() {
    return xdgDir("XDG_CACHE_HOME", ".cache");
}
fs::path userDataDir() {
    return xdgDir("XDG_DATA_HOME", ".local/share");
}

AppDataLocation locateAppData() {
    if (const char* v = std::getenv("WAFER_STUDIO_HOME"); v && *v)
        return {fs::path(v), "WAFER_STUDIO_HOME", true};
    const fs::path exeDir = executableDir();
    std::error_code ec;
    fs::path prefix = exeDir;
    for (int up = 0; up <= 4 && !prefix.empty(); ++up) {
        const fs::path candidate = prefix / WAFER_DATA_SUBDIR;
        if (fs::is_directory(candidate / "presets", ec)) {
            return {fs::weakly_canonical(candidate, ec),
                    isBuildTree(prefix) ? "build tree" : "install prefix", true};
        }
        if (prefix == prefix.root_path()) break;
        prefix = prefix.parent_path();
    }
    return {(exeDir.empty() ? fs::path("/usr/bin") : exeDir).parent_path() / WAFER_DATA_SUBDIR,
            "not found", false};
}

fs::path appDataDir() {
    return locateAppData().dir;
}

fs::path absoluteNormal(const fs::path& path) {
    std::error_code ec;
    const fs::path absolute = fs::absolute(path, ec);
    return (ec ? path : absolute).lexically_normal();
}

}  // namespace ws
