// SPDX-License-Identifier: GPL-3.0-or-later
// BPE training: exact merges on a toy corpus worked out by hand, determinism, early stop,
// round trips, and the trained tokenizer surviving the GPT-2 file format.
#include <gtest/gtest.h>

#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "engine/tokenizer/bpe_tokenizer.h"
#include "engine/tokenizer/tokenizer.h"
#include "support/temp_dir.h"

namespace ws::tokenizer {
namespace {
namespace fs = std::filesystem;

std::vector<std::string> mergeLines(const Tokenizer& tok) {
    testing::TempDir dir;
    EXPECT_TRUE(tok.save(dir.path()).ok());
    std::ifstream in(dir / "merges.txt");
    std::vector<std::string> lines;
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    return lines;
}

// Sennrich et al.'s toy corpus. Pieces: "low" x1, " low" x4, " lower" x2, " newest" x6,
// " widest" x3. Counting pairs by hand: e s and s t occur 9 times (tie -> smaller left id 'e'),
// then es t; l o and o w 7 times; then five pairs at 6 where ' ' (32) is the smallest left id
// and n (110) < low; and so on down to count 2, after which no pair repeats.
TEST(BpeTrainer, LearnsTheExpectedMergesOnAToyCorpus) {
    const std::string corpus =
        "low low low low low lower lower newest newest newest newest newest newest widest "
        "widest widest";
    auto tok = trainBpe(corpus, 1000);
    ASSERT_TRUE(tok.ok()) << tok.error().message;
    const std::string G = "\xC4\xA0";  // the space byte as spelled in merges.txt
    const std::vector<std::string> expected = {
        "#version: 0.2", "e s",         "es t",     "l o",         "lo w",   G + " n",
        G + " low",      "e w",         G + "n ew", G + "new est", G + " w", "d est",
        "i dest",        G + "w idest", "e r",      G + "low er"};
    EXPECT_EQ(mergeLines(**tok), expected);
    EXPECT_EQ((*tok)->vocabSize(), 256 + 15);  // stopped early: no pair occurs twice any more
    EXPECT_EQ((*tok)->encode(" newest"), (std::vector<int32_t>{264}));
    EXPECT_EQ((*tok)->encode(" lowest"), (std::vector<int32_t>{261, 257}));  // " low" + "est"
    EXPECT_EQ((*tok)->decode((*tok)->encode(corpus)), corpus);
}

// Pseudo-English: common words plus words built from random syllables, so that there are far
// more repeated pairs than any vocabulary size used here needs.
std::string syntheticText(uint32_t seed, size_t words) {
    static const char* kWords[] = {"the", "and",  "of",   "to",   "in",  "that",
                                   "he",  "unto", "lord", "said", "I'm", "you'll",
                                   "12",  "1611", "!",    ",",    ".",   "Caf\xC3\xA9"};
    static const char* kSyllables[] = {"ba", "ke", "lo", "mi", "nu",  "ra", "si",  "to", "ve",
                                       "wa", "xo", "yu", "ze", "qua", "th", "ing", "er", "st"};
    std::mt19937 rng(seed);
    std::string text;
    for (size_t i = 0; i < words; ++i) {
        if (rng() % 3 == 0) {
            text += kWords[rng() % std::size(kWords)];
        } else {
            for (unsigned s = 0, n = 1 + rng() % 3; s < n; ++s) {
                text += kSyllables[rng() % std::size(kSyllables)];
            }
        }
        const unsigned r = rng() % 20;
        text += r == 0 ? "\n" : r == 1 ? "  " : " ";
    }
    return text;
}

TEST(BpeTrainer, IsDeterministicAndReachesTheRequestedSize) {
    const std::string corpus = syntheticText(1, 40000);
    auto a = trainBpe(corpus, 400);
    auto b = trainBpe(corpus, 400);
    ASSERT_TRUE(a.ok() && b.ok());
    EXPECT_EQ((*a)->vocabSize(), 400);
    EXPECT_EQ((*a)->identity(), (*b)->identity());
    EXPECT_EQ(mergeLines(**a), mergeLines(**b));
    auto other = trainBpe(syntheticText(2, 40000), 400);
    ASSERT_TRUE(other.ok());
    EXPECT_NE((*other)->identity(), (*a)->identity());
    // Frequent words become single tokens.
    EXPECT_EQ((*a)->encode(" unto").size(), 1u);
    EXPECT_EQ((*a)->encode(" lord").size(), 1u);
    EXPECT_LT((*a)->encode(corpus).size(), corpus.size() / 2);
}

TEST(BpeTrainer, ProgressIsReportedAndEnds) {
    std::vector<double> fractions;
    auto tok = trainBpe(syntheticText(3, 20000), 600, [&](double f, std::string_view what) {
        EXPECT_EQ(what, "training BPE tokenizer");
        fractions.push_back(f);
    });
    ASSERT_TRUE(tok.ok());
    ASSERT_GE(fractions.size(), 3u);
    EXPECT_EQ(fractions.front(), 0.0);
    EXPECT_EQ(fractions.back(), 1.0);
    for (size_t i = 1; i < fractions.size(); ++i) EXPECT_GE(fractions[i], fractions[i - 1]);
}

TEST(BpeTrainer, TrainedTokenizerSurvivesTheGpt2FileFormat) {
    const std::string corpus = syntheticText(4, 20000);
    auto tok = trainBpe(corpus, 500);
    ASSERT_TRUE(tok.ok());
    testing::TempDir dir;
    ASSERT_TRUE((*tok)->save(dir.path()).ok());
    auto loaded = loadGpt2Bpe(dir / "vocab.json", dir / "merges.txt");
    ASSERT_TRUE(loaded.ok()) << loaded.error().message;
    EXPECT_EQ((*loaded)->identity(), (*tok)->identity());
    EXPECT_EQ((*loaded)->vocabSize(), 500);
    EXPECT_EQ((*loaded)->encode(corpus), (*tok)->encode(corpus));
}

TEST(BpeTrainer, RoundTripsArbitraryBytes) {
    std::string corpus = syntheticText(5, 10000);
    std::mt19937 rng(9);
    for (int i = 0; i < 5000; ++i) corpus.push_back(char(rng() & 0xFF));  // binary noise too
    auto tok = trainBpe(corpus, 700);
    ASSERT_TRUE(tok.ok());
    for (int round = 0; round < 100; ++round) {
        std::string text(size_t(rng() % 500), '\0');
        for (char& c : text) c = char(rng() & 0xFF);
        ASSERT_EQ((*tok)->decode((*tok)->encode(text)), text);
    }
    EXPECT_EQ((*tok)->decode((*tok)->encode(corpus)), corpus);
}

TEST(BpeTrainer, RejectsImpossibleRequests) {
    auto tooSmall = trainBpe("some text", 100);
    ASSERT_FALSE(tooSmall.ok());
    EXPECT_NE(tooSmall.error().message.find("256"), std::string::npos);
    auto empty = trainBpe("", 1000);
    ASSERT_FALSE(empty.ok());
    EXPECT_NE(empty.error().message.find("empty corpus"), std::string::npos);
}

// The bundled corpus (about 2 MB): a 4096-token vocabulary as the presets use it.
TEST(BpeTrainer, BundledCorpusTo4096) {
    std::string corpus;
    for (const auto& entry : fs::directory_iterator(WAFER_CORPUS_DIR)) {
        if (entry.path().extension() != ".txt") continue;
        std::ifstream in(entry.path(), std::ios::binary);
        std::stringstream ss;
        ss << in.rdbuf();
        corpus += ss.str();
    }
    ASSERT_GT(corpus.size(), 1'000'000u);
    auto tok = trainBpe(corpus, 4096);
    ASSERT_TRUE(tok.ok());
    EXPECT_EQ((*tok)->vocabSize(), 4096);
    const auto ids = (*tok)->encode(corpus);
    EXPECT_EQ((*tok)->decode(ids), corpus);
    EXPECT_LT(ids.size(), corpus.size() / 3);  // English with 4096 tokens: ~4 bytes per token
}

}  // namespace
}  // namespace ws::tokenizer
