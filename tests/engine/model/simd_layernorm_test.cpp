// SPDX-License-Identifier: GPL-3.0-or-later
// The Highway LayerNorm rows (forward, and the input gradient of the backward) on every SIMD
// target this CPU can run, against the double version of the same formula, within a bound derived
// for any order of summation; the scalar float reference must meet the same bound (so the bound
// is no looser than the code the kernels replaced needs). The kernels' sums are one vector of
// partial sums added across lanes at the end, so their rounding depends on the target's width
// (never on the thread count: rows are the unit of a partition); the reference's depends on how
// GCC vectorized its loop.
//
// The bound, with u = 2^-24 and one row of C values (first order in u; the test multiplies by
// 1 + 1e-3 for the second-order terms, which are below C^2 u^2 ~ 4e-8 relative here). A sum of C
// terms in any order is off by at most C u times the sum of the terms' magnitudes.
// Forward, m the exact mean, A = sum|x| / C, sigma^2 the exact variance, s = 1/sqrt(sigma^2 + eps),
// z = (x - m) s:
//   dm = |m^ - m| <= (C + 1) u A                          (the sum, then the division)
//   the variance uses m^: sum (x - m^)^2 = C sigma^2 + C (m - m^)^2, each term off by <= 3u, so
//   |var^ - sigma^2| <= dm^2 + (C + 4) u (sigma^2 + dm^2);  with r = that / (sigma^2 + eps),
//   ds = |s^ - s| / s <= r / 2 + 3u                      (add, sqrt, divide)
//   |y^ - y| <= |w| (s dm + |z| (ds + 2u)) + 2u (|z w| + |b|).
// Backward (mean and rstd are inputs, the forward's float values), dn = w dy, a = sum dn / C,
// c = sum dn z / C, D1 = sum|dn| / C, D2 = sum|dn z| / C:
//   da <= (C + 2) u D1;  dc <= (C + 5) u D2               (each term of c rounds up to 4 times)
//   inner = dn - a - z c is off by <= da + |z| dc + 3u (|dn| + |a| + |z c|),
//   |dx^ - dx| <= s (that) + 2u (s |inner| + |dx|).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "engine/model/element_kernels.h"
#include "engine/tensor/simd.h"

namespace ws::model {
namespace {

constexpr double kU = 0x1p-24;
constexpr double kSecondOrder = 1.001;
constexpr float kEps = 1e-5f;

struct Rows {
    int N, C;
    std::vector<float> x, w, b, dy;
};

// Rows that stress the sums: plain normals, a large common offset (cancellation in the variance),
// a constant row (variance 0: s = 1/sqrt(eps)), tiny values, and widths that are not multiples
// of any vector width. A NaN row and an Inf row check propagation.
Rows makeRows(int C, uint32_t seed, bool nonFinite) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    const int N = 6;
    Rows r{N,
           C,
           std::vector<float>(size_t(N) * C),
           std::vector<float>(size_t(C)),
           std::vector<float>(size_t(C)),
           std::vector<float>(size_t(N) * C)};
    for (int c = 0; c < C; ++c) {
        r.w[size_t(c)] = 1.0f + 0.1f * normal(rng);
        r.b[size_t(c)] = 0.1f * normal(rng);
    }
    for (int n = 0; n < r.N; ++n) {
        for (int c = 0; c < C; ++c) {
            float v = normal(rng);
            if (n == 1) v = 1000.0f + v;
            if (n == 2) v = 3.25f;
            if (n == 3) v *= 1e-6f;
            r.x[size_t(n) * C + c] = v;
            r.dy[size_t(n) * C + c] = normal(rng) * 1e-2f;
        }
    }
    if (nonFinite) {
        r.x[size_t(4) * C + 3] = std::nanf("");
        r.x[size_t(5) * C + 1] = std::numeric_limits<float>::infinity();
    }
    return r;
}

struct Forward {
    std::vector<float> y, mean, rstd;
};

Forward runForward(const Rows& r, bool reference) {
    Forward f{std::vector<float>(r.x.size()), std::vector<float>(size_t(r.N)),
              std::vector<float>(size_t(r.N))};
    // Two spans, as two threads would split the rows.
    for (auto [n0, n1] : {std::pair{0, 2}, std::pair{2, r.N}}) {
        if (reference) {
            kernels::reference::layerNormRows(f.y.data(), f.mean.data(), f.rstd.data(), r.x.data(),
                                              r.w.data(), r.b.data(), n0, n1, r.C, kEps);
        } else {
            kernels::layerNormRows(f.y.data(), f.mean.data(), f.rstd.data(), r.x.data(), r.w.data(),
                                   r.b.data(), n0, n1, r.C, kEps);
        }
    }
    return f;
}

// |got - exact| within the forward bound for every finite element.
void expectForwardWithinBound(const Rows& r, const Forward& got, const std::string& where) {
    const int C = r.C;
    for (int n = 0; n < r.N; ++n) {
        const float* x = r.x.data() + size_t(n) * C;
        double sum = 0, abs = 0;
        for (int c = 0; c < C; ++c) sum += x[c], abs += std::abs(double(x[c]));
        if (!std::isfinite(sum)) {
            for (int c = 0; c < C; ++c)
                EXPECT_FALSE(std::isfinite(got.y[size_t(n) * C + c])) << where << " row " << n;
            continue;
        }
        const double m = sum / C, A = abs / C;
        double var = 0;
        for (int c = 0; c < C; ++c) var += (x[c] - m) * (x[c] - m);
        var /= C;
        const double s = 1.0 / std::sqrt(var + double(kEps));
        const double dm = (C + 1) * kU * A;
        const double dvar = dm * dm + (C + 4) * kU * (var + dm * dm);
        const double ds = dvar / (var + double(kEps)) / 2 + 3 * kU;
        EXPECT_LE(std::abs(got.mean[size_t(n)] - m), dm * kSecondOrder) << where << " row " << n;
        EXPECT_LE(std::abs(got.rstd[size_t(n)] - s), s * ds * kSecondOrder)
            << where << " row " << n;
        for (int c = 0; c < C; ++c) {
            const double z = (x[c] - m) * s, w = r.w[size_t(c)], b = r.b[size_t(c)];
            const double y = z * w + b;
            const double bound = std::abs(w) * (s * dm + std::abs(z) * (ds + 2 * kU)) +
                                 2 * kU * (std::abs(z * w) + std::abs(b));
            EXPECT_LE(std::abs(got.y[size_t(n) * C + c] - y), bound * kSecondOrder)
                << where << " row " << n << " col " << c;
        }
    }
}

std::vector<float> runBackward(const Rows& r, const Forward& f, bool reference) {
    std::vector<float> dx(r.x.size(), 0.5f);  // the kernels accumulate into dinp
    for (auto [n0, n1] : {std::pair{0, 3}, std::pair{3, r.N}}) {
        if (reference) {
            kernels::reference::layerNormGradRows(dx.data(), r.dy.data(), r.x.data(), r.w.data(),
                                                  f.mean.data(), f.rstd.data(), n0, n1, r.C);
        } else {
            kernels::layerNormGradRows(dx.data(), r.dy.data(), r.x.data(), r.w.data(),
                                       f.mean.data(), f.rstd.data(), n0, n1, r.C);
        }
    }
    return dx;
}

void expectBackwardWithinBound(const Rows& r, const Forward& f, const std::vector<float>& got,
                               const std::string& where) {
    const int C = r.C;
    for (int n = 0; n < r.N; ++n) {
        const float* x = r.x.data() + size_t(n) * C;
        const float* dy = r.dy.data() + size_t(n) * C;
        const double m = f.mean[size_t(n)], s = f.rstd[size_t(n)];
        double a = 0, cc = 0, D1 = 0, D2 = 0;
        for (int c = 0; c < C; ++c) {
            const double dn = double(r.w[size_t(c)]) * dy[c], z = (x[c] - m) * s;
            a += dn, cc += dn * z, D1 += std::abs(dn), D2 += std::abs(dn * z);
        }
        if (!std::isfinite(a + cc)) {
            for (int c = 0; c < C; ++c)
                EXPECT_FALSE(std::isfinite(got[size_t(n) * C + c])) << where << " row " << n;
            continue;
        }
        a /= C, cc /= C, D1 /= C, D2 /= C;
        const double da = (C + 2) * kU * D1, dc = (C + 5) * kU * D2;
        for (int c = 0; c < C; ++c) {
            const double dn = double(r.w[size_t(c)]) * dy[c], z = (x[c] - m) * s;
            const double inner = dn - a - z * cc, dx = 0.5 + inner * s;
            const double bound = s * (da + std::abs(z) * dc +
                                      3 * kU * (std::abs(dn) + std::abs(a) + std::abs(z * cc))) +
                                 2 * kU * (s * std::abs(inner) + std::abs(dx));
            EXPECT_LE(std::abs(got[size_t(n) * C + c] - dx), bound * kSecondOrder)
                << where << " row " << n << " col " << c;
        }
    }
}

class SimdLayerNorm : public ::testing::TestWithParam<int> {
protected:
    void TearDown() override { tensor::simdForceTarget(0); }
};

TEST_P(SimdLayerNorm, ForwardAndBackwardWithinTheDerivedBoundOnEveryTarget) {
    const int C = GetParam();
    const Rows r = makeRows(C, uint32_t(C), /*nonFinite=*/true);
    const Forward ref = runForward(r, true);
    expectForwardWithinBound(r, ref, "reference forward");
    expectBackwardWithinBound(r, ref, runBackward(r, ref, true), "reference backward");
    for (int64_t target : tensor::simdRunnableTargets()) {
        tensor::simdForceTarget(target);
        const std::string name = tensor::simdTargetName();
        const Forward f = runForward(r, false);
        expectForwardWithinBound(r, f, name + " forward");
        // The backward from the same (reference) statistics, so only its own rounding counts.
        expectBackwardWithinBound(r, ref, runBackward(r, ref, false), name + " backward");
        // Deterministic: the same call gives the same bits.
        const Forward again = runForward(r, false);
        EXPECT_EQ(0, std::memcmp(f.y.data(), again.y.data(), f.y.size() * sizeof(float))) << name;
    }
}

// GPT-2 small's width, a width below every vector, odd widths with a partial last vector.
INSTANTIATE_TEST_SUITE_P(Widths, SimdLayerNorm, ::testing::Values(768, 3, 16, 61, 100));

}  // namespace
}  // namespace ws::model
