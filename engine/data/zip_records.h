// SPDX-License-Identifier: GPL-3.0-or-later
// A .zip of data files (how H2O LLM Studio and many download pages ship CSV data sets): the
// archive's record files (.csv, .tsv, .jsonl, .ndjson, .json), in name order, through libzip.
// Folders, macOS metadata (__MACOSX/, ._*), hidden files and other files (README.md, a nested
// zip, plain .txt) are skipped and named (skipped), so the caller can warn. Errors name the
// archive (and the entry): not a zip, damaged or encrypted entries, an entry claiming more than
// deflate can expand to (a zip bomb) or more than kMaxZipEntryBytes, no record file inside.
// Thread-safety: pure functions (each call opens its own libzip archive).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "engine/core/result.h"

namespace ws::data {

inline constexpr uint64_t kMaxZipEntryBytes = uint64_t(4) << 30;

struct ZipEntry {
    std::string name;   // its path inside the archive
    std::string bytes;  // uncompressed content
};

struct ZipContents {
    std::vector<ZipEntry> files;       // record files, sorted by name
    std::vector<std::string> skipped;  // entries not read (not folders)
};

// `bytes` is the whole archive; `source` names it in errors.
Result<ZipContents> readZipRecordFiles(std::string_view bytes, std::string_view source);

// Is this name one of the record files a zip is read for (.csv, .tsv, .jsonl, .ndjson, .json)?
bool isZipRecordName(std::string_view name);

}  // namespace ws::data
