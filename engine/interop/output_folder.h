// SPDX-License-Identifier: GPL-3.0-or-later
// Output folders of import and export: the target must not exist or be an empty folder (nothing
// is ever overwritten), and its content is built in a hidden sibling folder that is renamed into
// place whole, so a failure or a crash never leaves a half-written model under the target name.
// Thread-safety: plain functions; two processes writing the same target race on the rename.
#pragma once

#include <filesystem>
#include <functional>
#include <string_view>

#include "engine/core/result.h"

namespace ws::interop {

// Refuses, naming it, an `outDir` that exists and is not an empty folder.
Status checkOutputFolderFree(const std::filesystem::path& outDir);

// Runs build(temp) on a fresh hidden folder beside `outDir`, then renames it to `outDir` (an
// empty folder there is replaced). `verb` ("import", "export") names the temp folder and the
// errors. Returns the absolute target; on failure nothing is left behind.
Result<std::filesystem::path> buildOutputFolder(
    const std::filesystem::path& outDir, std::string_view verb,
    const std::function<Status(const std::filesystem::path& temp)>& build);

}  // namespace ws::interop
