// SwiGLU (llama_ops.h), the activation of transformers' LlamaMLP: out = silu(gate) * up, with the
// gate and up projections fused into one (N,2F) input, rows [gate | up]. Element-wise, so rows
// are split statically over threads. float uses fastmath::exp (vectorizes; clamped so that silu
// of a large negative input is a tiny negative number, never NaN), double the C library's.
#include <cmath>

#include "engine/model/fast_math.h"
#include "engine/model/llama_ops.h"
#include "engine/tensor/cpu_clones.h"
#include "engine/tensor/threads.h"

namespace ws::model {
namespace kernels::swiglu {

template <typename Real>
[[gnu::always_inline]] inline Real sigmoid(Real x) {
    return Real(1) / (Real(1) + fastmath::exp(-x));
}

template <typename Real>
[[gnu::always_inline]] inline void forwardBody(Real* out, const Real* inp, int n0, int n1, int F) {
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
[[gnu::always_inline]] inline void gradBody(Real* dinp, const Real* inp, const Real* dout, int n0,
                                            int n1, int F) {
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

WAFER_CPU_CLONES void forwardRows(float* out, const float* inp, int n0, int n1, int F) {
    forwardBody(out, inp, n0, n1, F);
}
void forwardRows(double* out, const double* inp, int n0, int n1, int F) {
    forwardBody(out, inp, n0, n1, F);
}
WAFER_CPU_CLONES void gradRows(float* dinp, const float* inp, const float* dout, int n0, int n1,
                               int F) {
    gradBody(dinp, inp, dout, n0, n1, F);
}
void gradRows(double* dinp, const double* inp, const double* dout, int n0, int n1, int F) {
    gradBody(dinp, inp, dout, n0, n1, F);
}

}  // namespace kernels::swiglu

namespace ops {

template <typename Real>
void swigluForward(Real* out, const Real* inp, int N, int F) {
    tensor::parallelFor(N, tensor::threadsForWork(int64_t{N} * F), [&](int64_t begin, int64_t end) {
        kernels::swiglu::forwardRows(out, inp, int(begin), int(end), F);
    });
}

template <typename Real>
void swigluBackward(Real* dinp, const Real* inp, const Real* dout, int N, int F) {
    tensor::parallelFor(N, tensor::threadsForWork(int64_t{N} * F), [&](int64_t begin, int64_t end) {
        kernels::swiglu::gradRows(dinp, inp, dout, int(begin), int(end), F);
    });
}

template void swigluForward<float>(float*, const float*, int, int);
template void swigluForward<double>(double*, const double*, int, int);
template void swigluBackward<float>(float*, const float*, const float*, int, int);
template void swigluBackward<double>(double*, const double*, const double*, int, int);

}  // namespace ops
}  // namespace ws::model
