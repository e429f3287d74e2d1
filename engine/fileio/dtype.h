// SPDX-License-Identifier: GPL-3.0-or-later
// Element types of safetensors tensors, their on-disk names and sizes, and the exact conversions
// between float and the two 16-bit float formats (IEEE f16 and bfloat16) that checkpoints use.
// Guarantees: halfToFloat/bf16ToFloat are exact (every f16/bf16 value is a float); floatToHalf and
// floatToBf16 round to nearest, ties to even, keep NaN a NaN and saturate to infinity on overflow.
// Thread-safe: pure functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace ws::fileio {

// The safetensors dtypes (names as in the format's JSON header).
enum class DType {
    Bool,
    U8,
    I8,
    F8E5M2,
    F8E4M3,
    I16,
    U16,
    F16,
    BF16,
    I32,
    U32,
    F32,
    F64,
    I64,
    U64,
};

// "F32", "BF16", "F8_E4M3", ... exactly as written in safetensors headers.
std::string_view dtypeName(DType dtype);
// Inverse of dtypeName; nullopt for a name the format (or this build) does not know.
std::optional<DType> dtypeFromName(std::string_view name);
// Bytes per element (1, 2, 4 or 8).
size_t dtypeSize(DType dtype);
// Comma-separated list of every known name, for error messages.
std::string_view knownDtypeNames();

float halfToFloat(uint16_t bits);
float bf16ToFloat(uint16_t bits);
uint16_t floatToHalf(float value);
uint16_t floatToBf16(float value);

}  // namespace ws::fileio
