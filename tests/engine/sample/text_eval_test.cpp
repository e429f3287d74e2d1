// SPDX-License-Identifier: GPL-3.0-or-later
// Scoring a text under a model (sample/text_eval.h, `wafer eval`): the windows are the documented
// ones; the total loss equals the engine's forward run window by window here (in fp32 and
// against a float64 forward), whatever the batch; bits per byte is total nats / ln 2 / bytes of
// the scored text; bad input (empty text, one token, a context longer than the model's) is
// refused saying so.
#include <gtest/gtest.h>

#include <cmath>
#include <numbers>
#include <string>

#include "engine/model/gpt.h"
#include "engine/sample/text_eval.h"
#include "engine/tokenizer/tokenizer.h"
#include "sample_test_util.h"

namespace ws::sample {
namespace {

using testing::randomParams;

const std::string kText =
    "It was the best of times, it was the worst of times, it was the age of wisdom, it was the "
    "age of foolishness, it was the epoch of belief, it was the epoch of incredulity.";

TEST(TextEval, WindowsAreNonOverlappingAndScoreEveryTokenButTheFirstOnce) {
    const auto w = evalWindows(10, 4);  // tokens t0..t9: scored t1..t9 in windows of 4, 4, 1
    ASSERT_EQ(w.size(), 3u);
    EXPECT_EQ(w[0].start, 0);
    EXPECT_EQ(w[0].length, 4);
    EXPECT_EQ(w[1].start, 4);
    EXPECT_EQ(w[1].length, 4);
    EXPECT_EQ(w[2].start, 8);
    EXPECT_EQ(w[2].length, 1);
    EXPECT_EQ(evalWindows(9, 4).size(), 2u);  // 8 targets: two full windows, no tail
    EXPECT_TRUE(evalWindows(1, 4).empty());
    for (int64_t n : {2, 5, 17, 100}) {
        for (int T : {1, 3, 16}) {
            std::vector<int> scored(size_t(n), 0);
            for (const auto& win : evalWindows(n, T)) {
                EXPECT_LE(win.length, T);
                for (int j = 1; j <= win.length; ++j) ++scored[size_t(win.start + j)];
            }
            EXPECT_EQ(scored[0], 0);
            for (int64_t i = 1; i < n; ++i) EXPECT_EQ(scored[size_t(i)], 1) << n << " " << T;
        }
    }
}

// The same figure computed here from the engine's forward, one window at a time (a Gpt per
// window length), with windows cut by this test's own loop.
template <typename Real>
double totalNatsByHand(const model::GptShape& shape, const std::vector<float>& params,
                       const std::vector<int32_t>& tokens, int T) {
    const std::vector<Real> p(params.begin(), params.end());
    double total = 0.0;
    for (size_t start = 0; start + 1 < tokens.size(); start += size_t(T)) {
        const int len = int(std::min<size_t>(size_t(T), tokens.size() - 1 - start));
        model::Gpt<Real> gpt(shape, 1, len);
        const std::vector<int32_t> in(tokens.begin() + ptrdiff_t(start),
                                      tokens.begin() + ptrdiff_t(start) + len);
        const std::vector<int32_t> tgt(tokens.begin() + ptrdiff_t(start) + 1,
                                       tokens.begin() + ptrdiff_t(start) + 1 + len);
        total += double(gpt.forward(p.data(), in.data(), tgt.data(), false, 0)) * len;
    }
    return total;
}

TEST(TextEval, LossIsTheForwardsLossOnTheSameWindowsWhateverTheBatch) {
    const model::GptShape shape = testing::samplingShape(256, 24);
    const std::vector<float> params = randomParams(shape, 5);
    const auto tok = tokenizer::makeByteTokenizer();
    const std::vector<int32_t> tokens = tok->encode(kText);
    const int T = 16;
    const double expected = totalNatsByHand<float>(shape, params, tokens, T);
    const double reference = totalNatsByHand<double>(shape, params, tokens, T);

    TextEvalResult first;
    for (int batch : {1, 3, 20}) {
        TextEvalOptions o;
        o.seqLen = T;
        o.batch = batch;
        auto r = evaluateText(shape, params.data(), *tok, kText, o);
        ASSERT_TRUE(r.ok()) << r.error().message;
        EXPECT_EQ(r->tokens, int64_t(kText.size()));
        EXPECT_EQ(r->scoredTokens, int64_t(kText.size()) - 1);
        EXPECT_EQ(r->windows, int64_t((kText.size() - 1 + T - 1) / T));
        EXPECT_EQ(r->seqLen, T);
        // fp32 forward summed per token vs the forward's mean x length: float rounding only.
        EXPECT_NEAR(r->totalNats, expected, 1e-5 * std::abs(expected));
        EXPECT_NEAR(r->totalNats, reference, 1e-4 * std::abs(reference));
        EXPECT_NEAR(r->loss, r->totalNats / double(r->scoredTokens), 1e-12);
        EXPECT_NEAR(r->perplexity, std::exp(r->loss), 1e-9 * r->perplexity);
        // Byte tokenizer: the scored text is every byte but the first.
        EXPECT_EQ(r->scoredBytes, int64_t(kText.size()) - 1);
        EXPECT_DOUBLE_EQ(r->bitsPerByte,
                         r->totalNats / std::numbers::ln2 / double(kText.size() - 1));
        if (batch == 1) {
            first = *r;
        } else {  // the batch groups windows; matrix kernels may round differently
            EXPECT_NEAR(r->totalNats, first.totalNats, 1e-6 * std::abs(first.totalNats));
        }
    }
    // A random model is far from uniform over 256 bytes, so the figure is not a constant.
    EXPECT_GT(std::abs(first.loss - std::log(256.0)), 0.05);

    // The default context is the model's; --max-tokens scores a prefix.
    TextEvalOptions whole;
    auto r = evaluateText(shape, params.data(), *tok, kText, whole);
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r->seqLen, 24);
    EXPECT_NEAR(r->totalNats, totalNatsByHand<float>(shape, params, tokens, 24),
                1e-5 * r->totalNats);
    TextEvalOptions prefix;
    prefix.seqLen = T;
    prefix.maxTokens = 20;
    r = evaluateText(shape, params.data(), *tok, kText, prefix);
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r->scoredTokens, 20);
    const std::vector<int32_t> cut(tokens.begin(), tokens.begin() + 21);
    EXPECT_NEAR(r->totalNats, totalNatsByHand<float>(shape, params, cut, T), 1e-5 * r->totalNats);
}

TEST(TextEval, BitsPerByteCountsTheBytesTheScoredTokensDecodeTo) {
    // A BPE tokenizer whose tokens span several bytes.
    auto bpe = tokenizer::trainBpe(kText + kText, 300);
    ASSERT_TRUE(bpe.ok());
    const model::GptShape shape = testing::samplingShape(300, 32);
    const std::vector<float> params = randomParams(shape, 9);
    const std::vector<int32_t> tokens = (*bpe)->encode(kText);
    ASSERT_LT(tokens.size(), kText.size());
    auto r = evaluateText(shape, params.data(), **bpe, kText, {});
    ASSERT_TRUE(r.ok()) << r.error().message;
    const int64_t firstBytes = int64_t((*bpe)->decode(std::span(tokens.data(), 1)).size());
    EXPECT_EQ(r->scoredBytes, int64_t(kText.size()) - firstBytes);
    EXPECT_DOUBLE_EQ(r->bitsPerByte,
                     r->totalNats / std::numbers::ln2 / double(kText.size() - size_t(firstBytes)));
    EXPECT_NEAR(r->totalNats, totalNatsByHand<float>(shape, params, tokens, 32),
                1e-5 * r->totalNats);
}

TEST(TextEval, RefusesWhatCannotBeScored) {
    const model::GptShape shape = testing::samplingShape(256, 24);
    const std::vector<float> params = randomParams(shape, 5);
    const auto tok = tokenizer::makeByteTokenizer();
    auto r = evaluateText(shape, params.data(), *tok, "", {});
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.error().message.find("the text is empty"), std::string::npos);
    r = evaluateText(shape, params.data(), *tok, "x", {});
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.error().message.find("1 token(s) long; scoring needs at least 2"),
              std::string::npos)
        << r.error().message;
    TextEvalOptions tooLong;
    tooLong.seqLen = 25;
    r = evaluateText(shape, params.data(), *tok, kText, tooLong);
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.error().message.find("longer than the model's (24 positions"), std::string::npos)
        << r.error().message;
    // A tokenizer larger than the model's vocabulary: the first token it lacks is named.
    const model::GptShape small = testing::samplingShape(64, 24);
    const std::vector<float> smallParams = randomParams(small, 5);
    r = evaluateText(small, smallParams.data(), *tok, kText, {});
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.error().message.find("64"), std::string::npos) << r.error().message;
}

}  // namespace
}  // namespace ws::sample
