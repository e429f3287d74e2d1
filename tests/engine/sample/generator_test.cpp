// SPDX-License-Identifier: GPL-3.0-or-later
// Generator: greedy generation equals a greedy loop over full Gpt<float> forwards (also past the
// context window), determinism per seed, cancellation from the callback, UTF-8 pieces, errors;
// a model loaded from its run folder generates as the one in memory.
#include "engine/sample/generator.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <vector>

#include "engine/model/gpt.h"
#include "sample_test_util.h"
#include "support/temp_dir.h"

namespace ws::sample {
namespace {

using modelio::LoadedModel;
using testing::greedy;
using testing::samplingShape;
using testing::tinyModel;

// The reference: each token is the argmax of a full forward over the context the generator's
// documented window policy gives it (all tokens while they fit in maxT; after the cache fills,
// the last maxT - 1 tokens, then one more position, and so on).
std::vector<int32_t> referenceGreedy(const LoadedModel& m, std::vector<int32_t> history, int n) {
    const int maxT = m.shape.maxPositions;
    int cached = std::min(int(history.size()), maxT);
    std::vector<int32_t> out;
    for (int i = 0; i < n; ++i) {
        const std::vector<int32_t> context(history.end() - cached, history.end());
        model::Gpt<float> gpt(m.shape, 1, cached);
        gpt.forward(m.params.data(), context.data(), nullptr, false, 0);
        const int32_t next = argmax(gpt.logits(0, cached - 1), m.tokenizer->vocabSize());
        out.push_back(next);
        history.push_back(next);
        cached = cached < maxT ? cached + 1 : maxT - 1;
    }
    return out;
}

TEST(Generator, GreedyEqualsFullForwardGreedy) {
    const LoadedModel m = tinyModel(samplingShape(256, 64));
    Generator g(m);
    auto r = g.generate("The quick", greedy(30));
    ASSERT_TRUE(r.ok()) << r.error().message;
    EXPECT_EQ(r->tokens.size(), 30u);
    EXPECT_EQ(r->stop, StopReason::MaxTokens);
    EXPECT_EQ(r->windowShifts, 0);
    EXPECT_EQ(r->tokens, referenceGreedy(m, r->promptTokens, 30));
    // Deterministic, and the same when run again on the same generator.
    auto again = g.generate("The quick", greedy(30));
    ASSERT_TRUE(again.ok());
    EXPECT_EQ(again->tokens, r->tokens);
}

TEST(Generator, SlidingWindowPastMaxPositionsMatchesReference) {
    const LoadedModel m = tinyModel(samplingShape(256, 12));
    Generator g(m);
    auto r = g.generate("0123456789", greedy(25));
    ASSERT_TRUE(r.ok()) << r.error().message;
    EXPECT_EQ(r->tokens.size(), 25u);
    EXPECT_GT(r->windowShifts, 5);
    EXPECT_EQ(r->tokens, referenceGreedy(m, r->promptTokens, 25));
}

TEST(Generator, PromptLongerThanTheWindowKeepsItsEnd) {
    const LoadedModel m = tinyModel(samplingShape(256, 12));
    Generator g(m);
    auto r = g.generate("a prompt that is longer than twelve bytes", greedy(5));
    ASSERT_TRUE(r.ok()) << r.error().message;
    EXPECT_EQ(r->promptTokensUsed, 12);
    const std::vector<int32_t> tail(r->promptTokens.end() - 12, r->promptTokens.end());
    EXPECT_EQ(r->tokens, referenceGreedy(m, tail, 5));
}

TEST(Generator, ALoadedRunFolderGeneratesAsTheModelInMemory) {
    ws::testing::TempDir dir("sample");
    const LoadedModel m = tinyModel(samplingShape());
    testing::writeRunFolder(dir / "run", m);
    for (const std::filesystem::path& p : {dir / "run", dir / "run" / "model.safetensors"}) {
        auto loaded = modelio::loadModel(p);
        ASSERT_TRUE(loaded.ok()) << loaded.error().message;
        auto a = Generator(*loaded).generate("abc", greedy(10));
        auto b = Generator(m).generate("abc", greedy(10));
        ASSERT_TRUE(a.ok() && b.ok());
        EXPECT_EQ(a->tokens, b->tokens);
    }
}

TEST(Generator, SameSeedSameTextOtherSeedOtherText) {
    const LoadedModel m = tinyModel(samplingShape());
    Generator g(m);
    SamplingOptions o;
    o.temperature = 1.0;
    o.topK = 40;
    o.topP = 0.95;
    o.maxTokens = 40;
    o.seed = 5;
    auto a = g.generate("Hello", o);
    auto b = g.generate("Hello", o);
    o.seed = 6;
    auto c = g.generate("Hello", o);
    ASSERT_TRUE(a.ok() && b.ok() && c.ok());
    EXPECT_EQ(a->tokens, b->tokens);
    EXPECT_EQ(a->text, b->text);
    EXPECT_NE(a->tokens, c->tokens);
}

TEST(Generator, TopKOneEqualsGreedy) {
    const LoadedModel m = tinyModel(samplingShape());
    Generator g(m);
    SamplingOptions o;
    o.temperature = 1.3;
    o.topK = 1;
    o.maxTokens = 20;
    o.seed = 99;
    auto k1 = g.generate("Hello", o);
    auto gr = g.generate("Hello", greedy(20));
    ASSERT_TRUE(k1.ok() && gr.ok());
    EXPECT_EQ(k1->tokens, gr->tokens);
}

TEST(Generator, CancelFromTheCallbackStopsPromptly) {
    const LoadedModel m = tinyModel(samplingShape());
    Generator g(m);
    std::atomic<bool> cancel{false};
    int events = 0;
    auto r = g.generate(
        "Hello", greedy(100),
        [&](const TokenEvent& e) {
            if (e.index >= 0) ++events;
            if (e.index == 2) cancel = true;
        },
        &cancel);
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r->stop, StopReason::Cancelled);
    EXPECT_EQ(r->tokens.size(), 3u);
    EXPECT_EQ(events, 3);
    // Set before the start: nothing is generated.
    auto none = g.generate("Hello", greedy(100), {}, &cancel);
    ASSERT_TRUE(none.ok());
    EXPECT_EQ(none->stop, StopReason::Cancelled);
    EXPECT_TRUE(none->tokens.empty());
}

// True when the bytes before `cut` end in a lead byte still waiting for continuation bytes and
// the byte at `cut` is one of them: a piece ending at `cut` would have split a character.
bool splitsCharacter(const std::string& s, size_t cut) {
    auto continuation = [&](size_t i) { return (static_cast<unsigned char>(s[i]) & 0xC0) == 0x80; };
    if (cut >= s.size() || !continuation(cut)) return false;
    for (size_t back = 1; back <= 3 && back <= cut; ++back) {
        const auto b = static_cast<unsigned char>(s[cut - back]);
        if ((b & 0xC0) == 0x80) continue;
        const size_t len = b >= 0xF5 ? 1 : b >= 0xF0 ? 4 : b >= 0xE0 ? 3 : b >= 0xC2 ? 2 : 1;
        return len > back;
    }
    return false;
}

// A random byte-level model emits arbitrary bytes: no piece boundary splits a character that the
// following bytes complete, and the pieces concatenate to the decoded tokens.
TEST(Generator, PiecesEndOnCharacterBoundariesAndConcatenateToTheText) {
    const LoadedModel m = tinyModel(samplingShape(), 21);
    Generator g(m);
    SamplingOptions o;
    o.temperature = 1.5;
    o.maxTokens = 300;
    o.seed = 3;
    std::string joined;
    std::vector<size_t> cuts;
    int perToken = 0, empty = 0;
    auto r = g.generate("x", o, [&](const TokenEvent& e) {
        joined += e.text;
        cuts.push_back(joined.size());
        if (e.index >= 0) ++perToken;
        if (e.text.empty()) ++empty;
    });
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(perToken, 300);
    EXPECT_GT(empty, 0) << "no character was ever held back: the test shows nothing";
    EXPECT_EQ(joined, r->text);
    EXPECT_EQ(r->text, m.tokenizer->decode(r->tokens));
    for (size_t cut : cuts) EXPECT_FALSE(splitsCharacter(joined, cut)) << "at byte " << cut;
}

TEST(Generator, BadInputFailsBeforeAnyToken) {
    const LoadedModel m = tinyModel(samplingShape());
    Generator g(m);
    int events = 0;
    auto count = [&](const TokenEvent&) { ++events; };
    auto empty = g.generate("", greedy(5), count);
    ASSERT_FALSE(empty.ok());
    EXPECT_NE(empty.error().message.find("prompt is empty"), std::string::npos);
    SamplingOptions bad;
    bad.temperature = -1.0;
    EXPECT_FALSE(g.generate("hi", bad, count).ok());
    const std::vector<int32_t> outside = {1, 256};
    auto r = g.generateTokens(outside, greedy(5), count);
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.error().message.find("256"), std::string::npos);
    EXPECT_EQ(events, 0);
}

}  // namespace
}  // namespace ws::sample
