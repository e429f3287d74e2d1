// SPDX-License-Identifier: GPL-3.0-or-later
// One way to write sizes, durations and rates, for every front end (the Config tab, the fine-tune
// panel, the Wafer tab, `wafer validate`, `wafer predict`, the run log, the progress lines).
//
// The convention (stated in README.md, "Units"):
// - An amount of bytes, in memory or moved, is written in binary IEC units: B, KiB, MiB, GiB, TiB,
//   PiB (powers of 1024), so a "GiB" here is never a "GB" elsewhere. Byte rates likewise (MiB/s).
// - Everything else that counts or runs at a rate (FLOP, FLOP/s, tokens/s, parameters) uses
//   decimal SI prefixes k, M, G, T, P, E (powers of 1000), as hardware figures are published.
// - Figures carry 3 significant digits ("1.50 GiB", "12.0 MiB", "297 KiB", "1.23 ms"); whole
//   bytes and whole counts below 1000 are written whole ("1023 B", "512").
// - Durations: formatSeconds for measured or emulated times (ns to s), formatClock for an ETA or a
//   wall time ("0:42", "1:05:00"), formatRoughDuration for an estimate ("~14 min").
// NaN and infinite values give a placeholder ("--", "--:--", "?") instead of "nan".
// Thread-safe: pure functions.
#pragma once

#include <string>
#include <string_view>

namespace ws {

// 0 -> "0 B", 1023 -> "1023 B", 1024 -> "1.00 KiB", 12.5 * 2^20 -> "12.5 MiB".
std::string formatBytes(double bytes);
// formatBytes(bytesPerSecond) + "/s": "51.5 MiB/s".
std::string formatByteRate(double bytesPerSecond);
// A value with a decimal SI prefix glued to its unit: (1.4e10, "FLOP/s") -> "14.0 GFLOP/s",
// (11600, "tokens/s") -> "11.6 ktokens/s", (512, "FLOP") -> "512 FLOP".
std::string formatSi(double value, std::string_view unit);
// A count with a decimal SI prefix and no unit: 5.3e6 -> "5.30 M", 1500 -> "1.50 k", 512 -> "512".
std::string formatCount(double count);
// A precise duration: 3.2e-10 -> "0.320 ns", 1.69e-4 -> "169 µs", 0.0123 -> "12.3 ms",
// 1.5 -> "1.50 s", 0 -> "0 s", -0.002 -> "-2.00 ms", NaN -> "--". Seconds stay seconds above 60.
std::string formatSeconds(double seconds);
// An ETA or a wall time as a clock: 42.2 -> "0:42", 790 -> "13:10", 3900 -> "1:05:00";
// negative, NaN or infinite -> "--:--" (not known yet).
std::string formatClock(double seconds);
// A rough estimate: 40 -> "~40 s" (at least "~1 s"), 840 -> "~14 min", 9000 -> "~2.5 h";
// NaN or infinite -> "?".
std::string formatRoughDuration(double seconds);

}  // namespace ws
