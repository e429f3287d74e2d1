// SPDX-License-Identifier: GPL-3.0-or-later
// Packing for variable sequence length (data/packing.h): each data_dir file is a document, found in
// the token stream from the files' byte offsets; position_ids of a window restart at every
// document start and at every short-sequence segment; the attention length the emulator charges.
#include "engine/data/packing.h"

#include <gtest/gtest.h>

#include <fstream>
#include <vector>

#include "engine/data/corpus.h"
#include "engine/tokenizer/tokenizer.h"
#include "support/temp_dir.h"

namespace ws::data {
namespace {

void writeFile(const std::filesystem::path& path, const std::string& text) {
    std::ofstream(path, std::ios::binary) << text;
}

TEST(Packing, CorpusDocumentsStartAtEachFileAfterTheSeparator) {
    testing::TempDir dir;
    writeFile(dir.path() / "a.txt", "first");      // 5 bytes
    writeFile(dir.path() / "b.txt", "second!");    // 7 bytes
    writeFile(dir.path() / "c.txt", "third one");  // 9 bytes
    auto docs = readCorpusDocuments({dir.path().string()});
    ASSERT_TRUE(docs.ok()) << docs.error().message;
    EXPECT_EQ(docs->text, "first\n\nsecond!\n\nthird one");
    EXPECT_EQ(docs->documentStarts, (std::vector<size_t>{0, 7, 16}));
    auto plain = readCorpus({dir.path().string()});
    ASSERT_TRUE(plain.ok());
    EXPECT_EQ(*plain, docs->text);  // readCorpus is unchanged

    // Byte tokenizer: token i is byte i, so documents start at the same token indices.
    const auto byte = tokenizer::makeByteTokenizer();
    auto cache = TokenCache::build(docs->text, *byte, dir.path() / "cache");
    ASSERT_TRUE(cache.ok()) << cache.error().message;
    const auto index = DocumentIndex::fromByteOffsets(*cache, tokenizer::tokenByteCounts(*byte),
                                                      docs->documentStarts);
    EXPECT_EQ(index.starts(), (std::vector<int64_t>{0, 7, 16}));

    // A BPE whose tokens cross the file separator: a document starts at the first token that
    // starts inside it, and never inside a token.
    auto bpe = tokenizer::trainBpe(docs->text + docs->text + docs->text, 300);
    ASSERT_TRUE(bpe.ok()) << bpe.error().message;
    auto bpeCache = TokenCache::build(docs->text, **bpe, dir.path() / "cache");
    ASSERT_TRUE(bpeCache.ok());
    const auto bytes = tokenizer::tokenByteCounts(**bpe);
    const auto bpeIndex = DocumentIndex::fromByteOffsets(*bpeCache, bytes, docs->documentStarts);
    EXPECT_EQ(bpeIndex.documents(), 3);
    size_t byteAt = 0;
    std::vector<size_t> tokenByteStarts;
    for (size_t i = 0; i < bpeCache->size(); ++i) {
        tokenByteStarts.push_back(byteAt);
        byteAt += size_t(bytes[size_t(bpeCache->token(i))]);
    }
    for (size_t d = 0; d < 3; ++d) {
        const auto start = size_t(bpeIndex.starts()[d]);
        EXPECT_GE(tokenByteStarts[start], docs->documentStarts[d]) << d;
        if (start > 0) {
            EXPECT_LT(tokenByteStarts[start - 1], docs->documentStarts[d]) << d;
        }
    }
}

TEST(Packing, PositionIdsRestartAtDocumentsAndSegments) {
    const DocumentIndex index({10, 13, 30});
    std::vector<int32_t> ids(8);
    index.positionIds(8, 8, 0, ids.data());  // tokens 8..15: documents start at 10 and 13
    EXPECT_EQ(ids, (std::vector<int32_t>{0, 1, 0, 1, 2, 0, 1, 2}));
    index.positionIds(14, 8, 0, ids.data());  // inside one document: dense
    EXPECT_EQ(ids, (std::vector<int32_t>{0, 1, 2, 3, 4, 5, 6, 7}));
    index.positionIds(8, 8, 4, ids.data());  // short segments of 4 on top of the documents
    EXPECT_EQ(ids, (std::vector<int32_t>{0, 1, 0, 1, 0, 0, 1, 2}));
    const DocumentIndex one;  // no boundaries: segments only
    one.positionIds(3, 8, 2, ids.data());
    EXPECT_EQ(ids, (std::vector<int32_t>{0, 1, 0, 1, 0, 1, 0, 1}));
    EXPECT_EQ(one.documents(), 1);
    EXPECT_EQ(DocumentIndex({0, 5, 5, 3}).starts(), (std::vector<int64_t>{0, 3, 5}));
}

TEST(Packing, AttentionLengthIsTheSumOfSquaresOverTokens) {
    const std::vector<int32_t> dense = {0, 1, 2, 3, 4, 5, 6, 7};
    EXPECT_DOUBLE_EQ(attentionLength(dense), 8.0);
    const std::vector<int32_t> halves = {0, 1, 2, 3, 0, 1, 2, 3};
    EXPECT_DOUBLE_EQ(attentionLength(halves), 4.0);
    const std::vector<int32_t> mixed = {0, 1, 2, 0, 0, 1, 2, 3, 4, 5};  // 3, 1, 6
    EXPECT_DOUBLE_EQ(attentionLength(mixed), (9.0 + 1.0 + 36.0) / 10.0);
}

}  // namespace
}  // namespace ws::data
