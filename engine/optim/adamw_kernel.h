// SPDX-License-Identifier: GPL-3.0-or-later
// The AdamW update of one contiguous span (the per-parameter inner loop of Optimizer::updateRange):
// m = b1 m + (1-b1) g, v = b2 v + (1-b2) g^2, p = p keep - stepSize m / (sqrt(v) invSqrtC2 + eps),
// with g = grad * gradScale. adamwUpdate() runs on Google Highway (compiled per x86 target and
// dispatched at run time, tensor/simd.h); adamwUpdateReference() is the plain loop it replaced and
// is tested and benchmarked against. Both give bit-identical results on every target (same
// operations in the same order, no FMA, sqrt and division correctly rounded), and a value never
// depends on where a span starts or ends.
//
// Thread-safety: pure functions over the given span; spans updated concurrently must not overlap.
#pragma once

#include <cstddef>

namespace ws::optim {

// The per-group, per-step scalars, in float as the update uses them.
struct AdamwConstants {
    float gradScale = 1.0f;  // applied to the gradient first (clipping, averaging)
    float beta1 = 0.9f;
    float beta2 = 0.999f;
    float stepSize = 0.0f;   // lr / (1 - beta1^t)
    float invSqrtC2 = 1.0f;  // 1 / sqrt(1 - beta2^t)
    float keep = 1.0f;       // 1 - lr * weight_decay
    float eps = 1e-8f;
};

// Updates params, firstMoment and secondMoment in [0, count) from grads.
void adamwUpdate(const AdamwConstants& c, float* params, const float* grads, float* firstMoment,
                 float* secondMoment, size_t count);
void adamwUpdateReference(const AdamwConstants& c, float* params, const float* grads,
                          float* firstMoment, float* secondMoment, size_t count);

}  // namespace ws::optim
