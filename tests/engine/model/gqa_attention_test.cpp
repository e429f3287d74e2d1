// SPDX-License-Identifier: GPL-3.0-or-later
// Attention with grouped-query heads and ALiBi (ops::attentionForward / attentionBackward and the
// packed variants, AttentionShape): against a naive O(T²) reference of the definition (query head
// h reads KV head h / (NH/KV), score = scale q·k + slope (j - i) over the keys of its document up
// to itself), finite-difference gradients in double for KV = 1, 2 and NH, dense and packed; equal
// to plain multi-head attention run on K/V heads repeated (transformers' repeat_kv); packed rows of
// one document equal to the dense op bit for bit; the same bits for any thread count; float
// against double, and the bf16 flag close to fp32. (KV == NH with no slopes is GPT-2's attention:
// attention_recompute_test.cpp checks it bit for bit against the older stored-probability code.)
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <type_traits>
#include <vector>

#include "engine/model/ops.h"
#include "engine/model/packed_sequences.h"
#include "engine/tensor/threads.h"
#include "gradcheck.h"

namespace ws::model {
namespace {

using testing::dot;
using testing::expectGradientMatches;
using testing::randomVector;
using Vec = std::vector<double>;

struct Case {
    int B, T, NH, KV, hs;
    bool alibi = false;
    double dropout = 0.0;
    ops::AttentionShape shape() const { return {NH, KV, hs}; }
    size_t qkvSize() const { return size_t(B) * T * shape().qkvWidth(); }
    size_t outSize() const { return size_t(B) * T * NH * hs; }
    size_t statSize() const { return size_t(B) * NH * T; }
};

// ALiBi slopes that are not all the same power of two, so a head mixed up with another shows.
template <typename Real>
std::vector<Real> slopesFor(const Case& c) {
    std::vector<Real> s;
    for (double x : ops::alibiSlopes(c.NH)) s.push_back(Real(x * 1.7));
    return s;
}

// Position ids: dense (0 .. T-1) or documents of the given lengths, repeated to fill each row.
std::vector<int32_t> positionIds(const Case& c, const std::vector<int>& lengths) {
    std::vector<int32_t> pos;
    for (int b = 0; b < c.B; ++b) {
        int t = 0;
        for (size_t d = 0; t < c.T; d = (d + 1) % lengths.size())
            for (int i = 0; i < lengths[d] && t < c.T; ++i, ++t) pos.push_back(i);
    }
    return pos;
}

// The definition, in double: per query head, softmax over the keys of the query's document up to
// itself of scale q·k + slope (j - i), times v of the head's KV head. Also each row's max score
// and its sum of exp(score - max).
struct Naive {
    Vec out, rowMax, rowSum;
};
Naive naiveAttention(const Vec& qkv, const Case& c, const int32_t* pos, double scale,
                     const Vec& slopes) {
    const ops::AttentionShape s = c.shape();
    const int ld = s.qkvWidth(), group = c.NH / c.KV;
    Naive r{Vec(c.outSize(), 0.0), Vec(c.statSize()), Vec(c.statSize())};
    for (int b = 0; b < c.B; ++b) {
        for (int h = 0; h < c.NH; ++h) {
            const int kv = h / group;
            for (int i = 0; i < c.T; ++i) {
                const int start = pos ? i - pos[size_t(b) * c.T + i] : 0;
                const double* q = qkv.data() + size_t(b * c.T + i) * ld + size_t(h) * c.hs;
                Vec score(size_t(i - start + 1));
                double m = -1e300;
                for (int j = start; j <= i; ++j) {
                    const double* k =
                        qkv.data() + size_t(b * c.T + j) * ld + s.qWidth() + size_t(kv) * c.hs;
                    double d = 0;
                    for (int x = 0; x < c.hs; ++x) d += q[x] * k[x];
                    const double bias = slopes.empty() ? 0.0 : slopes[size_t(h)] * (j - i);
                    score[size_t(j - start)] = scale * d + bias;
                    m = std::max(m, score[size_t(j - start)]);
                }
                double sum = 0;
                for (double sc : score) sum += std::exp(sc - m);
                r.rowMax[size_t(b * c.NH + h) * c.T + i] = m;
                r.rowSum[size_t(b * c.NH + h) * c.T + i] = sum;
                double* o = r.out.data() + size_t(b * c.T + i) * c.NH * c.hs + size_t(h) * c.hs;
                for (int j = start; j <= i; ++j) {
                    const double p = std::exp(score[size_t(j - start)] - m) / sum;
                    const double* v = qkv.data() + size_t(b * c.T + j) * ld + s.qWidth() +
                                      s.kvWidth() + size_t(kv) * c.hs;
                    for (int x = 0; x < c.hs; ++x) o[x] += p * v[x];
                }
            }
        }
    }
    return r;
}

// Runs the dense (pos null) or packed op.
template <typename Real>
struct Outputs {
    std::vector<Real> out, rowMax, rowSum, dqkv;
};
template <typename Real>
Outputs<Real> runAttention(const Case& c, const std::vector<Real>& qkv,
                           const std::vector<Real>& dout, const int32_t* pos, Real scale,
                           const Real* slopes, bool bf16 = false, uint64_t key = 0x5EED) {
    Outputs<Real> r{std::vector<Real>(c.outSize(), Real(7)), std::vector<Real>(c.statSize()),
                    std::vector<Real>(c.statSize()), std::vector<Real>(c.qkvSize(), Real(7))};
    if (pos) {
        ops::packedAttentionForward(r.out.data(), r.rowMax.data(), r.rowSum.data(), qkv.data(), pos,
                                    c.B, c.T, c.shape(), scale, c.dropout, key, bf16, slopes);
        ops::packedAttentionBackward(r.dqkv.data(), dout.data(), qkv.data(), r.rowMax.data(),
                                     r.rowSum.data(), pos, c.B, c.T, c.shape(), scale, c.dropout,
                                     key, bf16, slopes);
    } else {
        ops::attentionForward(r.out.data(), r.rowMax.data(), r.rowSum.data(), qkv.data(), c.B, c.T,
                              c.shape(), scale, c.dropout, key, bf16, slopes);
        ops::attentionBackward(r.dqkv.data(), dout.data(), qkv.data(), r.rowMax.data(),
                               r.rowSum.data(), c.B, c.T, c.shape(), scale, c.dropout, key, bf16,
                               slopes);
    }
    return r;
}

template <typename Real>
int64_t firstDifference(const std::vector<Real>& a, const std::vector<Real>& b) {
    if (a.size() != b.size()) return 0;
    for (size_t i = 0; i < a.size(); ++i)
        if (std::memcmp(&a[i], &b[i], sizeof(Real)) != 0) return int64_t(i);
    return -1;
}

template <typename Real>
void expectSameBits(const Outputs<Real>& a, const Outputs<Real>& b) {
    EXPECT_EQ(firstDifference(a.out, b.out), -1);
    EXPECT_EQ(firstDifference(a.rowMax, b.rowMax), -1);
    EXPECT_EQ(firstDifference(a.rowSum, b.rowSum), -1);
    EXPECT_EQ(firstDifference(a.dqkv, b.dqkv), -1);
}

// Forward against the naive definition, then every gradient against finite differences.
void checkAgainstDefinition(const Case& c, const int32_t* pos, uint32_t seed) {
    SCOPED_TRACE(::testing::Message()
                 << "NH=" << c.NH << " KV=" << c.KV << " alibi=" << c.alibi
                 << " dropout=" << c.dropout << " packed=" << (pos != nullptr));
    const double scale = 1.0 / std::sqrt(double(c.hs));
    const Vec slopes = c.alibi ? slopesFor<double>(c) : Vec{};
    const double* slopePtr = c.alibi ? slopes.data() : nullptr;
    Vec qkv = randomVector(c.qkvSize(), seed, -1.5, 1.5), r = randomVector(c.outSize(), seed + 1);
    Outputs<double> run;
    auto loss = [&] {
        run = runAttention(c, qkv, r, pos, scale, slopePtr);
        return dot(run.out, r);
    };
    loss();
    const Outputs<double> atX = run;
    // The statistics follow the definition whatever the dropout; the output only without it.
    const Naive naive = naiveAttention(qkv, c, pos, scale, slopes);
    for (size_t i = 0; i < naive.rowMax.size(); ++i) {
        ASSERT_NEAR(atX.rowMax[i], naive.rowMax[i], 1e-12) << i;
        ASSERT_NEAR(atX.rowSum[i], naive.rowSum[i], 1e-12) << i;
    }
    if (c.dropout == 0.0) {
        for (size_t i = 0; i < naive.out.size(); ++i) ASSERT_NEAR(atX.out[i], naive.out[i], 1e-12);
    }
    std::vector<size_t> every(qkv.size());  // all of them, given: GCC 12 misreads the default
    std::iota(every.begin(), every.end(), size_t{0});
    expectGradientMatches(qkv, atX.dqkv, loss, "dqkv", every);
}

TEST(GqaAttention, DenseGradientsForEveryKvGroupingWithAndWithoutAlibi) {
    for (int kv : {1, 2, 4}) {
        checkAgainstDefinition({2, 6, 4, kv, 3, false}, nullptr, 30 + kv);
        checkAgainstDefinition({2, 6, 4, kv, 3, true}, nullptr, 40 + kv);
    }
    checkAgainstDefinition({1, 6, 4, 2, 3, true, 0.3}, nullptr, 50);  // with dropout
}

TEST(GqaAttention, PackedGradientsForEveryKvGroupingWithAndWithoutAlibi) {
    for (int kv : {1, 2, 4}) {
        const Case c{2, 7, 4, kv, 3, true};
        const std::vector<int32_t> pos = positionIds(c, {3, 1, 4});
        checkAgainstDefinition(c, pos.data(), 60 + kv);
        const Case plain{2, 7, 4, kv, 3, false};
        checkAgainstDefinition(plain, pos.data(), 70 + kv);
    }
}

// qkv of the same heads laid out for plain multi-head attention: each KV head repeated for its
// group (transformers' repeat_kv).
template <typename Real>
std::vector<Real> repeatKv(const std::vector<Real>& qkv, const Case& c) {
    const ops::AttentionShape s = c.shape();
    const int C = s.qWidth(), group = c.NH / c.KV;
    std::vector<Real> rep(size_t(c.B) * c.T * 3 * C);
    for (int n = 0; n < c.B * c.T; ++n) {
        const Real* src = qkv.data() + size_t(n) * s.qkvWidth();
        Real* dst = rep.data() + size_t(n) * 3 * C;
        std::copy_n(src, C, dst);
        for (int h = 0; h < c.NH; ++h) {
            const int kv = h / group;
            std::copy_n(src + C + kv * c.hs, c.hs, dst + C + h * c.hs);
            std::copy_n(src + C + s.kvWidth() + kv * c.hs, c.hs, dst + 2 * C + h * c.hs);
        }
    }
    return rep;
}

template <typename Real>
void checkEqualsRepeatedHeads(const Case& c, bool packed, double tolerance) {
    SCOPED_TRACE(::testing::Message() << "KV=" << c.KV << " alibi=" << c.alibi << " packed="
                                      << packed << (std::is_same_v<Real, float> ? " float" : ""));
    const Vec qkvD = randomVector(c.qkvSize(), 80, -1.5, 1.5),
              doutD = randomVector(c.outSize(), 81);
    const std::vector<Real> qkv(qkvD.begin(), qkvD.end()), dout(doutD.begin(), doutD.end());
    const std::vector<Real> slopes = slopesFor<Real>(c);
    const Real* slopePtr = c.alibi ? slopes.data() : nullptr;
    const std::vector<int32_t> pos = positionIds(c, {5, 9, 2});
    const int32_t* posPtr = packed ? pos.data() : nullptr;
    const Real scale = Real(1.0 / std::sqrt(double(c.hs)));
    const Outputs<Real> gqa = runAttention(c, qkv, dout, posPtr, scale, slopePtr);
    const Case mha{c.B, c.T, c.NH, c.NH, c.hs, c.alibi, c.dropout};
    const Outputs<Real> ref = runAttention(mha, repeatKv(qkv, c), dout, posPtr, scale, slopePtr);
    // The same products on the same values: the forward and dq are the same bits.
    EXPECT_EQ(firstDifference(gqa.out, ref.out), -1);
    EXPECT_EQ(firstDifference(gqa.rowMax, ref.rowMax), -1);
    const ops::AttentionShape s = c.shape();
    const int C = s.qWidth(), group = c.NH / c.KV;
    double worst = 0, norm = 0;
    for (int n = 0; n < c.B * c.T; ++n) {
        const Real* g = gqa.dqkv.data() + size_t(n) * s.qkvWidth();
        const Real* m = ref.dqkv.data() + size_t(n) * 3 * C;
        for (int x = 0; x < C; ++x) ASSERT_EQ(g[x], m[x]) << "dq row " << n << " column " << x;
        // dk, dv of a KV head: the sum of its group's repeated-head gradients.
        for (int part = 1; part <= 2; ++part) {
            for (int kv = 0; kv < c.KV; ++kv) {
                for (int x = 0; x < c.hs; ++x) {
                    double sum = 0;
                    for (int h = kv * group; h < (kv + 1) * group; ++h)
                        sum += double(m[part * C + h * c.hs + x]);
                    const double got = double(g[C + (part - 1) * s.kvWidth() + kv * c.hs + x]);
                    worst = std::max(worst, std::abs(got - sum));
                    norm = std::max(norm, std::abs(sum));
                }
            }
        }
    }
    EXPECT_GT(norm, 0.1);
    EXPECT_LE(worst, tolerance * norm);
}

TEST(GqaAttention, EqualsMultiHeadAttentionOnRepeatedKvHeads) {
    for (int kv : {1, 2, 3}) {
        for (bool alibi : {false, true}) {
            const Case c{2, 70, 6, kv, 8, alibi, 0.1};  // T across two row blocks
            checkEqualsRepeatedHeads<double>(c, false, 1e-14);
            checkEqualsRepeatedHeads<double>(c, true, 1e-14);
            checkEqualsRepeatedHeads<float>(c, false, 1e-6);
        }
    }
}

TEST(GqaAttention, PackedRowsOfOneDocumentAreTheDenseOpBitForBit) {
    const Case c{2, 70, 4, 2, 8, true, 0.1};
    const Vec qkvD = randomVector(c.qkvSize(), 90, -2, 2), doutD = randomVector(c.outSize(), 91);
    const std::vector<int32_t> oneDocument = positionIds(c, {c.T});
    {
        const auto slopes = slopesFor<double>(c);
        expectSameBits(runAttention(c, qkvD, doutD, nullptr, 0.35, slopes.data()),
                       runAttention(c, qkvD, doutD, oneDocument.data(), 0.35, slopes.data()));
    }
    const std::vector<float> qkv(qkvD.begin(), qkvD.end()), dout(doutD.begin(), doutD.end());
    const auto slopes = slopesFor<float>(c);
    for (bool bf16 : {false, true}) {
        SCOPED_TRACE(bf16 ? "bf16" : "fp32");
        expectSameBits(runAttention(c, qkv, dout, nullptr, 0.35f, slopes.data(), bf16),
                       runAttention(c, qkv, dout, oneDocument.data(), 0.35f, slopes.data(), bf16));
    }
}

TEST(GqaAttention, SameBitsForAnyThreadCount) {
    const Case c{2, 70, 4, 2, 8, true, 0.1};
    const Vec qkvD = randomVector(c.qkvSize(), 92, -2, 2), doutD = randomVector(c.outSize(), 93);
    const std::vector<float> qkv(qkvD.begin(), qkvD.end()), dout(doutD.begin(), doutD.end());
    const auto slopes = slopesFor<float>(c);
    const std::vector<int32_t> pos = positionIds(c, {20, 7, 50});
    std::vector<Outputs<float>> dense, packed;
    for (int threads : {1, 3}) {
        tensor::setComputeThreads(threads);
        dense.push_back(runAttention(c, qkv, dout, nullptr, 0.35f, slopes.data()));
        packed.push_back(runAttention(c, qkv, dout, pos.data(), 0.35f, slopes.data()));
    }
    tensor::setComputeThreads(0);
    expectSameBits(dense[0], dense[1]);
    expectSameBits(packed[0], packed[1]);
}

// max |a - b| over max |b|.
double relativeMaxError(const std::vector<float>& a, const Vec& b) {
    double diff = 0, norm = 0;
    for (size_t i = 0; i < b.size(); ++i) {
        diff = std::max(diff, std::abs(double(a[i]) - b[i]));
        norm = std::max(norm, std::abs(b[i]));
    }
    return diff / norm;
}

TEST(GqaAttention, FloatAgreesWithDoubleAndBf16StaysClose) {
    const Case c{2, 70, 6, 2, 16, true};
    const Vec qkvD = randomVector(c.qkvSize(), 94, -1.5, 1.5),
              doutD = randomVector(c.outSize(), 95);
    const std::vector<float> qkv(qkvD.begin(), qkvD.end()), dout(doutD.begin(), doutD.end());
    const std::vector<int32_t> pos = positionIds(c, {30, 40});
    for (const int32_t* p : {static_cast<const int32_t*>(nullptr), pos.data()}) {
        SCOPED_TRACE(p ? "packed" : "dense");
        const Outputs<double> ref =
            runAttention(c, qkvD, doutD, p, 0.25, slopesFor<double>(c).data());
        const auto slopes = slopesFor<float>(c);
        const Outputs<float> fp32 = runAttention(c, qkv, dout, p, 0.25f, slopes.data());
        EXPECT_LT(relativeMaxError(fp32.out, ref.out), 1e-5);
        EXPECT_LT(relativeMaxError(fp32.dqkv, ref.dqkv), 1e-5);
        // bf16 products (8-bit mantissas, fp32 accumulation): within a few bf16 ulps of fp32.
        const Outputs<float> bf16 = runAttention(c, qkv, dout, p, 0.25f, slopes.data(), true);
        const double outErr = relativeMaxError(bf16.out, ref.out);
        const double gradErr = relativeMaxError(bf16.dqkv, ref.dqkv);
        EXPECT_GT(outErr, 0.0);  // the flag did round
        EXPECT_LT(outErr, 2e-2);
        EXPECT_LT(gradErr, 3e-2);
    }
}

}  // namespace
}  // namespace ws::model
