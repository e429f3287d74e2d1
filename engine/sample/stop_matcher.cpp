// SPDX-License-Identifier: GPL-3.0-or-later
// StopMatcher: see stop_matcher.h.
#include "engine/sample/stop_matcher.h"

#include <algorithm>

namespace ws::sample {

StopMatcher::StopMatcher(std::vector<std::string> stopStrings) {
    for (std::string& s : stopStrings)
        if (!s.empty()) m_stops.push_back(std::move(s));
}

std::string StopMatcher::push(std::string_view piece) {
    if (stopped()) return {};
    m_pending += piece;
    // The earliest stop string wins (the longest one at the same place).
    size_t at = std::string::npos;
    for (const std::string& stop : m_stops) {
        const size_t found = m_pending.find(stop);
        if (found == std::string::npos) continue;
        if (found < at || (found == at && stop.size() > m_matched.size())) {
            at = found;
            m_matched = stop;
        }
    }
    if (at != std::string::npos) {
        std::string out = m_pending.substr(0, at);
        m_pending.clear();
        return out;
    }
    // Hold back the longest tail that is a proper prefix of a stop string.
    size_t hold = 0;
    for (const std::string& stop : m_stops) {
        const size_t most = std::min(stop.size() - 1, m_pending.size());
        for (size_t n = most; n > hold; --n) {
            if (std::string_view(m_pending).substr(m_pending.size() - n) ==
                std::string_view(stop).substr(0, n)) {
                hold = n;
                break;
            }
        }
    }
    std::string out = m_pending.substr(0, m_pending.size() - hold);
    m_pending.erase(0, m_pending.size() - hold);
    return out;
}

std::string StopMatcher::finish() {
    std::string out;
    out.swap(m_pending);
    return stopped() ? std::string() : out;
}

}  // namespace ws::sample
