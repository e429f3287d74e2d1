// SPDX-License-Identifier: GPL-3.0-or-later
// bf16 rounding: ties to even, NaN, ±Inf, overflow at the top of the range, subnormals, and the
// buffer conversions (Highway, on every SIMD target this CPU can run, and the scalar reference
// loops) agreeing with the scalar functions bit for bit: they are integer operations, so there is
// no tolerance.
#include "engine/tensor/bf16.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "engine/tensor/simd.h"

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

// Float bit patterns covering every case of the rounding, then a sweep of random patterns.
std::vector<uint32_t> interestingPatterns() {
    std::vector<uint32_t> bits = {
        0x00000000u, 0x80000000u,  // ±0
        0x00000001u, 0x80000001u, 0x00007FFFu,
        0x00008000u,  // smallest subnormals, a tie to 0
        0x00008001u, 0x00018000u, 0x807FFFFFu,
        0x007FFFFFu,               // subnormal ties, largest subnormal
        0x00800000u, 0x80800000u,  // smallest normals
        0x3F800000u, 0x3F807FFFu, 0x3F808000u,
        0x3F808001u,  // 1.0, below / at / above the tie
        0x3F818000u, 0xBF818000u, 0x3F817FFFu,
        0x3FFF8000u,  // tie up to even, carry to exponent
        0x7F7F0000u, 0x7F7F7FFFu, 0x7F7F8000u,
        0x7F7FFFFFu,                            // largest bf16, ties to +Inf, max float
        0xFF7F7FFFu, 0xFF7F8000u, 0xFF7FFFFFu,  // the same, negative
        0x7F800000u, 0xFF800000u,               // ±Inf
        0x7F800001u, 0xFF800001u, 0x7F80FFFFu,
        0x7FBFFFFFu,  // signalling NaNs with payloads
        0x7FC00000u, 0xFFC00000u, 0x7FC12345u,
        0xFFC18000u,  // quiet NaNs with payloads
        0x7FFFFFFFu, 0xFFFFFFFFu, 0x7FFF8000u,
        0xFFFF7FFFu,  // all-ones payloads
    };
    // Every bf16 value with the low halves that decide the rounding: exact, just below, at and just
    // above the tie, and the largest.
    for (uint32_t high = 0; high <= 0xFFFFu; ++high) {
        for (uint32_t low : {0x0000u, 0x7FFFu, 0x8000u, 0x8001u, 0xFFFFu}) {
            bits.push_back(high << 16 | low);
        }
    }
    std::mt19937 gen(2026);
    for (int i = 0; i < 1'000'000; ++i) bits.push_back(static_cast<uint32_t>(gen()));
    return bits;
}

class Bf16Simd : public ::testing::Test {
protected:
    void TearDown() override { simdForceTarget(0); }
};

// Runs convert over [0, n) in uneven spans that start at every alignment, so full vectors, tails of
// every length and unaligned starts are all exercised.
template <typename Convert>
void inUnevenSpans(size_t n, Convert convert) {
    size_t begin = 0;
    for (size_t len = 1; begin < n; len = len * 3 % 1031 + 1) {
        const size_t count = std::min(len, n - begin);
        convert(begin, count);
        begin += count;
    }
}

TEST_F(Bf16Simd, ConversionsMatchScalarBitForBitOnEveryTarget) {
    const std::vector<uint32_t> patterns = interestingPatterns();
    const size_t n = patterns.size();
    std::vector<float> values(n);
    std::vector<uint16_t> want(n);
    for (size_t i = 0; i < n; ++i) {
        values[i] = std::bit_cast<float>(patterns[i]);
        want[i] = floatToBf16Bits(values[i]);
    }
    std::vector<uint16_t> allBf16(0x10000);
    for (uint32_t b = 0; b <= 0xFFFFu; ++b) allBf16[b] = uint16_t(b);

    const auto check = [&](const std::string& where, const std::vector<float>& rounded,
                           const std::vector<float>& roundedInPlace,
                           const std::vector<uint16_t>& packed,
                           const std::vector<float>& unpacked) {
        for (size_t i = 0; i < n; ++i) {
            const uint32_t wantBits = uint32_t(want[i]) << 16;
            ASSERT_EQ(packed[i], want[i]) << where << " pack " << std::hex << patterns[i];
            ASSERT_EQ(std::bit_cast<uint32_t>(rounded[i]), wantBits)
                << where << " round " << std::hex << patterns[i];
            ASSERT_EQ(std::bit_cast<uint32_t>(roundedInPlace[i]), wantBits)
                << where << " round in place " << std::hex << patterns[i];
        }
        for (uint32_t b = 0; b <= 0xFFFFu; ++b) {
            ASSERT_EQ(std::bit_cast<uint32_t>(unpacked[b]), b << 16) << where << " unpack " << b;
        }
    };

    std::vector<float> rounded(n), inPlace(n), unpacked(0x10000);
    std::vector<uint16_t> packed(n);
    // The scalar reference loops.
    inPlace = values;
    inUnevenSpans(n, [&](size_t b, size_t c) {
        reference::roundToBf16Span(values.data() + b, rounded.data() + b, c);
        reference::roundToBf16Span(inPlace.data() + b, inPlace.data() + b, c);
        reference::floatToBf16Span(values.data() + b, packed.data() + b, c);
    });
    reference::bf16ToFloatSpan(allBf16.data(), unpacked.data(), allBf16.size());
    check("reference", rounded, inPlace, packed, unpacked);

    for (int64_t target : simdRunnableTargets()) {
        simdForceTarget(target);
        const std::string name = simdTargetLabel(target);
        std::fill(rounded.begin(), rounded.end(), 0.0f);
        std::fill(packed.begin(), packed.end(), uint16_t(0));
        std::fill(unpacked.begin(), unpacked.end(), 0.0f);
        inPlace = values;
        inUnevenSpans(n, [&](size_t b, size_t c) {
            roundToBf16Span(values.data() + b, rounded.data() + b, c);
            roundToBf16Span(inPlace.data() + b, inPlace.data() + b, c);
            floatToBf16Span(values.data() + b, packed.data() + b, c);
        });
        inUnevenSpans(allBf16.size(), [&](size_t b, size_t c) {
            bf16ToFloatSpan(allBf16.data() + b, unpacked.data() + b, c);
        });
        check(name + " spans", rounded, inPlace, packed, unpacked);

        // The threaded buffer forms on the same target.
        inPlace = values;
        roundToBf16(inPlace.data(), n);
        floatToBf16(values.data(), packed.data(), n);
        bf16ToFloat(allBf16.data(), unpacked.data(), allBf16.size());
        for (size_t i = 0; i < n; ++i) rounded[i] = bf16BitsToFloat(packed[i]);
        check(name + " buffers", rounded, inPlace, packed, unpacked);
    }
}

}  // namespace
}  // namespace ws::tensor
