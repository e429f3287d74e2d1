// SPDX-License-Identifier: GPL-3.0-or-later
// Dataset: the exact window formulas of dataset.h (sequential, wrapping, shuffled), the split,
// validation windows, the errors, and the unigram entropy.
#include "engine/data/dataset.h"

#include <gtest/gtest.h>

#include <cmath>
#include <optional>
#include <set>
#include <vector>

#include "support/temp_dir.h"

namespace ws::data {
namespace {

// With the byte tokenizer, token j of this corpus is j % 251: positions are readable from ids.
std::string positionalText(size_t n) {
    std::string text(n, '\0');
    for (size_t j = 0; j < n; ++j) text[j] = char(j % 251);
    return text;
}

class DatasetTest : public ::testing::Test {
protected:
    TokenCache build(const std::string& text) {
        auto cache = TokenCache::build(text, *m_byte, m_dir.path());
        EXPECT_TRUE(cache.ok());
        return std::move(cache).value();
    }
    testing::TempDir m_dir;
    std::unique_ptr<tokenizer::Tokenizer> m_byte = tokenizer::makeByteTokenizer();
};

TEST_F(DatasetTest, SplitKeepsTheValidationTokensAtTheEnd) {
    const TokenCache cache = build(positionalText(1000));
    auto ds = Dataset::create(cache, 0.1, 8);
    ASSERT_TRUE(ds.ok()) << ds.error().message;
    EXPECT_EQ(ds->trainTokens(), 900u);
    EXPECT_EQ(ds->validationTokens(), 100u);
    auto odd = Dataset::create(build(positionalText(1005)), 0.25, 8);
    ASSERT_TRUE(odd.ok());
    EXPECT_EQ(odd->validationTokens(), 251u);  // floor(1005 * 0.25)
    EXPECT_EQ(odd->trainTokens(), 754u);
}

TEST_F(DatasetTest, SequentialWindowsFollowTheFormulaExactly) {
    const TokenCache cache = build(positionalText(1000));
    auto ds = Dataset::create(cache, 0.1, 8);
    ASSERT_TRUE(ds.ok());
    const int B = 3;
    const int T = 8;
    const int64_t M = 900 - T;
    std::vector<int32_t> in(B * T), tgt(B * T);
    for (int64_t step : {0, 1, 2, 36, 37, 38, 1000, 123456789}) {
        ds->trainBatch(step, B, T, false, 0, in.data(), tgt.data());
        for (int i = 0; i < B; ++i) {
            const int64_t a = ((step * B + i) * T) % M;  // the documented formula
            EXPECT_EQ(ds->trainWindowStart(step, B, T, i, false, 0), a);
            for (int t = 0; t < T; ++t) {
                ASSERT_EQ(in[size_t(i * T + t)], (a + t) % 251) << "step " << step;
                ASSERT_EQ(tgt[size_t(i * T + t)], (a + t + 1) % 251) << "step " << step;
            }
        }
    }
    // Step 0 reads the text from the start, row after row.
    EXPECT_EQ(ds->trainWindowStart(0, B, T, 0, false, 0), 0);
    EXPECT_EQ(ds->trainWindowStart(0, B, T, 1, false, 0), 8);
    EXPECT_EQ(ds->trainWindowStart(1, B, T, 0, false, 0), 24);
}

TEST_F(DatasetTest, WindowsWrapInsideTheTrainingSplit) {
    const TokenCache cache = build(positionalText(1000));
    auto ds = Dataset::create(cache, 0.1, 8);
    ASSERT_TRUE(ds.ok());
    // M = 892 starts. Sample 111 starts at 888; sample 112 would start at 896 and wraps to 4.
    EXPECT_EQ(ds->trainWindowStart(37, 3, 8, 0, false, 0), 888);
    EXPECT_EQ(ds->trainWindowStart(37, 3, 8, 1, false, 0), 4);
    // No window, shuffled or not, ever reads validation tokens (targets end below 900).
    for (int64_t step = 0; step < 2000; ++step) {
        for (bool shuffle : {false, true}) {
            const int64_t a = ds->trainWindowStart(step, 3, 8, int(step % 3), shuffle, 99);
            ASSERT_GE(a, 0);
            ASSERT_LE(a + 8, 899);
        }
    }
    // Huge step numbers do not overflow.
    const int64_t big = int64_t(1) << 60;
    EXPECT_EQ(ds->trainWindowStart(big, 3, 8, 2, false, 0),
              int64_t(((uint64_t(big) * 3 + 2) % 892) * 8 % 892));
}

TEST_F(DatasetTest, ShuffledWindowsAreSeededAndReproducible) {
    const TokenCache cache = build(positionalText(5000));
    auto ds = Dataset::create(cache, 0.0, 16);
    ASSERT_TRUE(ds.ok());
    const int B = 4;
    const int T = 16;
    std::vector<int32_t> a(B * T), b(B * T), ta(B * T), tb(B * T);
    ds->trainBatch(7, B, T, true, 42, a.data(), ta.data());
    ds->trainBatch(7, B, T, true, 42, b.data(), tb.data());
    EXPECT_EQ(a, b);
    EXPECT_EQ(ta, tb);
    // The documented formula, literally.
    const uint64_t M = 5000 - 16;
    for (int i = 0; i < B; ++i) {
        uint64_t z = 42 + (uint64_t(7 * B + i) + 1) * 0x9E3779B97F4A7C15ull;
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        z = z ^ (z >> 31);
        EXPECT_EQ(ds->trainWindowStart(7, B, T, i, true, 42), int64_t(z % M));
        EXPECT_EQ(a[size_t(i * T)], int32_t((z % M) % 251));
    }
    // Another seed or step gives other windows; starts spread over the split.
    ds->trainBatch(7, B, T, true, 43, b.data(), tb.data());
    EXPECT_NE(a, b);
    std::set<int64_t> starts;
    for (int64_t step = 0; step < 500; ++step) {
        starts.insert(ds->trainWindowStart(step, B, T, 0, true, 42));
    }
    EXPECT_GT(starts.size(), 450u);
    EXPECT_LT(*starts.begin(), 500);
    EXPECT_GT(*starts.rbegin(), 4400);
}

TEST_F(DatasetTest, RowsDoNotDependOnWhoFetchesThem) {
    const TokenCache cache = build(positionalText(3000));
    auto ds = Dataset::create(cache, 0.1, 10);
    ASSERT_TRUE(ds.ok());
    // A whole batch equals the rows fetched one by one (as parallel systems would).
    std::vector<int32_t> in(4 * 10), tgt(4 * 10);
    ds->trainBatch(5, 4, 10, true, 7, in.data(), tgt.data());
    for (int i = 0; i < 4; ++i) {
        const int64_t a = ds->trainWindowStart(5, 4, 10, i, true, 7);
        EXPECT_EQ(in[size_t(i * 10)], a % 251);
    }
}

TEST_F(DatasetTest, ValidationWindowsTileTheEndOfTheStream) {
    const TokenCache cache = build(positionalText(1000));
    auto ds = Dataset::create(cache, 0.1, 8);  // V = 100 -> W = floor(99 / 8) = 12 windows
    ASSERT_TRUE(ds.ok());
    EXPECT_EQ(ds->validationBatches(3, 8), 4);
    EXPECT_EQ(ds->validationBatches(5, 8), 2);
    EXPECT_EQ(ds->validationBatches(20, 8), 1);  // fewer windows than rows: one wrapped batch
    std::vector<int32_t> in(3 * 8), tgt(3 * 8);
    std::set<int32_t> firstTokens;
    for (int64_t j = 0; j < 4; ++j) {
        ds->validationBatch(j, 3, 8, in.data(), tgt.data());
        for (int i = 0; i < 3; ++i) {
            const int64_t start = 900 + (j * 3 + i) * 8;
            for (int t = 0; t < 8; ++t) {
                ASSERT_EQ(in[size_t(i * 8 + t)], (start + t) % 251);
                ASSERT_EQ(tgt[size_t(i * 8 + t)], (start + t + 1) % 251);
            }
            firstTokens.insert(in[size_t(i * 8)]);
        }
    }
    EXPECT_EQ(firstTokens.size(), 12u);  // every window once
    std::vector<int32_t> big(20 * 8), bigTgt(20 * 8);
    ds->validationBatch(0, 20, 8, big.data(), bigTgt.data());
    EXPECT_EQ(big[12 * 8], big[0]);  // row 12 wraps to window 0

    auto noValidation = Dataset::create(cache, 0.0, 8);
    ASSERT_TRUE(noValidation.ok());
    EXPECT_EQ(noValidation->validationBatches(3, 8), 0);
    EXPECT_EQ(noValidation->trainTokens(), 1000u);
}

TEST_F(DatasetTest, EvaluationOnlyDatasetsUseTheWholeCache) {
    const TokenCache cache = build(positionalText(50));
    auto ds = Dataset::create(cache, 1.0, 8);
    ASSERT_TRUE(ds.ok()) << ds.error().message;
    EXPECT_EQ(ds->trainTokens(), 0u);
    EXPECT_EQ(ds->validationTokens(), 50u);
    EXPECT_EQ(ds->validationBatches(2, 8), 3);  // W = floor(49 / 8) = 6
    EXPECT_TRUE(std::isnan(ds->unigramEntropyNats()));
}

TEST_F(DatasetTest, TooLittleTextIsAClearError) {
    const TokenCache cache = build(positionalText(100));
    auto tooLong = Dataset::create(cache, 0.1, 90);  // 90 training tokens, needs 91
    ASSERT_FALSE(tooLong.ok());
    EXPECT_NE(tooLong.error().message.find("training split has 90 tokens"), std::string::npos);
    EXPECT_NE(tooLong.error().message.find("needs at least 91"), std::string::npos);
    EXPECT_NE(tooLong.error().message.find("lower max_sequence_length"), std::string::npos);

    auto noValWindow = Dataset::create(cache, 0.05, 8);  // 5 validation tokens, needs 9
    ASSERT_FALSE(noValWindow.ok());
    EXPECT_NE(noValWindow.error().message.find("validation split has 5 tokens"), std::string::npos);
    EXPECT_NE(noValWindow.error().message.find("raise validation_fraction"), std::string::npos);

    auto shortEval = Dataset::create(cache, 1.0, 100);
    ASSERT_FALSE(shortEval.ok());
    EXPECT_NE(shortEval.error().message.find("evaluation corpus has 100 tokens"),
              std::string::npos);

    auto badFraction = Dataset::create(cache, 1.5, 8);
    ASSERT_FALSE(badFraction.ok());

    // Exactly T + 1 tokens is enough for one window.
    auto justEnough = Dataset::create(build(positionalText(9)), 0.0, 8);
    ASSERT_TRUE(justEnough.ok());
    EXPECT_EQ(justEnough->trainWindowStart(5, 2, 8, 1, false, 0), 0);
}

TEST_F(DatasetTest, UnigramEntropyOfTheTrainingSplit) {
    std::string twoSymbols;
    for (int i = 0; i < 500; ++i) twoSymbols += "ab";
    twoSymbols += std::string(100, 'z');  // held out: must not count
    auto two = Dataset::create(build(twoSymbols), 100.0 / 1100.0, 8);
    ASSERT_TRUE(two.ok());
    EXPECT_NEAR(two->unigramEntropyNats(), std::log(2.0), 1e-12);
    EXPECT_NEAR(two->unigramEntropyBits(), 1.0, 1e-12);

    std::string four;
    for (int i = 0; i < 250; ++i) four += "abcd";
    auto uniform = Dataset::create(build(four), 0.0, 8);
    ASSERT_TRUE(uniform.ok());
    EXPECT_NEAR(uniform->unigramEntropyNats(), std::log(4.0), 1e-12);
}

TEST_F(DatasetTest, OutlivesItsTokenCache) {
    std::optional<Dataset> ds;
    {
        const TokenCache cache = build(positionalText(300));
        auto created = Dataset::create(cache, 0.0, 4);
        ASSERT_TRUE(created.ok());
        ds.emplace(std::move(created).value());
    }
    std::vector<int32_t> in(4), tgt(4);
    ds->trainBatch(0, 1, 4, false, 0, in.data(), tgt.data());
    EXPECT_EQ(in, (std::vector<int32_t>{0, 1, 2, 3}));
}

}  // namespace
}  // namespace ws::data
