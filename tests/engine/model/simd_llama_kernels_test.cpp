// SPDX-License-Identifier: GPL-3.0-or-later
// The Highway RMSNorm and SwiGLU kernels (simd_element_kernels.cpp) on every SIMD target this CPU
// can run, and the compiler-vectorized loops they replaced (kernels::reference), against the
// double kernels within bounds derived here. ε = 2^-24 (float's unit roundoff); every + - * / and
// fused a*b+c rounds once, by at most ε relatively; first-order bounds, with kSecondOrder's margin.
//
// RMSNorm forward, a row of C: the sum of squares is C products and at most C additions (a vector
// of partial sums, then across the lanes): |Δ| <= (C+1)ε Σx². Dividing by C and adding eps: 2ε;
// the square root halves the relative error and adds ε; 1/sqrt adds ε: rstd within
// ((C+3)/2 + 2)ε; out = (x rstd) w two more:                     -> test (C/2 + 8)ε |out|.
// RMSNorm backward (from the same saved rstd s, so only its own rounding counts):
//   dot = Σ (w dy) x: |Δdot| <= (C+2)ε Σ|w dy x|; k = dot s s / C three more: |Δk| <= (C+5)ε K
//   with K = s² Σ|w dy x| / C; inner = w dy - x k: ε|w dy| + |x| (|Δk| + ε|k|) + ε|inner|;
//   dx += inner s: ε|inner s| + ε|dx|      -> test s ((C+8)ε |x| K + 3ε |w dy|) + 3ε |dx|.
// SwiGLU: fastmath's exp is within 2ε of e^x, and the FMA-or-not choices of its reduction and
// polynomial move it by at most 8ε more (simd_kernels_test.cpp), so e^{-g} is within 10ε; 1 + e
// and 1 / (.) two more: σ within 12ε.
//   out = (g σ) up:                                          -> test 16ε |out|;
//   d up = (dy g) σ:                                         -> test 16ε |d up|;
//   d gate = (dy up) σ A with A = 1 + g (1 - σ): |ΔA| <= |g| (12εσ + ε(1-σ)) + ε|g(1-σ)| + ε|A|,
//   so |Δ d gate| <= |dy up| σ (15|A| + 14|g|) ε             -> test 16ε |dy up| σ (|A| + |g|).
// Inputs stay where exp is not clamped (|g| < 80), plus a few past the clamp, where σ's absolute
// error is below 1e-34.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "engine/model/element_kernels.h"
#include "engine/tensor/simd.h"

namespace ws::model {
namespace {

constexpr double kU = 0x1p-24;
constexpr double kSecondOrder = 1.01;

std::vector<float> randomFloats(size_t n, uint32_t seed, float lo, float hi) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> dist(lo, hi);
    std::vector<float> v(n);
    for (float& x : v) x = dist(rng);
    return v;
}

std::vector<double> toDouble(const std::vector<float>& v) {
    return std::vector<double>(v.begin(), v.end());
}

// Which kernels a check runs: the Highway ones (on the forced target) or the reference loops.
enum class Kernels { Highway, Reference };

struct RmsRows {
    int N, C;
    std::vector<float> x, w, dy, dx0;
};

void checkRmsNorm(const RmsRows& r, Kernels which, const std::string& where) {
    const int N = r.N, C = r.C;
    std::vector<float> y(size_t(N) * C), rstd(static_cast<size_t>(N));
    if (which == Kernels::Highway) {
        kernels::rmsNormRows(y.data(), rstd.data(), r.x.data(), r.w.data(), 0, N, C, 1e-5f);
    } else {
        kernels::reference::rmsNormRows(y.data(), rstd.data(), r.x.data(), r.w.data(), 0, N, C,
                                        1e-5f);
    }
    const auto xd = toDouble(r.x), wd = toDouble(r.w), dyd = toDouble(r.dy);
    std::vector<double> yd(y.size()), rstdD(static_cast<size_t>(N));
    kernels::rmsNormRows(yd.data(), rstdD.data(), xd.data(), wd.data(), 0, N, C, double(1e-5f));
    for (size_t i = 0; i < y.size(); ++i) {
        const double bound = (C / 2.0 + 8) * kU * std::abs(yd[i]) * kSecondOrder;
        ASSERT_LE(std::abs(double(y[i]) - yd[i]), bound) << where << " forward " << i;
    }
    // Backward from the float rstd, given to both.
    std::vector<float> dx = r.dx0;
    if (which == Kernels::Highway) {
        kernels::rmsNormGradRows(dx.data(), r.dy.data(), r.x.data(), r.w.data(), rstd.data(), 0, N,
                                 C);
    } else {
        kernels::reference::rmsNormGradRows(dx.data(), r.dy.data(), r.x.data(), r.w.data(),
                                            rstd.data(), 0, N, C);
    }
    std::vector<double> dxd = toDouble(r.dx0), sd = toDouble(rstd);
    kernels::rmsNormGradRows(dxd.data(), dyd.data(), xd.data(), wd.data(), sd.data(), 0, N, C);
    for (int n = 0; n < N; ++n) {
        const double s = sd[size_t(n)];
        double K = 0;
        for (int c = 0; c < C; ++c) {
            const size_t i = size_t(n) * C + c;
            K += std::abs(wd[size_t(c)] * dyd[i] * xd[i]);
        }
        K *= s * s / C;
        for (int c = 0; c < C; ++c) {
            const size_t i = size_t(n) * C + c;
            const double bound = s * ((C + 8) * kU * std::abs(xd[i]) * K +
                                      3 * kU * std::abs(wd[size_t(c)] * dyd[i])) +
                                 3 * kU * std::abs(dxd[i]);
            ASSERT_LE(std::abs(double(dx[i]) - dxd[i]), bound * kSecondOrder)
                << where << " backward row " << n << " col " << c;
        }
    }
}

void checkSwiglu(int N, int F, const std::vector<float>& inp, const std::vector<float>& dy,
                 Kernels which, const std::string& where) {
    std::vector<float> out(size_t(N) * F), dinp(inp.size(), 7.0f);
    if (which == Kernels::Highway) {
        kernels::swigluRows(out.data(), inp.data(), 0, N, F);
        kernels::swigluGradRows(dinp.data(), inp.data(), dy.data(), 0, N, F);
    } else {
        kernels::reference::swigluRows(out.data(), inp.data(), 0, N, F);
        kernels::reference::swigluGradRows(dinp.data(), inp.data(), dy.data(), 0, N, F);
    }
    for (int n = 0; n < N; ++n) {
        for (int f = 0; f < F; ++f) {
            const double g = inp[size_t(n) * 2 * F + f], u = inp[size_t(n) * 2 * F + F + f];
            const double d = dy[size_t(n) * F + f];
            const double s = 1 / (1 + std::exp(-g)), A = 1 + g * (1 - s);
            const double wantOut = g * s * u, wantUp = d * g * s, wantGate = d * u * s * A;
            const double floor = 1e-33;  // σ past exp's clamp
            const size_t o = size_t(n) * F + f, ig = size_t(n) * 2 * F + f, iu = ig + F;
            ASSERT_LE(std::abs(out[o] - wantOut), 16 * kU * std::abs(wantOut) + floor)
                << where << " out " << n << "," << f << " g=" << g;
            ASSERT_LE(std::abs(dinp[iu] - wantUp), 16 * kU * std::abs(wantUp) + floor)
                << where << " d up " << n << "," << f << " g=" << g;
            ASSERT_LE(std::abs(dinp[ig] - wantGate),
                      16 * kU * std::abs(d * u) * s * (std::abs(A) + std::abs(g)) + floor)
                << where << " d gate " << n << "," << f << " g=" << g;
        }
    }
}

class SimdLlamaKernels : public ::testing::TestWithParam<int> {
protected:
    void TearDown() override { tensor::simdForceTarget(0); }
};

TEST_P(SimdLlamaKernels, RmsNormAndSwigluWithinTheDerivedBoundOnEveryTarget) {
    const int C = GetParam(), N = 5;
    const auto seed = uint32_t(C);
    RmsRows rms{N,
                C,
                randomFloats(size_t(N) * C, seed, -3, 3),
                randomFloats(size_t(C), seed + 1, 0.2f, 2),
                randomFloats(size_t(N) * C, seed + 2, -1, 1),
                randomFloats(size_t(N) * C, seed + 3, -1, 1)};
    for (int c = 0; c < C; ++c) rms.x[size_t(c)] *= 1e-3f;  // a row of small values
    std::vector<float> inp = randomFloats(size_t(N) * 2 * C, seed + 4, -12, 12);
    const std::vector<float> dy = randomFloats(size_t(N) * C, seed + 5, -1, 1);
    const float edges[] = {0.0f, -0.0f, 1e-20f, -1e-20f, 79.0f, -79.0f, 95.0f, -95.0f, -1.2785f};
    for (size_t k = 0; k < std::size(edges) && k < size_t(C); ++k) inp[k] = edges[k];

    checkRmsNorm(rms, Kernels::Reference, "reference");
    checkSwiglu(N, C, inp, dy, Kernels::Reference, "reference");
    for (int64_t target : tensor::simdRunnableTargets()) {
        tensor::simdForceTarget(target);
        const std::string name = tensor::simdTargetName();
        checkRmsNorm(rms, Kernels::Highway, name);
        checkSwiglu(N, C, inp, dy, Kernels::Highway, name);
        // Deterministic: the same call gives the same bits.
        std::vector<float> a(size_t(N) * C), b(a.size());
        kernels::swigluRows(a.data(), inp.data(), 0, N, C);
        kernels::swigluRows(b.data(), inp.data(), 0, N, C);
        EXPECT_EQ(0, std::memcmp(a.data(), b.data(), a.size() * sizeof(float))) << name;
    }
}

// GPT-2 small's width, widths below every vector, odd widths with a partial last vector, and
// SmolLM-135M's ffn width.
INSTANTIATE_TEST_SUITE_P(Widths, SimdLlamaKernels, ::testing::Values(768, 3, 16, 61, 100, 1536));

}  // namespace
}  // namespace ws::model
