// SPDX-License-Identifier: GPL-3.0-or-later
// f16/bf16 conversions: exact widening (checked against an independent ldexp formula for every
// bit pattern) and round-to-nearest-even narrowing (checked at every midpoint between neighbours).
#include "engine/fileio/dtype.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>

namespace ws::fileio {
namespace {

TEST(DType, NamesAndSizesRoundTrip) {
    for (auto d : {DType::Bool, DType::U8, DType::I8, DType::F8E5M2, DType::F8E4M3, DType::I16,
                   DType::U16, DType::F16, DType::BF16, DType::I32, DType::U32, DType::F32,
                   DType::F64, DType::I64, DType::U64}) {
        auto back = dtypeFromName(dtypeName(d));
        ASSERT_TRUE(back.has_value()) << dtypeName(d);
        EXPECT_EQ(*back, d);
    }
    EXPECT_EQ(dtypeName(DType::F8E4M3), "F8_E4M3");
    EXPECT_EQ(dtypeSize(DType::BF16), 2u);
    EXPECT_EQ(dtypeSize(DType::F64), 8u);
    EXPECT_EQ(dtypeSize(DType::Bool), 1u);
    EXPECT_FALSE(dtypeFromName("F33").has_value());
    EXPECT_FALSE(dtypeFromName("f32").has_value());
}

TEST(DType, HalfKnownValues) {
    EXPECT_EQ(floatToHalf(1.0f), 0x3c00);
    EXPECT_EQ(floatToHalf(-2.0f), 0xc000);
    EXPECT_EQ(floatToHalf(65504.0f), 0x7bff);
    EXPECT_EQ(floatToHalf(65519.0f), 0x7bff);
    EXPECT_EQ(floatToHalf(65520.0f), 0x7c00);  // the tie rounds to even, which is infinity
    EXPECT_EQ(floatToHalf(0.1f), 0x2e66);
    EXPECT_EQ(floatToHalf(std::ldexp(1.0f, -14)), 0x0400);  // smallest normal
    EXPECT_EQ(floatToHalf(std::ldexp(1.0f, -24)), 0x0001);  // smallest subnormal
    EXPECT_EQ(floatToHalf(std::ldexp(1.0f, -25)), 0x0000);  // tie between 0 and 2^-24: even
    EXPECT_EQ(floatToHalf(std::ldexp(3.0f, -26)), 0x0001);  // 0.75 ulp rounds up
    EXPECT_EQ(floatToHalf(-0.0f), 0x8000);
    EXPECT_EQ(floatToHalf(std::numeric_limits<float>::infinity()), 0x7c00);
    EXPECT_EQ(floatToHalf(-std::numeric_limits<float>::infinity()), 0xfc00);
    EXPECT_EQ(floatToHalf(1e10f), 0x7c00);
    const uint16_t nan = floatToHalf(std::numeric_limits<float>::quiet_NaN());
    EXPECT_EQ(nan & 0x7c00, 0x7c00);
    EXPECT_NE(nan & 0x03ff, 0);

    EXPECT_EQ(halfToFloat(0x3555), 0.333251953125f);
    EXPECT_EQ(halfToFloat(0x7bff), 65504.0f);
    EXPECT_EQ(halfToFloat(0x0001), std::ldexp(1.0f, -24));
    EXPECT_EQ(halfToFloat(0x03ff), std::ldexp(1023.0f, -24));
    EXPECT_EQ(halfToFloat(0xfc00), -std::numeric_limits<float>::infinity());
    EXPECT_TRUE(std::isnan(halfToFloat(0x7e00)));
    EXPECT_TRUE(std::signbit(halfToFloat(0x8000)));
}

TEST(DType, Bf16KnownValues) {
    EXPECT_EQ(floatToBf16(1.0f), 0x3f80);
    EXPECT_EQ(floatToBf16(-2.0f), 0xc000);
    EXPECT_EQ(floatToBf16(3.140625f), 0x4049);
    EXPECT_EQ(floatToBf16(1.00390625f), 0x3f80);  // 1 + 2^-8: tie, even is 1.0
    EXPECT_EQ(floatToBf16(1.01171875f), 0x3f82);  // 1 + 3*2^-8: tie, even is 1.015625
    EXPECT_EQ(floatToBf16(std::numeric_limits<float>::max()), 0x7f80);  // rounds to infinity
    EXPECT_EQ(floatToBf16(-std::numeric_limits<float>::infinity()), 0xff80);
    // A NaN whose payload is only in the low bits must not become infinity.
    const uint16_t nan = floatToBf16(std::bit_cast<float>(0x7f800001u));
    EXPECT_TRUE(std::isnan(bf16ToFloat(nan)));
    EXPECT_EQ(bf16ToFloat(0x4049), 3.140625f);
    EXPECT_EQ(bf16ToFloat(0xbf80), -1.0f);
}

// Independent definition of an IEEE binary16 value.
double halfReference(uint16_t h) {
    const int sign = (h >> 15) ? -1 : 1;
    const int exponent = (h >> 10) & 0x1f;
    const int mantissa = h & 0x3ff;
    if (exponent == 0) return sign * std::ldexp(mantissa, -24);
    return sign * std::ldexp(1024 + mantissa, exponent - 25);
}

TEST(DType, HalfWideningIsExactForEveryBitPattern) {
    for (uint32_t h = 0; h <= 0xffff; ++h) {
        const auto bits = static_cast<uint16_t>(h);
        const float f = halfToFloat(bits);
        if (((h >> 10) & 0x1f) == 0x1f) {
            EXPECT_EQ(std::isnan(f), (h & 0x3ff) != 0) << std::hex << h;
            continue;
        }
        ASSERT_EQ(static_cast<double>(f), halfReference(bits)) << std::hex << h;
        ASSERT_EQ(floatToHalf(f), bits) << std::hex << h;  // narrowing an exact value is exact
    }
}

TEST(DType, Bf16WideningIsExactForEveryBitPattern) {
    for (uint32_t b = 0; b <= 0xffff; ++b) {
        const auto bits = static_cast<uint16_t>(b);
        const float f = bf16ToFloat(bits);
        if (std::isnan(f)) continue;
        ASSERT_EQ(floatToBf16(f), bits) << std::hex << b;
    }
}

// Between consecutive finite positive values lo < hi, the midpoint goes to the even one, and
// the floats just either side of it go to the nearer one.
template <typename Widen, typename Narrow>
void checkMidpoints(uint16_t lastFinite, Widen widen, Narrow narrow) {
    for (uint16_t lo = 0; lo < lastFinite; ++lo) {
        const uint16_t hi = static_cast<uint16_t>(lo + 1);
        const float a = widen(lo), b = widen(hi);
        const float mid = a + (b - a) / 2;  // exact (one bit more than 16-bit); no overflow
        ASSERT_EQ(narrow(mid), (lo & 1) ? hi : lo) << std::hex << lo;
        ASSERT_EQ(narrow(std::nextafter(mid, b)), hi) << std::hex << lo;
        ASSERT_EQ(narrow(std::nextafter(mid, a)), lo) << std::hex << lo;
    }
}

TEST(DType, HalfNarrowingRoundsToNearestEven) {
    checkMidpoints(0x7bff, halfToFloat, floatToHalf);
}

TEST(DType, Bf16NarrowingRoundsToNearestEven) {
    checkMidpoints(0x7f7f, bf16ToFloat, floatToBf16);
}

}  // namespace
}  // namespace ws::fileio
