// SPDX-License-Identifier: GPL-3.0-or-later
// Shared by the record readers (JSON, CSV, zip): a data file's bytes checked to be UTF-8 text
// before any parsing, and a list that gathers every bad record's error so that one read names
// them all (up to a limit) instead of the first only.
// Thread-safety: plain values and pure functions.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "engine/core/result.h"

namespace ws::data {

// The file's text without a UTF-8 byte order mark. Errors (naming `source`): a UTF-16/UTF-32 byte
// order mark, binary content (text_check.h: an executable, an archive, NUL bytes), a byte that
// is not UTF-8 ("data.csv:7: byte 0xE9 at column 12 is not UTF-8; save the file as UTF-8").
Result<std::string_view> checkRecordText(std::string_view bytes, std::string_view source);

// The byte offset of the first byte that is not part of valid UTF-8, or npos.
size_t firstInvalidUtf8(std::string_view text);

// Errors of many records, reported together: the first kMaxShown in full, then how many more.
class RecordErrors {
public:
    static constexpr size_t kMaxShown = 8;

    void add(std::string message);
    void add(const Error& error) { add(error.message); }
    bool empty() const { return m_count == 0; }
    size_t count() const { return m_count; }
    // One message: the errors on separate lines, "... and 12 more records with errors".
    Error error() const;

private:
    std::vector<std::string> m_shown;
    size_t m_count = 0;
};

}  // namespace ws::data
