// SPDX-License-Identifier: GPL-3.0-or-later
// Does a file look like plain text? Training on an executable, a PDF or a DOCX runs without
// complaint (every byte is a valid byte token) and teaches the model garbage, so data loading
// checks each file's content first and names what it looks like instead.
//
// A file is judged "not text" when
// - it starts with a known binary signature (ELF, PE/MZ, Mach-O, PDF, ZIP and the Office/ODF
//   documents built on it, OLE (Word/Excel 97-2003), PNG, JPEG, GIF, WebP, gzip, bzip2, xz, zstd,
//   7-Zip, RAR, SQLite, RTF, a safetensors model, UTF-16/UTF-32 byte order marks), or
// - it holds NUL bytes (no text encoding that data loading reads has them), or
// - more than kMaxOddByteShare of its bytes are control characters or bytes of invalid UTF-8.
// Plain UTF-8 in any script passes, and so does Latin-1 prose (a few invalid UTF-8 bytes per
// accented letter stay far below the share).
// Thread-safety: free functions without shared state.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include "engine/core/result.h"

namespace ws::data {

// Above this share of control or invalid-UTF-8 bytes, content is not text.
inline constexpr double kMaxOddByteShare = 0.10;

struct NonText {
    std::string kind;    // completes "... looks like ___": "an ELF executable", "a PDF document"
    std::string advice;  // what to do instead: "export it as plain text (.txt) first"
};

// What `content` looks like when it is not plain text; nullopt for text.
std::optional<NonText> checkText(std::string_view content);

// "'docs/report.pdf' looks like a PDF document, not plain text: export it as plain text (.txt)
// first (HINT)". `allowHint` (may be empty) says how to use it anyway.
std::string nonTextMessage(const std::filesystem::path& file, const NonText& what,
                           std::string_view allowHint = {});

// Reads up to the first `limit` bytes of a file and judges them (the GUI checks files as they
// are dropped without reading a whole corpus). Errors: the file cannot be read.
Result<std::optional<NonText>> checkTextFile(const std::filesystem::path& file,
                                             size_t limit = size_t(1) << 20);

}  // namespace ws::data
