// SPDX-License-Identifier: GPL-3.0-or-later
// TokenCache: contents, reuse while corpus and tokenizer are unchanged, rebuilds when either
// changes or the file is damaged, token widths, chunked encoding, read-only corpora.
#include "engine/data/token_cache.h"

#include <gtest/gtest.h>

#include <fstream>
#include <random>
#include <vector>

#include "engine/data/corpus.h"
#include "support/file_size_limit.h"
#include "support/temp_dir.h"

namespace ws::data {
namespace {
namespace fs = std::filesystem;

std::string sampleText(int verses = 200) {
    std::string text;
    for (int i = 0; i < verses; ++i) {
        text += "And the LORD said unto Moses, Stretch out thine hand " + std::to_string(i) +
                " times;  it's   done.\n\n";
    }
    return text;
}

std::vector<int32_t> allTokens(const TokenCache& cache) {
    std::vector<int32_t> out(cache.size());
    cache.copyTokens(0, cache.size(), out.data());
    return out;
}

std::vector<fs::path> filesIn(const fs::path& dir) {
    std::vector<fs::path> files;
    for (const auto& e : fs::directory_iterator(dir)) files.push_back(e.path());
    return files;
}

// A tokenizer whose ids do not fit 16 bits: byte b -> 69000 + b (vocabulary 70000).
class WideTokenizer final : public tokenizer::Tokenizer {
public:
    std::vector<int32_t> encode(std::string_view text) const override {
        std::vector<int32_t> ids;
        for (char c : text) ids.push_back(69000 + uint8_t(c));
        return ids;
    }
    std::string decode(std::span<const int32_t> tokens) const override {
        std::string text;
        for (int32_t t : tokens) text.push_back(char(t - 69000));
        return text;
    }
    int vocabSize() const override { return 70000; }
    std::string kind() const override { return "wide-test"; }
    std::string identity() const override { return "wide-test/1"; }
    Status save(const fs::path&) const override { return {}; }
};

TEST(TokenCache, HoldsTheTokensAndIsReusedWhileNothingChanges) {
    testing::TempDir cache;
    const std::string text = sampleText();
    auto byte = tokenizer::makeByteTokenizer();
    auto first = TokenCache::build(text, *byte, cache.path());
    ASSERT_TRUE(first.ok()) << first.error().message;
    EXPECT_FALSE(first->reused());
    EXPECT_EQ(first->size(), text.size());
    EXPECT_EQ(first->bytesPerToken(), 2);
    EXPECT_EQ(first->vocabSize(), 256);
    EXPECT_EQ(allTokens(*first), byte->encode(text));
    EXPECT_EQ(first->token(0), 'A');
    EXPECT_EQ(first->path().parent_path(), cache / "tokens");
    EXPECT_EQ(filesIn(cache / "tokens").size(), 1u);  // no temp file left behind

    auto second = TokenCache::build(text, *byte, cache.path());
    ASSERT_TRUE(second.ok());
    EXPECT_TRUE(second->reused());
    EXPECT_TRUE(second->note().empty());
    EXPECT_EQ(second->path(), first->path());
    EXPECT_EQ(allTokens(*second), allTokens(*first));
}

TEST(TokenCache, CorpusChangeRebuilds) {
    testing::TempDir cache;
    auto byte = tokenizer::makeByteTokenizer();
    const std::string a = sampleText();
    const std::string b = a + "Amen.";
    ASSERT_TRUE(TokenCache::build(a, *byte, cache.path()).ok());
    auto changed = TokenCache::build(b, *byte, cache.path());
    ASSERT_TRUE(changed.ok());
    EXPECT_FALSE(changed->reused());
    EXPECT_EQ(changed->size(), b.size());
    auto original = TokenCache::build(a, *byte, cache.path());
    ASSERT_TRUE(original.ok());
    EXPECT_TRUE(original->reused());
    EXPECT_NE(original->path(), changed->path());
}

TEST(TokenCache, TokenizerChangeRebuilds) {
    testing::TempDir cache;
    const std::string text = sampleText();
    auto byte = tokenizer::makeByteTokenizer();
    auto bpe = tokenizer::trainBpe(text, 300);
    ASSERT_TRUE(bpe.ok());
    ASSERT_TRUE(TokenCache::build(text, *byte, cache.path()).ok());
    auto withBpe = TokenCache::build(text, **bpe, cache.path());
    ASSERT_TRUE(withBpe.ok());
    EXPECT_FALSE(withBpe->reused());
    EXPECT_EQ(allTokens(*withBpe), (*bpe)->encode(text));
    EXPECT_LT(withBpe->size(), text.size());
    auto bpeAgain = TokenCache::build(text, **bpe, cache.path());
    ASSERT_TRUE(bpeAgain.ok());
    EXPECT_TRUE(bpeAgain->reused());
    auto otherBpe = tokenizer::trainBpe(text, 290);
    ASSERT_TRUE(otherBpe.ok());
    auto withOther = TokenCache::build(text, **otherBpe, cache.path());
    ASSERT_TRUE(withOther.ok());
    EXPECT_FALSE(withOther->reused());
}

// Damages the cache file in a given way, then checks that build() notices and rebuilds.
void expectRebuiltAfter(const std::function<void(const fs::path&)>& damage,
                        const std::string& reason) {
    SCOPED_TRACE(reason);
    testing::TempDir cache;
    const std::string text = sampleText();
    auto byte = tokenizer::makeByteTokenizer();
    fs::path file;
    {
        auto built = TokenCache::build(text, *byte, cache.path());
        ASSERT_TRUE(built.ok());
        file = built->path();
    }  // unmapped before damaging it
    damage(file);
    auto rebuilt = TokenCache::build(text, *byte, cache.path());
    ASSERT_TRUE(rebuilt.ok()) << rebuilt.error().message;
    EXPECT_FALSE(rebuilt->reused());
    EXPECT_NE(rebuilt->note().find(reason), std::string::npos) << rebuilt->note();
    EXPECT_EQ(allTokens(*rebuilt), byte->encode(text));
    auto again = TokenCache::build(text, *byte, cache.path());
    ASSERT_TRUE(again.ok());
    EXPECT_TRUE(again->reused());
}

TEST(TokenCache, DamagedFilesAreDetectedAndRebuilt) {
    expectRebuiltAfter(
        [](const fs::path& file) {
            std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
            f.seekp(256 + 100);
            f.put('\x7F');  // one token changed in the payload
        },
        "checksum");
    expectRebuiltAfter([](const fs::path& file) { fs::resize_file(file, 256 + 10); },
                       "truncated or padded");
    expectRebuiltAfter([](const fs::path& file) { fs::resize_file(file, 100); }, "truncated");
    expectRebuiltAfter(
        [](const fs::path& file) {
            std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
            f.write("GARBAGE!", 8);
        },
        "bad magic");
}

// The checksum covers the payload only; a damaged vocabulary size (header offset 20) used to be
// trusted, and Dataset's unigram counts, sized by it, were written out of bounds (seen examining
// a fuzz_token_cache finding; tests/fuzz/regressions/token_cache/damaged_vocab_size replays it).
TEST(TokenCache, DamagedVocabularySizeInTheHeaderIsDetectedAndRebuilt) {
    const auto setVocab = [](uint32_t vocab) {
        return [vocab](const fs::path& file) {
            std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
            f.seekp(20);
            f.write(reinterpret_cast<const char*>(&vocab), sizeof vocab);
        };
    };
    expectRebuiltAfter(setVocab(1), "vocabulary of 1 tokens");
    expectRebuiltAfter(setVocab(70000), "vocabulary of 70000 tokens");
}

TEST(TokenCache, WideVocabulariesStoreInt32) {
    testing::TempDir cache;
    WideTokenizer wide;
    const std::string text = sampleText(5);
    auto built = TokenCache::build(text, wide, cache.path());
    ASSERT_TRUE(built.ok()) << built.error().message;
    EXPECT_EQ(built->bytesPerToken(), 4);
    EXPECT_EQ(allTokens(*built), wide.encode(text));
    auto again = TokenCache::build(text, wide, cache.path());
    ASSERT_TRUE(again.ok());
    EXPECT_TRUE(again->reused());
    EXPECT_EQ(again->token(3), 69000 + uint8_t(text[3]));
}

TEST(TokenCache, ChunkedEncodingEqualsWholeEncoding) {
    std::string text = sampleText(50);
    text += "tail  words\tand\n\n\nspaces   at the end   ";
    auto bpe = tokenizer::trainBpe(text, 320);
    ASSERT_TRUE(bpe.ok());
    for (const size_t chunk : {size_t(1), size_t(7), size_t(64), size_t(1) << 20}) {
        std::vector<int32_t> joined;
        std::vector<double> fractions;
        encodeInChunks(
            text, **bpe, chunk,
            [&](std::span<const int32_t> ids) {
                joined.insert(joined.end(), ids.begin(), ids.end());
            },
            [&](double f, std::string_view) { fractions.push_back(f); });
        EXPECT_EQ(joined, (*bpe)->encode(text)) << "chunk " << chunk;
        ASSERT_FALSE(fractions.empty());
        EXPECT_EQ(fractions.back(), 1.0);
    }
}

TEST(TokenCache, ReadOnlyCorpusFolderWorksAndGetsNoFiles) {
    testing::TempDir dir;
    const fs::path corpusDir = dir / "corpus";
    fs::create_directories(corpusDir);
    std::ofstream(corpusDir / "a.txt") << sampleText();
    fs::permissions(corpusDir, fs::perms::owner_read | fs::perms::owner_exec);
    auto text = readCorpus({corpusDir.string()});
    ASSERT_TRUE(text.ok()) << text.error().message;
    auto byte = tokenizer::makeByteTokenizer();
    auto built = TokenCache::build(*text, *byte, dir / "cache");
    ASSERT_TRUE(built.ok()) << built.error().message;
    EXPECT_EQ(filesIn(corpusDir).size(), 1u);  // nothing was written beside the corpus
    EXPECT_EQ(built->path().parent_path(), dir / "cache" / "tokens");
}

TEST(TokenCache, ErrorsNameTheProblem) {
    testing::TempDir dir;
    auto byte = tokenizer::makeByteTokenizer();
    auto empty = TokenCache::build("", *byte, dir.path());
    ASSERT_FALSE(empty.ok());
    EXPECT_NE(empty.error().message.find("corpus is empty"), std::string::npos);

    std::ofstream(dir / "file") << "x";  // a cache "folder" that is a file cannot be created
    auto blocked = TokenCache::build("text", *byte, dir / "file" / "cache");
    ASSERT_FALSE(blocked.ok());
    EXPECT_NE(blocked.error().message.find("cannot create the token cache folder"),
              std::string::npos);
}

// Issue 19: the disk fills up while the cache is written. The error names the cache file, says the
// disk is full and what to do; no temp file is left; with space back the same call succeeds.
TEST(TokenCache, AFullDiskIsReportedAndLeavesNoTempFile) {
    testing::TempDir dir;
    auto byte = tokenizer::makeByteTokenizer();
    const std::string text = sampleText(3000);  // ~200 KB of byte tokens, 2 bytes each
    Result<TokenCache> full = Error{"not run"};
    {
        ws::testing::FileSizeLimit limit(64 * 1024);
        full = TokenCache::build(text, *byte, dir / "cache");
    }
    ASSERT_FALSE(full.ok());
    const std::string& message = full.error().message;
    EXPECT_NE(message.find((dir / "cache" / "tokens").string()), std::string::npos) << message;
    EXPECT_NE(message.find(".tokens'"), std::string::npos) << message;  // the cache, not a temp
    EXPECT_NE(message.find("disk is full"), std::string::npos) << message;
    EXPECT_NE(message.find("XDG_CACHE_HOME"), std::string::npos) << message;
    EXPECT_TRUE(filesIn(dir / "cache" / "tokens").empty());

    auto built = TokenCache::build(text, *byte, dir / "cache");
    ASSERT_TRUE(built.ok()) << built.error().message;
    EXPECT_EQ(built->size(), text.size());
    EXPECT_EQ(filesIn(dir / "cache" / "tokens").size(), 1u);
}

}  // namespace
}  // namespace ws::data
