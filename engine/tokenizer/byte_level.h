// SPDX-License-Identifier: GPL-3.0-or-later
// GPT-2's byte-level alphabet: bytes_to_unicode() maps each of the 256 byte values to a printable
// code point (printable Latin-1 bytes map to themselves, the rest to U+0100 onwards), so that
// vocab.json and merges.txt can spell any byte string as visible text ("Ġ" is the space byte).
// Also the small UTF-8 helpers the pre-tokeniser and the file formats need.
// Thread-safe: pure functions over constant tables.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace ws::tokenizer {

// The code point GPT-2 spells byte b with.
char32_t byteToUnicode(uint8_t b);
// Inverse of byteToUnicode; nullopt for code points outside the 256-character alphabet.
std::optional<uint8_t> unicodeToByte(char32_t cp);

// Byte string -> its byte-level spelling (UTF-8 of the mapped code points), e.g. " the" -> "Ġthe".
std::string bytesToByteLevel(std::string_view bytes);
// Byte-level spelling -> bytes; nullopt when the text is not valid UTF-8 or uses a code point
// outside the alphabet (such vocab entries, e.g. added special tokens, are kept verbatim).
std::optional<std::string> byteLevelToBytes(std::string_view text);

// One decoded UTF-8 unit at the front of text. Invalid or truncated sequences, overlong forms,
// surrogates and values above U+10FFFF yield valid=false with length 1 (that single byte), so a
// scan always advances and covers every byte.
struct Utf8Unit {
    char32_t codePoint = 0;
    int length = 1;
    bool valid = false;
};
Utf8Unit decodeUtf8(std::string_view text);
void appendUtf8(std::string& out, char32_t cp);

}  // namespace ws::tokenizer
