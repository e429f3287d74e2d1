// SPDX-License-Identifier: GPL-3.0-or-later
// GELU forward and backward, LayerNorm's, RMSNorm's and SwiGLU's rows on Google Highway, in
// float (see element_kernels.h): compiled once per x86 target and dispatched at run time
// (tensor/simd.h), so a baseline x86-64 build runs 16-wide on AVX-512. The same formulas in the
// same order as the scalar references (element_kernels.cpp), GELU with the same Cephes exp as
// fastmath::exp. The a*b+c steps are written as MulAdd, one rounding with FMA (AVX2, AVX-512) and
// two without (SSE4 and below), and this file is compiled without the compiler's own contraction
// (CMakeLists.txt). So GELU gives the same bits on targets of a kind and differs from its
// reference, which GCC contracts where it chooses, within the bound derived in
// tests/engine/model/simd_kernels_test.cpp (without FMA the kernels ran 20% slower than the
// reference's AVX-512 clone, which uses it). LayerNorm's sums are one vector of partial sums, so
// their rounding also depends on the target's width; tests/engine/model/simd_layernorm_test.cpp
// bounds them (RMSNorm and SwiGLU: simd_llama_kernels_test.cpp). A partial vector at the end of a
// span or row goes through a zero-padded copy, so a value never depends on where a span ends.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "engine/model/simd_element_kernels.cpp"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
// foreach_target.h must come first: it re-includes this file once per target.
#include <algorithm>
#include <cmath>
#include <cstdint>

#include "engine/model/fast_math.h"
#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace ws::model::kernels {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;
using D = hn::ScalableTag<float>;
using V = hn::Vec<D>;

// fastmath::exp(float), lane by lane: the same clamps (NaN passes both), the same reduction and
// polynomial, the same exponent construction.
HWY_INLINE V expLanes(D d, V x) {
    const hn::RebindToUnsigned<D> du;
    x = hn::IfThenElse(hn::Lt(x, hn::Set(d, -87.0f)), hn::Set(d, -87.0f), x);
    x = hn::IfThenElse(hn::Gt(x, hn::Set(d, 88.0f)), hn::Set(d, 88.0f), x);
    const V shifter = hn::Set(d, 12582912.0f);
    const V t = hn::MulAdd(x, hn::Set(d, 1.44269504088896341f), shifter);
    const V n = hn::Sub(t, shifter);
    V r = hn::NegMulAdd(n, hn::Set(d, 0.693359375f), x);
    r = hn::NegMulAdd(n, hn::Set(d, -2.12194440e-4f), r);
    V p = hn::Set(d, 1.9875691500e-4f);
    p = hn::MulAdd(p, r, hn::Set(d, 1.3981999507e-3f));
    p = hn::MulAdd(p, r, hn::Set(d, 8.3334519073e-3f));
    p = hn::MulAdd(p, r, hn::Set(d, 4.1665795894e-2f));
    p = hn::MulAdd(p, r, hn::Set(d, 1.6666665459e-1f));
    p = hn::MulAdd(p, r, hn::Set(d, 5.0000001201e-1f));
    p = hn::Add(hn::MulAdd(hn::Mul(p, r), r, r), hn::Set(d, 1.0f));
    const auto biased =
        hn::Add(hn::Sub(hn::BitCast(du, t), hn::BitCast(du, shifter)), hn::Set(du, 127u));
    return hn::Mul(p, hn::BitCast(d, hn::ShiftLeft<23>(biased)));
}

// fastmath::tanh(float): 1 - 2 / (e^{2x} + 1).
HWY_INLINE V tanhLanes(D d, V x) {
    const V one = hn::Set(d, 1.0f), two = hn::Set(d, 2.0f);
    return hn::Sub(one, hn::Div(two, hn::Add(expLanes(d, hn::Mul(two, x)), one)));
}

// u = sqrt(2/pi) * (x + 0.044715 * x * x * x), associated as the scalar loop is.
HWY_INLINE V geluArgument(D d, V x) {
    const V cx2 = hn::Mul(hn::Mul(hn::Set(d, float(fastmath::kGeluCube)), x), x);
    return hn::Mul(hn::Set(d, float(fastmath::kGeluScale)), hn::MulAdd(cx2, x, x));
}

HWY_INLINE V geluForwardLanes(D d, V x) {
    const V half = hn::Set(d, 0.5f), one = hn::Set(d, 1.0f);
    return hn::Mul(hn::Mul(half, x), hn::Add(one, tanhLanes(d, geluArgument(d, x))));
}

HWY_INLINE V geluBackwardLanes(D d, V x, V dy) {
    const V half = hn::Set(d, 0.5f), one = hn::Set(d, 1.0f);
    const V th = tanhLanes(d, geluArgument(d, x));
    const V cube3 = hn::Set(d, float(3 * fastmath::kGeluCube));
    const V du =
        hn::Mul(hn::Set(d, float(fastmath::kGeluScale)), hn::MulAdd(hn::Mul(cube3, x), x, one));
    const V slope = hn::Mul(hn::Mul(hn::Mul(half, x), hn::NegMulAdd(th, th, one)), du);
    const V grad = hn::MulAdd(half, hn::Add(one, th), slope);
    return hn::Mul(grad, dy);
}

// Largest vector of any x86 target, in floats (a stack buffer for the partial last vector).
constexpr size_t kMaxLanes = HWY_MAX_BYTES / sizeof(float);

void geluForwardSpan(float* out, const float* inp, int64_t begin, int64_t end) {
    const D d;
    const auto N = static_cast<int64_t>(hn::Lanes(d));
    int64_t i = begin;
    for (; i + N <= end; i += N) hn::StoreU(geluForwardLanes(d, hn::LoadU(d, inp + i)), d, out + i);
    if (i == end) return;
    const auto rest = size_t(end - i);
    HWY_ALIGN float x[kMaxLanes] = {};
    std::copy_n(inp + i, rest, x);
    hn::Store(geluForwardLanes(d, hn::Load(d, x)), d, x);
    std::copy_n(x, rest, out + i);
}

void geluBackwardSpan(float* dinp, const float* inp, const float* dout, int64_t begin,
                      int64_t end) {
    const D d;
    const auto N = static_cast<int64_t>(hn::Lanes(d));
    int64_t i = begin;
    for (; i + N <= end; i += N) {
        const V g = geluBackwardLanes(d, hn::LoadU(d, inp + i), hn::LoadU(d, dout + i));
        hn::StoreU(g, d, dinp + i);  // after both loads: dinp may alias dout
    }
    if (i == end) return;
    const auto rest = size_t(end - i);
    HWY_ALIGN float x[kMaxLanes] = {};
    HWY_ALIGN float dy[kMaxLanes] = {};
    std::copy_n(inp + i, rest, x);
    std::copy_n(dout + i, rest, dy);
    hn::Store(geluBackwardLanes(d, hn::Load(d, x), hn::Load(d, dy)), d, x);
    std::copy_n(x, rest, dinp + i);
}

// Lanes [0, rest) of p in a zero-padded vector (the partial last vector of a row).
HWY_INLINE V loadPartial(D d, const float* p, size_t rest) {
    HWY_ALIGN float buf[kMaxLanes] = {};
    std::copy_n(p, rest, buf);
    return hn::Load(d, buf);
}

HWY_INLINE void storePartial(D d, V v, float* p, size_t rest) {
    HWY_ALIGN float buf[kMaxLanes];
    hn::Store(v, d, buf);
    std::copy_n(buf, rest, p);
}

// LayerNorm rows: the reference's formula (element_kernels.cpp) with the sums accumulated in one
// vector of partial sums and added across lanes at the end, so their rounding depends on the
// target's width (not on the thread count); the bound is derived in the test.
void layerNormRowsSpan(float* out, float* mean, float* rstd, const float* inp, const float* weight,
                       const float* bias, int n0, int n1, int C, float eps) {
    const D d;
    const size_t N = hn::Lanes(d), width = size_t(C), full = width - width % N, rest = width - full;
    const auto tail = hn::FirstN(d, rest);
    for (int n = n0; n < n1; ++n) {
        const float* x = inp + size_t(n) * width;
        V acc = hn::Zero(d);
        for (size_t c = 0; c < full; c += N) acc = hn::Add(acc, hn::LoadU(d, x + c));
        if (rest) acc = hn::Add(acc, loadPartial(d, x + full, rest));
        const float m = hn::GetLane(hn::SumOfLanes(d, acc)) / float(C);
        const V vm = hn::Set(d, m);
        acc = hn::Zero(d);
        for (size_t c = 0; c < full; c += N) {
            const V xm = hn::Sub(hn::LoadU(d, x + c), vm);
            acc = hn::MulAdd(xm, xm, acc);
        }
        if (rest) {
            const V xm = hn::IfThenElseZero(tail, hn::Sub(loadPartial(d, x + full, rest), vm));
            acc = hn::MulAdd(xm, xm, acc);
        }
        const float var = hn::GetLane(hn::SumOfLanes(d, acc));
        const float s = 1.0f / std::sqrt(var / float(C) + eps);
        const V vs = hn::Set(d, s);
        float* y = out + size_t(n) * width;
        auto normalize = [&](V xv, V w, V b) {
            return hn::MulAdd(hn::Mul(hn::Sub(xv, vm), vs), w, b);
        };
        for (size_t c = 0; c < full; c += N) {
            hn::StoreU(
                normalize(hn::LoadU(d, x + c), hn::LoadU(d, weight + c), hn::LoadU(d, bias + c)), d,
                y + c);
        }
        if (rest) {
            storePartial(
                d,
                normalize(loadPartial(d, x + full, rest), loadPartial(d, weight + full, rest),
                          loadPartial(d, bias + full, rest)),
                y + full, rest);
        }
        mean[n] = m;
        rstd[n] = s;
    }
}

// LayerNorm's input gradient for rows [n0, n1); zero-padded lanes have dnorm = 0 and add nothing.
void layerNormGradRowsSpan(float* dinp, const float* dout, const float* inp, const float* weight,
                           const float* mean, const float* rstd, int n0, int n1, int C) {
    const D d;
    const size_t N = hn::Lanes(d), width = size_t(C), full = width - width % N, rest = width - full;
    for (int n = n0; n < n1; ++n) {
        const float* dy = dout + size_t(n) * width;
        const float* x = inp + size_t(n) * width;
        const V vm = hn::Set(d, mean[n]), vs = hn::Set(d, rstd[n]);
        V accMean = hn::Zero(d), accNormMean = hn::Zero(d);
        auto accumulate = [&](V xv, V w, V g) {
            const V dnorm = hn::Mul(w, g);
            accMean = hn::Add(accMean, dnorm);
            accNormMean = hn::MulAdd(hn::Mul(dnorm, hn::Sub(xv, vm)), vs, accNormMean);
        };
        for (size_t c = 0; c < full; c += N)
            accumulate(hn::LoadU(d, x + c), hn::LoadU(d, weight + c), hn::LoadU(d, dy + c));
        if (rest) {
            accumulate(loadPartial(d, x + full, rest), loadPartial(d, weight + full, rest),
                       loadPartial(d, dy + full, rest));
        }
        const V dnormMean = hn::Set(d, hn::GetLane(hn::SumOfLanes(d, accMean)) / float(C));
        const V dnormNormMean = hn::Set(d, hn::GetLane(hn::SumOfLanes(d, accNormMean)) / float(C));
        float* dx = dinp + size_t(n) * width;
        auto gradient = [&](V dxv, V xv, V w, V g) {
            const V norm = hn::Mul(hn::Sub(xv, vm), vs);
            const V inner = hn::NegMulAdd(norm, dnormNormMean, hn::Sub(hn::Mul(w, g), dnormMean));
            return hn::MulAdd(inner, vs, dxv);
        };
        for (size_t c = 0; c < full; c += N) {
            hn::StoreU(gradient(hn::LoadU(d, dx + c), hn::LoadU(d, x + c), hn::LoadU(d, weight + c),
                                hn::LoadU(d, dy + c)),
                       d, dx + c);
        }
        if (rest) {
            storePartial(
                d,
                gradient(loadPartial(d, dx + full, rest), loadPartial(d, x + full, rest),
                         loadPartial(d, weight + full, rest), loadPartial(d, dy + full, rest)),
                dx + full, rest);
        }
    }
}

// RMSNorm rows (llama_ops.h): the scalar formula (element_kernels.cpp) with the sum of squares in
// one vector of partial sums (zero-padded lanes add nothing); the bound is derived in
// tests/engine/model/simd_llama_kernels_test.cpp.
void rmsNormRowsSpan(float* out, float* rstd, const float* inp, const float* weight, int n0, int n1,
                     int C, float eps) {
    const D d;
    const size_t N = hn::Lanes(d), width = size_t(C), full = width - width % N, rest = width - full;
    for (int n = n0; n < n1; ++n) {
        const float* x = inp + size_t(n) * width;
        V acc = hn::Zero(d);
        for (size_t c = 0; c < full; c += N) {
            const V xv = hn::LoadU(d, x + c);
            acc = hn::MulAdd(xv, xv, acc);
        }
        if (rest) {
            const V xv = loadPartial(d, x + full, rest);
            acc = hn::MulAdd(xv, xv, acc);
        }
        const float sumSquares = hn::GetLane(hn::SumOfLanes(d, acc));
        const float s = 1.0f / std::sqrt(sumSquares / float(C) + eps);
        const V vs = hn::Set(d, s);
        float* y = out + size_t(n) * width;
        for (size_t c = 0; c < full; c += N)
            hn::StoreU(hn::Mul(hn::Mul(hn::LoadU(d, x + c), vs), hn::LoadU(d, weight + c)), d,
                       y + c);
        if (rest) {
            const V yv = hn::Mul(hn::Mul(loadPartial(d, x + full, rest), vs),
                                 loadPartial(d, weight + full, rest));
            storePartial(d, yv, y + full, rest);
        }
        rstd[n] = s;
    }
}

// RMSNorm's input gradient for rows [n0, n1): dx += (w dy - x k) s with k = s² Σ(w dy x) / C.
void rmsNormGradRowsSpan(float* dinp, const float* dout, const float* inp, const float* weight,
                         const float* rstd, int n0, int n1, int C) {
    const D d;
    const size_t N = hn::Lanes(d), width = size_t(C), full = width - width % N, rest = width - full;
    for (int n = n0; n < n1; ++n) {
        const float* dy = dout + size_t(n) * width;
        const float* x = inp + size_t(n) * width;
        const float s = rstd[n];
        V acc = hn::Zero(d);
        for (size_t c = 0; c < full; c += N) {
            const V wdy = hn::Mul(hn::LoadU(d, weight + c), hn::LoadU(d, dy + c));
            acc = hn::MulAdd(wdy, hn::LoadU(d, x + c), acc);
        }
        if (rest) {
            const V wdy =
                hn::Mul(loadPartial(d, weight + full, rest), loadPartial(d, dy + full, rest));
            acc = hn::MulAdd(wdy, loadPartial(d, x + full, rest), acc);
        }
        const float dot = hn::GetLane(hn::SumOfLanes(d, acc));
        const V vk = hn::Set(d, dot * s * s / float(C)), vs = hn::Set(d, s);
        float* dx = dinp + size_t(n) * width;
        auto gradient = [&](V dxv, V xv, V w, V g) {
            return hn::MulAdd(hn::NegMulAdd(xv, vk, hn::Mul(w, g)), vs, dxv);
        };
        for (size_t c = 0; c < full; c += N) {
            hn::StoreU(gradient(hn::LoadU(d, dx + c), hn::LoadU(d, x + c), hn::LoadU(d, weight + c),
                                hn::LoadU(d, dy + c)),
                       d, dx + c);
        }
        if (rest) {
            storePartial(
                d,
                gradient(loadPartial(d, dx + full, rest), loadPartial(d, x + full, rest),
                         loadPartial(d, weight + full, rest), loadPartial(d, dy + full, rest)),
                dx + full, rest);
        }
    }
}

// σ(g) = 1 / (1 + e^{-g}) with fastmath::exp's lanes (clamped: no overflow, NaN passes).
HWY_INLINE V sigmoidLanes(D d, V g) {
    const V one = hn::Set(d, 1.0f);
    return hn::Div(one, hn::Add(one, expLanes(d, hn::Neg(g))));
}

// SwiGLU rows (llama_ops.h): out = g σ(g) up over rows [n0, n1) of the (N, 2F) input.
void swigluRowsSpan(float* out, const float* inp, int n0, int n1, int F) {
    const D d;
    const size_t N = hn::Lanes(d), width = size_t(F), full = width - width % N, rest = width - full;
    auto lanes = [&](V g, V u) { return hn::Mul(hn::Mul(g, sigmoidLanes(d, g)), u); };
    for (int n = n0; n < n1; ++n) {
        const float* gate = inp + size_t(n) * 2 * width;
        const float* up = gate + width;
        float* y = out + size_t(n) * width;
        for (size_t c = 0; c < full; c += N)
            hn::StoreU(lanes(hn::LoadU(d, gate + c), hn::LoadU(d, up + c)), d, y + c);
        if (rest) {
            storePartial(d,
                         lanes(loadPartial(d, gate + full, rest), loadPartial(d, up + full, rest)),
                         y + full, rest);
        }
    }
}

// SwiGLU's gradient: d gate = dy up σ(g)(1 + g(1 - σ(g))), d up = dy g σ(g); overwrites.
void swigluGradRowsSpan(float* dinp, const float* inp, const float* dout, int n0, int n1, int F) {
    const D d;
    const size_t N = hn::Lanes(d), width = size_t(F), full = width - width % N, rest = width - full;
    const V one = hn::Set(d, 1.0f);
    auto lanes = [&](V g, V u, V dy, V& dgate, V& dup) {
        const V sg = sigmoidLanes(d, g);
        const V slope = hn::Mul(sg, hn::MulAdd(g, hn::Sub(one, sg), one));
        dgate = hn::Mul(hn::Mul(dy, u), slope);
        dup = hn::Mul(hn::Mul(dy, g), sg);
    };
    for (int n = n0; n < n1; ++n) {
        const float* gate = inp + size_t(n) * 2 * width;
        const float* up = gate + width;
        const float* dy = dout + size_t(n) * width;
        float* dgate = dinp + size_t(n) * 2 * width;
        float* dup = dgate + width;
        V dg, du;
        for (size_t c = 0; c < full; c += N) {
            lanes(hn::LoadU(d, gate + c), hn::LoadU(d, up + c), hn::LoadU(d, dy + c), dg, du);
            hn::StoreU(dg, d, dgate + c);
            hn::StoreU(du, d, dup + c);
        }
        if (rest) {
            lanes(loadPartial(d, gate + full, rest), loadPartial(d, up + full, rest),
                  loadPartial(d, dy + full, rest), dg, du);
            storePartial(d, dg, dgate + full, rest);
            storePartial(d, du, dup + full, rest);
        }
    }
}

}  // namespace HWY_NAMESPACE
}  // namespace ws::model::kernels
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include "engine/model/element_kernels.h"

namespace ws::model::kernels {

HWY_EXPORT(geluForwardSpan);
HWY_EXPORT(geluBackwardSpan);
HWY_EXPORT(layerNormRowsSpan);
HWY_EXPORT(layerNormGradRowsSpan);
HWY_EXPORT(rmsNormRowsSpan);
HWY_EXPORT(rmsNormGradRowsSpan);
HWY_EXPORT(swigluRowsSpan);
HWY_EXPORT(swigluGradRowsSpan);

void geluForward(float* out, const float* inp, int64_t begin, int64_t end) {
    HWY_DYNAMIC_DISPATCH(geluForwardSpan)(out, inp, begin, end);
}

void geluBackward(float* dinp, const float* inp, const float* dout, int64_t begin, int64_t end) {
    HWY_DYNAMIC_DISPATCH(geluBackwardSpan)(dinp, inp, dout, begin, end);
}

void layerNormRows(float* out, float* mean, float* rstd, const float* inp, const float* weight,
                   const float* bias, int n0, int n1, int C, float eps) {
    HWY_DYNAMIC_DISPATCH(layerNormRowsSpan)(out, mean, rstd, inp, weight, bias, n0, n1, C, eps);
}

void layerNormGradRows(float* dinp, const float* dout, const float* inp, const float* weight,
                       const float* mean, const float* rstd, int n0, int n1, int C) {
    HWY_DYNAMIC_DISPATCH(layerNormGradRowsSpan)(dinp, dout, inp, weight, mean, rstd, n0, n1, C);
}

void rmsNormRows(float* out, float* rstd, const float* inp, const float* weight, int n0, int n1,
                 int C, float eps) {
    HWY_DYNAMIC_DISPATCH(rmsNormRowsSpan)(out, rstd, inp, weight, n0, n1, C, eps);
}

void rmsNormGradRows(float* dinp, const float* dout, const float* inp, const float* weight,
                     const float* rstd, int n0, int n1, int C) {
    HWY_DYNAMIC_DISPATCH(rmsNormGradRowsSpan)(dinp, dout, inp, weight, rstd, n0, n1, C);
}

void swigluRows(float* out, const float* inp, int n0, int n1, int F) {
    HWY_DYNAMIC_DISPATCH(swigluRowsSpan)(out, inp, n0, n1, F);
}

void swigluGradRows(float* dinp, const float* inp, const float* dout, int n0, int n1, int F) {
    HWY_DYNAMIC_DISPATCH(swigluGradRowsSpan)(dinp, inp, dout, n0, n1, F);
}

}  // namespace ws::model::kernels
#endif  // HWY_ONCE
