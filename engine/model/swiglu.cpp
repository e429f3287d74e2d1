// SPDX-License-Identifier: GPL-3.0-or-later
// SwiGLU (llama_ops.h), the activation of transformers' LlamaMLP: out = silu(gate) * up, with the
// gate and up projections fused into one (N,2F) input, rows [gate | up]. Element-wise, so rows
// are split statically over threads; the row loops are element_kernels.h's (float on Highway with
// fastmath's exp, clamped so that silu of a large negative input is a tiny negative number, never
// NaN; double with the C library's).
#include "engine/model/element_kernels.h"
#include "engine/model/llama_ops.h"
#include "engine/tensor/threads.h"

namespace ws::model::ops {

template <typename Real>
void swigluForward(Real* out, const Real* inp, int N, int F) {
    tensor::parallelFor(N, tensor::threadsForWork(int64_t{N} * F), [&](int64_t begin, int64_t end) {
        kernels::swigluRows(out, inp, int(begin), int(end), F);
    });
}

template <typename Real>
void swigluBackward(Real* dinp, const Real* inp, const Real* dout, int N, int F) {
    tensor::parallelFor(N, tensor::threadsForWork(int64_t{N} * F), [&](int64_t begin, int64_t end) {
        kernels::swigluGradRows(dinp, inp, dout, int(begin), int(end), F);
    });
}

template void swigluForward<float>(float*, const float*, int, int);
template void swigluForward<double>(double*, const double*, int, int);
template void swigluBackward<float>(float*, const float*, const float*, int, int);
template void swigluBackward<double>(double*, const double*, const double*, int, int);

}  // namespace ws::model::ops
