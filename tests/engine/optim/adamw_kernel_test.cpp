// SPDX-License-Identifier: GPL-3.0-or-later
// The Highway AdamW span update against its scalar reference, on every SIMD target this CPU can
// run. Tolerance: none, for the reason given in adamw_kernel.h (the same correctly rounded
// operations in the same order, no FMA): params and both moments must match bit for bit, NaN
// where the reference has NaN.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "engine/optim/adamw_kernel.h"
#include "engine/tensor/simd.h"

namespace ws::optim {
namespace {

struct State {
    std::vector<float> p, g, m, v;
};

State randomState(size_t n, uint32_t seed) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    State s{std::vector<float>(n), std::vector<float>(n), std::vector<float>(n),
            std::vector<float>(n)};
    for (size_t i = 0; i < n; ++i) {
        s.p[i] = normal(rng) * 0.02f;
        s.g[i] = normal(rng) * 1e-3f;
        s.m[i] = normal(rng) * 1e-4f;
        s.v[i] = std::abs(normal(rng)) * 1e-8f;
    }
    // Edge values: zero gradients and moments (sqrt(0) + eps), huge and tiny gradients,
    // subnormal moments, an overflowing g^2, ±Inf and NaN, which must propagate as in the loop.
    const float inf = std::numeric_limits<float>::infinity();
    const float edges[] = {0.0f, -0.0f, 1e-40f, 1e-20f, 1e20f, -3e38f, inf, -inf, std::nanf("")};
    std::uniform_int_distribution<size_t> at(0, n - 1);
    for (size_t k = 0; k < n / 8; ++k) {
        const float e = edges[k % std::size(edges)];
        switch (k % 4) {
            case 0:
                s.g[at(rng)] = e;
                break;
            case 1:
                s.p[at(rng)] = e;
                break;
            case 2:
                s.m[at(rng)] = e;
                break;
            default:
                s.v[at(rng)] = std::abs(e);
                break;
        }
    }
    return s;
}

void expectSameBits(const std::vector<float>& want, const std::vector<float>& got,
                    const std::string& where) {
    ASSERT_EQ(want.size(), got.size());
    for (size_t i = 0; i < want.size(); ++i) {
        if (std::isnan(want[i])) {
            EXPECT_TRUE(std::isnan(got[i])) << where << " i=" << i;
        } else {
            EXPECT_EQ(std::bit_cast<uint32_t>(want[i]), std::bit_cast<uint32_t>(got[i]))
                << where << " i=" << i << " want " << want[i] << " got " << got[i];
        }
    }
}

class AdamwKernel : public ::testing::Test {
protected:
    void TearDown() override { tensor::simdForceTarget(0); }
};

TEST_F(AdamwKernel, MatchesReferenceBitForBitOnEveryTarget) {
    const size_t n = 5003;  // not a multiple of any vector width
    const State start = randomState(n, 11);
    AdamwConstants c;
    c.gradScale = 0.37f;
    c.beta1 = 0.9f;
    c.beta2 = 0.95f;
    c.stepSize = float(6e-4 / (1.0 - 0.9 * 0.9 * 0.9));
    c.invSqrtC2 = float(1.0 / std::sqrt(1.0 - 0.95 * 0.95 * 0.95));
    c.keep = float(1.0 - 6e-4 * 0.1);
    c.eps = 1e-8f;
    State want = start;
    // Three steps, so the moments written by one step are read by the next.
    for (int step = 0; step < 3; ++step)
        adamwUpdateReference(c, want.p.data(), want.g.data(), want.m.data(), want.v.data(), n);
    for (int64_t target : tensor::simdRunnableTargets()) {
        tensor::simdForceTarget(target);
        const std::string name = tensor::simdTargetName();
        State got = start;
        for (int step = 0; step < 3; ++step) {
            // Uneven spans: no value may depend on where a span ends.
            size_t begin = 0;
            for (size_t len = 1; begin < n; len += 7) {
                const size_t count = std::min(len, n - begin);
                adamwUpdate(c, got.p.data() + begin, got.g.data() + begin, got.m.data() + begin,
                            got.v.data() + begin, count);
                begin += count;
            }
        }
        expectSameBits(want.p, got.p, name + " params");
        expectSameBits(want.m, got.m, name + " first moment");
        expectSameBits(want.v, got.v, name + " second moment");
    }
}

}  // namespace
}  // namespace ws::optim
