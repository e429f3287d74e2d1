// bfloat16 rounding: the upper 16 bits of an IEEE float, rounded to nearest with ties to even.
// NaN stays NaN (quieted, sign kept), ±Inf stays ±Inf, finite values beyond the largest bf16
// (3.3895e38) round to ±Inf, subnormals round like any other value. Mixed-precision training
// stores bf16 values in float buffers ("bf16-valued floats"), so roundToBf16() is the only
// conversion the model needs; the bit-level helpers are for checkpoints and a future bf16 GEMM.
//
// Thread-safety: pure functions. roundToBf16(buffer) may use the compute threads (tensor/threads.h)
// when called outside a parallel region.
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

}  // namespace ws::tensor
