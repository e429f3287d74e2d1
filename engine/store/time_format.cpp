// SPDX-License-Identifier: GPL-3.0-or-later
// isoUtc (see time_format.h).
#include "engine/store/time_format.h"

#include <fmt/format.h>

#include <ctime>

namespace ws::store::detail {

std::string isoUtc(std::chrono::system_clock::time_point time, bool milliseconds) {
    using namespace std::chrono;
    const auto sinceEpoch = time.time_since_epoch();
    const auto wholeSeconds = floor<seconds>(sinceEpoch);
    const std::time_t t = static_cast<std::time_t>(wholeSeconds.count());
    std::tm utc{};
    gmtime_r(&t, &utc);
    std::string text =
        fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}", utc.tm_year + 1900, utc.tm_mon + 1,
                    utc.tm_mday, utc.tm_hour, utc.tm_min, utc.tm_sec);
    if (milliseconds) {
        text += fmt::format(
            ".{:03}", duration_cast<std::chrono::milliseconds>(sinceEpoch - wholeSeconds).count());
    }
    text += 'Z';
    return text;
}

}  // namespace ws::store::detail
