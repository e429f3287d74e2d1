// SPDX-License-Identifier: GPL-3.0-or-later
// Plain-text check of data files (see text_check.h).
#include "engine/data/text_check.h"

#include <fmt/format.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <fstream>

namespace ws::data {
namespace {

constexpr std::string_view kExportAsText = "export it as plain text (.txt) first";
constexpr std::string_view kNotAProgram = "give the text file you meant instead";
constexpr std::string_view kUnpack = "unpack it and give the text files inside";
constexpr std::string_view kNoText = "give a plain text (UTF-8) file instead";

struct Signature {
    std::string_view magic;
    size_t offset;
    std::string_view kind;
    std::string_view advice;
};

using namespace std::string_view_literals;

// Leading bytes of common non-text files (from each format's specification). Longer and more
// specific signatures first where one is a prefix of another.
constexpr std::array kSignatures = {
    Signature{"\x7f"
              "ELF"sv,
              0, "an ELF executable or library", kNotAProgram},
    Signature{"\xcf\xfa\xed\xfe"sv, 0, "a Mach-O executable", kNotAProgram},
    Signature{"\xfe\xed\xfa\xcf"sv, 0, "a Mach-O executable", kNotAProgram},
    Signature{"\xca\xfe\xba\xbe"sv, 0, "a Mach-O or Java class file", kNotAProgram},
    Signature{"\0asm"sv, 0, "a WebAssembly module", kNotAProgram},
    Signature{"%PDF-"sv, 0, "a PDF document", kExportAsText},
    Signature{"{\\rtf"sv, 0, "an RTF document", kExportAsText},
    Signature{"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"sv, 0,
              "a Microsoft Office 97-2003 document (.doc, .xls, .ppt)", kExportAsText},
    Signature{"\x89PNG\r\n\x1a\n"sv, 0, "a PNG image", kNoText},
    Signature{"\xff\xd8\xff"sv, 0, "a JPEG image", kNoText},
    Signature{"GIF87a"sv, 0, "a GIF image", kNoText},
    Signature{"GIF89a"sv, 0, "a GIF image", kNoText},
    Signature{"WEBP"sv, 8, "a WebP image", kNoText},  // after "RIFF" and a size
    Signature{"\x1f\x8b"sv, 0, "a gzip archive", kUnpack},
    Signature{"BZh"sv, 0, "a bzip2 archive", kUnpack},
    Signature{"\xfd"
              "7zXZ\0"sv,
              0, "an xz archive", kUnpack},
    Signature{"\x28\xb5\x2f\xfd"sv, 0, "a zstd archive", kUnpack},
    Signature{"7z\xbc\xaf\x27\x1c"sv, 0, "a 7-Zip archive", kUnpack},
    Signature{"Rar!\x1a\x07"sv, 0, "a RAR archive", kUnpack},
    Signature{"SQLite format 3\0"sv, 0, "an SQLite database", kNoText},
    Signature{"\xff\xfe\0\0"sv, 0, "UTF-32 text", "save it as UTF-8"},
    Signature{"\0\0\xfe\xff"sv, 0, "UTF-32 text", "save it as UTF-8"},
    Signature{"\xff\xfe"sv, 0, "UTF-16 text", "save it as UTF-8"},
    Signature{"\xfe\xff"sv, 0, "UTF-16 text", "save it as UTF-8"},
};

// A ZIP archive: Office Open XML and OpenDocument files are ZIPs too; their member names tell.
NonText zipKind(std::string_view content) {
    const std::string_view head = content.substr(0, 64 * 1024);
    const auto has = [&](std::string_view s) { return head.find(s) != std::string_view::npos; };
    const std::string advice(kExportAsText);
    if (has("word/")) return {"a Word document (DOCX)", advice};
    if (has("xl/")) return {"an Excel workbook (XLSX)", advice};
    if (has("ppt/")) return {"a PowerPoint presentation (PPTX)", advice};
    if (has("application/vnd.oasis.opendocument"))
        return {"an OpenDocument file (ODT/ODS)", advice};
    if (has("application/epub+zip")) return {"an EPUB e-book", advice};
    return {"a ZIP archive", std::string(kUnpack)};
}

// A safetensors file: an 8-byte little-endian header length, then a JSON header.
bool looksLikeSafetensors(std::string_view content) {
    if (content.size() < 10 || content.substr(8, 2) != "{\"") return false;
    uint64_t length = 0;
    for (int i = 7; i >= 0; --i) length = (length << 8) | uint8_t(content[size_t(i)]);
    return length > 1 && length < (uint64_t(1) << 32);
}

// Length of the valid UTF-8 sequence starting at content[i], 0 if invalid, -1 if cut off by the
// end of `content` (a file read only in part).
int utf8SequenceLength(std::string_view content, size_t i) {
    const auto c = uint8_t(content[i]);
    int length = 0;
    uint32_t code = 0;
    if (c < 0x80) return 1;
    if ((c & 0xe0) == 0xc0) {
        length = 2;
        code = c & 0x1f;
    } else if ((c & 0xf0) == 0xe0) {
        length = 3;
        code = c & 0x0f;
    } else if ((c & 0xf8) == 0xf0) {
        length = 4;
        code = c & 0x07;
    } else {
        return 0;
    }
    for (int k = 1; k < length; ++k) {
        if (i + size_t(k) >= content.size()) return -1;
        const auto next = uint8_t(content[i + size_t(k)]);
        if ((next & 0xc0) != 0x80) return 0;
        code = (code << 6) | (next & 0x3f);
    }
    // Overlong forms, surrogates and values beyond Unicode are invalid UTF-8.
    static constexpr std::array<uint32_t, 5> kMinimum = {0, 0, 0x80, 0x800, 0x10000};
    if (code < kMinimum[size_t(length)] || code > 0x10ffff || (code >= 0xd800 && code <= 0xdfff))
        return 0;
    return length;
}

bool isOddControl(uint8_t c) {
    // Tab, line feed, vertical tab, form feed, carriage return and escape (terminal colours in
    // logs) occur in text; the other C0 controls and DEL do not.
    if (c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r' || c == 0x1b) return false;
    return c < 0x20 || c == 0x7f;
}

}  // namespace

std::optional<NonText> checkText(std::string_view content) {
    for (const Signature& s : kSignatures) {
        if (content.size() >= s.offset + s.magic.size() &&
            content.substr(s.offset, s.magic.size()) == s.magic) {
            if (s.offset == 8 && content.substr(0, 4) != "RIFF") continue;
            return NonText{std::string(s.kind), std::string(s.advice)};
        }
    }
    if (content.starts_with("PK\x03\x04"sv) || content.starts_with("PK\x05\x06"sv))
        return zipKind(content);
    if (content.starts_with("MZ") && content.find('\0') != std::string_view::npos)
        return NonText{"a Windows executable", std::string(kNotAProgram)};
    if (looksLikeSafetensors(content))
        return NonText{"a safetensors model file", std::string(kNoText)};

    size_t nul = 0, nulAtEven = 0, odd = 0;
    for (size_t i = 0; i < content.size();) {
        const auto c = uint8_t(content[i]);
        if (c == 0) {
            ++nul;
            if (i % 2 == 0) ++nulAtEven;
            ++i;
            continue;
        }
        if (isOddControl(c)) {
            ++odd;
            ++i;
            continue;
        }
        const int length = utf8SequenceLength(content, i);
        if (length < 0) break;  // a sequence cut off where the read stopped
        if (length == 0) {
            ++odd;
            ++i;
        } else {
            i += size_t(length);
        }
    }
    if (nul > 0) {
        // UTF-16 without a byte order mark: ASCII letters with a NUL beside each.
        if (nul * 3 >= content.size() && (nulAtEven * 10 >= nul * 9 || nulAtEven * 10 <= nul))
            return NonText{"UTF-16 text", "save it as UTF-8"};
        return NonText{fmt::format("binary data ({} NUL byte{})", nul, nul == 1 ? "" : "s"),
                       std::string(kNoText)};
    }
    if (!content.empty() && double(odd) > kMaxOddByteShare * double(content.size())) {
        return NonText{fmt::format("binary data ({:.0f}% of its bytes are control characters or "
                                   "invalid UTF-8)",
                                   100.0 * double(odd) / double(content.size())),
                       std::string(kNoText)};
    }
    return std::nullopt;
}

std::string nonTextMessage(const std::filesystem::path& file, const NonText& what,
                           std::string_view allowHint) {
    std::string message = fmt::format("'{}' looks like {}, not plain text: {}", file.string(),
                                      what.kind, what.advice);
    if (!allowHint.empty()) message += fmt::format(" ({})", allowHint);
    return message;
}

Result<std::optional<NonText>> checkTextFile(const std::filesystem::path& file, size_t limit) {
    std::ifstream in(file, std::ios::binary);
    if (!in) return Error{fmt::format("cannot read '{}': {}", file.string(), std::strerror(errno))};
    std::string head(limit, '\0');
    in.read(head.data(), std::streamsize(limit));
    if (in.bad()) return Error{fmt::format("read error in '{}'", file.string())};
    head.resize(size_t(in.gcount()));
    return checkText(head);
}

}  // namespace ws::data
