// SPDX-License-Identifier: GPL-3.0-or-later
// The Highway GELU kernels on every SIMD target this CPU can run (tensor::simdRunnableTargets:
// Highway's portable SCALAR fallback, which a CPU without SSSE3 gets, up to AVX-512 here):
// - targets agree bit for bit within their kind: the kernels write every a*b+c as MulAdd (one
//   rounding on AVX2/AVX-512, which have FMA; two on SSE4, SSSE3, SCALAR) and are compiled
//   without the compiler's own contraction; everything else is correctly rounded + - * /;
// - every target matches the scalar reference (element_kernels.cpp) within a bound derived here.
//   The reference is compiled by GCC with target clones and FMA contraction allowed (GCC's default
//   for C++), so on an AVX2/AVX-512 CPU it fuses the a*b+c it chooses. The formula, constants
//   and the Cephes exp/tanh are the same, so only those a*b+c sites can differ.
//
// The bound. Call ε = 2^-24 (half an ulp of 1). A site fused on one side and not on the other
// moves its result by at most half an ulp. exp's reduction (2) and polynomial (6 Horner steps, the
// last one p*r*r + r + 1) hold 8 such sites, and every term after the leading 1 is below 1/2, so
// E = e^{2u} moves relatively by at most 8ε; u = s(x + c x^3) moves by 2ε relatively, which moves
// tanh(u) by at most max(u sech^2 u) * 2ε < ε. Then T = 1 - 2/(E + 1) moves by at most
// 2 (8ε + 2ε) + ε + ε = 22ε (q = 2/(E+1) <= 2; its division and T's subtraction round
// differently on different inputs).
// - forward y = (x/2)(1 + T): |Δy| <= |x|/2 (22ε + 2ε) + 2ε|y| <= 14ε|x|   -> test 16ε|x|;
// - backward g = (1+T)/2 + (x/2)(1 - T^2) du, du = s(1 + 3c x^2): the first term moves by <= 12ε,
//   the second by <= |x| du (2*22ε + 2ε)/2 + 4ε|x| du/2, so |Δg| <= (1 + |x| du) 25ε, and
//   dinp = g dy by one more rounding           -> test 32ε (1 + |x| du) |dy|.
//   (The backward's own fused sites, 1 - T^2, 1 + 3c x^2 and the final sum, move by half an ulp
//   each, inside the rounding terms counted above.)
// Measured on an EPYC (AVX-512) over 4M uniform x in [-12, 12]: forward equal to the reference,
// backward within 1.22ε (1 + |x| du); with no FMA in the kernels, 2.6ε|x| and 3.6ε (1 + |x| du).
// Non-finite reference values (±Inf, NaN from Inf * 0) must be reproduced exactly.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "engine/model/element_kernels.h"
#include "engine/tensor/simd.h"

namespace ws::model {
namespace {

// Random inputs with the edge values mixed in: zeros, signs, tiny and subnormal values, the
// exp clamps (|2u| near 87/88), large |x|, the float limits, ±Inf and NaN.
std::vector<float> inputs(size_t n, uint32_t seed) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> normal(0.0f, 2.0f);
    const float inf = std::numeric_limits<float>::infinity();
    const float edges[] = {0.0f,  -0.0f,  1e-30f, -1e-30f, 1e-40f,        -1e-40f,
                           5.0f,  -5.0f,  9.5f,   -9.5f,   10.0f,         -10.0f,
                           30.0f, -30.0f, 1e4f,   -1e4f,   1e30f,         -1e30f,
                           3e38f, -3e38f, inf,    -inf,    std::nanf(""), -std::nanf("")};
    std::vector<float> x(n);
    for (size_t i = 0; i < n; ++i) x[i] = normal(rng);
    std::uniform_int_distribution<size_t> at(0, n - 1);
    for (size_t k = 0; k < n / 4; ++k) x[at(rng)] = edges[k % std::size(edges)];
    return x;
}

void expectSameBits(const std::vector<float>& want, const std::vector<float>& got,
                    const std::vector<float>& x, const std::string& where) {
    ASSERT_EQ(want.size(), got.size());
    for (size_t i = 0; i < want.size(); ++i) {
        if (std::isnan(want[i])) {
            EXPECT_TRUE(std::isnan(got[i])) << where << " i=" << i << " x=" << x[i];
        } else {
            EXPECT_EQ(std::bit_cast<uint32_t>(want[i]), std::bit_cast<uint32_t>(got[i]))
                << where << " i=" << i << " x=" << x[i] << " want " << want[i] << " got " << got[i];
        }
    }
}

constexpr double kEps = 0x1p-24;

// |got - want| <= bound[i] where want is finite; bit-identical (or NaN for NaN) where it is not.
void expectWithin(const std::vector<float>& want, const std::vector<float>& got,
                  const std::vector<double>& bound, const std::vector<float>& x,
                  const std::string& where) {
    ASSERT_EQ(want.size(), got.size());
    for (size_t i = 0; i < want.size(); ++i) {
        if (!std::isfinite(want[i])) {
            if (std::isnan(want[i])) {
                EXPECT_TRUE(std::isnan(got[i])) << where << " i=" << i << " x=" << x[i];
            } else {
                EXPECT_EQ(want[i], got[i]) << where << " i=" << i << " x=" << x[i];
            }
            continue;
        }
        EXPECT_LE(std::abs(double(got[i]) - double(want[i])), bound[i])
            << where << " i=" << i << " x=" << x[i] << " want " << want[i] << " got " << got[i];
    }
}

double geluSlopeScale(float xf) {
    const double x = xf;
    const double du = 0.7978845608028654 * (1.0 + 3 * 0.044715 * x * x);
    return 1.0 + std::abs(x) * du;
}

class SimdTargets : public ::testing::Test {
protected:
    void TearDown() override { tensor::simdForceTarget(0); }
};

TEST_F(SimdTargets, TargetNameIsReported) {
    EXPECT_FALSE(tensor::simdTargetName().empty());
    ASSERT_FALSE(tensor::simdRunnableTargets().empty());
    // The best runnable target is the one chosen.
    EXPECT_EQ(tensor::simdTargetName(), tensor::simdTargetLabel(tensor::simdRunnableTargets()[0]));
}

TEST_F(SimdTargets, GeluAgreesAcrossTargetsAndWithTheReference) {
    const size_t n = 4099;  // not a multiple of any vector width
    const auto x = inputs(n, 7);
    const auto dy = inputs(n, 8);
    std::vector<float> refY(n), refDx(n);
    kernels::reference::geluForward(refY.data(), x.data(), 0, int64_t(n));
    kernels::reference::geluBackward(refDx.data(), x.data(), dy.data(), 0, int64_t(n));
    std::vector<double> boundY(n), boundDx(n);
    for (size_t i = 0; i < n; ++i) {
        boundY[i] = 16 * kEps * std::abs(double(x[i]));
        boundDx[i] = 32 * kEps * geluSlopeScale(x[i]) * std::abs(double(dy[i]));
    }
    // The first result of each kind of target (with FMA or without).
    std::vector<float> firstY[2], firstDx[2];
    for (int64_t target : tensor::simdRunnableTargets()) {
        tensor::simdForceTarget(target);
        const std::string name = tensor::simdTargetName();
        ASSERT_EQ(name, tensor::simdTargetLabel(target));
        // Spans of every length and start (the ops' thread partitions), covering all of [0, n).
        std::vector<float> y(n, -1.0f), dx(n, -1.0f);
        int64_t begin = 0;
        for (int64_t len = 1; begin < int64_t(n); ++len) {
            const int64_t end = std::min<int64_t>(int64_t(n), begin + len);
            kernels::geluForward(y.data(), x.data(), begin, end);
            kernels::geluBackward(dx.data(), x.data(), dy.data(), begin, end);
            begin = end;
        }
        expectWithin(refY, y, boundY, x, name + " forward vs reference");
        expectWithin(refDx, dx, boundDx, x, name + " backward vs reference");
        // In place, as the ops call it (dinp aliases dout), and in one span.
        std::vector<float> inPlace = dy;
        kernels::geluBackward(inPlace.data(), x.data(), inPlace.data(), 0, int64_t(n));
        expectSameBits(dx, inPlace, x, name + " backward in place");
        const int fma = name.rfind("AVX", 0) == 0 ? 1 : 0;  // AVX2, AVX3 (AVX-512)
        if (firstY[fma].empty()) {
            firstY[fma] = y;
            firstDx[fma] = dx;
        } else {
            expectSameBits(firstY[fma], y, x, name + " forward vs a target of its kind");
            expectSameBits(firstDx[fma], dx, x, name + " backward vs a target of its kind");
        }
    }
}

TEST_F(SimdTargets, GeluEdgeValuesFollowTheFormula) {
    const float inf = std::numeric_limits<float>::infinity();
    const std::vector<float> x = {0.0f, 100.0f, -100.0f, inf, std::nanf("")};
    std::vector<float> y(x.size());
    kernels::geluForward(y.data(), x.data(), 0, int64_t(x.size()));
    EXPECT_EQ(y[0], 0.0f);
    EXPECT_EQ(y[1], 100.0f);  // tanh saturates to 1
    EXPECT_EQ(y[2], -0.0f);   // -50 * (1 + -1)
    EXPECT_EQ(y[3], inf);
    EXPECT_TRUE(std::isnan(y[4]));  // a diverging run is never hidden
}

}  // namespace
}  // namespace ws::model
