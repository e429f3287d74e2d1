// SPDX-License-Identifier: GPL-3.0-or-later
// Packed sequences (model/packed_sequences.h): a row of several documents with ModelZoo's
// position_ids trains exactly as the documents would one by one (the same loss over the same
// tokens, the same gradients), one-document rows are the dense step bit for bit, and the
// gradients of a packed step pass the finite-difference check.
//
// Why packed-vs-separate is compared with a tolerance, not bit for bit: the per-token arithmetic
// inside a document is the same, but the sums over tokens are not taken in the same order - the
// loss is one mean over every packed token instead of per-document means weighted afterwards, and
// each weight gradient (dW = dYᵀ·X) reduces over all B·T packed rows in one product instead of
// per document - so the results differ by rounding only: ~1e-15 relative in double and ~1e-6 in
// float, far below any real difference (masking one document into another changes the loss at
// the 1e-2 level, checked below).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <vector>

#include "engine/model/gpt.h"
#include "engine/model/packed_sequences.h"
#include "engine/model/random.h"
#include "gradcheck.h"
#include "support/test_shapes.h"

namespace ws::model {
namespace {

using ws::testing::gptShape;

std::vector<float> initialWeights(const GptShape& s, uint64_t seed) {
    const ParameterTable table(s);
    std::vector<float> p(table.totalSize());
    config::ModelConfig m = ws::testing::modelConfigOf(s);
    m.embeddingInitializer = {"normal", 0.0, 0.1, -1, 1};
    m.initializer = {"normal", 0.0, 0.1, -1, 1};
    initParameters(table, m, seed, p.data());
    for (const TensorSlice& t : table.tensors()) {  // LayerNorm gains and biases away from 1 / 0
        if (t.shape.size() != 1) continue;
        for (size_t i = 0; i < t.size; ++i)
            p[t.offset + i] += float(0.1 * rng::standardNormal(seed + 99, t.offset + i));
    }
    return p;
}

std::vector<int32_t> tokens(size_t n, int vocab, uint64_t seed) {
    std::vector<int32_t> ids(n);
    for (size_t i = 0; i < n; ++i) ids[i] = int32_t(rng::bits(seed, uint64_t(i)) % uint64_t(vocab));
    return ids;
}

// position_ids of rows packed with documents of the given lengths (each row's lengths sum to T).
std::vector<int32_t> positionIds(const std::vector<std::vector<int>>& rows) {
    std::vector<int32_t> ids;
    for (const auto& row : rows)
        for (int len : row)
            for (int t = 0; t < len; ++t) ids.push_back(t);
    return ids;
}

GptShape mediumShape() {
    return gptShape(97, 64, 2, 4, 256, 160);  // T up to 160: rows span three 64-row blocks
}

template <typename Real>
struct StepOut {
    Real loss = 0;
    std::vector<Real> grads;
};

template <typename Real>
StepOut<Real> runStep(const GptShape& s, const std::vector<Real>& p, int B, int T,
                      const int32_t* in, const int32_t* tg, const int32_t* positions,
                      bool training = false, uint64_t seed = 0) {
    Gpt<Real> gpt(s, B, T);
    gpt.setPositionIds(positions);
    StepOut<Real> out;
    out.grads.assign(p.size(), Real(0));
    out.loss = gpt.forward(p.data(), in, tg, training, seed);
    gpt.backward(p.data(), out.grads.data());
    return out;
}

template <typename Real>
void expectOneDocumentRowsAreTheDenseStep(bool dropout) {
    GptShape s = mediumShape();
    if (dropout) s.dropout = s.attnDropout = 0.1;
    const int B = 3, T = 150;
    const auto w = initialWeights(s, 7);
    const std::vector<Real> p(w.begin(), w.end());
    const auto in = tokens(size_t(B) * T, s.vocab, 1), tg = tokens(size_t(B) * T, s.vocab, 2);
    const auto ids = positionIds({{T}, {T}, {T}});
    const auto dense = runStep<Real>(s, p, B, T, in.data(), tg.data(), nullptr, dropout, 99);
    const auto packed = runStep<Real>(s, p, B, T, in.data(), tg.data(), ids.data(), dropout, 99);
    EXPECT_EQ(std::memcmp(&dense.loss, &packed.loss, sizeof(Real)), 0);
    EXPECT_EQ(std::memcmp(dense.grads.data(), packed.grads.data(), p.size() * sizeof(Real)), 0);
}

TEST(PackedSequences, OneDocumentRowsAreTheDenseStepBitForBitFloat) {
    expectOneDocumentRowsAreTheDenseStep<float>(false);
    expectOneDocumentRowsAreTheDenseStep<float>(true);
}

TEST(PackedSequences, OneDocumentRowsAreTheDenseStepBitForBitDouble) {
    expectOneDocumentRowsAreTheDenseStep<double>(false);
}

// Rows of documents, and each document on its own as a (1, len) batch: the token-weighted mean of
// the documents' losses and gradients is the packed step's.
template <typename Real>
void expectPackedMatchesSeparate(double tolerance) {
    const GptShape s = mediumShape();
    const int T = 150;
    // Boundaries inside 64-row blocks and on them, a one-token document, a whole-row document.
    const std::vector<std::vector<int>> rows = {{40, 70, 1, 39}, {64, 64, 22}, {T}};
    const int B = int(rows.size());
    const auto w = initialWeights(s, 11);
    const std::vector<Real> p(w.begin(), w.end());
    const auto in = tokens(size_t(B) * T, s.vocab, 3), tg = tokens(size_t(B) * T, s.vocab, 4);
    const auto ids = positionIds(rows);
    ASSERT_TRUE(ops::checkPositionIds(ids.data(), B, T).ok());
    const auto packed = runStep<Real>(s, p, B, T, in.data(), tg.data(), ids.data());

    double lossSum = 0;
    std::vector<double> gradSum(p.size(), 0.0);
    size_t at = 0;
    for (const auto& row : rows) {
        for (int len : row) {
            const auto one = runStep<Real>(s, p, 1, len, in.data() + at, tg.data() + at, nullptr);
            lossSum += double(one.loss) * len;
            for (size_t i = 0; i < p.size(); ++i) gradSum[i] += double(one.grads[i]) * len;
            at += size_t(len);
        }
    }
    const double N = double(B) * T;
    const double loss = lossSum / N;
    EXPECT_NEAR(double(packed.loss), loss, tolerance * std::abs(loss));
    double scale = 0, worst = 0;
    for (size_t i = 0; i < p.size(); ++i) scale = std::max(scale, std::abs(gradSum[i] / N));
    for (size_t i = 0; i < p.size(); ++i)
        worst = std::max(worst, std::abs(double(packed.grads[i]) - gradSum[i] / N));
    EXPECT_LE(worst, tolerance * scale) << "largest gradient " << scale;
    ::testing::Test::RecordProperty("worst_gradient_difference_relative",
                                    ::testing::PrintToString(worst / scale));

    // The comparison can tell: the dense step over the same rows (documents see each other and
    // positions run on) is far off.
    const auto dense = runStep<Real>(s, p, B, T, in.data(), tg.data(), nullptr);
    EXPECT_GT(std::abs(double(dense.loss) - loss), 1e-3 * std::abs(loss));
}

TEST(PackedSequences, PackedBatchMatchesTheDocumentsRunSeparatelyDouble) {
    expectPackedMatchesSeparate<double>(1e-12);
}

TEST(PackedSequences, PackedBatchMatchesTheDocumentsRunSeparatelyFloat) {
    expectPackedMatchesSeparate<float>(2e-5);
}

TEST(PackedSequences, FiniteDifferenceGradientsWithPacking) {
    GptShape s = ws::testing::gradcheckShape(true);
    s.dropout = 0.2;
    s.attnDropout = 0.25;
    const int B = 2, T = 5;
    Gpt<double> gpt(s, B, T);
    const auto w = initialWeights(s, 5);
    std::vector<double> params(w.begin(), w.end());
    const auto in = tokens(size_t(B) * T, s.vocab, 1), tg = tokens(size_t(B) * T, s.vocab, 2);
    const auto ids = positionIds({{3, 2}, {1, 4}});
    gpt.setPositionIds(ids.data());
    auto loss = [&] { return gpt.forward(params.data(), in.data(), tg.data(), true, 77); };
    loss();
    std::vector<double> grads(params.size(), 0.0);
    gpt.backward(params.data(), grads.data());
    const double worst = testing::expectGradientMatches(params, grads, loss, "dparams (packed)");
    ::testing::Test::RecordProperty("worst_relative_error", ::testing::PrintToString(worst));
    // Position 4 is never used by this packing: its embedding row gets no gradient.
    const TensorSlice* wpe = gpt.table().find("wpe.weight");
    ASSERT_NE(wpe, nullptr);
    const size_t C = size_t(s.channels);
    for (size_t i = 4 * C; i < 5 * C && i < wpe->size; ++i) EXPECT_EQ(grads[wpe->offset + i], 0.0);
}

TEST(PackedSequences, CheckPositionIdsNamesTheBrokenRow) {
    const std::vector<int32_t> good = {0, 1, 0, 0, 1, 2};
    EXPECT_TRUE(ops::checkPositionIds(good.data(), 2, 3).ok());
    const std::vector<int32_t> skips = {0, 1, 2, 0, 2, 3};
    const Status st = ops::checkPositionIds(skips.data(), 2, 3);
    ASSERT_FALSE(st.ok());
    EXPECT_NE(st.error().message.find("row 1 position 1 is 2"), std::string::npos)
        << st.error().message;
    const std::vector<int32_t> late = {1, 2, 3};
    EXPECT_FALSE(ops::checkPositionIds(late.data(), 1, 3).ok());
}

}  // namespace
}  // namespace ws::model
