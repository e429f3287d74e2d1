// SPDX-License-Identifier: GPL-3.0-or-later
// Record text checks and the error list (see record_text.h).
#include "engine/data/record_text.h"

#include <cstdint>
#include <cstdio>

#include "engine/data/text_check.h"

namespace ws::data {

size_t firstInvalidUtf8(std::string_view text) {
    const auto* s = reinterpret_cast<const unsigned char*>(text.data());
    const size_t n = text.size();
    size_t i = 0;
    while (i < n) {
        const unsigned c = s[i];
        if (c < 0x80) {
            ++i;
            continue;
        }
        size_t len = 0;
        unsigned lo = 0x80, hi = 0xBF;  // the second byte's range (overlongs, surrogates)
        if (c >= 0xC2 && c <= 0xDF) {
            len = 2;
        } else if (c >= 0xE0 && c <= 0xEF) {
            len = 3;
            if (c == 0xE0) lo = 0xA0;
            if (c == 0xED) hi = 0x9F;
        } else if (c >= 0xF0 && c <= 0xF4) {
            len = 4;
            if (c == 0xF0) lo = 0x90;
            if (c == 0xF4) hi = 0x8F;
        } else {
            return i;
        }
        if (i + len > n) return i;
        if (s[i + 1] < lo || s[i + 1] > hi) return i;
        for (size_t k = 2; k < len; ++k)
            if (s[i + k] < 0x80 || s[i + k] > 0xBF) return i;
        i += len;
    }
    return std::string_view::npos;
}

Result<std::string_view> checkRecordText(std::string_view bytes, std::string_view source) {
    const std::string where(source);
    if (bytes.starts_with("\xEF\xBB\xBF")) bytes.remove_prefix(3);
    if (bytes.starts_with("\xFF\xFE") || bytes.starts_with("\xFE\xFF") ||
        bytes.starts_with(std::string_view("\x00\x00\xFE\xFF", 4))) {
        return Error{where +
                     ": the file is UTF-16 or UTF-32 text; save it as UTF-8 (in Excel: Save As, "
                     "\"CSV UTF-8\"; with iconv: iconv -f UTF-16 -t UTF-8)"};
    }
    if (auto nonText = checkText(bytes)) return Error{nonTextMessage(where, *nonText)};
    const size_t bad = firstInvalidUtf8(bytes);
    if (bad != std::string_view::npos) {
        size_t line = 1, lineStart = 0;
        for (size_t i = 0; i < bad; ++i) {
            if (bytes[i] == '\n') {
                ++line;
                lineStart = i + 1;
            }
        }
        char hex[8];
        std::snprintf(hex, sizeof hex, "0x%02X", unsigned(uint8_t(bytes[bad])));
        return Error{where + ":" + std::to_string(line) + ": byte " + hex + " at column " +
                     std::to_string(bad - lineStart + 1) +
                     " is not UTF-8; save the file as UTF-8 (from Latin-1: iconv -f LATIN1 -t "
                     "UTF-8)"};
    }
    return bytes;
}

void RecordErrors::add(std::string message) {
    ++m_count;
    if (m_shown.size() < kMaxShown) m_shown.push_back(std::move(message));
}

Error RecordErrors::error() const {
    std::string out;
    for (const auto& m : m_shown) {
        if (!out.empty()) out += "\n";
        out += m;
    }
    if (m_count > m_shown.size())
        out +=
            "\n... and " + std::to_string(m_count - m_shown.size()) + " more records with errors";
    if (m_count > 1)
        out += "\n(" + std::to_string(m_count) +
               " bad records in all; nothing is trained until every record is fixed or removed)";
    return Error{out};
}

}  // namespace ws::data
