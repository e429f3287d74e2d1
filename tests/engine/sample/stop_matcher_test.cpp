// SPDX-License-Identifier: GPL-3.0-or-later
// StopMatcher: text released in pieces ends before the first stop string, and no part of a stop
// string is ever released, however the text is cut into pieces.
#include "engine/sample/stop_matcher.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace ws::sample {
namespace {

// Every way of cutting `text` into pieces of `step` bytes gives `want`.
void expectPieces(const std::vector<std::string>& stops, const std::string& text,
                  const std::string& want) {
    for (size_t step = 1; step <= text.size(); ++step) {
        StopMatcher m(stops);
        std::string out;
        for (size_t at = 0; at < text.size(); at += step) {
            const std::string released = m.push(text.substr(at, step));
            // Nothing released may run past the stop.
            out += released;
            EXPECT_EQ(want.compare(0, out.size(), out), 0) << "step " << step << ": " << out;
        }
        out += m.finish();
        EXPECT_EQ(out, want) << "step " << step;
    }
}

TEST(StopMatcher, EndsBeforeTheFirstStopStringHoweverTheTextIsCut) {
    expectPieces({"<|im_end|>"}, "Hello there<|im_end|>\n<|im_start|>user", "Hello there");
    expectPieces({"<|im_end|>", "\nUser:"}, "Yes.\nUser: more", "Yes.");
    // A near miss is released once it cannot become the stop string.
    expectPieces({"<|im_end|>"}, "a <|im_en d| b", "a <|im_en d| b");
    expectPieces({"</s>"}, "no stop here", "no stop here");
}

TEST(StopMatcher, TheEarliestStopWinsAndIsNamed) {
    StopMatcher m({"END", "<|eot_id|>"});
    EXPECT_EQ(m.push("x<|eot_id|>yEND"), "x");
    EXPECT_TRUE(m.stopped());
    EXPECT_EQ(m.matched(), "<|eot_id|>");
    EXPECT_EQ(m.push("more"), "");
    EXPECT_EQ(m.finish(), "");
}

TEST(StopMatcher, HoldsBackOnlyWhatCouldStartAStop) {
    StopMatcher m({"<|im_end|>"});
    EXPECT_EQ(m.push("abc<|im"), "abc");
    EXPECT_FALSE(m.stopped());
    EXPECT_EQ(m.push("_start|>"), "<|im_start|>");
    EXPECT_EQ(m.finish(), "");
    StopMatcher none({"", ""});  // empty strings are ignored
    EXPECT_EQ(none.push("anything"), "anything");
}

}  // namespace
}  // namespace ws::sample
