// SPDX-License-Identifier: GPL-3.0-or-later
// The element-wise and row-wise inner loops that dominate the model's non-GEMM time (GELU,
// LayerNorm, RMSNorm, SwiGLU, cross-entropy, causal softmax), as span functions called inside the
// ops' static partitions. The float GELU, LayerNorm, RMSNorm and SwiGLU run on Google Highway
// (simd_element_kernels.cpp: one binary, SSE4/AVX2/AVX-512 chosen at run time, tensor/simd.h),
// within bounds derived in their tests (of the scalar loops kept in namespace reference, below,
// or of the double versions): FMA and the order of the norms' sums differ. The other float versions
// are compiled three times (AVX-512, AVX2+FMA, baseline x86-64) and the loader picks the best for
// the CPU (GCC target_clones), so a portable build still runs 16-wide here; the double versions
// (the gradient-check reference) are plain. Results are bit-identical run to run on one machine and
// do not depend on the thread count (a row or element never depends on where a span ends); two CPU
// generations may differ in the last bits (as OpenBLAS's kernels do).
//
// Thread-safety: pure functions over disjoint spans.
#pragma once

#include <cstdint>

namespace ws::model::kernels {

// out[i] = gelu(inp[i]) for i in [begin, end).
void geluForward(float* out, const float* inp, int64_t begin, int64_t end);
void geluForward(double* out, const double* inp, int64_t begin, int64_t end);
// dinp[i] = dout[i] * gelu'(inp[i]); dinp may alias dout.
void geluBackward(float* dinp, const float* inp, const float* dout, int64_t begin, int64_t end);
void geluBackward(double* dinp, const double* inp, const double* dout, int64_t begin, int64_t end);

// The scalar (compiler-vectorized) float loops the Highway kernels replaced, kept as the reference
// they are tested and benchmarked against; same contracts as above.
namespace reference {
void geluForward(float* out, const float* inp, int64_t begin, int64_t end);
void geluBackward(float* dinp, const float* inp, const float* dout, int64_t begin, int64_t end);
void layerNormRows(float* out, float* mean, float* rstd, const float* inp, const float* weight,
                   const float* bias, int n0, int n1, int C, float eps);
void layerNormGradRows(float* dinp, const float* dout, const float* inp, const float* weight,
                       const float* mean, const float* rstd, int n0, int n1, int C);
void rmsNormRows(float* out, float* rstd, const float* inp, const float* weight, int n0, int n1,
                 int C, float eps);
void rmsNormGradRows(float* dinp, const float* dout, const float* inp, const float* weight,
                     const float* rstd, int n0, int n1, int C);
void swigluRows(float* out, const float* inp, int n0, int n1, int F);
void swigluGradRows(float* dinp, const float* inp, const float* dout, int n0, int n1, int F);
}  // namespace reference

// LayerNorm of rows [n0, n1) of inp (N,C): out = (x - mean) * rstd * weight + bias, with each
// row's mean and rstd = 1 / sqrt(var + eps) stored for the backward.
void layerNormRows(float* out, float* mean, float* rstd, const float* inp, const float* weight,
                   const float* bias, int n0, int n1, int C, float eps);
void layerNormRows(double* out, double* mean, double* rstd, const double* inp, const double* weight,
                   const double* bias, int n0, int n1, int C, double eps);
// Rows [n0, n1) of LayerNorm's input gradient: dinp += d(out)/d(inp) applied to dout.
void layerNormGradRows(float* dinp, const float* dout, const float* inp, const float* weight,
                       const float* mean, const float* rstd, int n0, int n1, int C);
void layerNormGradRows(double* dinp, const double* dout, const double* inp, const double* weight,
                       const double* mean, const double* rstd, int n0, int n1, int C);

// RMSNorm of rows [n0, n1) of inp (N,C): out = x * rstd * weight with rstd = 1 / sqrt(mean(x²) +
// eps), stored for the backward.
void rmsNormRows(float* out, float* rstd, const float* inp, const float* weight, int n0, int n1,
                 int C, float eps);
void rmsNormRows(double* out, double* rstd, const double* inp, const double* weight, int n0, int n1,
                 int C, double eps);
// Rows [n0, n1) of RMSNorm's input gradient: dinp += d(out)/d(inp) applied to dout.
void rmsNormGradRows(float* dinp, const float* dout, const float* inp, const float* weight,
                     const float* rstd, int n0, int n1, int C);
void rmsNormGradRows(double* dinp, const double* dout, const double* inp, const double* weight,
                     const double* rstd, int n0, int n1, int C);

// SwiGLU of rows [n0, n1): out (N,F) = silu(gate) * up for inp (N,2F) rows [gate | up].
void swigluRows(float* out, const float* inp, int n0, int n1, int F);
void swigluRows(double* out, const double* inp, int n0, int n1, int F);
// Rows [n0, n1) of dinp (N,2F) = [d gate | d up] for dout (N,F); overwrites.
void swigluGradRows(float* dinp, const float* inp, const float* dout, int n0, int n1, int F);
void swigluGradRows(double* dinp, const double* inp, const double* dout, int n0, int n1, int F);

// Rows [n0, n1) of logits (N,V): lse[n] = logsumexp(row), losses[n] = lse[n] - row[targets[n]],
// or 0 where targets[n] < 0 (a position not trained on).
void crossEntropyRows(float* losses, float* lse, const float* logits, const int32_t* targets,
                      int n0, int n1, int V);
void crossEntropyRows(double* losses, double* lse, const double* logits, const int32_t* targets,
                      int n0, int n1, int V);
// Rows [n0, n1): dlogits = (exp(logits - lse) - onehot(target)) * scale, a zero row where
// targets[n] < 0; may alias logits.
void crossEntropyGradRows(float* dlogits, const float* logits, const float* lse,
                          const int32_t* targets, float scale, int n0, int n1, int V);
void crossEntropyGradRows(double* dlogits, const double* logits, const double* lse,
                          const int32_t* targets, double scale, int n0, int n1, int V);

// rows x T block of scores (row stride T): row i becomes softmax over its first firstLen + i
// entries, and zeros after them.
void causalSoftmaxRows(float* scores, int rows, int firstLen, int T);
void causalSoftmaxRows(double* scores, int rows, int firstLen, int T);
// The same softmax (bit for bit), keeping each row's statistics for a recomputation: rowMax[i] =
// the max of row i's first firstLen + i scores, rowSum[i] = the sum of exp(score - rowMax[i])
// over them. With maxKnown, rowMax is read instead of searched for; given the same scores and the
// max this function saved for them, it gives the same probabilities and sums again, bit for bit
// (the exponentials and their sum run through the very same loop), which is how attention's
// backward recomputes probabilities instead of storing them.
void causalSoftmaxRows(float* scores, int rows, int firstLen, int T, float* rowMax, float* rowSum,
                       bool maxKnown);
void causalSoftmaxRows(double* scores, int rows, int firstLen, int T, double* rowMax,
                       double* rowSum, bool maxKnown);

}  // namespace ws::model::kernels
