// RMSNorm (llama_ops.h), transformers' LlamaRMSNorm: out = x * rstd * weight with rstd = 1 /
// sqrt(mean(x²) + eps). Rows are independent, so the forward and the input gradient split rows
// over threads; the weight gradient is a sum over rows, so threads own column blocks and sum every
// row in order (as layerNormBackward does): bit-identical for any thread count.
#include <algorithm>
#include <cmath>

#include "engine/model/llama_ops.h"
#include "engine/tensor/cpu_clones.h"
#include "engine/tensor/threads.h"

namespace ws::model {
namespace kernels::rms {

template <typename Real>
[[gnu::always_inline]] inline void forwardBody(Real* out, Real* rstd, const Real* inp,
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
[[gnu::always_inline]] inline void gradBody(Real* dinp, const Real* dout, const Real* inp,
                                            const Real* weight, const Real* rstd, int n0, int n1,
                                            int C) {
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

WAFER_CPU_CLONES void forwardRows(float* out, float* rstd, const float* inp, const float* weight,
                                  int n0, int n1, int C, float eps) {
    forwardBody(out, rstd, inp, weight, n0, n1, C, eps);
}
void forwardRows(double* out, double* rstd, const double* inp, const double* weight, int n0, int n1,
                 int C, double eps) {
    forwardBody(out, rstd, inp, weight, n0, n1, C, eps);
}
WAFER_CPU_CLONES void gradRows(float* dinp, const float* dout, const float* inp,
                               const float* weight, const float* rstd, int n0, int n1, int C) {
    gradBody(dinp, dout, inp, weight, rstd, n0, n1, C);
}
void gradRows(double* dinp, const double* dout, const double* inp, const double* weight,
              const double* rstd, int n0, int n1, int C) {
    gradBody(dinp, dout, inp, weight, rstd, n0, n1, C);
}

}  // namespace kernels::rms

namespace ops {

using tensor::threadsForWork;

template <typename Real>
void rmsNormForward(Real* out, Real* rstd, const Real* inp, const Real* weight, int N, int C,
                    double eps) {
    tensor::parallelFor(N, threadsForWork(int64_t{N} * C), [&](int64_t begin, int64_t end) {
        kernels::rms::forwardRows(out, rstd, inp, weight, int(begin), int(end), C, Real(eps));
    });
}

template <typename Real>
void rmsNormBackward(Real* dinp, Real* dweight, const Real* dout, const Real* inp,
                     const Real* weight, const Real* rstd, int N, int C) {
    const int threads = threadsForWork(int64_t{N} * C);
    tensor::parallelFor(N, threads, [&](int64_t begin, int64_t end) {
        kernels::rms::gradRows(dinp, dout, inp, weight, rstd, int(begin), int(end), C);
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

}  // namespace ops
}  // namespace ws::model
