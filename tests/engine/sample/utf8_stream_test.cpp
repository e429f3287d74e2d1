// SPDX-License-Identifier: GPL-3.0-or-later
// Utf8Stream: multi-byte characters split across pieces are held back until complete, invalid
// bytes pass through, and the output always concatenates to the input.
#include "engine/sample/utf8_stream.h"

#include <gtest/gtest.h>

#include <string>

#include "engine/model/random.h"

namespace ws::sample {
namespace {

TEST(Utf8Stream, HoldsSplitCharactersUntilComplete) {
    Utf8Stream s;
    EXPECT_EQ(s.push("caf\xC3"), "caf");  // é = C3 A9
    EXPECT_TRUE(s.holding());
    EXPECT_EQ(s.push("\xA9!"), "\xC3\xA9!");
    EXPECT_EQ(s.push("\xE2"), "");  // € = E2 82 AC, one byte at a time
    EXPECT_EQ(s.push("\x82"), "");
    EXPECT_EQ(s.push("\xAC"), "\xE2\x82\xAC");
    EXPECT_EQ(s.push("\xF0\x9F"), "");  // 😀 = F0 9F 98 80
    EXPECT_EQ(s.push("\x98\x80 ok"), "\xF0\x9F\x98\x80 ok");
    EXPECT_FALSE(s.holding());
    EXPECT_EQ(s.flush(), "");
}

TEST(Utf8Stream, InvalidBytesPassThroughAndFlushReturnsTheRest) {
    Utf8Stream s;
    EXPECT_EQ(s.push("\x80x"), "\x80x");    // stray continuation byte
    EXPECT_EQ(s.push("\xFFy"), "\xFFy");    // never valid in UTF-8
    EXPECT_EQ(s.push("\xC3\xC3"), "\xC3");  // a lead byte interrupted by another lead byte
    EXPECT_EQ(s.flush(), "\xC3");           // the generation ended mid-character
    EXPECT_FALSE(s.holding());
}

TEST(Utf8Stream, ConcatenationIsTheInputForRandomSplits) {
    const std::string text = "Grüße, 世界! \xF0\x9F\x98\x80 \xFF\x80 naïve";
    for (uint64_t seed = 0; seed < 50; ++seed) {
        Utf8Stream s;
        std::string out;
        size_t i = 0;
        for (uint64_t k = 0; i < text.size(); ++k) {
            const size_t len = 1 + model::rng::bits(seed, k) % 4;
            const std::string piece = s.push(text.substr(i, len));
            // A piece never ends inside a character that is still to be completed.
            if (!piece.empty() && i + len < text.size()) {
                const auto last = static_cast<unsigned char>(piece.back());
                EXPECT_FALSE(last >= 0xC2 && last <= 0xF4) << "seed " << seed;
            }
            out += piece;
            i += len;
        }
        out += s.flush();
        EXPECT_EQ(out, text) << "seed " << seed;
    }
}

}  // namespace
}  // namespace ws::sample
