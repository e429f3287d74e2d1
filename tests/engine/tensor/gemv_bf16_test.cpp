// SPDX-License-Identifier: GPL-3.0-or-later
// The bf16 GEMV (tensor/gemv_bf16.h) on every Highway target this CPU can run: against an exact
// reference with a bound derived from bf16 and fp32 roundoff, bit for bit against the contract's
// sequential fp32 sum, and the same bits on 1 and 2 threads.
//
// The bound. Operands are rounded to bf16 first (the reference rounds them the same way), so every
// product p_k = a_k·b_k has at most 16 significant bits and is exact in fp32 and in double. The
// reference sums them in double: its own error, at most K·2^-53·Σ|p_k|, is far below the bound and
// ignored. The kernel adds K exact products in fp32 (recursive summation, error at most
// γ(K-1)·Σ|p_k|, γ(n) = n·u / (1 - n·u), u = 2^-24), multiplies by alpha (one rounding) and, when
// accumulating, adds C (one more), so |out - exact| <= γ(K+1)·(|alpha|·Σ|p_k| + |C|).
// Not rounding A or B to bf16 would miss the reference by up to 2^-8 relative per product, far
// outside the bound for these sizes (K·u <= 2^-12).
#include "engine/tensor/gemv_bf16.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "engine/tensor/bf16.h"
#include "engine/tensor/simd.h"
#include "engine/tensor/threads.h"

namespace ws::tensor {
namespace {

struct Case {
    int M, K, N;
    Trans transB;
    float alpha;
    bool accumulate;
};

std::vector<float> normals(size_t n, uint32_t seed) {
    std::mt19937 gen(seed);
    std::normal_distribution<float> dist(0.0f, 1.0f);
    std::vector<float> v(n);
    for (float& x : v) x = dist(gen);
    return v;
}

// Operands with row strides larger than the rows (lda = K + 3, ldb = cols + 5, ldc = N + 7) and
// guard values in C's padding, which the kernel must not touch.
struct Operands {
    int lda, ldb, ldc;
    std::vector<float> A, B, C;
    float b(const Case& c, int k, int n) const {
        return c.transB == Trans::No ? B[size_t(k) * ldb + n] : B[size_t(n) * ldb + k];
    }
};

constexpr float kGuard = -12345.0f;

Operands operands(const Case& c, uint32_t seed) {
    Operands o;
    o.lda = c.K + 3;
    o.ldb = (c.transB == Trans::No ? c.N : c.K) + 5;
    o.ldc = c.N + 7;
    o.A = normals(size_t(c.M) * o.lda, seed);
    o.B = normals(size_t(c.transB == Trans::No ? c.K : c.N) * o.ldb, seed + 1);
    o.C = normals(size_t(c.M) * o.ldc, seed + 2);
    for (int m = 0; m < c.M; ++m) {
        for (int n = c.N; n < o.ldc; ++n) o.C[size_t(m) * o.ldc + n] = kGuard;
    }
    return o;
}

std::vector<float> runGemv(const Case& c, const Operands& o) {
    const Bf16PanelMatrix packed(c.transB, c.K, c.N, o.B.data(), o.ldb);
    std::vector<float> C = o.C;
    gemvBf16(c.M, c.alpha, o.A.data(), o.lda, packed, c.accumulate, C.data(), o.ldc);
    return C;
}

// The contract's order: s = fl(s + p_k) for k in order, then fl(alpha·s), then fl(· + C). The
// products are exact, so contraction into FMAs would not change them either.
float contractValue(const Case& c, const Operands& o, int m, int n) {
    float s = 0.0f;
    for (int k = 0; k < c.K; ++k) {
        s += roundToBf16(o.A[size_t(m) * o.lda + k]) * roundToBf16(o.b(c, k, n));
    }
    const float scaled = c.alpha * s;
    return c.accumulate ? scaled + o.C[size_t(m) * o.ldc + n] : scaled;
}

void expectMatchesReference(const Case& c, const Operands& o, const std::vector<float>& got,
                            const std::string& where) {
    const double u = std::ldexp(1.0, -24);
    const double gamma = (c.K + 1) * u / (1.0 - (c.K + 1) * u);
    for (int m = 0; m < c.M; ++m) {
        for (int n = 0; n < o.ldc; ++n) {
            const float out = got[size_t(m) * o.ldc + n];
            if (n >= c.N) {
                ASSERT_EQ(out, kGuard) << where << " wrote past N at " << m << "," << n;
                continue;
            }
            double exact = 0.0, magnitude = 0.0;
            for (int k = 0; k < c.K; ++k) {
                const double p = double(roundToBf16(o.A[size_t(m) * o.lda + k])) *
                                 double(roundToBf16(o.b(c, k, n)));
                exact += p;
                magnitude += std::abs(p);
            }
            exact *= c.alpha;
            magnitude *= std::abs(c.alpha);
            if (c.accumulate) {
                exact += o.C[size_t(m) * o.ldc + n];
                magnitude += std::abs(o.C[size_t(m) * o.ldc + n]);
            }
            ASSERT_LE(std::abs(out - exact), gamma * magnitude)
                << where << " at " << m << "," << n << ": " << out << " vs " << exact;
            ASSERT_EQ(std::bit_cast<uint32_t>(out),
                      std::bit_cast<uint32_t>(contractValue(c, o, m, n)))
                << where << " at " << m << "," << n;
        }
    }
}

// Sizes around the panel width (64) and every vector width (1, 4, 8, 16 floats): one column, one
// short panel, a panel and one, rows and K not multiples of anything, the logits' transposed
// layout, 1 to 5 rows.
const std::vector<Case> kCases = {
    {1, 1, 1, Trans::No, 1.0f, false},     {1, 7, 5, Trans::No, 1.0f, true},
    {2, 33, 64, Trans::Yes, 0.5f, false},  {3, 130, 65, Trans::No, 1.0f, true},
    {4, 65, 129, Trans::Yes, 1.25f, true}, {1, 257, 200, Trans::Yes, 1.0f, false},
    {5, 19, 191, Trans::No, -2.0f, true},  {1, 768, 70, Trans::No, 1.0f, true},
    {2, 0, 9, Trans::No, 1.0f, true},
};

class GemvBf16 : public ::testing::Test {
protected:
    void TearDown() override {
        simdForceTarget(0);
        setComputeThreads(0);
    }
};

TEST_F(GemvBf16, MatchesTheExactReferenceOnEveryTarget) {
    std::vector<int64_t> targets = simdRunnableTargets();
    targets.push_back(0);  // and the normal choice
    for (int64_t target : targets) {
        simdForceTarget(target);
        const std::string name =
            target == 0 ? "dispatched " + simdTargetName() : simdTargetLabel(target);
        uint32_t seed = 100;
        for (const Case& c : kCases) {
            const Operands o = operands(c, seed += 10);
            const std::string where = name + " M=" + std::to_string(c.M) +
                                      " K=" + std::to_string(c.K) + " N=" + std::to_string(c.N);
            expectMatchesReference(c, o, runGemv(c, o), where);
        }
    }
}

TEST_F(GemvBf16, PacksPanelsOfBf16WithZeroPadding) {
    const Case c{1, 5, 70, Trans::Yes, 1.0f, false};
    const Operands o = operands(c, 7);
    const Bf16PanelMatrix packed(c.transB, c.K, c.N, o.B.data(), o.ldb);
    ASSERT_EQ(packed.rows(), 5);
    ASSERT_EQ(packed.cols(), 70);
    ASSERT_EQ(packed.panels(), 2);
    for (int p = 0; p < 2; ++p) {
        for (int k = 0; k < c.K; ++k) {
            for (int j = 0; j < kGemvPanelColumns; ++j) {
                const int n = p * kGemvPanelColumns + j;
                const uint16_t want = n < c.N ? floatToBf16Bits(o.b(c, k, n)) : uint16_t(0);
                ASSERT_EQ(packed.panel(p)[size_t(k) * kGemvPanelColumns + j], want) << p << k << j;
            }
        }
    }
}

// Threads split the panels; every output keeps its order, so 1 and 2 threads give the same bits on
// every target. The product is large enough (>= 2^18 multiply-adds) to be split.
TEST_F(GemvBf16, OneAndTwoThreadsGiveTheSameBits) {
    const Case c{2, 300, 1000, Trans::Yes, 1.0f, true};
    const Operands o = operands(c, 3);
    for (int64_t target : simdRunnableTargets()) {
        simdForceTarget(target);
        setComputeThreads(1);
        const std::vector<float> one = runGemv(c, o);
        setComputeThreads(2);
        const std::vector<float> two = runGemv(c, o);
        for (size_t i = 0; i < one.size(); ++i) {
            ASSERT_EQ(std::bit_cast<uint32_t>(one[i]), std::bit_cast<uint32_t>(two[i]))
                << simdTargetLabel(target) << " at " << i;
        }
        expectMatchesReference(c, o, two, simdTargetLabel(target) + " 2 threads");
    }
}

}  // namespace
}  // namespace ws::tensor
