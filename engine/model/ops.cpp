// SPDX-License-Identifier: GPL-3.0-or-later
// Element-wise and row-wise GPT-2 ops (everything but attention): LayerNorm, linear layers,
// GELU, embeddings, cross-entropy, residual adds and dropout. See ops.h for the contracts.
#include "engine/model/ops.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "engine/model/element_kernels.h"
#include "engine/model/precision_gemm.h"
#include "engine/model/random.h"
#include "engine/tensor/matmul.h"
#include "engine/tensor/threads.h"

namespace ws::model::ops {

using tensor::threadsForWork;
using tensor::Trans;

namespace {

// Column-block width for reductions over rows (bias and LayerNorm gradients, dwte): a thread
// owns whole blocks and sums each column over all rows in order, so the sums are bit-identical
// for any thread count.
constexpr int kColumnBlock = 64;

int columnBlocks(int C) {
    return (C + kColumnBlock - 1) / kColumnBlock;
}

// acc (C) += column sums of x (N,C).
template <typename Real>
void addColumnSums(Real* acc, const Real* x, int N, int C) {
    const int blocks = columnBlocks(C);
    tensor::parallelFor(blocks, threadsForWork(int64_t{N} * C), [&](int64_t begin, int64_t end) {
        for (int blk = int(begin); blk < int(end); ++blk) {
            const int c0 = blk * kColumnBlock, width = std::min(kColumnBlock, C - c0);
            Real sum[kColumnBlock] = {};
            for (int n = 0; n < N; ++n) {
                const Real* row = x + size_t(n) * C + c0;
#pragma omp simd
                for (int j = 0; j < width; ++j) sum[j] += row[j];
            }
            for (int j = 0; j < width; ++j) acc[c0 + j] += sum[j];
        }
    });
}

}  // namespace

template <typename Real>
void layerNormForward(Real* out, Real* mean, Real* rstd, const Real* inp, const Real* weight,
                      const Real* bias, int N, int C, double eps) {
    tensor::parallelFor(N, threadsForWork(int64_t{N} * C), [&](int64_t begin, int64_t end) {
        kernels::layerNormRows(out, mean, rstd, inp, weight, bias, int(begin), int(end), C,
                               Real(eps));
    });
}

template <typename Real>
void layerNormBackward(Real* dinp, Real* dweight, Real* dbias, const Real* dout, const Real* inp,
                       const Real* weight, const Real* mean, const Real* rstd, int N, int C) {
    const int threads = threadsForWork(int64_t{N} * C);
    tensor::parallelFor(N, threads, [&](int64_t begin, int64_t end) {
        kernels::layerNormGradRows(dinp, dout, inp, weight, mean, rstd, int(begin), int(end), C);
    });
    if (!dweight && !dbias) return;  // a frozen LayerNorm: its input gradient alone
    const int blocks = columnBlocks(C);
    tensor::parallelFor(blocks, threads, [&](int64_t begin, int64_t end) {
        for (int blk = int(begin); blk < int(end); ++blk) {
            const int c0 = blk * kColumnBlock, width = std::min(kColumnBlock, C - c0);
            Real dw[kColumnBlock] = {}, db[kColumnBlock] = {};
            for (int n = 0; n < N; ++n) {
                const Real* dy = dout + size_t(n) * C + c0;
                const Real* x = inp + size_t(n) * C + c0;
                const Real m = mean[n], s = rstd[n];
#pragma omp simd
                for (int j = 0; j < width; ++j) {
                    dw[j] += (x[j] - m) * s * dy[j];
                    db[j] += dy[j];
                }
            }
            for (int j = 0; j < width; ++j) {
                if (dweight) dweight[c0 + j] += dw[j];
                if (dbias) dbias[c0 + j] += db[j];
            }
        }
    });
}

template <typename Real>
void linearForward(Real* out, const Real* inp, const Real* weight, const Real* bias, int N, int IN,
                   int OUT, MatmulMode mode) {
    if (bias) {
        // Start from the bias and let the GEMM accumulate (beta = 1): one pass over out.
        tensor::parallelFor(N, threadsForWork(int64_t{N} * OUT), [&](int64_t begin, int64_t end) {
            for (int n = int(begin); n < int(end); ++n)
                std::memcpy(out + size_t(n) * OUT, bias, sizeof(Real) * OUT);
        });
    }
    precisionGemm<Real>(mode.bf16, Trans::No, Trans::No, N, OUT, IN, Real(1), inp, nullptr, IN,
                        weight, mode.weightBf16, OUT, bias ? Real(1) : Real(0), out, OUT);
}

template <typename Real>
void linearBackward(Real* dinp, bool accumulateDinp, Real* dweight, Real* dbias, const Real* dout,
                    const Real* inp, const Real* weight, int N, int IN, int OUT, MatmulMode mode) {
    // bf16: dout feeds both products, so it is packed once.
    const uint16_t* doutBf16 = packOnceForBf16(mode.bf16, dout, size_t(N) * OUT);
    if (dinp) {
        precisionGemm<Real>(mode.bf16, Trans::No, Trans::Yes, N, IN, OUT, Real(1), dout, doutBf16,
                            OUT, weight, mode.weightBf16, OUT, accumulateDinp ? Real(1) : Real(0),
                            dinp, IN);
    }
    if (dweight) {
        precisionGemm<Real>(mode.bf16, Trans::Yes, Trans::No, IN, OUT, N, Real(1), inp, nullptr, IN,
                            dout, doutBf16, OUT, Real(1), dweight, OUT);
    }
    if (dbias) addColumnSums(dbias, dout, N, OUT);
}

template <typename Real>
void geluForward(Real* out, const Real* inp, size_t n) {
    const auto count = static_cast<int64_t>(n);
    tensor::parallelFor(count, threadsForWork(count), [&](int64_t begin, int64_t end) {
        kernels::geluForward(out, inp, begin, end);
    });
}

template <typename Real>
void geluBackward(Real* dinp, const Real* inp, const Real* dout, size_t n) {
    const auto count = static_cast<int64_t>(n);
    tensor::parallelFor(count, threadsForWork(count), [&](int64_t begin, int64_t end) {
        kernels::geluBackward(dinp, inp, dout, begin, end);
    });
}

template <typename Real>
void embeddingForward(Real* out, const int32_t* tokens, const Real* wte, const Real* wpe, int B,
                      int T, int C) {
    const int N = B * T;
    tensor::parallelFor(N, threadsForWork(int64_t{N} * C), [&](int64_t begin, int64_t end) {
        for (int n = int(begin); n < int(end); ++n) {
            const Real* tok = wte + size_t(tokens[n]) * C;
            Real* y = out + size_t(n) * C;
            if (!wpe) {  // no learned positions (rotary, ALiBi)
                std::copy(tok, tok + C, y);
                continue;
            }
            const Real* pos = wpe + size_t(n % T) * C;
#pragma omp simd
            for (int c = 0; c < C; ++c) y[c] = tok[c] + pos[c];
        }
    });
}

template <typename Real>
void embeddingBackward(Real* dwte, Real* dwpe, const Real* dout, const int32_t* tokens, int B,
                       int T, int C) {
    const int N = B * T;
    const int threads = threadsForWork(int64_t{N} * C);
    // dwte: a thread owns column blocks and scatters every row in order (repeated tokens add up
    // in position order whatever the thread count).
    const int blocks = columnBlocks(C);
    if (dwte)
        tensor::parallelFor(blocks, threads, [&](int64_t begin, int64_t end) {
            for (int blk = int(begin); blk < int(end); ++blk) {
                const int c0 = blk * kColumnBlock, width = std::min(kColumnBlock, C - c0);
                for (int n = 0; n < N; ++n) {
                    Real* dst = dwte + size_t(tokens[n]) * C + c0;
                    const Real* src = dout + size_t(n) * C + c0;
#pragma omp simd
                    for (int j = 0; j < width; ++j) dst[j] += src[j];
                }
            }
        });
    if (dwpe)
        tensor::parallelFor(T, threads, [&](int64_t begin, int64_t end) {
            for (int t = int(begin); t < int(end); ++t) {
                Real* dst = dwpe + size_t(t) * C;
                for (int b = 0; b < B; ++b) {
                    const Real* src = dout + (size_t(b) * T + t) * C;
#pragma omp simd
                    for (int c = 0; c < C; ++c) dst[c] += src[c];
                }
            }
        });
}

template <typename Real>
void crossEntropyForward(Real* losses, Real* lse, const Real* logits, const int32_t* targets, int N,
                         int V) {
    tensor::parallelFor(N, threadsForWork(int64_t{N} * V), [&](int64_t begin, int64_t end) {
        kernels::crossEntropyRows(losses, lse, logits, targets, int(begin), int(end), V);
    });
}

template <typename Real>
void crossEntropyBackward(Real* dlogits, const Real* logits, const Real* lse,
                          const int32_t* targets, Real dlossPerRow, int N, int V) {
    tensor::parallelFor(N, threadsForWork(int64_t{N} * V), [&](int64_t begin, int64_t end) {
        kernels::crossEntropyGradRows(dlogits, logits, lse, targets, dlossPerRow, int(begin),
                                      int(end), V);
    });
}

template <typename Real>
void residualForward(Real* out, const Real* a, const Real* b, size_t n) {
    const auto count = static_cast<int64_t>(n);
    tensor::parallelFor(count, threadsForWork(count), [&](int64_t begin, int64_t end) {
#pragma omp simd
        for (int64_t i = begin; i < end; ++i) out[i] = a[i] + b[i];
    });
}

double dropoutScale(double p) {
    const uint32_t threshold = rng::dropThreshold(p);
    return 16777216.0 / (16777216.0 - threshold);
}

template <typename Real>
void dropoutForward(Real* x, size_t n, double p, uint64_t key) {
    dropoutBackward(x, x, n, p, key);
}

template <typename Real>
void dropoutBackward(Real* dx, const Real* dy, size_t n, double p, uint64_t key) {
    if (p <= 0.0) {
        if (dx != dy) std::memcpy(dx, dy, n * sizeof(Real));
        return;
    }
    const uint32_t threshold = rng::dropThreshold(p);
    const Real scale = Real(dropoutScale(p));
    const auto count = static_cast<int64_t>(n);
    tensor::parallelFor(count, threadsForWork(count), [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) {
            dx[i] = rng::keep(key, uint64_t(i), threshold) ? dy[i] * scale : Real(0);
        }
    });
}

#define WAFER_INSTANTIATE_OPS(Real)                                                                \
    template void layerNormForward<Real>(Real*, Real*, Real*, const Real*, const Real*,            \
                                         const Real*, int, int, double);                           \
    template void layerNormBackward<Real>(Real*, Real*, Real*, const Real*, const Real*,           \
                                          const Real*, const Real*, const Real*, int, int);        \
    template void linearForward<Real>(Real*, const Real*, const Real*, const Real*, int, int, int, \
                                      MatmulMode);                                                 \
    template void linearBackward<Real>(Real*, bool, Real*, Real*, const Real*, const Real*,        \
                                       const Real*, int, int, int, MatmulMode);                    \
    template void geluForward<Real>(Real*, const Real*, size_t);                                   \
    template void geluBackward<Real>(Real*, const Real*, const Real*, size_t);                     \
    template void embeddingForward<Real>(Real*, const int32_t*, const Real*, const Real*, int,     \
                                         int, int);                                                \
    template void embeddingBackward<Real>(Real*, Real*, const Real*, const int32_t*, int, int,     \
                                          int);                                                    \
    template void crossEntropyForward<Real>(Real*, Real*, const Real*, const int32_t*, int, int);  \
    template void crossEntropyBackward<Real>(Real*, const Real*, const Real*, const int32_t*,      \
                                             Real, int, int);                                      \
    template void residualForward<Real>(Real*, const Real*, const Real*, size_t);                  \
    template void dropoutForward<Real>(Real*, size_t, double, uint64_t);                           \
    template void dropoutBackward<Real>(Real*, const Real*, size_t, double, uint64_t);

WAFER_INSTANTIATE_OPS(float)
WAFER_INSTANTIATE_OPS(double)
#undef WAFER_INSTANTIATE_OPS

}  // namespace ws::model::ops
