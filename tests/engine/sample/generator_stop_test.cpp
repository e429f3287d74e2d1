// SPDX-License-Identifier: GPL-3.0-or-later
// Generator stops: a sampled stop token ends generation without showing it; a stop string ends
// the text before it and never reaches the callback in part; both are named in the result.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "engine/sample/generator.h"
#include "sample_test_util.h"

namespace ws::sample {
namespace {

using testing::greedy;
using testing::samplingShape;
using testing::tinyModel;

TEST(GeneratorStops, AStopTokenEndsGenerationAndIsLeftOut) {
    const modelio::LoadedModel m = tinyModel(samplingShape(256, 64));
    Generator g(m);
    const auto free = g.generate("The quick", greedy(30));
    ASSERT_TRUE(free.ok()) << free.error().message;
    // Stop at the first time the 6th token's id comes up.
    const int32_t stop = free->tokens[5];
    const auto first = std::find(free->tokens.begin(), free->tokens.end(), stop);
    const std::vector<int32_t> want(free->tokens.begin(), first);
    SamplingOptions options = greedy(30);
    options.stopTokens = {stop};
    std::string streamed;
    const auto r =
        g.generate("The quick", options, [&](const TokenEvent& e) { streamed += e.text; });
    ASSERT_TRUE(r.ok()) << r.error().message;
    EXPECT_EQ(r->tokens, want);
    EXPECT_EQ(r->stop, StopReason::StopToken);
    EXPECT_EQ(r->stoppedAt, m.tokenizer->tokenName(stop));
    EXPECT_EQ(r->text, m.tokenizer->decode(want));
    EXPECT_EQ(streamed, r->text);
    EXPECT_STREQ(stopReasonName(r->stop), "stop_token");
}

TEST(GeneratorStops, AStopStringEndsTheTextBeforeItAndNeverShowsInPart) {
    const modelio::LoadedModel m = tinyModel(samplingShape(256, 64));
    Generator g(m);
    const auto free = g.generate("The quick", greedy(40));
    ASSERT_TRUE(free.ok()) << free.error().message;
    ASSERT_GE(free->text.size(), 12u);
    // Three bytes from the middle of the free text (the byte tokenizer: one byte per token).
    const std::string stop = free->text.substr(8, 3);
    const std::string want = free->text.substr(0, free->text.find(stop));
    SamplingOptions options = greedy(40);
    options.stopStrings = {stop};
    std::string streamed;
    const auto r = g.generate("The quick", options, [&](const TokenEvent& e) {
        streamed += e.text;
        EXPECT_EQ(want.compare(0, streamed.size(), streamed), 0) << streamed;
    });
    ASSERT_TRUE(r.ok()) << r.error().message;
    EXPECT_EQ(r->text, want);
    EXPECT_EQ(streamed, want);
    EXPECT_EQ(r->stop, StopReason::StopString);
    EXPECT_EQ(r->stoppedAt, stop);
    EXPECT_LT(r->tokens.size(), 40u);
}

TEST(GeneratorStops, ANegativeStopTokenIsRefused) {
    SamplingOptions options = greedy(5);
    options.stopTokens = {-1};
    const Status st = options.validate();
    ASSERT_FALSE(st.ok());
    EXPECT_NE(st.error().message.find("stop token -1"), std::string::npos);
}

}  // namespace
}  // namespace ws::sample
