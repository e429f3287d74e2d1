#include "engine/core/paths.h"

#include <unistd.h>

#include <cstdlib>
#include <system_error>

namespace ws {
namespace fs = std::filesystem;

namespace {
fs::path xdgDir(const char* variable, const char* fallbackUnderHome) {
    if (const char* v = std::getenv(variable); v && *v) return fs::path(v) / "wafer-studio";
    const char* home = std::getenv("HOME");
    fs::path base = (home && *home) ? fs::path(home) : fs::temp_directory_path();
    return base / fallbackUnderHome / "wafer-studio";
}

fs::path executableDir() {
    std::error_code ec;
    fs::path exe = fs::read_symlink("/proc/self/exe", ec);
    return ec ? fs::path() : exe.parent_path();
}
}  // namespace

fs::path userCacheDir() {
    return xdgDir("XDG_CACHE_HOME", ".cache");
}
fs::path userDataDir() {
    return xdgDir("XDG_DATA_HOME", ".local/share");
}

fs::path appDataDir() {
    if (const char* v = std::getenv("WAFER_STUDIO_HOME"); v && *v) return fs::path(v);
    std::error_code ec;
    const fs::path installed = executableDir() / ".." / "share" / "wafer-studio";
    if (fs::exists(installed / "presets", ec)) return fs::weakly_canonical(installed, ec);
    return fs::path(WAFER_SOURCE_DIR);
}

}  // namespace ws
