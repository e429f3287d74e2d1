// SPDX-License-Identifier: GPL-3.0-or-later
// Build-then-rename output folders: see output_folder.h.
#include "engine/interop/output_folder.h"

#include <fmt/format.h>
#include <unistd.h>

namespace ws::interop {
namespace fs = std::filesystem;

Status checkOutputFolderFree(const fs::path& outDir) {
    std::error_code ec;
    if (fs::exists(outDir, ec) && !(fs::is_directory(outDir, ec) && fs::is_empty(outDir, ec))) {
        return Error{
            fmt::format("{}: already exists and is not an empty folder; nothing is "
                        "overwritten, choose another --out",
                        outDir.string())};
    }
    return Status::success();
}

Result<fs::path> buildOutputFolder(const fs::path& outDir, std::string_view verb,
                                   const std::function<Status(const fs::path& temp)>& build) {
    std::error_code ec;
    const fs::path target = fs::absolute(outDir, ec).lexically_normal();
    const fs::path temp = target.parent_path() /
                          fmt::format(".{}.{}-{}", target.filename().string(), verb, ::getpid());
    fs::remove_all(temp, ec);
    fs::create_directories(temp, ec);
    if (ec) return Error{fmt::format("cannot create {}: {}", temp.string(), ec.message())};
    if (Status st = build(temp); !st.ok()) {
        fs::remove_all(temp, ec);
        return st.error();
    }
    if (fs::exists(target, ec)) fs::remove(target, ec);  // an empty folder (checked first)
    fs::rename(temp, target, ec);
    if (ec) {
        fs::remove_all(temp, ec);
        return Error{fmt::format("cannot move the {}ed model into {}: {}", verb, target.string(),
                                 ec.message())};
    }
    return target;
}

}  // namespace ws::interop
