// SPDX-License-Identifier: GPL-3.0-or-later
// The hand-written GPT-2 pre-tokeniser against splits produced by GPT-2's own regex run with
// Python's `regex` module (expected lists below were generated that way).
#include "engine/tokenizer/pretokenize.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "engine/tokenizer/byte_level.h"

namespace ws::tokenizer {
namespace {

std::vector<std::string> split(std::string_view text) {
    std::vector<std::string> out;
    for (auto piece : pretokenize(text)) out.emplace_back(piece);
    return out;
}

using Pieces = std::vector<std::string>;

TEST(Pretokenize, MatchesGpt2RegexOnKnownStrings) {
    EXPECT_EQ(split("Hello world's 123 !!"), (Pieces{"Hello", " world", "'s", " 123", " !!"}));
    EXPECT_EQ(split("a  b   c"), (Pieces{"a", " ", " b", "  ", " c"}));
    EXPECT_EQ(split("trailing   "), (Pieces{"trailing", "   "}));
    EXPECT_EQ(split("line\n\nnext"), (Pieces{"line", "\n", "\n", "next"}));
    EXPECT_EQ(
        split("I'm they're we've you'll he'd it's"),
        (Pieces{"I", "'m", " they", "'re", " we", "'ve", " you", "'ll", " he", "'d", " it", "'s"}));
    EXPECT_EQ(split("'S ''s"), (Pieces{"'", "S", " ''", "s"}));
    EXPECT_EQ(split("x\ty"), (Pieces{"x", "\t", "y"}));
    EXPECT_EQ(split("price: $1,000.50"), (Pieces{"price", ":", " $", "1", ",", "000", ".", "50"}));
    EXPECT_EQ(split("don't!!!"), (Pieces{"don", "'t", "!!!"}));
    EXPECT_EQ(split("   "), (Pieces{"   "}));
    EXPECT_EQ(split("\n"), (Pieces{"\n"}));
    EXPECT_TRUE(split("").empty());
}

TEST(Pretokenize, ClassifiesNonAsciiLikeTheRegexModule) {
    // "Café 日本語 ²³": letters include é and CJK; superscript digits are \p{N}.
    EXPECT_EQ(
        split("Caf\xC3\xA9 \xE6\x97\xA5\xE6\x9C\xAC\xE8\xAA\x9E \xC2\xB2\xC2\xB3"),
        (Pieces{"Caf\xC3\xA9", " \xE6\x97\xA5\xE6\x9C\xAC\xE8\xAA\x9E", " \xC2\xB2\xC2\xB3"}));
    // A combining acute accent is a mark (\p{M}), not a letter.
    EXPECT_EQ(split("e\xCC\x81"), (Pieces{"e", "\xCC\x81"}));
    // No-break space and ideographic space are whitespace (\s) but not the literal ' '.
    EXPECT_EQ(split("hi\xC2\xA0there"), (Pieces{"hi", "\xC2\xA0", "there"}));
    EXPECT_EQ(split("a\xE3\x80\x80 b"), (Pieces{"a", "\xE3\x80\x80", " b"}));

    EXPECT_EQ(classifyCodePoint(U'A'), CharClass::Letter);
    EXPECT_EQ(classifyCodePoint(U'\u00E9'), CharClass::Letter);
    EXPECT_EQ(classifyCodePoint(U'\u0416'), CharClass::Letter);  // Cyrillic Zhe
    EXPECT_EQ(classifyCodePoint(U'\u0663'), CharClass::Number);  // Arabic-Indic three
    EXPECT_EQ(classifyCodePoint(U'\u2165'), CharClass::Number);  // Roman numeral six
    EXPECT_EQ(classifyCodePoint(U'\u2003'), CharClass::Space);   // em space
    EXPECT_EQ(classifyCodePoint(U'\u0085'), CharClass::Space);   // next line
    EXPECT_EQ(classifyCodePoint(U'\u200B'), CharClass::Other);   // zero width space is not \s
    EXPECT_EQ(classifyCodePoint(U'\u0301'), CharClass::Other);
    EXPECT_EQ(classifyCodePoint(U'\U0001F600'), CharClass::Other);  // emoji
    EXPECT_EQ(classifyCodePoint(0x1C), CharClass::Other);  // \s of the regex module excludes it
}

TEST(Pretokenize, InvalidUtf8BytesAreSingleOtherCharacters) {
    // 0xFF and a truncated 3-byte sequence: "other" characters joining the punctuation run.
    EXPECT_EQ(split("ab\xFF\xE6\x97!cd"), (Pieces{"ab", "\xFF\xE6\x97!", "cd"}));
    EXPECT_EQ(split(" \xC0\xAF"), (Pieces{" \xC0\xAF"}));  // overlong form
}

TEST(Pretokenize, PiecesCoverArbitraryBytesExactly) {
    std::mt19937 rng(42);
    for (int round = 0; round < 200; ++round) {
        std::string text(size_t(rng() % 300), '\0');
        for (char& c : text) {
            // Bias towards spaces, letters and UTF-8 lead/continuation bytes.
            const unsigned r = rng() % 8;
            c = r == 0 ? ' ' : r == 1 ? 'a' : r == 2 ? char(0xC3) : char(rng() & 0xFF);
        }
        std::string joined;
        for (auto piece : pretokenize(text)) {
            ASSERT_FALSE(piece.empty());
            joined += piece;
        }
        ASSERT_EQ(joined, text);
    }
}

TEST(ByteLevel, TableMatchesGpt2) {
    EXPECT_EQ(byteToUnicode('!'), U'!');
    EXPECT_EQ(byteToUnicode(' '), U'\u0120');   // Ġ
    EXPECT_EQ(byteToUnicode('\n'), U'\u010A');  // Ċ
    EXPECT_EQ(byteToUnicode(0), U'\u0100');
    EXPECT_EQ(byteToUnicode(0xAD), U'\u0143');  // the last unprintable byte
    EXPECT_EQ(bytesToByteLevel(" the"), "\xC4\xA0the");
    for (int b = 0; b < 256; ++b) EXPECT_EQ(unicodeToByte(byteToUnicode(uint8_t(b))), b);
    EXPECT_FALSE(unicodeToByte(U'\u0144').has_value());
    EXPECT_EQ(byteLevelToBytes("\xC4\xA0the"), std::optional<std::string>(" the"));
    EXPECT_FALSE(byteLevelToBytes("\xE2\x82\xAC").has_value());  // € is outside the alphabet
}

}  // namespace
}  // namespace ws::tokenizer
