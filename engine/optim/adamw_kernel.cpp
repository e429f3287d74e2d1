// SPDX-License-Identifier: GPL-3.0-or-later
// AdamW's span update on Google Highway beside its scalar reference (see adamw_kernel.h). The
// lanes repeat the reference's operations one for one; the partial last vector goes through a
// padded copy so it is computed by the same code.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "engine/optim/adamw_kernel.cpp"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
// foreach_target.h must come first: it re-includes this file once per target.
#include <algorithm>
#include <cmath>

#include "engine/optim/adamw_kernel.h"
#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace ws::optim {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;
using D = hn::ScalableTag<float>;
using V = hn::Vec<D>;

struct Lanes {
    V gradScale, beta1, oneMinusBeta1, beta2, oneMinusBeta2, stepSize, invSqrtC2, keep, eps;
};

// One vector of the update at p, g, m, v (each Lanes(d) floats, unaligned).
HWY_INLINE void updateLanes(D d, const Lanes& c, float* p, const float* g, float* m, float* v) {
    const V gi = hn::Mul(hn::LoadU(d, g), c.gradScale);
    const V mi = hn::Add(hn::Mul(c.beta1, hn::LoadU(d, m)), hn::Mul(c.oneMinusBeta1, gi));
    const V vi =
        hn::Add(hn::Mul(c.beta2, hn::LoadU(d, v)), hn::Mul(hn::Mul(c.oneMinusBeta2, gi), gi));
    const V denom = hn::Add(hn::Mul(hn::Sqrt(vi), c.invSqrtC2), c.eps);
    const V pi = hn::Sub(hn::Mul(hn::LoadU(d, p), c.keep), hn::Div(hn::Mul(c.stepSize, mi), denom));
    hn::StoreU(mi, d, m);
    hn::StoreU(vi, d, v);
    hn::StoreU(pi, d, p);
}

void adamwSpan(const AdamwConstants& k, float* params, const float* grads, float* firstMoment,
               float* secondMoment, size_t count) {
    const D d;
    const Lanes c{hn::Set(d, k.gradScale), hn::Set(d, k.beta1),        hn::Set(d, 1.0f - k.beta1),
                  hn::Set(d, k.beta2),     hn::Set(d, 1.0f - k.beta2), hn::Set(d, k.stepSize),
                  hn::Set(d, k.invSqrtC2), hn::Set(d, k.keep),         hn::Set(d, k.eps)};
    const size_t N = hn::Lanes(d);
    size_t i = 0;
    for (; i + N <= count; i += N)
        updateLanes(d, c, params + i, grads + i, firstMoment + i, secondMoment + i);
    if (i == count) return;
    constexpr size_t kMaxLanes = HWY_MAX_BYTES / sizeof(float);
    const size_t rest = count - i;
    float p[kMaxLanes] = {}, g[kMaxLanes] = {}, m[kMaxLanes] = {}, v[kMaxLanes] = {};
    std::copy_n(params + i, rest, p);
    std::copy_n(grads + i, rest, g);
    std::copy_n(firstMoment + i, rest, m);
    std::copy_n(secondMoment + i, rest, v);
    updateLanes(d, c, p, g, m, v);
    std::copy_n(p, rest, params + i);
    std::copy_n(m, rest, firstMoment + i);
    std::copy_n(v, rest, secondMoment + i);
}

}  // namespace HWY_NAMESPACE
}  // namespace ws::optim
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace ws::optim {

HWY_EXPORT(adamwSpan);

void adamwUpdate(const AdamwConstants& c, float* params, const float* grads, float* firstMoment,
                 float* secondMoment, size_t count) {
    HWY_DYNAMIC_DISPATCH(adamwSpan)(c, params, grads, firstMoment, secondMoment, count);
}

void adamwUpdateReference(const AdamwConstants& c, float* params, const float* grads,
                          float* firstMoment, float* secondMoment, size_t count) {
    float* p = params;
    const float* g = grads;
    float* m = firstMoment;
    float* v = secondMoment;
    const float fb1 = c.beta1, fb2 = c.beta2;
    for (size_t i = 0; i < count; ++i) {
        const float gi = g[i] * c.gradScale;
        m[i] = fb1 * m[i] + (1.0f - fb1) * gi;
        v[i] = fb2 * v[i] + (1.0f - fb2) * gi * gi;
        const float denom = std::sqrt(v[i]) * c.invSqrtC2 + c.eps;
        p[i] = p[i] * c.keep - c.stepSize * m[i] / denom;
    }
}

}  // namespace ws::optim
#endif  // HWY_ONCE
