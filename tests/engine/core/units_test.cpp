// SPDX-License-Identifier: GPL-3.0-or-later
// The one convention for sizes, durations and rates (engine/core/units.h).
#include "engine/core/units.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace ws {
namespace {

constexpr double kNan = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

TEST(FormatBytes, BinaryUnitsWithThreeSignificantDigits) {
    EXPECT_EQ(formatBytes(0), "0 B");
    EXPECT_EQ(formatBytes(1), "1 B");
    EXPECT_EQ(formatBytes(1023), "1023 B");
    EXPECT_EQ(formatBytes(1024), "1.00 KiB");
    EXPECT_EQ(formatBytes(1536), "1.50 KiB");
    EXPECT_EQ(formatBytes(297.0 * 1024), "297 KiB");
    EXPECT_EQ(formatBytes(12.0 * (1 << 20)), "12.0 MiB");
    EXPECT_EQ(formatBytes(1.5 * (1 << 30)), "1.50 GiB");
    EXPECT_EQ(formatBytes(2.0 * (1ll << 40)), "2.00 TiB");
    // A GiB is 1024 MiB, never 1000: 1e9 bytes is 954 MiB, not "1 GB".
    EXPECT_EQ(formatBytes(1e9), "954 MiB");
    EXPECT_EQ(formatBytes(1000.0 * (1 << 20)), "1000 MiB");
}

TEST(FormatBytes, RoundingNeverWritesAFullUnitInTheSmallerOne) {
    EXPECT_EQ(formatBytes(1023.7), "1.00 KiB");
    EXPECT_EQ(formatBytes(1024.0 * 1024 - 1), "1.00 MiB");
    EXPECT_EQ(formatBytes(9.999 * 1024), "10.0 KiB");
    EXPECT_EQ(formatBytes(99.96 * 1024), "100 KiB");
}

TEST(FormatBytes, HugeNegativeAndUndefined) {
    EXPECT_EQ(formatBytes(std::pow(1024.0, 6)), "1.00 EiB");
    EXPECT_EQ(formatBytes(4096.0 * std::pow(1024.0, 6)), "4096 EiB");  // the largest unit stays
    EXPECT_EQ(formatBytes(-2048), "-2.00 KiB");
    EXPECT_EQ(formatBytes(kNan), "--");
    EXPECT_EQ(formatBytes(kInf), "inf B");
    EXPECT_EQ(formatByteRate(51.5 * (1 << 20)), "51.5 MiB/s");
}

TEST(FormatSi, DecimalPrefixesGluedToTheUnit) {
    EXPECT_EQ(formatSi(0, "FLOP/s"), "0 FLOP/s");
    EXPECT_EQ(formatSi(512, "FLOP"), "512 FLOP");
    EXPECT_EQ(formatSi(999, "FLOP"), "999 FLOP");
    EXPECT_EQ(formatSi(999.7, "FLOP"), "1.00 kFLOP");
    EXPECT_EQ(formatSi(1000, "FLOP"), "1.00 kFLOP");
    EXPECT_EQ(formatSi(1.4e10, "FLOP/s"), "14.0 GFLOP/s");
    EXPECT_EQ(formatSi(11600, "tokens/s"), "11.6 ktokens/s");
    EXPECT_EQ(formatSi(2.5, "tokens/s"), "2.50 tokens/s");
    EXPECT_EQ(formatSi(0.125, "tokens/s"), "0.125 tokens/s");
    EXPECT_EQ(formatSi(-3e6, "B/s"), "-3.00 MB/s");
    EXPECT_EQ(formatSi(kNan, "FLOP"), "--");
}

TEST(FormatCount, NoUnitNoTrailingSpace) {
    EXPECT_EQ(formatCount(0), "0");
    EXPECT_EQ(formatCount(512), "512");
    EXPECT_EQ(formatCount(1500), "1.50 k");
    EXPECT_EQ(formatCount(5.3e6), "5.30 M");
    EXPECT_EQ(formatCount(1.3e12), "1.30 T");
}

TEST(FormatSeconds, FromNanosecondsToSeconds) {
    EXPECT_EQ(formatSeconds(0), "0 s");
    EXPECT_EQ(formatSeconds(3.2e-10), "0.320 ns");
    EXPECT_EQ(formatSeconds(4e-9), "4.00 ns");
    EXPECT_EQ(formatSeconds(1.69e-4), "169 µs");
    EXPECT_EQ(formatSeconds(0.0123), "12.3 ms");
    EXPECT_EQ(formatSeconds(0.99996), "1.00 s");
    EXPECT_EQ(formatSeconds(9.9996e-4), "1.00 ms");
    EXPECT_EQ(formatSeconds(1.5), "1.50 s");
    EXPECT_EQ(formatSeconds(3725), "3725 s");  // a step time stays in seconds
}

TEST(FormatSeconds, NegativeAndUndefined) {
    EXPECT_EQ(formatSeconds(-0.002), "-2.00 ms");
    EXPECT_EQ(formatSeconds(kNan), "--");
    EXPECT_EQ(formatSeconds(kInf), "--");
    EXPECT_EQ(formatSeconds(-kInf), "--");
}

TEST(FormatClock, MinutesThenHours) {
    EXPECT_EQ(formatClock(0), "0:00");
    EXPECT_EQ(formatClock(42.2), "0:42");
    EXPECT_EQ(formatClock(59.5), "1:00");
    EXPECT_EQ(formatClock(13 * 60 + 10), "13:10");
    EXPECT_EQ(formatClock(3599.4), "59:59");
    EXPECT_EQ(formatClock(3900), "1:05:00");
    EXPECT_EQ(formatClock(100 * 3600.0), "100:00:00");
}

TEST(FormatClock, UnknownIsAPlaceholder) {
    EXPECT_EQ(formatClock(kNan), "--:--");
    EXPECT_EQ(formatClock(-1), "--:--");
    EXPECT_EQ(formatClock(kInf), "--:--");
    EXPECT_EQ(formatClock(1e300), "--:--");  // no overflow into a negative clock
}

TEST(FormatRoughDuration, SecondsMinutesHours) {
    EXPECT_EQ(formatRoughDuration(0), "~1 s");
    EXPECT_EQ(formatRoughDuration(40.4), "~40 s");
    EXPECT_EQ(formatRoughDuration(89), "~89 s");
    EXPECT_EQ(formatRoughDuration(90), "~2 min");
    EXPECT_EQ(formatRoughDuration(840), "~14 min");
    EXPECT_EQ(formatRoughDuration(9000), "~2.5 h");
    EXPECT_EQ(formatRoughDuration(kNan), "?");
    EXPECT_EQ(formatRoughDuration(kInf), "?");
}

}  // namespace
}  // namespace ws
