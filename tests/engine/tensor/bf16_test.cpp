// bf16 rounding: ties to even, NaN, ±Inf, overflow at the top of the range, subnormals, and the
// buffer conversions agreeing with the scalar ones.
#include "engine/tensor/bf16.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

namespace ws::tensor {
namespace {

uint16_t round16(uint32_t floatBits) {
    return floatToBf16Bits(std::bit_cast<float>(floatBits));
}

TEST(Bf16Test, RoundsToNearestWithTiesToEven) {
    EXPECT_EQ(round16(0x3F800000u), 0x3F80u);              // 1.0 exact
    EXPECT_EQ(round16(0x3F807FFFu), 0x3F80u);              // just below half an ulp: down
    EXPECT_EQ(round16(0x3F808000u), 0x3F80u);              // tie, 0x3F80 is even: down
    EXPECT_EQ(round16(0x3F808001u), 0x3F81u);              // just above the tie: up
    EXPECT_EQ(round16(0x3F818000u), 0x3F82u);              // tie, 0x3F81 is odd: up to even
    EXPECT_EQ(round16(0xBF818000u), 0xBF82u);              // negative values mirror
    EXPECT_EQ(round16(0x3FFF8000u), 0x4000u);              // carry into the exponent (1.999.. -> 2)
    EXPECT_FLOAT_EQ(roundToBf16(1.00390625f), 1.0f);       // 1 + 2^-8: tie, to even
    EXPECT_FLOAT_EQ(roundToBf16(1.01171875f), 1.015625f);  // 1 + 3*2^-8: tie, to even (up)
    EXPECT_EQ(std::bit_cast<uint32_t>(roundToBf16(-0.0f)), 0x80000000u);
}

TEST(Bf16Test, KeepsNanAndInfinity) {
    const uint32_t nans[] = {0x7FC00000u, 0x7F800001u /* signalling, would truncate to Inf */,
                             0x7FFFFFFFu, 0xFF800001u, 0xFFC12345u};
    for (uint32_t bits : nans) {
        const float r = roundToBf16(std::bit_cast<float>(bits));
        EXPECT_TRUE(std::isnan(r)) << std::hex << bits;
        EXPECT_EQ(std::signbit(r), (bits >> 31) != 0) << std::hex << bits;
    }
    const float inf = std::numeric_limits<float>::infinity();
    EXPECT_EQ(roundToBf16(inf), inf);
    EXPECT_EQ(roundToBf16(-inf), -inf);
}

TEST(Bf16Test, LargestValuesRoundToInfinityOnlyPastTheLastTie) {
    const float bf16Max = bf16BitsToFloat(0x7F7Fu);  // 3.3895e38
    EXPECT_EQ(roundToBf16(bf16Max), bf16Max);
    EXPECT_EQ(round16(0x7F7F7FFFu), 0x7F7Fu);  // below the tie: stays finite
    EXPECT_EQ(round16(0x7F7F8000u), 0x7F80u);  // tie with odd 0x7F7F: up to even = +Inf
    EXPECT_EQ(roundToBf16(std::numeric_limits<float>::max()),
              std::numeric_limits<float>::infinity());
    EXPECT_EQ(roundToBf16(-std::numeric_limits<float>::max()),
              -std::numeric_limits<float>::infinity());
    EXPECT_EQ(round16(0x00008000u), 0x0000u);  // subnormal tie to even zero
    EXPECT_EQ(round16(0x00018000u), 0x0002u);  // subnormal tie to even
    EXPECT_EQ(round16(0x007FFFFFu), 0x0080u);  // largest subnormal rounds to the smallest normal
}

TEST(Bf16Test, BufferConversionsMatchScalarOnes) {
    std::mt19937 gen(42);
    const size_t n = 100003;  // large enough to run on several threads, odd to test the tail
    std::vector<float> values(n);
    for (size_t i = 0; i < n; ++i) {
        values[i] = std::bit_cast<float>(static_cast<uint32_t>(gen()));
    }
    values[0] = std::bit_cast<float>(0x7F800001u);
    values[1] = std::numeric_limits<float>::max();
    std::vector<float> rounded = values;
    roundToBf16(rounded.data(), n);
    std::vector<uint16_t> packed(n);
    floatToBf16(values.data(), packed.data(), n);
    std::vector<float> unpacked(n);
    bf16ToFloat(packed.data(), unpacked.data(), n);
    for (size_t i = 0; i < n; ++i) {
        const uint16_t expected = floatToBf16Bits(values[i]);
        ASSERT_EQ(packed[i], expected) << i;
        ASSERT_EQ(std::bit_cast<uint32_t>(rounded[i]), uint32_t(expected) << 16) << i;
        ASSERT_EQ(std::bit_cast<uint32_t>(unpacked[i]), uint32_t(expected) << 16) << i;
    }
}

}  // namespace
}  // namespace ws::tensor
