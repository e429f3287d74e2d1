// SPDX-License-Identifier: GPL-3.0-or-later
// Every op of ops.h: forward against its definition written naively, and backward against
// central finite differences in double (loss = sum of outputs weighted by fixed random numbers,
// so dout is that weight vector). Backward functions must accumulate into parameter gradients.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "engine/model/ops.h"
#include "engine/model/random.h"
#include "gradcheck.h"

namespace ws::model {
namespace {

using testing::dot;
using testing::expectGradientMatches;
using testing::randomVector;
using Vec = std::vector<double>;

TEST(OpsGradcheck, LayerNorm) {
    const int N = 6, C = 7;
    const double eps = 1e-5;
    Vec inp = randomVector(N * C, 1, -2, 2), weight = randomVector(C, 2, 0.5, 1.5),
        bias = randomVector(C, 3), r = randomVector(N * C, 4);
    Vec out(N * C), mean(N), rstd(N);
    auto loss = [&] {
        ops::layerNormForward(out.data(), mean.data(), rstd.data(), inp.data(), weight.data(),
                              bias.data(), N, C, eps);
        return dot(out, r);
    };
    loss();
    for (int n = 0; n < N; ++n) {  // forward against the definition
        double m = 0, v = 0;
        for (int c = 0; c < C; ++c) m += inp[n * C + c] / C;
        for (int c = 0; c < C; ++c) v += (inp[n * C + c] - m) * (inp[n * C + c] - m) / C;
        for (int c = 0; c < C; ++c) {
            const double expected = (inp[n * C + c] - m) / std::sqrt(v + eps) * weight[c] + bias[c];
            ASSERT_NEAR(out[n * C + c], expected, 1e-12);
        }
    }
    // Pre-filled gradients: backward must add to them.
    Vec dinp(N * C, 0.5), dweight(C, 0.25), dbias(C, -1.0);
    ops::layerNormBackward(dinp.data(), dweight.data(), dbias.data(), r.data(), inp.data(),
                           weight.data(), mean.data(), rstd.data(), N, C);
    for (double& g : dinp) g -= 0.5;
    for (double& g : dweight) g -= 0.25;
    for (double& g : dbias) g += 1.0;
    expectGradientMatches(inp, dinp, loss, "dinp");
    expectGradientMatches(weight, dweight, loss, "dweight");
    expectGradientMatches(bias, dbias, loss, "dbias");
}

TEST(OpsGradcheck, LinearWithBias) {
    const int N = 5, IN = 6, OUT = 4;
    Vec inp = randomVector(N * IN, 5), weight = randomVector(IN * OUT, 6),
        bias = randomVector(OUT, 7), r = randomVector(N * OUT, 8);
    Vec out(N * OUT);
    auto loss = [&] {
        ops::linearForward(out.data(), inp.data(), weight.data(), bias.data(), N, IN, OUT);
        return dot(out, r);
    };
    loss();
    for (int n = 0; n < N; ++n) {
        for (int o = 0; o < OUT; ++o) {
            double expected = bias[o];
            for (int i = 0; i < IN; ++i) expected += inp[n * IN + i] * weight[i * OUT + o];
            ASSERT_NEAR(out[n * OUT + o], expected, 1e-12);
        }
    }
    Vec dinp(N * IN, 9.0), dweight(IN * OUT, 0.5), dbias(OUT, 0.5);
    ops::linearBackward(dinp.data(), false, dweight.data(), dbias.data(), r.data(), inp.data(),
                        weight.data(), N, IN, OUT);  // dinp overwritten
    for (double& g : dweight) g -= 0.5;
    for (double& g : dbias) g -= 0.5;
    expectGradientMatches(inp, dinp, loss, "dinp");
    expectGradientMatches(weight, dweight, loss, "dweight");
    expectGradientMatches(bias, dbias, loss, "dbias");

    Vec dinpAcc(N * IN, 1.0), dw2(IN * OUT, 0.0);
    ops::linearBackward<double>(dinpAcc.data(), true, dw2.data(), nullptr, r.data(), inp.data(),
                                weight.data(), N, IN, OUT);
    for (size_t i = 0; i < dinp.size(); ++i) EXPECT_NEAR(dinpAcc[i], dinp[i] + 1.0, 1e-12);
}

TEST(OpsGradcheck, Gelu) {
    const size_t n = 41;
    Vec inp = randomVector(n, 9, -4, 4), r = randomVector(n, 10), out(n);
    inp[0] = 0.0;
    auto loss = [&] {
        ops::geluForward(out.data(), inp.data(), n);
        return dot(out, r);
    };
    loss();
    for (size_t i = 0; i < n; ++i) {
        const double x = inp[i];
        const double expected =
            0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
        ASSERT_NEAR(out[i], expected, 1e-14);
    }
    Vec dinp(n);
    ops::geluBackward(dinp.data(), inp.data(), r.data(), n);
    expectGradientMatches(inp, dinp, loss, "dinp");
}

TEST(OpsGradcheck, GeluFloatMatchesDouble) {
    // The float path uses its own exp/tanh; it must stay within float rounding of the reference.
    for (double x = -12.0; x <= 12.0; x += 0.01) {
        const float xf = float(x);
        float yf, gf;
        const float one = 1.0f;
        ops::geluForward(&yf, &xf, 1);
        ops::geluBackward(&gf, &xf, &one, 1);
        double yd, gd;
        const double xd = xf, oned = 1.0;
        ops::geluForward(&yd, &xd, 1);
        ops::geluBackward(&gd, &xd, &oned, 1);
        ASSERT_NEAR(yf, yd, 1e-6 * (1 + std::abs(yd))) << x;
        ASSERT_NEAR(gf, gd, 2e-6 * (1 + std::abs(gd))) << x;
    }
}

TEST(OpsGradcheck, Embedding) {
    const int B = 2, T = 4, C = 3, V = 5, maxT = 6;
    const std::vector<int32_t> tokens = {1, 4, 1, 0, 4, 4, 2, 1};  // repeats must add up
    Vec wte = randomVector(V * C, 11), wpe = randomVector(maxT * C, 12),
        r = randomVector(B * T * C, 13), out(B * T * C);
    auto loss = [&] {
        ops::embeddingForward(out.data(), tokens.data(), wte.data(), wpe.data(), B, T, C);
        return dot(out, r);
    };
    loss();
    EXPECT_DOUBLE_EQ(out[(1 * T + 2) * C + 1], wte[2 * C + 1] + wpe[2 * C + 1]);
    Vec dwte(V * C, 0.0), dwpe(maxT * C, 0.0);
    ops::embeddingBackward(dwte.data(), dwpe.data(), r.data(), tokens.data(), B, T, C);
    expectGradientMatches(wte, dwte, loss, "dwte");
    expectGradientMatches(wpe, dwpe, loss, "dwpe");
}

TEST(OpsGradcheck, SoftmaxCrossEntropy) {
    const int N = 4, V = 9;
    const std::vector<int32_t> targets = {3, 0, 8, 3};
    Vec logits = randomVector(N * V, 14, -3, 3), losses(N), lse(N);
    logits[5] = 40.0;  // a large logit must not overflow
    auto loss = [&] {
        ops::crossEntropyForward(losses.data(), lse.data(), logits.data(), targets.data(), N, V);
        return std::accumulate(losses.begin(), losses.end(), 0.0) / N;
    };
    loss();
    for (int n = 0; n < N; ++n) {
        double m = logits[n * V], s = 0;
        for (int v = 0; v < V; ++v) m = std::max(m, logits[n * V + v]);
        for (int v = 0; v < V; ++v) s += std::exp(logits[n * V + v] - m);
        ASSERT_NEAR(losses[n], m + std::log(s) - logits[n * V + targets[n]], 1e-12);
    }
    Vec dlogits = logits;  // backward works in place over the logits
    ops::crossEntropyBackward(dlogits.data(), dlogits.data(), lse.data(), targets.data(), 1.0 / N,
                              N, V);
    expectGradientMatches(logits, dlogits, loss, "dlogits");
}

TEST(OpsGradcheck, CrossEntropyPropagatesNan) {
    std::vector<float> logits = {0.5f, NAN, 1.0f}, losses(1), lse(1);
    const int32_t target = 0;
    ops::crossEntropyForward(losses.data(), lse.data(), logits.data(), &target, 1, 3);
    EXPECT_TRUE(std::isnan(losses[0]));
}

// Causal attention written from its definition (per head: softmax(scale q kᵀ) v, masked).
Vec naiveAttention(const Vec& qkv, int B, int T, int C, int NH, double scale) {
    const int hs = C / NH;
    Vec out(size_t(B) * T * C, 0.0);
    for (int b = 0; b < B; ++b) {
        for (int h = 0; h < NH; ++h) {
            for (int t = 0; t < T; ++t) {
                std::vector<double> w(t + 1);
                double m = -1e300, s = 0;
                for (int j = 0; j <= t; ++j) {
                    double d = 0;
                    for (int i = 0; i < hs; ++i) {
                        d += qkv[(b * T + t) * 3 * C + h * hs + i] *
                             qkv[(b * T + j) * 3 * C + C + h * hs + i];
                    }
                    w[j] = d * scale;
                    m = std::max(m, w[j]);
                }
                for (double& x : w) s += (x = std::exp(x - m));
                for (int j = 0; j <= t; ++j) {
                    for (int i = 0; i < hs; ++i) {
                        out[(b * T + t) * C + h * hs + i] +=
                            w[j] / s * qkv[(b * T + j) * 3 * C + 2 * C + h * hs + i];
                    }
                }
            }
        }
    }
    return out;
}

// scale 0: GPT-2's 1/sqrt(hs).
void checkAttention(int B, int T, int C, int NH, double dropout, uint32_t seed,
                    double scale = 0.0) {
    if (scale == 0.0) scale = 1.0 / std::sqrt(double(C / NH));
    Vec qkv = randomVector(size_t(B) * T * 3 * C, seed, -1.5, 1.5);
    Vec r = randomVector(size_t(B) * T * C, seed + 1);
    Vec out(size_t(B) * T * C), rowMax(size_t(B) * NH * T), rowSum(rowMax.size());
    const uint64_t key = 0x1234;
    auto loss = [&] {
        ops::attentionForward(out.data(), rowMax.data(), rowSum.data(), qkv.data(), B, T,
                              ops::AttentionShape{NH, NH, C / NH}, scale, dropout, key);
        return dot(out, r);
    };
    loss();
    if (dropout == 0.0) {
        const Vec expected = naiveAttention(qkv, B, T, C, NH, scale);
        for (size_t i = 0; i < out.size(); ++i) ASSERT_NEAR(out[i], expected[i], 1e-12) << i;
    }
    // The saved statistics: each row's max score over the keys it sees, and its sum of
    // exp(score - max), whatever the dropout.
    const int hs = C / NH;
    for (int bh = 0; bh < B * NH; ++bh) {
        const int b = bh / NH, h = bh % NH;
        for (int t = 0; t < T; ++t) {
            std::vector<double> scores;
            for (int j = 0; j <= t; ++j) {
                double s = 0;
                for (int i = 0; i < hs; ++i) {
                    s += qkv[size_t(b * T + t) * 3 * C + size_t(h * hs + i)] *
                         qkv[size_t(b * T + j) * 3 * C + size_t(C + h * hs + i)];
                }
                scores.push_back(s * scale);
            }
            const double m = *std::max_element(scores.begin(), scores.end());
            double sum = 0;
            for (double s : scores) sum += std::exp(s - m);
            ASSERT_NEAR(rowMax[size_t(bh) * T + size_t(t)], m, 1e-12) << bh << " " << t;
            ASSERT_NEAR(rowSum[size_t(bh) * T + size_t(t)], sum, 1e-12) << bh << " " << t;
        }
    }
    Vec dqkv(qkv.size(), 7.0);  // overwritten
    ops::attentionBackward(dqkv.data(), r.data(), qkv.data(), rowMax.data(), rowSum.data(), B, T,
                           ops::AttentionShape{NH, NH, C / NH}, scale, dropout, key);
    expectGradientMatches(qkv, dqkv, loss, "dqkv");
}

TEST(OpsGradcheck, CausalSelfAttention) {
    checkAttention(2, 5, 8, 2, 0.0, 20);
}

TEST(OpsGradcheck, CausalSelfAttentionAcrossRowBlocks) {
    checkAttention(1, 70, 4, 2, 0.0, 30);  // T > the kernel's 64-row block
}

// μP's scores: attention_logits_alpha / hs instead of 1 / sqrt(hs).
TEST(OpsGradcheck, CausalSelfAttentionWithMupScale) {
    checkAttention(2, 5, 8, 2, 0.0, 21, 1.7 / 4.0);
    checkAttention(1, 6, 8, 2, 0.3, 41, 0.5 / 4.0);
}

TEST(OpsGradcheck, CausalSelfAttentionWithFixedDropoutMask) {
    checkAttention(2, 6, 8, 2, 0.3, 40);
    checkAttention(1, 67, 4, 1, 0.2, 50);
}

TEST(OpsGradcheck, DropoutMaskRateScaleAndBackwardAgree) {
    const size_t n = 200000;
    const double p = 0.25;
    std::vector<float> x(n, 1.0f);
    ops::dropoutForward(x.data(), n, p, 99);
    size_t kept = 0;
    const float scale = float(ops::dropoutScale(p));
    EXPECT_NEAR(scale, 1.0 / 0.75, 1e-6);
    for (float v : x) {
        ASSERT_TRUE(v == 0.0f || v == scale);
        kept += v != 0.0f;
    }
    EXPECT_NEAR(double(kept) / n, 1.0 - p, 0.005);
    std::vector<float> g(n, 2.0f), dx(n);
    ops::dropoutBackward(dx.data(), g.data(), n, p, 99);
    for (size_t i = 0; i < n; ++i) ASSERT_EQ(dx[i], x[i] * 2.0f);
    std::vector<float> other(n, 1.0f);  // another key gives another mask
    ops::dropoutForward(other.data(), n, p, 100);
    EXPECT_NE(other, x);
    std::vector<float> none(n, 1.0f);  // rate 0: untouched
    ops::dropoutForward(none.data(), n, 0.0, 99);
    EXPECT_EQ(none, std::vector<float>(n, 1.0f));
}

TEST(OpsGradcheck, DropoutIsLinearWithFixedMask) {
    const size_t n = 50;
    Vec x = randomVector(n, 60), r = randomVector(n, 61), y(n);
    auto loss = [&] {
        y = x;
        ops::dropoutForward(y.data(), n, 0.4, 5);
        return dot(y, r);
    };
    Vec dx(n);
    ops::dropoutBackward(dx.data(), r.data(), n, 0.4, 5);
    expectGradientMatches(x, dx, loss, "dx");
}

}  // namespace
}  // namespace ws::model
