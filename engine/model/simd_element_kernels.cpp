// The float GELU forward and backward on Google Highway (see element_kernels.h): compiled once per
// x86 target and dispatched at run time (tensor/simd.h), so a baseline x86-64 build runs 16-wide
// on AVX-512. The same formula in the same order as the scalar reference (element_kernels.cpp)
// and the same Cephes exp as fastmath::exp. The a*b+c steps are written as MulAdd, one rounding
// with FMA (AVX2, AVX-512) and two without (SSE4 and below); this file is compiled without the
// compiler's own contraction (CMakeLists.txt), so those are the only places results may differ:
// targets with FMA agree bit for bit, as do targets without, and the reference, which GCC
// contracts where it chooses, differs in the last bits within the bound derived in
// tests/engine/model/simd_kernels_test.cpp. (Without FMA the kernels ran 20% slower than the
// reference's AVX-512 clone, which does use it.) A partial vector at the end of a span goes
// through a padded copy, so a value never depends on where a thread's span ends.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "engine/model/simd_element_kernels.cpp"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
// foreach_target.h must come first: it re-includes this file once per target.
#include <algorithm>
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

}  // namespace HWY_NAMESPACE
}  // namespace ws::model::kernels
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include "engine/model/element_kernels.h"

namespace ws::model::kernels {

HWY_EXPORT(geluForwardSpan);
HWY_EXPORT(geluBackwardSpan);

void geluForward(float* out, const float* inp, int64_t begin, int64_t end) {
    HWY_DYNAMIC_DISPATCH(geluForwardSpan)(out, inp, begin, end);
}

void geluBackward(float* dinp, const float* inp, const float* dout, int64_t begin, int64_t end) {
    HWY_DYNAMIC_DISPATCH(geluBackwardSpan)(dinp, inp, dout, begin, end);
}

}  // namespace ws::model::kernels
#endif  // HWY_ONCE
