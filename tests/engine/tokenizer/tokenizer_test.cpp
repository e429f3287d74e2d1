// SPDX-License-Identifier: GPL-3.0-or-later
// The byte tokenizer, round trips of every kind on arbitrary bytes, and makeTokenizer():
// config dispatch, errors, and the train-bpe cache (reuse, keying, damaged copies).
#include "engine/tokenizer/tokenizer.h"

#include <gtest/gtest.h>

#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "support/temp_dir.h"

namespace ws::tokenizer {
namespace {
namespace fs = std::filesystem;

const fs::path kMini = fs::path(WAFER_TOKENIZER_FIXTURES) / "gpt2_mini";

std::string randomBytes(std::mt19937& rng, size_t maxSize) {
    std::string text(size_t(rng() % (maxSize + 1)), '\0');
    for (char& c : text) c = char(rng() & 0xFF);
    return text;
}

std::string sampleText() {
    std::string text;
    for (int i = 0; i < 300; ++i) {
        text += "And God said, Let there be light: and there was light. It's verse " +
                std::to_string(i) + ".\n";
    }
    return text;
}

// Bits per byte counts the bytes a run of tokens decodes to with these per-id counts.
TEST(TokenByteCounts, AreOneForBytesAndAddUpToTheTextForABpe) {
    const std::vector<int32_t> bytes = tokenByteCounts(*makeByteTokenizer());
    EXPECT_EQ(bytes, std::vector<int32_t>(256, 1));
    auto bpe = trainBpe(sampleText() + "Größe über alles, café. \xFF\xFE broken UTF-8\n", 400);
    ASSERT_TRUE(bpe.ok()) << bpe.error().message;
    const std::vector<int32_t> counts = tokenByteCounts(**bpe);
    ASSERT_EQ(counts.size(), size_t((*bpe)->vocabSize()));
    for (const std::string& text : {sampleText(), std::string("Größe über alles, café. \xFF\xFE"),
                                    std::string("light: and there was light, Größe")}) {
        const std::vector<int32_t> tokens = (*bpe)->encode(text);
        int64_t sum = 0;
        for (const int32_t t : tokens) sum += counts[size_t(t)];
        EXPECT_EQ(sum, int64_t(text.size())) << text;
        EXPECT_LT(tokens.size(), text.size()) << "merges make some tokens longer than a byte";
    }
}

TEST(ByteTokenizer, IdsAreBytes) {
    auto tok = makeByteTokenizer();
    EXPECT_EQ(tok->kind(), "byte");
    EXPECT_EQ(tok->vocabSize(), 256);
    EXPECT_EQ(tok->encode("A\xFF\n"), (std::vector<int32_t>{65, 255, 10}));
    EXPECT_EQ(tok->decode(std::vector<int32_t>{104, 105}), "hi");
    EXPECT_EQ(tok->decode(std::vector<int32_t>{104, 256, -3}), "h\xEF\xBF\xBD\xEF\xBF\xBD");
    EXPECT_EQ(tok->identity(), makeByteTokenizer()->identity());
    EXPECT_EQ(tok->identity().size(), 64u);

    testing::TempDir dir;
    ASSERT_TRUE(tok->save(dir / "model").ok());
    std::ifstream in(dir / "model" / "tokenizer.json");
    std::stringstream json;
    json << in.rdbuf();
    EXPECT_NE(json.str().find("\"byte\""), std::string::npos);
}

TEST(RoundTrip, EveryKindIsByteExactOnArbitraryBytes) {
    std::vector<std::unique_ptr<Tokenizer>> kinds;
    kinds.push_back(makeByteTokenizer());
    auto trained = trainBpe(sampleText(), 400);
    ASSERT_TRUE(trained.ok());
    kinds.push_back(std::move(trained).value());
    auto gpt2 = loadGpt2Bpe(kMini / "vocab.json", kMini / "merges.txt");
    ASSERT_TRUE(gpt2.ok()) << gpt2.error().message;
    kinds.push_back(std::move(gpt2).value());

    std::mt19937 rng(123);
    for (const auto& tok : kinds) {
        SCOPED_TRACE(tok->kind());
        for (int round = 0; round < 200; ++round) {
            const std::string text = randomBytes(rng, 400);
            const auto ids = tok->encode(text);
            for (int32_t id : ids) ASSERT_TRUE(id >= 0 && id < tok->vocabSize());
            ASSERT_EQ(tok->decode(ids), text);
        }
        const std::string edge =
            std::string("\0\0 \xC3\xA9\xF0\x9F\x98\x80\xED\xA0\x80", 13) + "  \t\r\n\n   x's 'll ";
        EXPECT_EQ(tok->decode(tok->encode(edge)), edge);
        EXPECT_TRUE(tok->encode("").empty());
    }
}

TEST(MakeTokenizer, BuildsEachKind) {
    testing::TempDir cache;
    config::TokenizerConfig byte;
    auto b = makeTokenizer(byte, "ignored", cache.path());
    ASSERT_TRUE(b.ok());
    EXPECT_EQ((*b)->kind(), "byte");

    config::TokenizerConfig gpt2;
    gpt2.type = "bpe";
    gpt2.vocabFile = (kMini / "vocab.json").string();
    gpt2.mergesFile = (kMini / "merges.txt").string();
    auto g = makeTokenizer(gpt2, "", cache.path());
    ASSERT_TRUE(g.ok()) << g.error().message;
    EXPECT_EQ((*g)->encode("hello world"), (std::vector<int32_t>{31373, 995}));

    config::TokenizerConfig noFiles;
    noFiles.type = "bpe";
    auto nf = makeTokenizer(noFiles, "", cache.path());
    ASSERT_FALSE(nf.ok());
    EXPECT_NE(nf.error().message.find("vocab_file and merges_file"), std::string::npos);

    config::TokenizerConfig unknown;
    unknown.type = "sentencepiece";
    auto u = makeTokenizer(unknown, "", cache.path());
    ASSERT_FALSE(u.ok());
    EXPECT_NE(u.error().message.find("'sentencepiece'"), std::string::npos);
}

TEST(MakeTokenizer, TrainBpeIsCachedByCorpusAndSize) {
    testing::TempDir cache;
    config::TokenizerConfig cfg;
    cfg.type = "train-bpe";
    cfg.vocabSize = 300;
    const std::string corpus = sampleText();

    int progressCalls = 0;
    auto first = makeTokenizer(cfg, corpus, cache.path(),
                               [&](double, std::string_view) { ++progressCalls; });
    ASSERT_TRUE(first.ok()) << first.error().message;
    EXPECT_GT(progressCalls, 0);
    EXPECT_EQ((*first)->vocabSize(), 300);
    std::vector<fs::path> dirs;
    for (const auto& e : fs::directory_iterator(cache / "tokenizers")) dirs.push_back(e.path());
    ASSERT_EQ(dirs.size(), 1u);  // no temp folders left behind
    EXPECT_TRUE(fs::exists(dirs[0] / "vocab.json"));
    EXPECT_TRUE(fs::exists(dirs[0] / "merges.txt"));

    // Second time: loaded from the cache, not retrained (no progress, same identity).
    progressCalls = 0;
    auto second = makeTokenizer(cfg, corpus, cache.path(),
                                [&](double, std::string_view) { ++progressCalls; });
    ASSERT_TRUE(second.ok());
    EXPECT_EQ(progressCalls, 0);
    EXPECT_EQ((*second)->identity(), (*first)->identity());

    // Proof that the cached files are what is used: shorten the cached merges by hand.
    {
        std::ifstream in(dirs[0] / "merges.txt");
        std::string header, firstMerge;
        std::getline(in, header);
        std::getline(in, firstMerge);
        std::ofstream(dirs[0] / "merges.txt") << header << "\n" << firstMerge << "\n";
    }
    auto edited = makeTokenizer(cfg, corpus, cache.path());
    ASSERT_TRUE(edited.ok());
    EXPECT_NE((*edited)->identity(), (*first)->identity());

    // A damaged cached copy is retrained, giving the original tokenizer back.
    std::ofstream(dirs[0] / "merges.txt") << "#version: 0.2\nthis line is not a merge\n";
    auto repaired = makeTokenizer(cfg, corpus, cache.path());
    ASSERT_TRUE(repaired.ok()) << repaired.error().message;
    EXPECT_EQ((*repaired)->identity(), (*first)->identity());

    // Another size or another corpus is another cache entry.
    cfg.vocabSize = 320;
    auto bigger = makeTokenizer(cfg, corpus, cache.path());
    ASSERT_TRUE(bigger.ok());
    EXPECT_EQ((*bigger)->vocabSize(), 320);
    auto otherCorpus = makeTokenizer(cfg, corpus + "Amen.", cache.path());
    ASSERT_TRUE(otherCorpus.ok());
    size_t entries = 0;
    for ([[maybe_unused]] const auto& e : fs::directory_iterator(cache / "tokenizers")) ++entries;
    EXPECT_EQ(entries, 3u);
}

TEST(MakeTokenizer, TrainBpeOnEmptyCorpusFails) {
    testing::TempDir cache;
    config::TokenizerConfig cfg;
    cfg.type = "train-bpe";
    auto tok = makeTokenizer(cfg, "", cache.path());
    ASSERT_FALSE(tok.ok());
    EXPECT_NE(tok.error().message.find("empty corpus"), std::string::npos);
}

}  // namespace
}  // namespace ws::tokenizer
