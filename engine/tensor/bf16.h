// SPDX-License-Identifier: GPL-3.0-or-later
// bfloat16 rounding: the upper 16 bits of an IEEE float, rounded to nearest with ties to even.
// NaN stays NaN (quieted, sign kept), ±Inf stays ±Inf, finite values beyond the largest bf16
// (3.3895e38) round to ±Inf, subnormals round like any other value. Mixed-precision training
// stores bf16 values in float buffers ("bf16-valued floats"), so roundToBf16() is the only
// conversion the model needs; the packed forms feed the bf16 matmul backend (onednn_bf16.cpp).
// The buffer conversions run on Google Highway (bf16.cpp; the SIMD target is chosen at run time,
// tensor/simd.h) and are bit-identical to the scalar functions below on every target: they are
// the same integer operations, lane by lane.
//
// Thread-safety: pure functions. The buffer conversions may use the compute threads
// (tensor/threads.h) when called outside a parallel region; the span forms run on the calling
// thread only.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>

namespace ws::tensor {

// Round-to-nearest-even float -> bf16 bits.
inline uint16_t floatToBf16Bits(float value) {
    const uint32_t bits = std::bit_cast<uint32_t>(value);
    if ((bits & 0x7FFFFFFFu) > 0x7F800000u) {
        return static_cast<uint16_t>((bits >> 16) | 0x0040u);  // NaN: keep sign, force quiet
    }
    const uint32_t roundingBias = 0x7FFFu + ((bits >> 16) & 1u);
    return static_cast<uint16_t>((bits + roundingBias) >> 16);
}

inline float bf16BitsToFloat(uint16_t bits) {
    return std::bit_cast<float>(static_cast<uint32_t>(bits) << 16);
}

// The nearest bf16 value (ties to even), as a float.
inline float roundToBf16(float value) {
    return bf16BitsToFloat(floatToBf16Bits(value));
}

// Rounds data[0..count) to bf16 values in place.
void roundToBf16(float* data, size_t count);

// Packs to / unpacks from 16-bit storage (dst and src must not overlap).
void floatToBf16(const float* src, uint16_t* dst, size_t count);
void bf16ToFloat(const uint16_t* src, float* dst, size_t count);

// The same conversions on the calling thread only (inside a parallel region, e.g. packing the rows
// of a matrix). roundToBf16Span writes the rounded src to dst; dst may equal src (in place) but
// must not overlap it otherwise.
void roundToBf16Span(const float* src, float* dst, size_t count);
void floatToBf16Span(const float* src, uint16_t* dst, size_t count);
void bf16ToFloatSpan(const uint16_t* src, float* dst, size_t count);

// The scalar loops the Highway spans replaced, kept as the reference they are tested and
// benchmarked against (calling thread only; same contracts as the spans).
namespace reference {
void roundToBf16Span(const float* src, float* dst, size_t count);
void floatToBf16Span(const float* src, uint16_t* dst, size_t count);
void bf16ToFloatSpan(const uint16_t* src, float* dst, size_t count);
}  // namespace reference

}  // namespace ws::tensor
