// SPDX-License-Identifier: GPL-3.0-or-later
// Highway's target choice, asked through a dispatched function so the answer is the target the
// kernels really run on (the same per-process choice; see simd.h).
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "engine/tensor/simd.cpp"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
// foreach_target.h must come first: it re-includes this file once per target.
#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace ws::tensor {
namespace HWY_NAMESPACE {

int64_t compiledTarget() {
    return HWY_TARGET;
}

}  // namespace HWY_NAMESPACE
}  // namespace ws::tensor
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include <algorithm>

#include "engine/tensor/simd.h"

namespace ws::tensor {

HWY_EXPORT(compiledTarget);

std::string simdTargetLabel(int64_t target) {
    const std::string name = hwy::TargetName(target);
    return name == "AVX3" ? "AVX3 (AVX-512)" : name == "AVX3_DL" ? "AVX3_DL (AVX-512 VNNI)" : name;
}

std::string simdTargetName() {
    return simdTargetLabel(HWY_DYNAMIC_DISPATCH(compiledTarget)());
}

std::vector<int64_t> simdRunnableTargets() {
    std::vector<int64_t> targets = hwy::SupportedAndGeneratedTargets();
    // Highway's bits: a better target has a lower bit.
    std::sort(targets.begin(), targets.end());
    return targets;
}

void simdForceTarget(int64_t target) {
    hwy::SetSupportedTargetsForTest(target);
}

}  // namespace ws::tensor
#endif  // HWY_ONCE
