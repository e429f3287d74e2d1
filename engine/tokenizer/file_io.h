// Whole-file reads and crash-safe writes for the tokenizer's small files (vocab.json,
// merges.txt, tokenizer.json). A write goes to a temporary file beside the target, is fsynced,
// then renamed over it, and the folder is fsynced: readers see the old file or the new one,
// never a half-written one. Errors name the file and the system's reason.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

#include "engine/core/result.h"

namespace ws::tokenizer {

Result<std::string> readWholeFile(const std::filesystem::path& path);
Status writeFileAtomically(const std::filesystem::path& path, std::string_view contents);

}  // namespace ws::tokenizer
