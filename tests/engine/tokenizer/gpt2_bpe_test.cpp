// SPDX-License-Identifier: GPL-3.0-or-later
// GPT-2 file format and encoding: a mini vocab.json + merges.txt cut from GPT-2's real files
// (fixtures/gpt2_mini/README.md) must give GPT-2's real ids; tiny hand-made pairs pin down the
// merge-order semantics of encoder.py; load errors name the file and line.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "engine/tokenizer/bpe_tokenizer.h"
#include "engine/tokenizer/tokenizer.h"
#include "support/temp_dir.h"

namespace ws::tokenizer {
namespace {
namespace fs = std::filesystem;

const fs::path kMini = fs::path(WAFER_TOKENIZER_FIXTURES) / "gpt2_mini";

std::unique_ptr<Tokenizer> loadMini() {
    auto tok = loadGpt2Bpe(kMini / "vocab.json", kMini / "merges.txt");
    EXPECT_TRUE(tok.ok()) << (tok.ok() ? "" : tok.error().message);
    return tok.ok() ? std::move(tok).value() : nullptr;
}

std::string readFile(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
}

void writeFile(const fs::path& path, std::string_view text) {
    std::ofstream(path, std::ios::binary) << text;
}

using Ids = std::vector<int32_t>;

// Issue 31: vocab_file and merges_file come from a config and may name a path the system refuses
// (a component past 255 bytes): an error naming the file, never an exception.
TEST(Gpt2Bpe, APathTheSystemRefusesIsAnError) {
    const fs::path tooLong = fs::temp_directory_path() / std::string(300, 'v') / "vocab.json";
    auto refused = loadGpt2Bpe(tooLong, kMini / "merges.txt");
    ASSERT_FALSE(refused.ok());
    EXPECT_NE(refused.error().message.find(tooLong.string()), std::string::npos)
        << refused.error().message;
    refused = loadGpt2Bpe(kMini / "vocab.json", tooLong.parent_path() / "merges.txt");
    ASSERT_FALSE(refused.ok());
}

TEST(Gpt2Bpe, EncodesLikeGpt2) {
    auto tok = loadMini();
    ASSERT_TRUE(tok);
    EXPECT_EQ(tok->kind(), "bpe");
    EXPECT_EQ(tok->vocabSize(), 50257);  // ids keep GPT-2's numbering, <|endoftext|> = 50256
    // These six also appear in tiktoken's public gpt2/r50k tests.
    EXPECT_EQ(tok->encode("hello world"), (Ids{31373, 995}));
    EXPECT_EQ(tok->encode(" \xE6\x97\xA5\xE6\x9C\xAC\xE8\xAA\x9E\xE3\x81\xA8"
                          "English 12345!\n"),
              (Ids{10545, 245, 98, 17312, 105, 45739, 252, 30201, 15823, 17031, 2231, 0, 198}));
    EXPECT_EQ(tok->encode("\x1C"
                          "a"),
              (Ids{216, 64}));
    EXPECT_EQ(tok->encode("a\n\n"), (Ids{64, 628}));
    EXPECT_EQ(tok->encode("<|endoftext|>"), (Ids{27, 91, 437, 1659, 5239, 91, 29}));
    EXPECT_EQ(tok->encode("a\xEF\xBF\xBD"
                          "b"),
              (Ids{64, 4210, 65}));
    // Computed with OpenAI's encoder.py on the full GPT-2 files.
    EXPECT_EQ(tok->encode("Hello world's 123 !!"), (Ids{15496, 995, 338, 17031, 37867}));
    EXPECT_EQ(tok->encode("In the beginning God created the heaven and the earth."),
              (Ids{818, 262, 3726, 1793, 2727, 262, 9538, 290, 262, 4534, 13}));
    EXPECT_EQ(tok->encode("  I'm here,\tthey've gone.\n\nCaf\xC3\xA9 na\xC3\xAFve 2024!"),
              (Ids{220, 314, 1101, 994, 11, 197, 9930, 1053, 3750, 13, 198, 198, 34, 1878, 2634,
                   41492, 48609, 0}));
    EXPECT_EQ(tok->encode("unbelievable antidisestablishmentarianism"),
              (Ids{403, 6667, 11203, 540, 1885, 29207, 44390, 3699, 1042}));
}

TEST(Gpt2Bpe, DecodesIdsAndSpecialTokens) {
    auto tok = loadMini();
    ASSERT_TRUE(tok);
    const Ids ids{15496, 995, 338, 17031, 37867};
    EXPECT_EQ(tok->decode(ids), "Hello world's 123 !!");
    EXPECT_EQ(tok->decode(Ids{50256}), "<|endoftext|>");
    // Ids with no token (the mini vocabulary is sparse) or out of range show as U+FFFD.
    EXPECT_EQ(tok->decode(Ids{64, 5000, 65, -1, 99999}),
              "a\xEF\xBF\xBD"
              "b\xEF\xBF\xBD\xEF\xBF\xBD");
}

TEST(Gpt2Bpe, SaveWritesTheSameFormatAndReloadsIdentically) {
    auto tok = loadMini();
    ASSERT_TRUE(tok);
    testing::TempDir dir;
    ASSERT_TRUE(tok->save(dir / "out").ok());
    std::ifstream merges(dir / "out" / "merges.txt");
    std::string firstLine, secondLine;
    std::getline(merges, firstLine);
    std::getline(merges, secondLine);
    EXPECT_EQ(firstLine, "#version: 0.2");
    EXPECT_EQ(secondLine, "\xC4\xA0 t");  // "Ġ t", GPT-2's first merge
    auto again = loadGpt2Bpe(dir / "out" / "vocab.json", dir / "out" / "merges.txt");
    ASSERT_TRUE(again.ok()) << again.error().message;
    EXPECT_EQ((*again)->identity(), tok->identity());
    EXPECT_EQ((*again)->vocabSize(), tok->vocabSize());
    const std::string text = "In the beginning God created the heaven and the earth.";
    EXPECT_EQ((*again)->encode(text), tok->encode(text));
    EXPECT_EQ((*again)->decode(Ids{50256}), "<|endoftext|>");
}

class TinyPair : public ::testing::Test {
protected:
    // Writes a vocabulary of the 256 bytes (ids 0..255 = byte values) plus `extra` tokens,
    // and the given merges, then loads them.
    std::unique_ptr<Tokenizer> load(const std::vector<std::string>& extra,
                                    const std::string& merges) {
        auto bytesOnly = trainBpe("x", 256);  // a BPE with exactly the 256 byte tokens
        EXPECT_TRUE(bytesOnly.ok());
        EXPECT_TRUE((*bytesOnly)->save(m_dir.path()).ok());
        std::string vocab = readFile(m_dir / "vocab.json");
        vocab.pop_back();  // drop the closing brace
        int id = 256;
        for (const auto& token : extra) vocab += ",\"" + token + "\":" + std::to_string(id++);
        vocab += "}";
        writeFile(m_dir / "vocab.json", vocab);
        writeFile(m_dir / "merges.txt", "#version: 0.2\n" + merges);
        auto tok = loadGpt2Bpe(m_dir / "vocab.json", m_dir / "merges.txt");
        EXPECT_TRUE(tok.ok()) << (tok.ok() ? "" : tok.error().message);
        return tok.ok() ? std::move(tok).value() : nullptr;
    }
    testing::TempDir m_dir;
};

TEST_F(TinyPair, LowestRankMergeWinsWhereverItIs) {
    // "abc": with "b c" ranked first the result is a + bc, with "a b" first it is ab + c.
    auto bcFirst = load({"ab", "bc"}, "b c\na b\n");
    ASSERT_TRUE(bcFirst);
    EXPECT_EQ(bcFirst->encode("abc"), (Ids{'a', 257}));
    auto abFirst = load({"ab", "bc"}, "a b\nb c\n");
    ASSERT_TRUE(abFirst);
    EXPECT_EQ(abFirst->encode("abc"), (Ids{256, 'c'}));
}

TEST_F(TinyPair, EveryOccurrenceOfTheBestPairMergesBeforeNewPairsCount) {
    // encoder.py merges all occurrences of the best bigram in one pass, left to right, before
    // looking at pairs that pass created: "abab" -> ab ab, even though "ab a" outranks "a b".
    auto tok = load({"ab", "aba"}, "ab a\na b\n");
    ASSERT_TRUE(tok);
    EXPECT_EQ(tok->encode("abab"), (Ids{256, 256}));
    // Overlapping occurrences: "aaa" with merge "a a" -> aa a (left to right, no overlap).
    auto aa = load({"aa"}, "a a\n");
    ASSERT_TRUE(aa);
    EXPECT_EQ(aa->encode("aaa"), (Ids{256, 'a'}));
    EXPECT_EQ(aa->encode("aaaa"), (Ids{256, 256}));
}

TEST_F(TinyPair, MergesNeverCrossPretokenBoundaries) {
    // "a b" can merge inside "ab" but not across the space of "a b" (pieces "a", " b").
    auto tok = load({"ab"}, "a b\n");
    ASSERT_TRUE(tok);
    EXPECT_EQ(tok->encode("ab a b"), (Ids{256, ' ', 'a', ' ', 'b'}));
}

TEST_F(TinyPair, LongPiecesEncodeLikeShortOnes) {
    // A 20000-character run is one piece; the merge loop must stay exact (and fast).
    auto tok = load({"aa", "aaaa"}, "a a\naa aa\n");
    ASSERT_TRUE(tok);
    const auto ids = tok->encode(std::string(20001, 'a'));
    ASSERT_EQ(ids.size(), 5001u);
    for (size_t i = 0; i + 1 < ids.size(); ++i) ASSERT_EQ(ids[i], 257);
    EXPECT_EQ(ids.back(), 'a');
}

TEST(Gpt2BpeErrors, NameTheFileAndTheProblem) {
    testing::TempDir dir;
    const auto vocab = dir / "vocab.json";
    const auto merges = dir / "merges.txt";

    auto missing = loadGpt2Bpe(dir / "nope.json", merges);
    ASSERT_FALSE(missing.ok());
    EXPECT_NE(missing.error().message.find("nope.json"), std::string::npos);

    writeFile(vocab, "{not json");
    writeFile(merges, "#version: 0.2\n");
    auto badJson = loadGpt2Bpe(vocab, merges);
    ASSERT_FALSE(badJson.ok());
    EXPECT_NE(badJson.error().message.find("not valid JSON"), std::string::npos);

    writeFile(vocab, "{\"a\": 0, \"b\": 1}");
    auto noBytes = loadGpt2Bpe(vocab, merges);
    ASSERT_FALSE(noBytes.ok());
    EXPECT_NE(noBytes.error().message.find("all 256 byte tokens"), std::string::npos);

    writeFile(vocab, "{\"a\": \"zero\"}");
    auto badId = loadGpt2Bpe(vocab, merges);
    ASSERT_FALSE(badId.ok());
    EXPECT_NE(badId.error().message.find("'a' has id \"zero\""), std::string::npos);

    // A merge whose result is missing from the vocabulary names the line.
    auto mini = loadGpt2Bpe(kMini / "vocab.json", kMini / "merges.txt");
    ASSERT_TRUE(mini.ok());
    writeFile(merges, "#version: 0.2\nh e\nq z\n");
    auto badMerge = loadGpt2Bpe(kMini / "vocab.json", merges);
    ASSERT_FALSE(badMerge.ok());
    EXPECT_NE(badMerge.error().message.find("line 3"), std::string::npos);
    EXPECT_NE(badMerge.error().message.find("'qz' is not in"), std::string::npos);

    writeFile(merges, "#version: 0.2\nh e\nh  e\n");
    auto badLine = loadGpt2Bpe(kMini / "vocab.json", merges);
    ASSERT_FALSE(badLine.ok());
    EXPECT_NE(badLine.error().message.find("line 3: expected two tokens"), std::string::npos);

    writeFile(merges, "#version: 0.2\nh e\nh e\n");
    auto repeated = loadGpt2Bpe(kMini / "vocab.json", merges);
    ASSERT_FALSE(repeated.ok());
    EXPECT_NE(repeated.error().message.find("repeats an earlier merge"), std::string::npos);
}

}  // namespace
}  // namespace ws::tokenizer
