// SPDX-License-Identifier: GPL-3.0-or-later
// LoRA adapter op (lora.h): forward against its definition written naively, backward against
// central finite differences in double (with and without adapter dropout), B = 0 leaves the
// output bit for bit unchanged, PEFT's init bound, and the GPT-2 linears' shapes.
#include "engine/model/lora.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "engine/model/ops.h"
#include "engine/model/random.h"
#include "gradcheck.h"

namespace ws::model::lora {
namespace {

using testing::dot;
using testing::expectGradientMatches;
using testing::randomVector;
using Vec = std::vector<double>;

constexpr int N = 5, IN = 7, R = 3, OUT = 6;

void checkGradients(double dropout) {
    const uint64_t key = rng::deriveKey(42, 7);
    const double scale = 16.0 / R;
    Vec inp = randomVector(N * IN, 1), A = randomVector(IN * R, 2), B = randomVector(R * OUT, 3),
        base = randomVector(N * OUT, 4), r = randomVector(N * OUT, 5);
    Vec out(N * OUT), u(N * R), dropped(N * IN);
    auto loss = [&] {
        out = base;
        loraForward(out.data(), u.data(), dropped.data(), inp.data(), A.data(), B.data(), N, IN, R,
                    OUT, scale, dropout, key);
        return dot(out, r);
    };
    loss();
    // Forward against the definition (the mask read from the same stream).
    Vec x = inp;
    ops::dropoutForward(x.data(), x.size(), dropout, key);
    for (int n = 0; n < N; ++n)
        for (int o = 0; o < OUT; ++o) {
            double expected = 0;
            for (int k = 0; k < R; ++k) {
                double xa = 0;
                for (int i = 0; i < IN; ++i) xa += x[n * IN + i] * A[i * R + k];
                expected += xa * B[k * OUT + o];
            }
            ASSERT_NEAR(out[n * OUT + o], base[n * OUT + o] + scale * expected, 1e-12);
        }
    // Pre-filled gradients: the backward must add to them.
    Vec dinp(N * IN, 0.5), dA(IN * R, 0.25), dB(R * OUT, -1.0), du(N * R);
    loraBackward(dinp.data(), dA.data(), dB.data(), du.data(), dropped.data(), r.data(), inp.data(),
                 u.data(), A.data(), B.data(), N, IN, R, OUT, scale, dropout, key);
    for (double& g : dinp) g -= 0.5;
    for (double& g : dA) g -= 0.25;
    for (double& g : dB) g += 1.0;
    expectGradientMatches(inp, dinp, loss, "dinp");
    expectGradientMatches(A, dA, loss, "dA");
    expectGradientMatches(B, dB, loss, "dB");
}

TEST(LoraOp, GradientsMatchFiniteDifferences) {
    checkGradients(0.0);
}

TEST(LoraOp, GradientsMatchFiniteDifferencesWithAdapterDropout) {
    checkGradients(0.4);
}

TEST(LoraOp, ZeroBLeavesTheOutputBitIdenticalAndOnlyBGetsAGradient) {
    const std::vector<double> source = randomVector(N * IN + N * OUT, 9);
    std::vector<float> inp(N * IN), base(N * OUT), A(IN * R), B(R * OUT, 0.0f);
    for (int i = 0; i < N * IN; ++i) inp[i] = float(source[i]);
    for (int i = 0; i < N * OUT; ++i) base[i] = float(source[N * IN + i]);
    initA(A.data(), IN, R, 123);
    for (double dropout : {0.0, 0.3}) {
        std::vector<float> out = base, u(N * R), dropped(N * IN);
        loraForward(out.data(), u.data(), dropped.data(), inp.data(), A.data(), B.data(), N, IN, R,
                    OUT, 2.0f, dropout, 5);
        EXPECT_EQ(std::memcmp(out.data(), base.data(), out.size() * sizeof(float)), 0) << dropout;
        std::vector<float> dinp(N * IN, 0.0f), dA(IN * R, 0.0f), dB(R * OUT, 0.0f), du(N * R);
        loraBackward(dinp.data(), dA.data(), dB.data(), du.data(), dropped.data(), base.data(),
                     inp.data(), u.data(), A.data(), B.data(), N, IN, R, OUT, 2.0f, dropout, 5);
        for (float g : dA) EXPECT_EQ(g, 0.0f);
        for (float g : dinp) EXPECT_EQ(g, 0.0f);
        double dBNorm = 0;
        for (float g : dB) dBNorm += double(g) * g;
        EXPECT_GT(dBNorm, 0.0);
    }
}

TEST(LoraOp, InitIsPeftsKaimingUniformAndSeeded) {
    constexpr int In = 768, Rank = 8;
    std::vector<float> a(In * Rank), again(In * Rank), other(In * Rank);
    initA(a.data(), In, Rank, 77);
    initA(again.data(), In, Rank, 77);
    initA(other.data(), In, Rank, 78);
    EXPECT_EQ(a, again);
    EXPECT_NE(a, other);
    const double bound = 1.0 / std::sqrt(double(In));
    double sumSquares = 0, largest = 0;
    for (float v : a) {
        sumSquares += double(v) * v;
        largest = std::max(largest, std::abs(double(v)));
    }
    EXPECT_LE(largest, bound);
    EXPECT_GT(largest, 0.99 * bound);
    // Uniform on [-b, b): variance b^2 / 3 (6144 draws: within 5%).
    EXPECT_NEAR(sumSquares / a.size(), bound * bound / 3, 0.05 * bound * bound / 3);
}

TEST(LoraOp, TargetsAreTheGpt2LinearsByHfName) {
    GptShape shape;
    shape.channels = 64;
    shape.heads = 4;
    shape.ffn = 256;
    for (auto [name, in, out] : {std::tuple{"c_attn", 64, 192}, std::tuple{"attn.c_proj", 64, 64},
                                 std::tuple{"c_fc", 64, 256}, std::tuple{"mlp.c_proj", 256, 64}}) {
        const auto target = targetFromName(name);
        ASSERT_TRUE(target.has_value()) << name;
        EXPECT_EQ(targetName(*target), name);
        EXPECT_EQ(linearShape(*target, shape).in, in) << name;
        EXPECT_EQ(linearShape(*target, shape).out, out) << name;
    }
    EXPECT_FALSE(targetFromName("qkv").has_value());
}

}  // namespace
}  // namespace ws::model::lora
