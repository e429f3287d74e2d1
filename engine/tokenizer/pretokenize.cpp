// SPDX-License-Identifier: GPL-3.0-or-later
// The GPT-2 pre-tokeniser as a hand-written matcher; see pretokenize.h for the pattern and the
// classification it follows.
#include "engine/tokenizer/pretokenize.h"

#include <algorithm>
#include <iterator>

#include "engine/tokenizer/byte_level.h"

namespace ws::tokenizer {
namespace {

struct ClassRange {
    char32_t first;
    char32_t last;
    CharClass cls;
};

constexpr CharClass kLetter = CharClass::Letter;
constexpr CharClass kNumber = CharClass::Number;
constexpr CharClass kSpace = CharClass::Space;

constexpr ClassRange kRanges[] = {
#include "engine/tokenizer/unicode_classes.inc"
};

struct Unit {
    CharClass cls;
    size_t length;
};

Unit unitAt(std::string_view text, size_t pos) {
    const uint8_t b = uint8_t(text[pos]);
    if (b < 0x80) return {classifyCodePoint(b), 1};
    const Utf8Unit u = decodeUtf8(text.substr(pos));
    if (!u.valid) return {CharClass::Other, 1};
    return {classifyCodePoint(u.codePoint), size_t(u.length)};
}

size_t runEnd(std::string_view text, size_t pos, CharClass cls) {
    while (pos < text.size()) {
        const Unit u = unitAt(text, pos);
        if (u.cls != cls) break;
        pos += u.length;
    }
    return pos;
}

// 's|'t|'re|'ve|'m|'ll|'d: returns the match length, 0 for none.
size_t contractionLength(std::string_view text, size_t pos) {
    if (text[pos] != '\'' || pos + 1 >= text.size()) return 0;
    const char a = text[pos + 1];
    if (a == 's' || a == 't' || a == 'm' || a == 'd') return 2;
    if (pos + 2 >= text.size()) return 0;
    const char b = text[pos + 2];
    if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) return 3;
    return 0;
}

}  // namespace

CharClass classifyCodePoint(char32_t cp) {
    if (cp < 0x80) {
        if ((cp >= 'a' && cp <= 'z') || (cp >= 'A' && cp <= 'Z')) return CharClass::Letter;
        if (cp >= '0' && cp <= '9') return CharClass::Number;
        if (cp == ' ' || (cp >= '\t' && cp <= '\r')) return CharClass::Space;
        return CharClass::Other;
    }
    const auto* it = std::upper_bound(std::begin(kRanges), std::end(kRanges), cp,
                                      [](char32_t c, const ClassRange& r) { return c < r.first; });
    if (it == std::begin(kRanges)) return CharClass::Other;
    --it;
    return cp <= it->last ? it->cls : CharClass::Other;
}

size_t nextPretokenEnd(std::string_view text, size_t pos) {
    if (const size_t n = contractionLength(text, pos)) return pos + n;

    // ` ?\p{L}+`, ` ?\p{N}+`, ` ?[^\s\p{L}\p{N}]+`: the classes are disjoint, so the class of
    // the first character after the optional space decides which alternative matches.
    if (text[pos] == ' ') {
        if (pos + 1 < text.size()) {
            const Unit next = unitAt(text, pos + 1);
            if (next.cls != CharClass::Space) return runEnd(text, pos + 1, next.cls);
        }
    } else {
        const Unit first = unitAt(text, pos);
        if (first.cls != CharClass::Space) return runEnd(text, pos, first.cls);
    }

    // Whitespace. `\s+(?!\S)` takes the whole run when it reaches the end of the text, else
    // backtracks one character so the last whitespace stays with the word that follows
    // ("  word" -> " ", " word"); a lone whitespace before a non-space falls to `\s+`.
    size_t end = pos;
    size_t lastStart = pos;
    int count = 0;
    while (end < text.size()) {
        const Unit u = unitAt(text, end);
        if (u.cls != CharClass::Space) break;
        lastStart = end;
        end += u.length;
        ++count;
    }
    if (end == text.size() || count < 2) return end;
    return lastStart;
}

std::vector<std::string_view> pretokenize(std::string_view text) {
    std::vector<std::string_view> pieces;
    forEachPretoken(text, [&](std::string_view piece) { pieces.push_back(piece); });
    return pieces;
}

}  // namespace ws::tokenizer
