// SPDX-License-Identifier: GPL-3.0-or-later
// GPT-2's pre-tokenisation, written out by hand because std::regex has no \p{L}:
//   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
// applied left to right with the first matching alternative winning, as Python's `regex` module
// does in GPT-2's encoder.py. BPE merges never cross the pieces this produces.
//
// Classification: ASCII exactly as that regex; non-ASCII code points from a table generated
// out of the `regex` module itself (unicode_classes.inc, gen_unicode_classes.py), so letters,
// numbers and whitespace agree with it for the Unicode version that module ships (newer Unicode
// additions may differ from the 2019 module GPT-2 used). Bytes that are not valid UTF-8 count
// as one "other" character each (GPT-2 never sees them; this keeps any byte string encodable).
// Thread-safe: pure functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

namespace ws::tokenizer {

enum class CharClass : uint8_t { Other, Letter, Number, Space };
CharClass classifyCodePoint(char32_t cp);

// End (exclusive byte offset) of the piece that starts at pos; pos < text.size().
size_t nextPretokenEnd(std::string_view text, size_t pos);

// All pieces of text in order; they concatenate back to text exactly.
std::vector<std::string_view> pretokenize(std::string_view text);

// Visits each piece without allocating: fn(std::string_view piece).
template <class Fn>
void forEachPretoken(std::string_view text, Fn&& fn) {
    for (size_t pos = 0; pos < text.size();) {
        const size_t end = nextPretokenEnd(text, pos);
        fn(text.substr(pos, end - pos));
        pos = end;
    }
}

}  // namespace ws::tokenizer
