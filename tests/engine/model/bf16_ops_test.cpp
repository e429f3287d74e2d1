// SPDX-License-Identifier: GPL-3.0-or-later
// Every op, one at a time (linear, attention, LayerNorm, GELU, cross-entropy), on the fp32 path and
// on the bf16 path against a double reference (the per-op half of ggml's test-backend-ops;
// bf16_step_test.cpp is the whole-step half). The bf16 path is each op as Gpt<float> runs it in
// bf16 mode (gpt.h): products on the bf16 backend (operands rounded to bf16, fp32 accumulation),
// inputs bf16-valued where the model rounds them (GELU's input, the logits), outputs rounded where
// the model rounds them (LayerNorm, GELU).
//
// Tolerances, element by element, from the unit roundoffs u = 2^-8 (bf16: 8-bit significand,
// round to nearest even, |round(x) - x| <= u|x|) and e = 2^-24 (fp32), with
// g(n) = n e / (1 - n e) the bound on an n-term fp32 sum's error relative to the sum of |terms|:
// - Products (linear, attention scores and probabilities · V): each term a·b of a K-term dot
//   product becomes round(a)·round(b) = a·b (1 + d1)(1 + d2), |di| <= u, so it moves by at most
//   (2u + u²)|a·b|; the fp32 accumulation adds g(K+1) of the sum of |terms|. With S = sum |a·b|:
//   |bf16 - exact| <= (2u + u²) S + g(K+1) (1 + u)² (S + |bias|); fp32 alone: g(K+1) (S + |bias|).
// - Rounding an output y costs u|y| more.
// - A smooth function f of a rounded input x moves by at most max|f'| u|x| (mean value theorem);
//   max|f'| is measured on a fine grid in double below, not assumed.
// - Softmax and cross-entropy: if every logit moves by at most d, log-sum-exp moves by at most d
//   and each probability by at most p (e^{2d} - 1); rounding logits gives d = u max|z|.
// Each fp32 evaluation (LayerNorm statistics, exp, tanh) also gets a slack of a few fp32 ulps of
// the values involved (named per op below). A bf16 bound is checked for the bf16 path and the
// fp32 bound for the fp32 path; and the bf16 path must show bf16-sized error somewhere (more
// than u/16 of its scale), so a bf16 flag that is silently ignored fails.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "engine/model/ops.h"
#include "engine/model/random.h"
#include "engine/tensor/bf16.h"

namespace ws::model {
namespace {

constexpr double kU = 0x1p-8;   // bf16 unit roundoff
constexpr double kE = 0x1p-24;  // fp32 unit roundoff

double gamma32(int n) {
    return n * kE / (1 - n * kE);
}

std::vector<float> randomFloats(size_t n, uint64_t seed, double lo, double hi) {
    std::vector<float> v(n);
    for (size_t i = 0; i < n; ++i) v[i] = float(lo + (hi - lo) * rng::uniform(seed, uint64_t(i)));
    return v;
}

std::vector<double> toDouble(const std::vector<float>& v) {
    return {v.begin(), v.end()};
}

std::vector<float> rounded(std::vector<float> v) {
    tensor::roundToBf16(v.data(), v.size());
    return v;
}

// Tracks the worst |got - ref| / bound and |got - ref| / scale over a tensor.
struct ErrorCheck {
    double worstOfBound = 0, worstOfScale = 0;
    void add(double got, double ref, double bound, double scale) {
        const double err = std::abs(got - ref);
        worstOfBound = std::max(worstOfBound, err / bound);
        if (scale > 0) worstOfScale = std::max(worstOfScale, err / scale);
    }
};

// ---- Linear: out = x · W + b, forward and backward.
struct LinearCase {
    int N = 37, IN = 300, OUT = 129;
    std::vector<float> x = randomFloats(size_t(N) * IN, 1, -2, 2);
    std::vector<float> w = randomFloats(size_t(IN) * OUT, 2, -0.1, 0.1);
    std::vector<float> b = randomFloats(size_t(OUT), 3, -0.5, 0.5);
    std::vector<float> dout = randomFloats(size_t(N) * OUT, 4, -1, 1);
};

TEST(Bf16Ops, LinearForwardIsWithinTheProductBoundOnBothPaths) {
    const LinearCase c;
    std::vector<double> ref(size_t(c.N) * c.OUT);
    ops::linearForward<double>(ref.data(), toDouble(c.x).data(), toDouble(c.w).data(),
                               toDouble(c.b).data(), c.N, c.IN, c.OUT);
    std::vector<float> fp32(ref.size()), bf16(ref.size());
    ops::linearForward<float>(fp32.data(), c.x.data(), c.w.data(), c.b.data(), c.N, c.IN, c.OUT);
    ops::linearForward<float>(bf16.data(), c.x.data(), c.w.data(), c.b.data(), c.N, c.IN, c.OUT,
                              ops::MatmulMode{.bf16 = true});
    ErrorCheck f, h;
    const double g = gamma32(c.IN + 1);
    for (int n = 0; n < c.N; ++n) {
        for (int o = 0; o < c.OUT; ++o) {
            double S = 0;
            for (int k = 0; k < c.IN; ++k) {
                S += std::abs(double(c.x[size_t(n) * c.IN + k]) * c.w[size_t(k) * c.OUT + o]);
            }
            const size_t i = size_t(n) * c.OUT + o;
            f.add(fp32[i], ref[i], g * (S + std::abs(c.b[o])), 0);
            h.add(bf16[i], ref[i],
                  (2 * kU + kU * kU) * S + g * (1 + kU) * (1 + kU) * (S + std::abs(c.b[o])), S);
        }
    }
    EXPECT_LE(f.worstOfBound, 1.0);
    EXPECT_LE(h.worstOfBound, 1.0);
    EXPECT_GT(h.worstOfScale, kU / 16) << "the bf16 path shows no bf16 rounding";
}

TEST(Bf16Ops, LinearBackwardIsWithinTheProductBoundOnBothPaths) {
    const LinearCase c;
    const size_t nIn = size_t(c.N) * c.IN, nW = size_t(c.IN) * c.OUT;
    std::vector<double> dxRef(nIn), dwRef(nW, 0.0), dbRef(size_t(c.OUT), 0.0);
    ops::linearBackward<double>(dxRef.data(), false, dwRef.data(), dbRef.data(),
                                toDouble(c.dout).data(), toDouble(c.x).data(), toDouble(c.w).data(),
                                c.N, c.IN, c.OUT);
    for (const bool bf16 : {false, true}) {
        SCOPED_TRACE(bf16 ? "bf16 path" : "fp32 path");
        std::vector<float> dx(nIn), dw(nW, 0.0f), db(size_t(c.OUT), 0.0f);
        ops::linearBackward<float>(dx.data(), false, dw.data(), db.data(), c.dout.data(),
                                   c.x.data(), c.w.data(), c.N, c.IN, c.OUT,
                                   ops::MatmulMode{.bf16 = bf16});
        const double rounding = bf16 ? 2 * kU + kU * kU : 0.0,
                     grow = bf16 ? (1 + kU) * (1 + kU) : 1;
        ErrorCheck check;
        for (int n = 0; n < c.N; ++n) {  // dx = dout · Wᵀ: OUT terms
            for (int k = 0; k < c.IN; ++k) {
                double S = 0;
                for (int o = 0; o < c.OUT; ++o) {
                    S += std::abs(double(c.dout[size_t(n) * c.OUT + o]) *
                                  c.w[size_t(k) * c.OUT + o]);
                }
                const size_t i = size_t(n) * c.IN + k;
                check.add(dx[i], dxRef[i], rounding * S + gamma32(c.OUT) * grow * S, S);
            }
        }
        for (int k = 0; k < c.IN; ++k) {  // dW = xᵀ · dout: N terms
            for (int o = 0; o < c.OUT; ++o) {
                double S = 0;
                for (int n = 0; n < c.N; ++n) {
                    S +=
                        std::abs(double(c.x[size_t(n) * c.IN + k]) * c.dout[size_t(n) * c.OUT + o]);
                }
                const size_t i = size_t(k) * c.OUT + o;
                check.add(dw[i], dwRef[i], rounding * S + gamma32(c.N) * grow * S, S);
            }
        }
        for (int o = 0; o < c.OUT; ++o) {  // db = column sums of the fp32 gradient: no rounding
            double S = 0;
            for (int n = 0; n < c.N; ++n) S += std::abs(c.dout[size_t(n) * c.OUT + o]);
            check.add(db[o], dbRef[o], gamma32(c.N) * S, 0);
        }
        EXPECT_LE(check.worstOfBound, 1.0);
        if (bf16) {
            EXPECT_GT(check.worstOfScale, kU / 16) << "the bf16 path shows no bf16 rounding";
        }
    }
}

// ---- Attention: in bf16 mode qkv is the rounded c_attn output, every product runs on the bf16
// backend and the backward uses bf16-rounded probabilities. One sequence, two heads.
//
// The bound, per query row i of a head (first order in u and e, each factor (1 + x) kept as a
// product so second-order terms are covered):
//   scores s_ij = scale q_i·k_j move by at most ds_i = ((1+r)²(1+g(hs)) - 1) scale max_j S_ij with
//     S_ij = sum_c |q_ic k_jc| and r = u (q, k rounded) or 0 (fp32 path);
//   so probabilities move by a relative eP_i = expm1(2 ds_i) (softmax above) plus fp32's own
//     softmax error: g(T) for the row sum, and a few ulps of exp and of s - max, 6e + 2e max|s|;
//   out_ic = sum_j P_ij v_jc, with P and v rounded (r each) and a T-term fp32 sum:
//     |d out_ic| <= ((1+eP_i)(1+r)²(1+g(T)) - 1) sum_j P_ij |v_jc|;
//   backward, with dO rounded as it enters the products:
//     dv_jc = sum_i P_ij dO_ic:            ((1+eP_i)(1+r)²(1+g(T)) - 1) sum_i P_ij |dO_ic|
//     dP_ij = dO_i·v_j:                    e_ij = ((1+r)²(1+g(hs)) - 1) sum_c |dO_ic v_jc|
//     D_i = sum_j P_ij dP_ij (fp32):       dD_i = sum_j P_ij (e_ij + eP'_i (|dP_ij| + e_ij))
//                                                 (1+g(T)) + g(T) sum_j P_ij |dP_ij|,
//                                          eP'_i = (1+eP_i)(1+r) - 1 (P rounded again)
//     dS_ij = P_ij (dP_ij - D_i):          |d dS_ij| <= (1+eP'_i)(e_ij + dD_i) + eP'_i |dP_ij -
//     D_i|
//                                          times P_ij, plus 2e |dS_ij|
//     dq_ic = scale sum_j dS_ij k_jc (dk likewise with q): scale sum_j (|d dS_ij| (1+r)² +
//                                          |dS_ij| ((1+r)² - 1)) |k_jc| (1+g(T)) + g(T) scale
//                                          sum_j |dS_ij k_jc|.
TEST(Bf16Ops, AttentionIsWithinTheDerivedBoundOnBothPaths) {
    const int T = 37, NH = 2, hs = 16, C = NH * hs;
    const double scale = 1.0 / std::sqrt(double(hs));
    const auto qkv = randomFloats(size_t(T) * 3 * C, 12, -1.5, 1.5);
    const auto dout = randomFloats(size_t(T) * C, 13, -1, 1);
    std::vector<double> outRef(size_t(T) * C), dqkvRef(qkv.size()), maxD(size_t(NH) * T),
        sumD(size_t(NH) * T);
    const auto qkvD = toDouble(qkv);
    ops::attentionForward<double>(outRef.data(), maxD.data(), sumD.data(), qkvD.data(), 1, T,
                                  ops::AttentionShape{NH, NH, C / NH}, scale, 0.0, 0);
    ops::attentionBackward<double>(dqkvRef.data(), toDouble(dout).data(), qkvD.data(), maxD.data(),
                                   sumD.data(), 1, T, ops::AttentionShape{NH, NH, C / NH}, scale,
                                   0.0, 0);
    const auto q = [&](int t, int h, int c) { return double(qkv[size_t(t) * 3 * C + h * hs + c]); };
    const auto k = [&](int t, int h, int c) {
        return double(qkv[size_t(t) * 3 * C + C + h * hs + c]);
    };
    const auto v = [&](int t, int h, int c) {
        return double(qkv[size_t(t) * 3 * C + 2 * C + h * hs + c]);
    };
    const auto dO = [&](int t, int h, int c) { return double(dout[size_t(t) * C + h * hs + c]); };

    for (const bool bf16 : {false, true}) {
        SCOPED_TRACE(bf16 ? "bf16 path" : "fp32 path");
        const auto input = bf16 ? rounded(qkv) : qkv;
        std::vector<float> out(size_t(T) * C), dqkv(qkv.size()), rowMax(size_t(NH) * T),
            rowSum(size_t(NH) * T);
        ops::attentionForward<float>(out.data(), rowMax.data(), rowSum.data(), input.data(), 1, T,
                                     ops::AttentionShape{NH, NH, C / NH}, float(scale), 0.0, 0,
                                     bf16);
        ops::attentionBackward<float>(dqkv.data(), dout.data(), input.data(), rowMax.data(),
                                      rowSum.data(), 1, T, ops::AttentionShape{NH, NH, C / NH},
                                      float(scale), 0.0, 0, bf16);
        const double r = bf16 ? kU : 0.0, r2 = (1 + r) * (1 + r);
        ErrorCheck fwd, bwd;
        std::vector<double> bdq(size_t(T) * C, 0.0), bdk(size_t(T) * C, 0.0),
            bdv(size_t(T) * C, 0.0);
        for (int h = 0; h < NH; ++h) {
            // Exact probabilities, dP, D and dS of this head, and each row's error terms.
            std::vector<double> P(size_t(T) * T, 0.0), dP(size_t(T) * T, 0.0),
                dS(size_t(T) * T, 0.0), e(size_t(T) * T, 0.0), ddS(size_t(T) * T, 0.0),
                eP(size_t(T), 0.0);
            for (int i = 0; i < T; ++i) {
                double smax = -1e300, Smax = 0, sumExp = 0, absMax = 0;
                std::vector<double> sc(size_t(i) + 1);
                for (int j = 0; j <= i; ++j) {
                    double dot = 0, S = 0;
                    for (int c = 0; c < hs; ++c) {
                        dot += q(i, h, c) * k(j, h, c);
                        S += std::abs(q(i, h, c) * k(j, h, c));
                    }
                    sc[size_t(j)] = scale * dot;
                    smax = std::max(smax, sc[size_t(j)]);
                    absMax = std::max(absMax, std::abs(sc[size_t(j)]));
                    Smax = std::max(Smax, S);
                }
                for (int j = 0; j <= i; ++j) sumExp += std::exp(sc[size_t(j)] - smax);
                for (int j = 0; j <= i; ++j)
                    P[size_t(i) * T + j] = std::exp(sc[size_t(j)] - smax) / sumExp;
                const double ds = (r2 * (1 + gamma32(hs)) - 1) * scale * Smax;
                eP[size_t(i)] = std::expm1(2 * ds) + gamma32(T) + 6 * kE + 2 * kE * absMax;
            }
            for (int i = 0; i < T; ++i) {  // forward
                for (int c = 0; c < hs; ++c) {
                    double pv = 0;
                    for (int j = 0; j <= i; ++j) pv += P[size_t(i) * T + j] * std::abs(v(j, h, c));
                    const size_t o = size_t(i) * C + h * hs + c;
                    fwd.add(out[o], outRef[o],
                            ((1 + eP[size_t(i)]) * r2 * (1 + gamma32(T)) - 1) * pv,
                            bf16 ? pv : 0.0);
                }
            }
            for (int i = 0; i < T; ++i) {  // dP, D, dS and their errors
                const double ePr = (1 + eP[size_t(i)]) * (1 + r) - 1;
                double D = 0, PdP = 0, dD = 0;
                for (int j = 0; j <= i; ++j) {
                    double dot = 0, S = 0;
                    for (int c = 0; c < hs; ++c) {
                        dot += dO(i, h, c) * v(j, h, c);
                        S += std::abs(dO(i, h, c) * v(j, h, c));
                    }
                    const size_t ij = size_t(i) * T + j;
                    dP[ij] = dot;
                    e[ij] = (r2 * (1 + gamma32(hs)) - 1) * S;
                    D += P[ij] * dot;
                    PdP += P[ij] * std::abs(dot);
                    dD += P[ij] * (e[ij] + ePr * (std::abs(dot) + e[ij]));
                }
                dD = dD * (1 + gamma32(T)) + gamma32(T) * PdP;
                for (int j = 0; j <= i; ++j) {
                    const size_t ij = size_t(i) * T + j;
                    dS[ij] = P[ij] * (dP[ij] - D);
                    ddS[ij] = P[ij] * ((1 + ePr) * (e[ij] + dD) + ePr * std::abs(dP[ij] - D)) +
                              2 * kE * std::abs(dS[ij]);
                }
            }
            for (int t = 0; t < T; ++t) {
                for (int c = 0; c < hs; ++c) {
                    double dvB = 0, dqB = 0, dqS = 0, dkB = 0, dkS = 0;
                    for (int i = t; i < T; ++i) {  // dv_t and dk_t: rows i >= t see key t
                        const size_t it = size_t(i) * T + t;
                        dvB += P[it] * std::abs(dO(i, h, c)) *
                               ((1 + eP[size_t(i)]) * r2 * (1 + gamma32(T)) - 1);
                        dkB += (ddS[it] * r2 + std::abs(dS[it]) * (r2 - 1)) * std::abs(q(i, h, c));
                        dkS += std::abs(dS[it] * q(i, h, c));
                    }
                    for (int j = 0; j <= t; ++j) {  // dq_t: its own row's keys
                        const size_t tj = size_t(t) * T + j;
                        dqB += (ddS[tj] * r2 + std::abs(dS[tj]) * (r2 - 1)) * std::abs(k(j, h, c));
                        dqS += std::abs(dS[tj] * k(j, h, c));
                    }
                    const size_t o = size_t(t) * C + h * hs + c;
                    bdq[o] = scale * (dqB * (1 + gamma32(T)) + gamma32(T) * dqS);
                    bdk[o] = scale * (dkB * (1 + gamma32(T)) + gamma32(T) * dkS);
                    bdv[o] = dvB;
                }
            }
        }
        for (int t = 0; t < T; ++t) {
            for (int c = 0; c < C; ++c) {
                const size_t o = size_t(t) * C + c, base = size_t(t) * 3 * C + c;
                for (const auto& [part, bound] :
                     {std::pair{0, bdq[o]}, std::pair{C, bdk[o]}, std::pair{2 * C, bdv[o]}}) {
                    bwd.add(dqkv[base + size_t(part)], dqkvRef[base + size_t(part)], bound + 1e-30,
                            0.0);
                }
            }
        }
        EXPECT_LE(fwd.worstOfBound, 1.0);
        EXPECT_LE(bwd.worstOfBound, 1.0);
        if (bf16) {
            EXPECT_GT(fwd.worstOfScale, kU / 16) << "the bf16 path shows no bf16 rounding";
        }
    }
}

// ---- LayerNorm: in bf16 mode it reads the fp32 residual stream and its output is rounded.
TEST(Bf16Ops, LayerNormForwardIsWithinOneRoundingOfTheReference) {
    const int N = 19, C = 200;
    const auto inp = randomFloats(size_t(N) * C, 5, -3, 3),
               w = randomFloats(size_t(C), 6, 0.5, 1.5), b = randomFloats(size_t(C), 7, -0.5, 0.5);
    std::vector<double> ref(inp.size()), meanD(N), rstdD(N);
    ops::layerNormForward<double>(ref.data(), meanD.data(), rstdD.data(), toDouble(inp).data(),
                                  toDouble(w).data(), toDouble(b).data(), N, C, 1e-5);
    std::vector<float> out(inp.size()), mean(N), rstd(N);
    ops::layerNormForward<float>(out.data(), mean.data(), rstd.data(), inp.data(), w.data(),
                                 b.data(), N, C, 1e-5);
    const auto bf16 = rounded(out);
    // fp32 slack: the mean and variance are C-term sums (g(C) each), rstd a square root of the
    // variance (half its relative error plus one ulp), then three roundings to the output; all
    // relative to |x - mean|·rstd·|w| + |b|, the size of the terms.
    ErrorCheck f, h;
    for (int n = 0; n < N; ++n) {
        for (int c = 0; c < C; ++c) {
            const size_t i = size_t(n) * C + c;
            const double terms =
                std::abs((inp[i] - meanD[size_t(n)]) * rstdD[size_t(n)] * w[size_t(c)]) +
                std::abs(b[size_t(c)]);
            const double slack = (2 * gamma32(C) + 6 * kE) * (terms + 1);
            f.add(out[i], ref[i], slack, 0);
            h.add(bf16[i], ref[i], kU * std::abs(ref[i]) + (1 + kU) * slack, std::abs(ref[i]));
        }
    }
    EXPECT_LE(f.worstOfBound, 1.0);
    EXPECT_LE(h.worstOfBound, 1.0);
    EXPECT_GT(h.worstOfScale, kU / 16);
}

// ---- GELU: in bf16 mode its input is the rounded c_fc output and its output is rounded too.
double geluD(double x) {
    return 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
}

// max |f'| of f over [-8, 8] by central differences on a 1e-3 grid (the tails are flat).
template <typename F>
double maxSlope(F f) {
    double m = 0;
    for (double x = -8; x <= 8; x += 1e-3)
        m = std::max(m, std::abs(f(x + 1e-6) - f(x - 1e-6)) / 2e-6);
    return m * 1.001;  // the grid's step and the difference quotient's error
}

TEST(Bf16Ops, GeluIsWithinTheRoundingOfItsInputAndOutput) {
    const size_t n = 4099;
    const auto x = randomFloats(n, 8, -6, 6), dout = randomFloats(n, 9, -1, 1);
    const auto xr = rounded(x);
    const double slope = maxSlope(geluD);         // ≈ 1.13
    const double curve = maxSlope([](double v) {  // max |gelu''| ≈ 0.8
        return (geluD(v + 1e-5) - geluD(v - 1e-5)) / 2e-5;
    });
    std::vector<float> outF(n), outH(n), dinF(n), dinH(n);
    ops::geluForward<float>(outF.data(), x.data(), n);
    ops::geluForward<float>(outH.data(), xr.data(), n);
    const auto outHr = rounded(outH);
    ops::geluBackward<float>(dinF.data(), x.data(), dout.data(), n);
    ops::geluBackward<float>(dinH.data(), xr.data(), dout.data(), n);
    // fp32 slack: a tanh good to a few ulps and a handful of roundings, relative to 1 + |x|.
    ErrorCheck f, h, fb, hb;
    for (size_t i = 0; i < n; ++i) {
        const double ref = geluD(x[i]), slack = 16 * kE * (1 + std::abs(x[i]));
        const double moved = slope * kU * std::abs(x[i]);
        f.add(outF[i], ref, slack, 0);
        h.add(outHr[i], ref, moved + kU * (std::abs(ref) + moved) + slack, std::abs(x[i]));
        const double dref = dout[i] * (geluD(x[i] + 1e-6) - geluD(x[i] - 1e-6)) / 2e-6;
        const double dslack = 16 * kE * (1 + std::abs(x[i])) * std::abs(dout[i]) + 1e-8;
        fb.add(dinF[i], dref, dslack, 0);
        hb.add(dinH[i], dref, curve * kU * std::abs(x[i]) * std::abs(dout[i]) + dslack,
               std::abs(dout[i]) * std::abs(x[i]));
    }
    EXPECT_LE(f.worstOfBound, 1.0);
    EXPECT_LE(h.worstOfBound, 1.0);
    EXPECT_LE(fb.worstOfBound, 1.0);
    EXPECT_LE(hb.worstOfBound, 1.0);
    EXPECT_GT(h.worstOfScale, kU / 16);
    EXPECT_GT(hb.worstOfScale, kU / 64);
}

// ---- Cross-entropy: in bf16 mode the logits are rounded; the loss and softmax run in fp32.
TEST(Bf16Ops, CrossEntropyIsWithinTheLogitRoundingBound) {
    const int N = 23, V = 517;
    const auto z = randomFloats(size_t(N) * V, 10, -8, 8);
    std::vector<int32_t> targets(N);
    for (int i = 0; i < N; ++i) targets[size_t(i)] = int32_t(rng::bits(11, uint64_t(i)) % V);
    std::vector<double> lossRef(N), lseRef(N), dRef(z.size());
    const auto zd = toDouble(z);
    ops::crossEntropyForward<double>(lossRef.data(), lseRef.data(), zd.data(), targets.data(), N,
                                     V);
    ops::crossEntropyBackward<double>(dRef.data(), zd.data(), lseRef.data(), targets.data(), 1.0, N,
                                      V);
    for (const bool bf16 : {false, true}) {
        SCOPED_TRACE(bf16 ? "bf16 path" : "fp32 path");
        const auto logits = bf16 ? rounded(z) : z;
        std::vector<float> loss(N), lse(N), d(z.size());
        ops::crossEntropyForward<float>(loss.data(), lse.data(), logits.data(), targets.data(), N,
                                        V);
        ops::crossEntropyBackward<float>(d.data(), logits.data(), lse.data(), targets.data(), 1.0f,
                                         N, V);
        ErrorCheck check;
        for (int n = 0; n < N; ++n) {
            double zmax = 0;
            for (int v = 0; v < V; ++v)
                zmax = std::max(zmax, std::abs(double(z[size_t(n) * V + v])));
            const double moved = bf16 ? kU * zmax : 0.0;
            // fp32 slack: log-sum-exp is a V-term sum of exps (g(V) relative, so g(V) absolute in
            // its log) plus a few ulps of max|z|; each probability a few ulps of itself, and the
            // target's p - 1 one more rounding.
            const double lseSlack = gamma32(V) + 8 * kE * (1 + zmax);
            check.add(loss[size_t(n)], lossRef[size_t(n)], 2 * moved + 2 * lseSlack,
                      bf16 ? zmax : 0.0);
            for (int v = 0; v < V; ++v) {
                const size_t i = size_t(n) * V + v;
                const double p = dRef[i] + (v == targets[size_t(n)] ? 1.0 : 0.0);
                check.add(
                    d[i], dRef[i],
                    p * (std::expm1(2 * (moved + lseSlack)) + 8 * kE) + kE * std::abs(dRef[i]), 0);
            }
        }
        EXPECT_LE(check.worstOfBound, 1.0);
        if (bf16) {
            EXPECT_GT(check.worstOfScale, kU / 16);
        }
    }
}

}  // namespace
}  // namespace ws::model
