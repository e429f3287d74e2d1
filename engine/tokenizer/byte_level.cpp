// SPDX-License-Identifier: GPL-3.0-or-later
// bytes_to_unicode() as in GPT-2's encoder.py, and a strict UTF-8 decoder.
#include "engine/tokenizer/byte_level.h"

#include <array>

namespace ws::tokenizer {
namespace {

struct Tables {
    std::array<char32_t, 256> toUnicode{};
    std::array<int16_t, 512> toByte{};  // every mapped code point is below U+0144
};

const Tables& tables() {
    static const Tables t = [] {
        Tables r;
        r.toByte.fill(-1);
        auto printable = [](int b) {
            return (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
        };
        int next = 0;
        for (int b = 0; b < 256; ++b) {
            r.toUnicode[b] = printable(b) ? char32_t(b) : char32_t(256 + next++);
            r.toByte[r.toUnicode[b]] = int16_t(b);
        }
        return r;
    }();
    return t;
}

}  // namespace

char32_t byteToUnicode(uint8_t b) {
    return tables().toUnicode[b];
}

std::optional<uint8_t> unicodeToByte(char32_t cp) {
    if (cp >= 512) return std::nullopt;
    const int16_t b = tables().toByte[cp];
    if (b < 0) return std::nullopt;
    return uint8_t(b);
}

std::string bytesToByteLevel(std::string_view bytes) {
    std::string out;
    out.reserve(bytes.size() * 2);
    for (char c : bytes) appendUtf8(out, byteToUnicode(uint8_t(c)));
    return out;
}

std::optional<std::string> byteLevelToBytes(std::string_view text) {
    std::string out;
    out.reserve(text.size());
    while (!text.empty()) {
        const Utf8Unit u = decodeUtf8(text);
        if (!u.valid) return std::nullopt;
        const auto b = unicodeToByte(u.codePoint);
        if (!b) return std::nullopt;
        out.push_back(char(*b));
        text.remove_prefix(size_t(u.length));
    }
    return out;
}

Utf8Unit decodeUtf8(std::string_view text) {
    const auto byte = [&](size_t i) { return uint8_t(text[i]); };
    const uint8_t b0 = byte(0);
    if (b0 < 0x80) return {b0, 1, true};
    int length = 0;
    char32_t cp = 0;
    char32_t minimum = 0;
    if ((b0 & 0xE0) == 0xC0) {
        length = 2, cp = b0 & 0x1F, minimum = 0x80;
    } else if ((b0 & 0xF0) == 0xE0) {
        length = 3, cp = b0 & 0x0F, minimum = 0x800;
    } else if ((b0 & 0xF8) == 0xF0) {
        length = 4, cp = b0 & 0x07, minimum = 0x10000;
    } else {
        return {b0, 1, false};
    }
    if (text.size() < size_t(length)) return {b0, 1, false};
    for (int i = 1; i < length; ++i) {
        const uint8_t b = byte(size_t(i));
        if ((b & 0xC0) != 0x80) return {b0, 1, false};
        cp = (cp << 6) | (b & 0x3F);
    }
    if (cp < minimum || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return {b0, 1, false};
    return {cp, length, true};
}

void appendUtf8(std::string& out, char32_t cp) {
    if (cp < 0x80) {
        out.push_back(char(cp));
    } else if (cp < 0x800) {
        out.push_back(char(0xC0 | (cp >> 6)));
        out.push_back(char(0x80 | (cp & 0x3F)));
    } else if (cp < 0x10000) {
        out.push_back(char(0xE0 | (cp >> 12)));
        out.push_back(char(0x80 | ((cp >> 6) & 0x3F)));
        out.push_back(char(0x80 | (cp & 0x3F)));
    } else {
        out.push_back(char(0xF0 | (cp >> 18)));
        out.push_back(char(0x80 | ((cp >> 12) & 0x3F)));
        out.push_back(char(0x80 | ((cp >> 6) & 0x3F)));
        out.push_back(char(0x80 | (cp & 0x3F)));
    }
}

}  // namespace ws::tokenizer
