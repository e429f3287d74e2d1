// SPDX-License-Identifier: GPL-3.0-or-later
// The Llama-family element ops of llama_ops.h: RMSNorm, SwiGLU, rotary embeddings and the ALiBi
// slopes. Each forward is checked against its published definition written out naively here
// (transformers' LlamaRMSNorm, LlamaMLP's silu(gate) * up, apply_rotary_pos_emb with rotate_half
// and the rope_scaling rules, Press et al.'s slopes), each backward against central finite
// differences in double (loss = sum of outputs weighted by fixed random numbers), and the float
// ops against the double ones.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numbers>
#include <vector>

#include "engine/model/ops.h"
#include "gradcheck.h"

namespace ws::model {
namespace {

using testing::dot;
using testing::expectGradientMatches;
using testing::randomVector;
using Vec = std::vector<double>;

std::vector<float> toFloat(const Vec& v) {
    return std::vector<float>(v.begin(), v.end());
}

// Largest |a - b| / max(1, |b|).
double maxRelativeError(const std::vector<float>& a, const Vec& b) {
    double worst = 0;
    for (size_t i = 0; i < b.size(); ++i)
        worst = std::max(worst, std::abs(double(a[i]) - b[i]) / std::max(1.0, std::abs(b[i])));
    return worst;
}

// ---------------------------------------------------------------------------------- RMSNorm

TEST(LlamaOps, RmsNormForwardIsTheDefinitionAndBackwardAccumulates) {
    const int N = 5, C = 9;
    const double eps = 1e-6;
    Vec inp = randomVector(N * C, 1, -2, 2), weight = randomVector(C, 2, 0.5, 1.5),
        r = randomVector(N * C, 3);
    Vec out(N * C), rstd(N);
    auto loss = [&] {
        ops::rmsNormForward(out.data(), rstd.data(), inp.data(), weight.data(), N, C, eps);
        return dot(out, r);
    };
    loss();
    for (int n = 0; n < N; ++n) {  // hidden * rsqrt(mean(hidden²) + eps) * weight
        double ms = 0;
        for (int c = 0; c < C; ++c) ms += inp[n * C + c] * inp[n * C + c];
        const double s = 1.0 / std::sqrt(ms / C + eps);
        EXPECT_NEAR(rstd[n], s, 1e-14);
        for (int c = 0; c < C; ++c)
            EXPECT_NEAR(out[n * C + c], inp[n * C + c] * s * weight[c], 1e-14);
    }
    // Backward accumulates into both gradients: start them at known values.
    const Vec dinp0 = randomVector(N * C, 4), dw0 = randomVector(C, 5);
    Vec dinp = dinp0, dweight = dw0;
    ops::rmsNormBackward(dinp.data(), dweight.data(), r.data(), inp.data(), weight.data(),
                         rstd.data(), N, C);
    for (size_t i = 0; i < dinp.size(); ++i) dinp[i] -= dinp0[i];
    for (size_t i = 0; i < dweight.size(); ++i) dweight[i] -= dw0[i];
    expectGradientMatches(inp, dinp, loss, "dinp");
    expectGradientMatches(weight, dweight, loss, "dweight");
    // A frozen weight (null dweight): the same input gradient.
    Vec frozen(N * C, 0.0);
    ops::rmsNormBackward(frozen.data(), static_cast<double*>(nullptr), r.data(), inp.data(),
                         weight.data(), rstd.data(), N, C);
    for (size_t i = 0; i < frozen.size(); ++i) EXPECT_NEAR(frozen[i], dinp[i], 1e-14);
}

TEST(LlamaOps, RmsNormFloatAgreesWithDouble) {
    const int N = 7, C = 130;  // past one 64-wide column block and a SIMD tail
    const Vec inp = randomVector(N * C, 6, -3, 3), weight = randomVector(C, 7, 0.5, 1.5),
              dout = randomVector(N * C, 8);
    Vec out(N * C), rstd(N), dinp(N * C, 0.0), dw(C, 0.0);
    ops::rmsNormForward(out.data(), rstd.data(), inp.data(), weight.data(), N, C, 1e-5);
    ops::rmsNormBackward(dinp.data(), dw.data(), dout.data(), inp.data(), weight.data(),
                         rstd.data(), N, C);
    const auto inpF = toFloat(inp), weightF = toFloat(weight), doutF = toFloat(dout);
    std::vector<float> outF(N * C), rstdF(N), dinpF(N * C, 0.f), dwF(C, 0.f);
    ops::rmsNormForward(outF.data(), rstdF.data(), inpF.data(), weightF.data(), N, C, 1e-5);
    ops::rmsNormBackward(dinpF.data(), dwF.data(), doutF.data(), inpF.data(), weightF.data(),
                         rstdF.data(), N, C);
    EXPECT_LT(maxRelativeError(outF, out), 1e-5);
    EXPECT_LT(maxRelativeError(dinpF, dinp), 1e-5);
    EXPECT_LT(maxRelativeError(dwF, dw), 1e-5);
}

// ---------------------------------------------------------------------------------- SwiGLU

TEST(LlamaOps, SwigluForwardIsSiluGateTimesUpAndBackwardOverwrites) {
    const int N = 4, F = 6;
    Vec inp = randomVector(N * 2 * F, 10, -4, 4), r = randomVector(N * F, 11);
    Vec out(N * F);
    auto loss = [&] {
        ops::swigluForward(out.data(), inp.data(), N, F);
        return dot(out, r);
    };
    loss();
    for (int n = 0; n < N; ++n) {
        for (int f = 0; f < F; ++f) {
            const double g = inp[n * 2 * F + f], u = inp[n * 2 * F + F + f];
            EXPECT_NEAR(out[n * F + f], g / (1.0 + std::exp(-g)) * u, 1e-14);
        }
    }
    Vec dinp(inp.size(), 7.0);  // overwritten
    ops::swigluBackward(dinp.data(), inp.data(), r.data(), N, F);
    expectGradientMatches(inp, dinp, loss, "dinp");
}

TEST(LlamaOps, SwigluFloatAgreesWithDoubleAndSaturates) {
    const int N = 3, F = 37;
    Vec inp = randomVector(N * 2 * F, 12, -6, 6);
    inp[0] = -200, inp[1] = 200, inp[2] = -90;  // exp's clamp: silu(-200) = -0, silu(200) = 200
    const Vec dout = randomVector(N * F, 13);
    Vec out(N * F), dinp(inp.size());
    ops::swigluForward(out.data(), inp.data(), N, F);
    ops::swigluBackward(dinp.data(), inp.data(), dout.data(), N, F);
    const auto inpF = toFloat(inp), doutF = toFloat(dout);
    std::vector<float> outF(N * F), dinpF(inp.size());
    ops::swigluForward(outF.data(), inpF.data(), N, F);
    ops::swigluBackward(dinpF.data(), inpF.data(), doutF.data(), N, F);
    for (float x : outF) ASSERT_TRUE(std::isfinite(x));
    for (float x : dinpF) ASSERT_TRUE(std::isfinite(x));
    EXPECT_LT(maxRelativeError(outF, out), 1e-5);
    EXPECT_LT(maxRelativeError(dinpF, dinp), 1e-5);
}

// ---------------------------------------------------------------------------------- RoPE

// transformers' default rope init: 1 / theta^(arange(0, dim, 2) / dim).
Vec plainInverseFrequencies(int dim, double theta) {
    Vec inv;
    for (int i = 0; i < dim; i += 2) inv.push_back(1.0 / std::pow(theta, double(i) / dim));
    return inv;
}

TEST(LlamaOps, RotaryInverseFrequenciesFollowTheScalingRules) {
    const int dim = 64;
    const double theta = 500000.0;
    const Vec plain = plainInverseFrequencies(dim, theta);
    const ops::RotaryTable none(dim, theta, {}, 4);
    ops::RopeScaling linear;
    linear.type = ops::RopeScaling::Type::Linear;
    linear.factor = 4.0;
    const ops::RotaryTable lin(dim, theta, linear, 4);
    // Llama 3.2's rope_scaling: factor 32, low 1, high 4, original 8192.
    ops::RopeScaling llama3;
    llama3.type = ops::RopeScaling::Type::Llama3;
    llama3.factor = 32.0;
    llama3.lowFreqFactor = 1.0;
    llama3.highFreqFactor = 4.0;
    llama3.originalMaxPositions = 8192;
    const ops::RotaryTable l3(dim, theta, llama3, 4);
    int unchanged = 0, divided = 0, blended = 0;
    for (int i = 0; i < dim / 2; ++i) {
        EXPECT_NEAR(none.inverseFrequency(i), plain[i], 1e-15 * plain[i]);
        EXPECT_NEAR(lin.inverseFrequency(i), plain[i] / 4.0, 1e-15 * plain[i]);
        // Wavelengths shorter than 8192/4 = 2048 positions keep their frequency, longer than
        // 8192/1 are slowed 32 times, and in between the frequency moves linearly in 8192/λ.
        const double wavelength = 2 * std::numbers::pi / plain[i];
        double expected;
        if (wavelength < 2048.0) {
            expected = plain[i];
            ++unchanged;
        } else if (wavelength > 8192.0) {
            expected = plain[i] / 32.0;
            ++divided;
        } else {
            const double t = (8192.0 / wavelength - 1.0) / 3.0;  // 1 at λ = 2048, 0 at λ = 8192
            expected = t * plain[i] + (1 - t) * plain[i] / 32.0;
            ++blended;
        }
        EXPECT_NEAR(l3.inverseFrequency(i), expected, 1e-14 * plain[i]) << i;
    }
    EXPECT_GT(unchanged, 0);  // the case covers all three branches
    EXPECT_GT(divided, 0);
    EXPECT_GT(blended, 0);
}

struct RopeCase {
    int B, T, NH, KV, hs, rotaryDim;
    bool packed;
};

Vec positionsOf(const RopeCase& c) {
    Vec pos(size_t(c.B) * c.T);
    for (int b = 0; b < c.B; ++b) {
        for (int t = 0; t < c.T; ++t) {
            // Packed: documents of length 3 then the rest, restarting the positions.
            pos[size_t(b) * c.T + t] = c.packed ? (t < 3 ? t : t - 3) : t;
        }
    }
    return pos;
}

// HF: q_embed = q * cos + rotate_half(q) * sin on the first rotaryDim channels of each head,
// with cos = cat(cos(freqs), cos(freqs)), freqs = position * inv_freq, rotate_half(x) = cat(-x2,
// x1); the rest of the head passes through; v is not touched.
Vec naiveRope(const Vec& qkv, const RopeCase& c, const Vec& inv) {
    Vec out = qkv;
    const int ld = (c.NH + 2 * c.KV) * c.hs, d = c.rotaryDim, half = d / 2;
    const Vec pos = positionsOf(c);
    for (int n = 0; n < c.B * c.T; ++n) {
        for (int h = 0; h < c.NH + c.KV; ++h) {  // q heads, then k heads
            const double* x = qkv.data() + size_t(n) * ld + size_t(h) * c.hs;
            double* y = out.data() + size_t(n) * ld + size_t(h) * c.hs;
            for (int i = 0; i < d; ++i) {
                const double angle = pos[size_t(n)] * inv[size_t(i % half)];
                const double rotated = i < half ? -x[i + half] : x[i - half];
                y[i] = x[i] * std::cos(angle) + rotated * std::sin(angle);
            }
        }
    }
    return out;
}

void checkRope(const RopeCase& c, const ops::RopeScaling& scaling) {
    SCOPED_TRACE(::testing::Message() << "NH=" << c.NH << " KV=" << c.KV << " hs=" << c.hs
                                      << " rotaryDim=" << c.rotaryDim << " packed=" << c.packed);
    const double theta = 10000.0;
    const ops::AttentionShape shape{c.NH, c.KV, c.hs};
    const ops::RotaryTable table(c.rotaryDim, theta, scaling, c.T);
    Vec inv(size_t(c.rotaryDim / 2));
    for (int i = 0; i < c.rotaryDim / 2; ++i) inv[size_t(i)] = table.inverseFrequency(i);
    const size_t n = size_t(c.B) * c.T * shape.qkvWidth();
    Vec qkv = randomVector(n, 20, -2, 2), r = randomVector(n, 21);
    std::vector<int32_t> positions;
    for (double p : positionsOf(c)) positions.push_back(int32_t(p));
    const int32_t* pos = c.packed ? positions.data() : nullptr;
    Vec out(n);
    auto loss = [&] {
        out = qkv;
        ops::ropeForward(out.data(), table, shape, pos, c.B, c.T);
        return dot(out, r);
    };
    loss();
    const Vec expected = naiveRope(qkv, c, inv);
    for (size_t i = 0; i < n; ++i) ASSERT_NEAR(out[i], expected[i], 1e-13) << i;
    Vec grad = r;  // in place: the gradient of the rotated qkv becomes the unrotated one's
    ops::ropeBackward(grad.data(), table, shape, pos, c.B, c.T);
    expectGradientMatches(qkv, grad, loss, "dqkv");
    // float: the same rotation within float rounding.
    loss();  // out for the unperturbed qkv again
    std::vector<float> f(qkv.begin(), qkv.end());
    ops::ropeForward(f.data(), table, shape, pos, c.B, c.T);
    EXPECT_LT(maxRelativeError(f, out), 1e-6);
}

TEST(LlamaOps, RopeMatchesHfRotateHalfWithGradients) {
    checkRope({2, 5, 4, 2, 8, 8, false}, {});  // full rotary, GQA
    checkRope({2, 5, 4, 1, 8, 4, false}, {});  // partial rotary (half the head), multi-query
    checkRope({1, 7, 2, 2, 6, 6, true}, {});   // packed position ids restart per document
}

TEST(LlamaOps, RopeWithLinearAndLlama3Scaling) {
    ops::RopeScaling linear;
    linear.type = ops::RopeScaling::Type::Linear;
    linear.factor = 2.5;
    checkRope({1, 6, 3, 3, 8, 8, false}, linear);
    ops::RopeScaling llama3;
    llama3.type = ops::RopeScaling::Type::Llama3;
    llama3.factor = 8.0;
    llama3.originalMaxPositions = 64;  // small, so a 16-dim head has all three bands
    checkRope({1, 6, 2, 1, 16, 16, true}, llama3);
}

// ---------------------------------------------------------------------------------- ALiBi

// Press et al.'s reference (ofirpress/attention_with_linear_biases, BTLM's _get_alibi_slopes):
// get_slopes(n) = power-of-2 slopes of the closest power p, then get_slopes(2p)[0::2][:n - p].
Vec pressSlopes(int n) {
    const auto powerOfTwo = [](int m) {
        const double start = std::pow(2.0, -std::pow(2.0, -(std::log2(double(m)) - 3)));
        Vec s;
        for (int i = 0; i < m; ++i) s.push_back(start * std::pow(start, i));
        return s;
    };
    const double l = std::log2(double(n));
    if (l == std::floor(l)) return powerOfTwo(n);
    const int p = 1 << int(std::floor(l));
    Vec s = powerOfTwo(p);
    const Vec extra = pressSlopes(2 * p);
    for (int i = 0; int(s.size()) < n; i += 2) s.push_back(extra[size_t(i)]);
    return s;
}

TEST(LlamaOps, AlibiSlopesArePressEtAlsIncludingNonPowersOfTwo) {
    const Vec eight = ops::alibiSlopes(8);  // the paper's 1/2, 1/4, ..., 1/256
    ASSERT_EQ(eight.size(), 8u);
    for (int h = 0; h < 8; ++h) EXPECT_DOUBLE_EQ(eight[size_t(h)], std::pow(0.5, h + 1));
    for (int heads : {1, 2, 3, 5, 6, 12, 20, 32, 40}) {
        const Vec got = ops::alibiSlopes(heads), want = pressSlopes(heads);
        ASSERT_EQ(got.size(), want.size()) << heads;
        for (size_t h = 0; h < got.size(); ++h)
            EXPECT_NEAR(got[h], want[h], 1e-15) << heads << " heads, head " << h;
    }
}

}  // namespace
}  // namespace ws::model
