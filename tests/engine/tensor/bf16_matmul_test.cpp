// SPDX-License-Identifier: GPL-3.0-or-later
// The bf16 matmul backend (oneDNN, and the emulated path) against an exact reference: every
// transpose combination, padded leading dimensions, alpha/beta, odd sizes, K = 0, pre-packed
// operands, the threaded partition, determinism, and a clear message when oneDNN refuses a shape.
//
// Tolerance, derived from bf16's 8-bit significand (unit roundoff 2^-8) and fp32's (2^-24):
// - Inputs that already hold bf16 values are converted exactly, and the product of two 8-bit
//   significands fits in fp32's 24 bits, so every a_ik·b_kj is exact. What is left is the fp32
//   accumulation of K terms in the kernel's own order: |err| <= γ_K · Σ_k |a_ik||b_kj| with
//   γ_K = K·2^-24 / (1 - K·2^-24) (Higham, Accuracy and Stability, §3.1).
// - Inputs that are not bf16 values are first rounded to nearest: each factor gains a relative
//   error <= 2^-8, so each product <= (1 + 2^-8)^2 - 1 ≈ 2·2^-8; add 2·2^-8 · Σ|a||b|.
// - alpha·(sum) and + beta·c are two more fp32 roundings: add 2·2^-24 · (|alpha|Σ|a||b| +
// |beta·c|). The reference is computed in double from the original inputs.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "engine/tensor/bf16.h"
#include "engine/tensor/matmul.h"
#include "engine/tensor/threads.h"

namespace ws::tensor {
namespace {

struct Shape {
    int M, N, K;
};

// The products tested: tiny, odd, and large enough (>= 2^18 multiply-adds) to use the partition.
const Shape kShapes[] = {{1, 1, 1},    {3, 5, 7},      {17, 33, 65},
                         {1, 70, 129}, {67, 129, 259}, {130, 70, 300}};

class ScopedEmulation {
public:
    explicit ScopedEmulation(bool on) { detail::forceBf16Emulation(on); }
    ~ScopedEmulation() { detail::forceBf16Emulation(false); }
    ScopedEmulation(const ScopedEmulation&) = delete;
    ScopedEmulation& operator=(const ScopedEmulation&) = delete;
};

std::vector<float> randomMatrix(size_t count, std::mt19937& gen, bool bf16Valued) {
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    std::vector<float> v(count);
    for (float& x : v) x = bf16Valued ? roundToBf16(dist(gen)) : dist(gen);
    return v;
}

struct Problem {
    Trans ta, tb;
    Shape s;
    int lda, ldb, ldc;
    std::vector<float> A, B, C;
};

Problem makeProblem(Trans ta, Trans tb, Shape s, int pad, bool bf16Valued, float beta) {
    std::mt19937 gen(uint32_t(s.M * 131 + s.N * 7 + s.K + int(ta) * 2 + int(tb) + pad * 1000));
    Problem p{ta, tb, s, 0, 0, 0, {}, {}, {}};
    const int aRows = ta == Trans::No ? s.M : s.K, aCols = ta == Trans::No ? s.K : s.M;
    const int bRows = tb == Trans::No ? s.K : s.N, bCols = tb == Trans::No ? s.N : s.K;
    p.lda = aCols + pad;
    p.ldb = bCols + pad;
    p.ldc = s.N + pad;
    p.A = randomMatrix(size_t(aRows) * p.lda, gen, bf16Valued);
    p.B = randomMatrix(size_t(bRows) * p.ldb, gen, bf16Valued);
    p.C = randomMatrix(size_t(s.M) * p.ldc, gen, false);
    if (beta == 0.0f) {  // BLAS semantics: C is not read when beta == 0 (it may hold NaN)
        std::fill(p.C.begin(), p.C.end(), std::numeric_limits<float>::quiet_NaN());
    }
    return p;
}

float at(const std::vector<float>& m, Trans t, int ld, int i, int k) {
    return t == Trans::No ? m[size_t(i) * ld + k] : m[size_t(k) * ld + i];
}

// Checks got (M, ldc) against the exact result within the bound derived above.
void expectWithinBf16Bound(const Problem& p, const std::vector<float>& got, float alpha, float beta,
                           bool bf16Valued, const std::string& what) {
    const int K = p.s.K;
    const double u32 = std::ldexp(1.0, -24), u16 = std::ldexp(1.0, -8);
    const double gammaK = K * u32 / (1.0 - K * u32);
    for (int i = 0; i < p.s.M; ++i) {
        for (int j = 0; j < p.s.N; ++j) {
            double exact = 0.0, magnitude = 0.0;
            for (int k = 0; k < K; ++k) {
                const double a = at(p.A, p.ta, p.lda, i, k), b = at(p.B, p.tb, p.ldb, k, j);
                exact += a * b;
                magnitude += std::abs(a * b);
            }
            const double c = beta == 0.0f ? 0.0 : double(p.C[size_t(i) * p.ldc + j]);
            const double expected = alpha * exact + beta * c;
            const double scaled = std::abs(alpha) * magnitude;
            double bound = gammaK * scaled + 2 * u32 * (scaled + std::abs(beta * c));
            if (!bf16Valued) bound += 2 * u16 * scaled;
            const double g = got[size_t(i) * p.ldc + j];
            ASSERT_LE(std::abs(g - expected), bound + 1e-30)
                << what << " ta=" << int(p.ta) << " tb=" << int(p.tb) << " M=" << p.s.M
                << " N=" << p.s.N << " K=" << K << " ldc=" << p.ldc << " at (" << i << "," << j
                << ") got " << g << " expected " << expected;
        }
        // Padding columns of C are never written.
        for (int j = p.s.N; j < p.ldc; ++j) {
            const size_t idx = size_t(i) * p.ldc + j;
            ASSERT_EQ(std::memcmp(&got[idx], &p.C[idx], sizeof(float)), 0) << what;
        }
    }
}

void runAllCases(const std::string& what) {
    for (const bool bf16Valued : {true, false}) {
        for (const Trans ta : {Trans::No, Trans::Yes}) {
            for (const Trans tb : {Trans::No, Trans::Yes}) {
                for (const Shape s : kShapes) {
                    for (const int pad : {0, 3}) {
                        for (const auto& [alpha, beta] :
                             {std::pair{1.0f, 0.0f}, {1.0f, 1.0f}, {0.37f, -0.5f}}) {
                            Problem p = makeProblem(ta, tb, s, pad, bf16Valued, beta);
                            std::vector<float> C = p.C;
                            matmul<float>(MatmulBackend::OneDnnBf16, ta, tb, s.M, s.N, s.K, alpha,
                                          p.A.data(), p.lda, p.B.data(), p.ldb, beta, C.data(),
                                          p.ldc);
                            expectWithinBf16Bound(
                                p, C, alpha, beta, bf16Valued,
                                what + (bf16Valued ? " bf16 inputs" : " fp32 inputs"));
                        }
                    }
                }
            }
        }
    }
}

TEST(Bf16Matmul, OneDnnMatchesTheExactProductWithinTheBf16Bound) {
    setComputeThreads(2);
    runAllCases(bf16PathDescription());
}

TEST(Bf16Matmul, EmulatedPathMatchesTheExactProductWithinTheBf16Bound) {
    setComputeThreads(2);
    const ScopedEmulation emulate(true);
    runAllCases("emulated");
}

TEST(Bf16Matmul, ZeroDepthScalesCByBetaAndIgnoresItWhenBetaIsZero) {
    for (const bool emulated : {false, true}) {
        const ScopedEmulation emulate(emulated);
        std::vector<float> C(12, std::numeric_limits<float>::quiet_NaN());
        matmul<float>(MatmulBackend::OneDnnBf16, Trans::No, Trans::No, 3, 4, 0, 1.0f, nullptr, 1,
                      nullptr, 4, 0.0f, C.data(), 4);
        for (float c : C) EXPECT_EQ(c, 0.0f);
        std::vector<float> D(12, 2.0f);
        matmul<float>(MatmulBackend::OneDnnBf16, Trans::No, Trans::No, 3, 4, 0, 1.0f, nullptr, 1,
                      nullptr, 4, 0.5f, D.data(), 4);
        for (float d : D) EXPECT_EQ(d, 1.0f);
    }
}

TEST(Bf16Matmul, PrePackedOperandsGiveTheSameBits) {
    setComputeThreads(2);
    for (const bool emulated : {false, true}) {
        const ScopedEmulation emulate(emulated);
        for (const Trans tb : {Trans::No, Trans::Yes}) {
            const Shape s{96, 160, 200};
            Problem p = makeProblem(Trans::No, tb, s, 0, false, 1.0f);
            std::vector<uint16_t> packedB(p.B.size());
            floatToBf16(p.B.data(), packedB.data(), p.B.size());
            std::vector<uint16_t> packedA(p.A.size());
            floatToBf16(p.A.data(), packedA.data(), p.A.size());
            std::vector<float> plain = p.C, withB = p.C, withBoth = p.C;
            matmulBf16(Trans::No, tb, s.M, s.N, s.K, 1.0f, p.A.data(), nullptr, p.lda, p.B.data(),
                       nullptr, p.ldb, 1.0f, plain.data(), p.ldc);
            matmulBf16(Trans::No, tb, s.M, s.N, s.K, 1.0f, p.A.data(), nullptr, p.lda, nullptr,
                       packedB.data(), p.ldb, 1.0f, withB.data(), p.ldc);
            matmulBf16(Trans::No, tb, s.M, s.N, s.K, 1.0f, nullptr, packedA.data(), p.lda, nullptr,
                       packedB.data(), p.ldb, 1.0f, withBoth.data(), p.ldc);
            EXPECT_EQ(std::memcmp(plain.data(), withB.data(), plain.size() * sizeof(float)), 0);
            EXPECT_EQ(std::memcmp(plain.data(), withBoth.data(), plain.size() * sizeof(float)), 0);
        }
    }
}

TEST(Bf16Matmul, SameInputsAndThreadCountGiveIdenticalBits) {
    const Shape s{256, 192, 320};
    Problem p = makeProblem(Trans::No, Trans::Yes, s, 0, false, 1.0f);
    for (const int threads : {1, 2, 3}) {
        setComputeThreads(threads);
        std::vector<float> first = p.C, second = p.C;
        matmul<float>(MatmulBackend::OneDnnBf16, p.ta, p.tb, s.M, s.N, s.K, 1.0f, p.A.data(), p.lda,
                      p.B.data(), p.ldb, 1.0f, first.data(), p.ldc);
        matmul<float>(MatmulBackend::OneDnnBf16, p.ta, p.tb, s.M, s.N, s.K, 1.0f, p.A.data(), p.lda,
                      p.B.data(), p.ldb, 1.0f, second.data(), p.ldc);
        EXPECT_EQ(std::memcmp(first.data(), second.data(), first.size() * sizeof(float)), 0)
            << threads << " threads";
    }
    setComputeThreads(2);
}

TEST(Bf16Matmul, CallsFromInsideAParallelRegionRunSeriallyAndAgree) {
    setComputeThreads(2);
    const Shape s{64, 64, 64};
    Problem p = makeProblem(Trans::No, Trans::Yes, s, 0, true, 0.0f);
    std::vector<float> serial(p.C.size(), 0.0f);
    matmul<float>(MatmulBackend::OneDnnBf16, p.ta, p.tb, s.M, s.N, s.K, 0.125f, p.A.data(), p.lda,
                  p.B.data(), p.ldb, 0.0f, serial.data(), p.ldc);
    std::vector<std::vector<float>> outs(4, std::vector<float>(p.C.size(), 0.0f));
    parallelFor(4, 2, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) {
            matmul<float>(MatmulBackend::OneDnnBf16, p.ta, p.tb, s.M, s.N, s.K, 0.125f, p.A.data(),
                          p.lda, p.B.data(), p.ldb, 0.0f, outs[size_t(i)].data(), p.ldc);
        }
    });
    for (const auto& o : outs) {
        EXPECT_EQ(std::memcmp(o.data(), serial.data(), o.size() * sizeof(float)), 0);
    }
}

TEST(Bf16Matmul, AShapeOneDnnRefusesGetsAMessageNamingIt) {
    const std::string error =
        detail::prepareOneDnnBf16(Trans::No, Trans::No, -3, 4, 5, 1.0f, 5, 4, 0.0f, 4);
    EXPECT_NE(error.find("oneDNN could not create a bf16 matmul for M=-3 N=4 K=5"),
              std::string::npos)
        << error;
    // Where the CPU has bf16 instructions an ordinary shape is accepted. Elsewhere oneDNN 2.6 may
    // have no bf16 matmul at all (with DNNL_MAX_CPU_ISA=AVX2 it refuses every shape), and the
    // backend never asks it: it takes the emulated path.
    if (bf16Path() != Bf16Path::Emulated) {
        const std::string ok =
            detail::prepareOneDnnBf16(Trans::No, Trans::Yes, 8, 8, 8, 1.0f, 8, 8, 1.0f, 8);
        EXPECT_TRUE(ok.empty()) << ok;
    }
}

TEST(Bf16Matmul, PathIsNamed) {
    const std::string text = bf16PathDescription();
    const char* expected = bf16Path() == Bf16Path::Amx          ? "bf16 on AMX"
                           : bf16Path() == Bf16Path::Avx512Bf16 ? "bf16 on AVX512-BF16"
                                                                : "bf16 emulated in fp32";
    EXPECT_EQ(text.rfind(expected, 0), 0u) << text;
    EXPECT_EQ(parseMatmulBackend("onednn-bf16"), MatmulBackend::OneDnnBf16);
    EXPECT_EQ(matmulBackendName(MatmulBackend::OneDnnBf16), "onednn-bf16");
}

}  // namespace
}  // namespace ws::tensor
