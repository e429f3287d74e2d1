// SPDX-License-Identifier: GPL-3.0-or-later
// dtype names and sizes, and the f16/bf16 <-> f32 bit conversions (see dtype.h).
#include "engine/fileio/dtype.h"

#include <array>
#include <bit>
#include <cstring>

namespace ws::fileio {

namespace {
struct DTypeEntry {
    DType dtype;
    std::string_view name;
    size_t size;
};

constexpr std::array<DTypeEntry, 15> kDTypes{{
    {DType::Bool, "BOOL", 1},
    {DType::U8, "U8", 1},
    {DType::I8, "I8", 1},
    {DType::F8E5M2, "F8_E5M2", 1},
    {DType::F8E4M3, "F8_E4M3", 1},
    {DType::I16, "I16", 2},
    {DType::U16, "U16", 2},
    {DType::F16, "F16", 2},
    {DType::BF16, "BF16", 2},
    {DType::I32, "I32", 4},
    {DType::U32, "U32", 4},
    {DType::F32, "F32", 4},
    {DType::F64, "F64", 8},
    {DType::I64, "I64", 8},
    {DType::U64, "U64", 8},
}};

const DTypeEntry& entry(DType dtype) {
    for (const auto& e : kDTypes) {
        if (e.dtype == dtype) return e;
    }
    return kDTypes[0];  // unreachable for a valid enum value
}
}  // namespace

std::string_view dtypeName(DType dtype) {
    return entry(dtype).name;
}
size_t dtypeSize(DType dtype) {
    return entry(dtype).size;
}

std::optional<DType> dtypeFromName(std::string_view name) {
    for (const auto& e : kDTypes) {
        if (e.name == name) return e.dtype;
    }
    return std::nullopt;
}

std::string_view knownDtypeNames() {
    return "BOOL, U8, I8, F8_E5M2, F8_E4M3, I16, U16, F16, BF16, I32, U32, F32, F64, I64, U64";
}

float bf16ToFloat(uint16_t bits) {
    return std::bit_cast<float>(uint32_t{bits} << 16);
}

uint16_t floatToBf16(float value) {
    const uint32_t bits = std::bit_cast<uint32_t>(value);
    // A NaN whose payload sits only in the low 16 bits would round to infinity: force it quiet.
    if ((bits & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((bits >> 16) | 0x0040u);
    const uint32_t roundingBias = 0x7fffu + ((bits >> 16) & 1u);
    return static_cast<uint16_t>((bits + roundingBias) >> 16);
}

float halfToFloat(uint16_t bits) {
    const uint32_t sign = uint32_t{bits & 0x8000u} << 16;
    const uint32_t exponent = (bits >> 10) & 0x1fu;
    uint32_t mantissa = bits & 0x3ffu;
    if (exponent == 0x1f) {  // inf / NaN keep their payload
        return std::bit_cast<float>(sign | 0x7f800000u | (mantissa << 13));
    }
    if (exponent != 0) {
        return std::bit_cast<float>(sign | ((exponent + 112u) << 23) | (mantissa << 13));
    }
    if (mantissa == 0) return std::bit_cast<float>(sign);
    // Subnormal half: normalise into a float, which has the range to represent it exactly.
    int shift = 0;
    while ((mantissa & 0x400u) == 0) {
        mantissa <<= 1;
        ++shift;
    }
    mantissa &= 0x3ffu;
    const uint32_t floatExponent = static_cast<uint32_t>(113 - shift);
    return std::bit_cast<float>(sign | (floatExponent << 23) | (mantissa << 13));
}

uint16_t floatToHalf(float value) {
    const uint32_t bits = std::bit_cast<uint32_t>(value);
    const uint16_t sign = static_cast<uint16_t>((bits >> 16) & 0x8000u);
    const uint32_t magnitude = bits & 0x7fffffffu;
    if (magnitude > 0x7f800000u) {  // NaN: keep the top payload bits, stay quiet
        return static_cast<uint16_t>(sign | 0x7e00u | ((magnitude >> 13) & 0x3ffu));
    }
    if (magnitude >= 0x477ff000u) {  // >= 65520 rounds past the largest half (65504)
        return static_cast<uint16_t>(sign | 0x7c00u);
    }
    if (magnitude < 0x38800000u) {  // below the smallest normal half (2^-14): subnormal or zero
        if (magnitude < 0x33000000u) return sign;  // < 2^-25 rounds to zero (2^-25 itself too)
        const uint32_t exponent = magnitude >> 23;
        const uint32_t mantissa = (magnitude & 0x7fffffu) | 0x800000u;
        // value = mantissa * 2^(exponent-150); a half subnormal unit is 2^-24.
        const uint32_t shift = 126u - exponent;  // 14..24 here
        uint32_t half = mantissa >> shift;
        const uint32_t remainder = mantissa & ((1u << shift) - 1u);
        const uint32_t halfway = 1u << (shift - 1u);
        if (remainder > halfway || (remainder == halfway && (half & 1u))) ++half;
        return static_cast<uint16_t>(sign | half);
    }
    // Normal range: rebias the exponent (127 -> 15) and round the 13 dropped mantissa bits.
    uint32_t half = ((magnitude >> 13) - (112u << 10));
    const uint32_t remainder = magnitude & 0x1fffu;
    if (remainder > 0x1000u || (remainder == 0x1000u && (half & 1u))) ++half;  // may carry to inf
    return static_cast<uint16_t>(sign | half);
}

}  // namespace ws::fileio
