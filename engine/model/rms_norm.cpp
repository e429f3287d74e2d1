// SPDX-License-Identifier: GPL-3.0-or-later
// RMSNorm (llama_ops.h), transformers' LlamaRMSNorm: out = x * rstd * weight with rstd = 1 /
// sqrt(mean(x²) + eps). Rows are independent, so the forward and the input gradient split rows
// over threads; the weight gradient is a sum over rows, so threads own column blocks and sum every
// row in order (as layerNormBackward does): bit-identical for any thread count. The row loops are
// element_kernels.h's (float on Highway).
#include <algorithm>

#include "engine/model/element_kernels.h"
#include "engine/model/llama_ops.h"
#include "engine/tensor/threads.h"

namespace ws::model::ops {

using tensor::threadsForWork;

template <typename Real>
void rmsNormForward(Real* out, Real* rstd, const Real* inp, const Real* weight, int N, int C,
                    double eps) {
    tensor::parallelFor(N, threadsForWork(int64_t{N} * C), [&](int64_t begin, int64_t end) {
        kernels::rmsNormRows(out, rstd, inp, weight, int(begin), int(end), C, Real(eps));
    });
}

template <typename Real>
void rmsNormBackward(Real* dinp, Real* dweight, const Real* dout, const Real* inp,
                     const Real* weight, const Real* rstd, int N, int C) {
    const int threads = threadsForWork(int64_t{N} * C);
    tensor::parallelFor(N, threads, [&](int64_t begin, int64_t end) {
        kernels::rmsNormGradRows(dinp, dout, inp, weight, rstd, int(begin), int(end), C);
    });
    if (!dweight) return;  // a frozen norm: its input gradient alone
    constexpr int kColumnBlock = 64;
    const int blocks = (C + kColumnBlock - 1) / kColumnBlock;
    tensor::parallelFor(blocks, threads, [&](int64_t begin, int64_t end) {
        for (int blk = int(begin); blk < int(end); ++blk) {
            const int c0 = blk * kColumnBlock, width = std::min(kColumnBlock, C - c0);
            Real dw[kColumnBlock] = {};
            for (int n = 0; n < N; ++n) {
                const Real* dy = dout + size_t(n) * C + c0;
                const Real* x = inp + size_t(n) * C + c0;
                const Real s = rstd[n];
#pragma omp simd
                for (int j = 0; j < width; ++j) dw[j] += x[j] * s * dy[j];
            }
            for (int j = 0; j < width; ++j) dweight[c0 + j] += dw[j];
        }
    });
}

#define WAFER_INSTANTIATE_RMS_NORM(Real)                                                          \
    template void rmsNormForward<Real>(Real*, Real*, const Real*, const Real*, int, int, double); \
    template void rmsNormBackward<Real>(Real*, Real*, const Real*, const Real*, const Real*,      \
                                        const Real*, int, int);

WAFER_INSTANTIATE_RMS_NORM(float)
WAFER_INSTANTIATE_RMS_NORM(double)

}  // namespace ws::model::ops
