// SPDX-License-Identifier: GPL-3.0-or-later
// AshaScheduler (see asha.h).
#include "engine/sweep/asha.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace ws::sweep {

AshaScheduler::AshaScheduler(std::vector<int64_t> rungs, int reductionFactor)
    : m_rungs(std::move(rungs)), m_eta(std::max(2, reductionFactor)) {}

bool AshaScheduler::isRung(int64_t step) const {
    return std::find(m_rungs.begin(), m_rungs.end(), step) != m_rungs.end();
}

void AshaScheduler::restore(const std::string& group, int trial, int64_t step, double loss) {
    auto& entries = m_recorded[{group, step}];
    for (const Entry& e : entries)
        if (e.trial == trial) return;
    entries.push_back({trial, loss});
}

RungDecision AshaScheduler::atRung(const std::string& group, int trial, int64_t step, double loss) {
    restore(group, trial, step, loss);
    const auto& entries = m_recorded[{group, step}];
    const size_t n = entries.size();
    if (n < size_t(m_eta)) return {};
    const size_t keep = std::max<size_t>(1, n / size_t(m_eta));
    auto worse = [](double a, double b) {  // a ranks below b; NaN ranks below everything
        if (std::isnan(a)) return !std::isnan(b);
        return !std::isnan(b) && a > b;
    };
    size_t better = 0;  // trials strictly better than this one
    for (const Entry& e : entries)
        if (e.trial != trial && worse(loss, e.loss)) ++better;
    if (better < keep) return {};
    std::vector<double> losses;
    for (const Entry& e : entries) losses.push_back(e.loss);
    std::sort(losses.begin(), losses.end(), [&](double a, double b) { return worse(b, a); });
    return {true, fmt::format("early stopping at rung {}: loss {:.4f} ranks {} of {} trials "
                              "there{}; only the best {} continue (cut-off {:.4f})",
                              step, loss, better + 1, n,
                              group.empty() ? std::string() : " in group " + group, keep,
                              losses[keep - 1])};
}

}  // namespace ws::sweep
