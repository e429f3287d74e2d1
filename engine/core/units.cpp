// SPDX-License-Identifier: GPL-3.0-or-later
// Sizes, durations and rates as text (see units.h for the convention).
#include "engine/core/units.h"

#include <algorithm>
#include <cmath>
#include <cstdint>

#include <fmt/format.h>

namespace ws {
namespace {

// Decimals that give `m` (>= 0, finite) 3 significant digits, after rounding: 9.996 is "10.0".
int significantDecimals(double m) {
    if (m == 0) return 0;
    const int exponent = int(std::floor(std::log10(m)));
    int decimals = std::clamp(2 - exponent, 0, 12);
    const double scale = std::pow(10.0, decimals);
    if (decimals > 0 && std::round(m * scale) / scale >= std::pow(10.0, exponent + 1)) --decimals;
    return decimals;
}

// `m` to 3 significant digits, or whole when `whole` and it is an integer below 1000.
std::string threeDigits(double m, bool whole) {
    if (whole && m == std::floor(m) && m < 1000) return fmt::format("{:.0f}", m);
    return fmt::format("{:.{}f}", m, significantDecimals(m));
}

// True when `m` written with 3 significant digits reads `limit` or more (999.7 -> "1000").
bool roundsUpTo(double m, double limit) {
    const double scale = std::pow(10.0, significantDecimals(m));
    return std::round(m * scale) / scale >= limit;
}

// `value` with the largest of `prefixes` (powers of `base`) that keeps its digits below `base`.
std::string scaledText(double value, double base, const char* const* prefixes, int count,
                       std::string_view unit) {
    if (std::isnan(value)) return "--";
    const char* sign = value < 0 ? "-" : "";
    double m = std::fabs(value);
    if (std::isinf(m)) return fmt::format("{}inf {}{}", sign, prefixes[0], unit);
    int i = 0;
    while (i + 1 < count && (m >= base || roundsUpTo(m, base))) {
        m /= base;
        ++i;
    }
    const std::string digits = threeDigits(m, i == 0);
    const char* space = prefixes[i][0] == '\0' && unit.empty() ? "" : " ";
    return fmt::format("{}{}{}{}{}", sign, digits, space, prefixes[i], unit);
}

constexpr const char* kBinary[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
constexpr const char* kDecimal[] = {"", "k", "M", "G", "T", "P", "E"};

}  // namespace

std::string formatBytes(double bytes) {
    return scaledText(bytes, 1024.0, kBinary, int(std::size(kBinary)), "");
}

std::string formatByteRate(double bytesPerSecond) {
    return formatBytes(bytesPerSecond) + "/s";
}

std::string formatSi(double value, std::string_view unit) {
    return scaledText(value, 1000.0, kDecimal, int(std::size(kDecimal)), unit);
}

std::string formatCount(double count) {
    return scaledText(count, 1000.0, kDecimal, int(std::size(kDecimal)), "");
}

std::string formatSeconds(double seconds) {
    if (!std::isfinite(seconds)) return "--";
    if (seconds == 0) return "0 s";
    const char* sign = seconds < 0 ? "-" : "";
    const double s = std::fabs(seconds);
    struct Unit {
        double size;
        const char* name;
    };
    constexpr Unit units[] = {{1.0, "s"}, {1e-3, "ms"}, {1e-6, "µs"}, {1e-9, "ns"}};
    for (const Unit& u : units) {
        const double m = s / u.size;
        // The first unit the value reaches, counting 999.7 µs as 1.00 ms; below 1 ns, ns.
        if (m >= 1 || roundsUpTo(m, 1.0) || &u == &units[std::size(units) - 1])
            return fmt::format("{}{} {}", sign, threeDigits(m, false), u.name);
    }
    return {};  // not reached: the last unit always answers
}

std::string formatClock(double seconds) {
    if (!std::isfinite(seconds) || seconds < 0 || seconds > 9e18) return "--:--";
    const auto s = int64_t(seconds + 0.5);
    if (s >= 3600) return fmt::format("{}:{:02}:{:02}", s / 3600, (s / 60) % 60, s % 60);
    return fmt::format("{}:{:02}", s / 60, s % 60);
}

std::string formatRoughDuration(double seconds) {
    if (!std::isfinite(seconds)) return "?";
    if (seconds < 90) return fmt::format("~{:.0f} s", std::max(1.0, std::round(seconds)));
    if (seconds < 5400) return fmt::format("~{:.0f} min", std::round(seconds / 60));
    return fmt::format("~{:.1f} h", seconds / 3600);
}

}  // namespace ws
