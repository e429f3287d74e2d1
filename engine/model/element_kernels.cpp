// SPDX-License-Identifier: GPL-3.0-or-later
// Element kernels (see element_kernels.h): each body is written once as an always-inline template
// and instantiated into a float function with per-CPU clones and a plain double function. The
// float GELU here is the reference for the Highway one (simd_element_kernels.cpp).
#include "engine/model/element_kernels.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "engine/model/fast_math.h"
#include "engine/tensor/cpu_clones.h"

namespace ws::model::kernels {
namespace {

using fastmath::kGeluCube;
using fastmath::kGeluScale;

template <typename Real>
[[gnu::always_inline]] inline void geluForwardBody(Real* out, const Real* inp, int64_t begin,
                                                   int64_t end) {
#pragma omp simd
    for (int64_t i = begin; i < end; ++i) {
        const Real x = inp[i];
        const Real u = Real(kGeluScale) * (x + Real(kGeluCube) * x * x * x);
        out[i] = Real(0.5) * x * (Real(1) + fastmath::tanh(u));
    }
}

template <typename Real>
[[gnu::always_inline]] inline void geluBackwardBody(Real* dinp, const Real* inp, const Real* dout,
                                                    int64_t begin, int64_t end) {
#pragma omp simd
    for (int64_t i = begin; i < end; ++i) {
        const Real x = inp[i];
        const Real u = Real(kGeluScale) * (x + Real(kGeluCube) * x * x * x);
        const Real th = fastmath::tanh(u);
        const Real du = Real(kGeluScale) * (Real(1) + Real(3 * kGeluCube) * x * x);
        const Real grad = Real(0.5) * (Real(1) + th) + Real(0.5) * x * (Real(1) - th * th) * du;
        dinp[i] = grad * dout[i];
    }
}

template <typename Real>
[[gnu::always_inline]] inline Real rowMax(const Real* row, int n) {
    Real m = -std::numeric_limits<Real>::infinity();
#pragma omp simd reduction(max : m)
    for (int j = 0; j < n; ++j) m = row[j] > m ? row[j] : m;
    return m;
}

template <typename Real>
[[gnu::always_inline]] inline void crossEntropyBody(Real* losses, Real* lse, const Real* logits,
                                                    const int32_t* targets, int n0, int n1, int V) {
    for (int n = n0; n < n1; ++n) {
        const Real* row = logits + size_t(n) * V;
        const Real m = rowMax(row, V);
        // A NaN logit is skipped by max but turns the sum (and so the loss) into NaN.
        Real sum = 0;
#pragma omp simd reduction(+ : sum)
        for (int v = 0; v < V; ++v) sum += fastmath::exp(row[v] - m);
        lse[n] = m + std::log(sum);
        // A target < 0 trains nothing: no loss, and the row is never indexed with it.
        losses[n] = targets[n] < 0 ? Real(0) : lse[n] - row[targets[n]];
    }
}

template <typename Real>
[[gnu::always_inline]] inline void crossEntropyGradBody(Real* dlogits, const Real* logits,
                                                        const Real* lse, const int32_t* targets,
                                                        Real scale, int n0, int n1, int V) {
    for (int n = n0; n < n1; ++n) {
        const Real* row = logits + size_t(n) * V;
        Real* drow = dlogits + size_t(n) * V;
        if (targets[n] < 0) {  // not trained on: no gradient
            std::fill(drow, drow + V, Real(0));
            continue;
        }
        const Real shift = lse[n];
#pragma omp simd
        for (int v = 0; v < V; ++v) drow[v] = fastmath::exp(row[v] - shift) * scale;
        drow[targets[n]] -= scale;
    }
}

// kStats: also keep (or, with maxKnown, take) each row's max, and keep its sum. The loop that
// computes the exponentials and their sum is the same source either way, and with maxKnown it is
// the same machine code too (a run-time flag), so recomputing from the saved max reproduces it.
template <typename Real, bool kStats>
[[gnu::always_inline]] inline void causalSoftmaxBody(Real* scores, int rows, int firstLen, int T,
                                                     Real* maxes, Real* sums, bool maxKnown) {
    for (int i = 0; i < rows; ++i) {
        Real* row = scores + size_t(i) * T;
        const int len = firstLen + i;
        Real m;
        if constexpr (kStats) {
            m = maxKnown ? maxes[i] : rowMax(row, len);
        } else {
            m = rowMax(row, len);
        }
        Real sum = 0;
#pragma omp simd reduction(+ : sum)
        for (int j = 0; j < len; ++j) {
            row[j] = fastmath::exp(row[j] - m);
            sum += row[j];
        }
        if constexpr (kStats) {
            maxes[i] = m;
            sums[i] = sum;
        }
        const Real inv = Real(1) / sum;
#pragma omp simd
        for (int j = 0; j < len; ++j) row[j] *= inv;
        std::fill(row + len, row + T, Real(0));
    }
}

template <typename Real>
[[gnu::always_inline]] inline void layerNormBody(Real* out, Real* mean, Real* rstd, const Real* inp,
                                                 const Real* weight, const Real* bias, int n0,
                                                 int n1, int C, Real eps) {
    for (int n = n0; n < n1; ++n) {
        const Real* x = inp + size_t(n) * C;
        Real sum = 0;
#pragma omp simd reduction(+ : sum)
        for (int c = 0; c < C; ++c) sum += x[c];
        const Real m = sum / Real(C);
        Real var = 0;
#pragma omp simd reduction(+ : var)
        for (int c = 0; c < C; ++c) var += (x[c] - m) * (x[c] - m);
        const Real s = Real(1) / std::sqrt(var / Real(C) + eps);
        Real* y = out + size_t(n) * C;
#pragma omp simd
        for (int c = 0; c < C; ++c) y[c] = (x[c] - m) * s * weight[c] + bias[c];
        mean[n] = m;
        rstd[n] = s;
    }
}

template <typename Real>
[[gnu::always_inline]] inline void layerNormGradBody(Real* dinp, const Real* dout, const Real* inp,
                                                     const Real* weight, const Real* mean,
                                                     const Real* rstd, int n0, int n1, int C) {
    for (int n = n0; n < n1; ++n) {
        const Real* dy = dout + size_t(n) * C;
        const Real* x = inp + size_t(n) * C;
        const Real m = mean[n], s = rstd[n];
        Real dnormMean = 0, dnormNormMean = 0;
#pragma omp simd reduction(+ : dnormMean, dnormNormMean)
        for (int c = 0; c < C; ++c) {
            const Real dnorm = weight[c] * dy[c];
            dnormMean += dnorm;
            dnormNormMean += dnorm * (x[c] - m) * s;
        }
        dnormMean /= Real(C);
        dnormNormMean /= Real(C);
        Real* dx = dinp + size_t(n) * C;
#pragma omp simd
        for (int c = 0; c < C; ++c) {
            const Real norm = (x[c] - m) * s;
            dx[c] += (weight[c] * dy[c] - dnormMean - norm * dnormNormMean) * s;
        }
    }
}

template <typename Real>
[[gnu::always_inline]] inline void rmsNormBody(Real* out, Real* rstd, const Real* inp,
                                               const Real* weight, int n0, int n1, int C,
                                               Real eps) {
    for (int n = n0; n < n1; ++n) {
        const Real* x = inp + size_t(n) * C;
        Real sumSquares = 0;
#pragma omp simd reduction(+ : sumSquares)
        for (int c = 0; c < C; ++c) sumSquares += x[c] * x[c];
        const Real s = Real(1) / std::sqrt(sumSquares / Real(C) + eps);
        Real* y = out + size_t(n) * C;
#pragma omp simd
        for (int c = 0; c < C; ++c) y[c] = x[c] * s * weight[c];
        rstd[n] = s;
    }
}

// y = w x s with s = (mean(x²) + eps)^(-1/2): dx_c = s w_c dy_c - x_c s³ (Σ_k w_k dy_k x_k) / C.
template <typename Real>
[[gnu::always_inline]] inline void rmsNormGradBody(Real* dinp, const Real* dout, const Real* inp,
                                                   const Real* weight, const Real* rstd, int n0,
                                                   int n1, int C) {
    for (int n = n0; n < n1; ++n) {
        const Real* dy = dout + size_t(n) * C;
        const Real* x = inp + size_t(n) * C;
        const Real s = rstd[n];
        Real dot = 0;
#pragma omp simd reduction(+ : dot)
        for (int c = 0; c < C; ++c) dot += weight[c] * dy[c] * x[c];
        const Real k = dot * s * s / Real(C);
        Real* dx = dinp + size_t(n) * C;
#pragma omp simd
        for (int c = 0; c < C; ++c) dx[c] += (weight[c] * dy[c] - x[c] * k) * s;
    }
}

template <typename Real>
[[gnu::always_inline]] inline Real sigmoid(Real x) {
    return Real(1) / (Real(1) + fastmath::exp(-x));
}

template <typename Real>
[[gnu::always_inline]] inline void swigluBody(Real* out, const Real* inp, int n0, int n1, int F) {
    for (int n = n0; n < n1; ++n) {
        const Real* gate = inp + size_t(n) * 2 * F;
        const Real* up = gate + F;
        Real* y = out + size_t(n) * F;
#pragma omp simd
        for (int f = 0; f < F; ++f) y[f] = gate[f] * sigmoid(gate[f]) * up[f];
    }
}

// d up = dy silu(g); d gate = dy up silu'(g), silu'(g) = σ(g) (1 + g (1 - σ(g))).
template <typename Real>
[[gnu::always_inline]] inline void swigluGradBody(Real* dinp, const Real* inp, const Real* dout,
                                                  int n0, int n1, int F) {
    for (int n = n0; n < n1; ++n) {
        const Real* gate = inp + size_t(n) * 2 * F;
        const Real* up = gate + F;
        const Real* dy = dout + size_t(n) * F;
        Real* dgate = dinp + size_t(n) * 2 * F;
        Real* dup = dgate + F;
#pragma omp simd
        for (int f = 0; f < F; ++f) {
            const Real g = gate[f], s = sigmoid(g);
            dgate[f] = dy[f] * up[f] * (s * (Real(1) + g * (Real(1) - s)));
            dup[f] = dy[f] * g * s;
        }
    }
}

}  // namespace

namespace reference {
WAFER_CPU_CLONES void geluForward(float* out, const float* inp, int64_t begin, int64_t end) {
    geluForwardBody(out, inp, begin, end);
}
WAFER_CPU_CLONES void geluBackward(float* dinp, const float* inp, const float* dout, int64_t begin,
                                   int64_t end) {
    geluBackwardBody(dinp, inp, dout, begin, end);
}
// Compiled for the baseline as they were in ops.cpp (no clones).
void layerNormRows(float* out, float* mean, float* rstd, const float* inp, const float* weight,
                   const float* bias, int n0, int n1, int C, float eps) {
    layerNormBody(out, mean, rstd, inp, weight, bias, n0, n1, C, eps);
}
void layerNormGradRows(float* dinp, const float* dout, const float* inp, const float* weight,
                       const float* mean, const float* rstd, int n0, int n1, int C) {
    layerNormGradBody(dinp, dout, inp, weight, mean, rstd, n0, n1, C);
}
// The Llama-family loops as first written (compiler-vectorized clones), the Highway kernels'
// reference.
WAFER_CPU_CLONES void rmsNormRows(float* out, float* rstd, const float* inp, const float* weight,
                                  int n0, int n1, int C, float eps) {
    rmsNormBody(out, rstd, inp, weight, n0, n1, C, eps);
}
WAFER_CPU_CLONES void rmsNormGradRows(float* dinp, const float* dout, const float* inp,
                                      const float* weight, const float* rstd, int n0, int n1,
                                      int C) {
    rmsNormGradBody(dinp, dout, inp, weight, rstd, n0, n1, C);
}
WAFER_CPU_CLONES void swigluRows(float* out, const float* inp, int n0, int n1, int F) {
    swigluBody(out, inp, n0, n1, F);
}
WAFER_CPU_CLONES void swigluGradRows(float* dinp, const float* inp, const float* dout, int n0,
                                     int n1, int F) {
    swigluGradBody(dinp, inp, dout, n0, n1, F);
}
}  // namespace reference

void rmsNormRows(double* out, double* rstd, const double* inp, const double* weight, int n0, int n1,
                 int C, double eps) {
    rmsNormBody(out, rstd, inp, weight, n0, n1, C, eps);
}
void rmsNormGradRows(double* dinp, const double* dout, const double* inp, const double* weight,
                     const double* rstd, int n0, int n1, int C) {
    rmsNormGradBody(dinp, dout, inp, weight, rstd, n0, n1, C);
}
void swigluRows(double* out, const double* inp, int n0, int n1, int F) {
    swigluBody(out, inp, n0, n1, F);
}
void swigluGradRows(double* dinp, const double* inp, const double* dout, int n0, int n1, int F) {
    swigluGradBody(dinp, inp, dout, n0, n1, F);
}

void layerNormRows(double* out, double* mean, double* rstd, const double* inp, const double* weight,
                   const double* bias, int n0, int n1, int C, double eps) {
    layerNormBody(out, mean, rstd, inp, weight, bias, n0, n1, C, eps);
}
void layerNormGradRows(double* dinp, const double* dout, const double* inp, const double* weight,
                       const double* mean, const double* rstd, int n0, int n1, int C) {
    layerNormGradBody(dinp, dout, inp, weight, mean, rstd, n0, n1, C);
}

void geluForward(double* out, const double* inp, int64_t begin, int64_t end) {
    geluForwardBody(out, inp, begin, end);
}

void geluBackward(double* dinp, const double* inp, const double* dout, int64_t begin, int64_t end) {
    geluBackwardBody(dinp, inp, dout, begin, end);
}

WAFER_CPU_CLONES void crossEntropyRows(float* losses, float* lse, const float* logits,
                                       const int32_t* targets, int n0, int n1, int V) {
    crossEntropyBody(losses, lse, logits, targets, n0, n1, V);
}
void crossEntropyRows(double* losses, double* lse, const double* logits, const int32_t* targets,
                      int n0, int n1, int V) {
    crossEntropyBody(losses, lse, logits, targets, n0, n1, V);
}

WAFER_CPU_CLONES void crossEntropyGradRows(float* dlogits, const float* logits, const float* lse,
                                           const int32_t* targets, float scale, int n0, int n1,
                                           int V) {
    crossEntropyGradBody(dlogits, logits, lse, targets, scale, n0, n1, V);
}
void crossEntropyGradRows(double* dlogits, const double* logits, const double* lse,
                          const int32_t* targets, double scale, int n0, int n1, int V) {
    crossEntropyGradBody(dlogits, logits, lse, targets, scale, n0, n1, V);
}

WAFER_CPU_CLONES void causalSoftmaxRows(float* scores, int rows, int firstLen, int T) {
    causalSoftmaxBody<float, false>(scores, rows, firstLen, T, nullptr, nullptr, false);
}
void causalSoftmaxRows(double* scores, int rows, int firstLen, int T) {
    causalSoftmaxBody<double, false>(scores, rows, firstLen, T, nullptr, nullptr, false);
}

WAFER_CPU_CLONES void causalSoftmaxRows(float* scores, int rows, int firstLen, int T, float* rowMax,
                                        float* rowSum, bool maxKnown) {
    causalSoftmaxBody<float, true>(scores, rows, firstLen, T, rowMax, rowSum, maxKnown);
}
void causalSoftmaxRows(double* scores, int rows, int firstLen, int T, double* rowMax,
                       double* rowSum, bool maxKnown) {
    causalSoftmaxBody<double, true>(scores, rows, firstLen, T, rowMax, rowSum, maxKnown);
}

}  // namespace ws::model::kernels
