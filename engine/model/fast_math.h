// SPDX-License-Identifier: GPL-3.0-or-later
// Element functions for the model's kernels, written as straight-line arithmetic so the compiler
// vectorizes the loops that call them. float uses a Cephes-style exp (max error ~1 ulp over the
// range used; NaN in gives NaN out, so a diverging loss is never hidden); double uses the C
// library, since the double model is the exact reference for gradient checks.
//
// Thread-safety: pure functions.
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>

namespace ws::model::fastmath {

// GELU's tanh approximation (GPT-2): 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))); shared by
// the scalar reference kernels and the Highway ones so both round the same constants.
inline constexpr double kGeluScale = 0.7978845608028654;  // sqrt(2 / pi)
inline constexpr double kGeluCube = 0.044715;

inline float exp(float x) {
    // Clamp so 2^n stays a normal float; written so that NaN fails both tests and passes through.
    x = x < -87.0f ? -87.0f : x;
    x = x > 88.0f ? 88.0f : x;
    // n = round(x / ln 2) via the 1.5 * 2^23 trick: the rounded integer sits in t's low bits.
    constexpr float kShifter = 12582912.0f;
    const float t = x * 1.44269504088896341f + kShifter;
    const float n = t - kShifter;
    float r = x - n * 0.693359375f;  // ln 2 split in two (Cephes C1, C2) for an exact reduction
    r = r - n * -2.12194440e-4f;
    float p = 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    p = p * r * r + r + 1.0f;
    const uint32_t biased = std::bit_cast<uint32_t>(t) - std::bit_cast<uint32_t>(kShifter) + 127u;
    return p * std::bit_cast<float>(biased << 23);
}

inline double exp(double x) {
    return std::exp(x);
}

// tanh via exp: 1 - 2 / (e^{2x} + 1); saturates to ±1 without overflow (exp is clamped).
inline float tanh(float x) {
    return 1.0f - 2.0f / (fastmath::exp(2.0f * x) + 1.0f);
}
inline double tanh(double x) {
    return std::tanh(x);
}

}  // namespace ws::model::fastmath
