// SPDX-License-Identifier: GPL-3.0-or-later
// Kill points (see kill_points.h).
#include "engine/core/kill_points.h"

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <string>

namespace ws {

namespace {

struct KillPlan {
    std::string point;  // empty: inert
    int64_t visit = 0;  // the N of <point>:<N>
    std::atomic<int64_t> visits{0};
};

KillPlan& plan() {
    static KillPlan* parsed = [] {
        auto* p = new KillPlan();  // never freed: kill points may run during static destruction
        const char* value = std::getenv("WAFER_TEST_KILL_AT");
        if (!value) return p;
        const std::string text(value);
        const size_t colon = text.rfind(':');
        if (colon == std::string::npos || colon == 0) return p;
        char* end = nullptr;
        const long long n = std::strtoll(text.c_str() + colon + 1, &end, 10);
        if (end == text.c_str() + colon + 1 || *end != '\0' || n < 1) return p;
        p->point = text.substr(0, colon);
        p->visit = n;
        return p;
    }();
    return *parsed;
}

}  // namespace

void killPoint(std::string_view point) {
    KillPlan& p = plan();
    if (p.point.empty() || point != p.point) return;
    if (p.visits.fetch_add(1, std::memory_order_relaxed) + 1 == p.visit) {
        ::kill(::getpid(), SIGKILL);
        ::pause();  // SIGKILL cannot be caught; this thread never goes on
    }
}

}  // namespace ws
