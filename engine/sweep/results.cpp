// SPDX-License-Identifier: GPL-3.0-or-later
// Trial statuses and the μTransfer analysis (see results.h).
#include "engine/sweep/results.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "engine/config/text_format.h"

namespace ws::sweep {

namespace {
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr TrialStatus kAll[] = {TrialStatus::Running,  TrialStatus::Finished, TrialStatus::Pruned,
                                TrialStatus::Diverged, TrialStatus::Stopped,  TrialStatus::Failed};
}  // namespace

const char* trialStatusName(TrialStatus status) {
    switch (status) {
        case TrialStatus::Running:
            return "running";
        case TrialStatus::Finished:
            return "finished";
        case TrialStatus::Pruned:
            return "pruned";
        case TrialStatus::Diverged:
            return "diverged";
        case TrialStatus::Stopped:
            return "stopped";
        case TrialStatus::Failed:
            return "failed";
    }
    return "unknown";
}

std::optional<TrialStatus> parseTrialStatus(std::string_view name) {
    for (TrialStatus s : kAll)
        if (name == trialStatusName(s)) return s;
    return std::nullopt;
}

bool isSettled(TrialStatus status) {
    return status == TrialStatus::Finished || status == TrialStatus::Pruned ||
           status == TrialStatus::Diverged;
}

std::string TrialResult::param(const std::string& key) const {
    for (const auto& p : params)
        if (p.key == key) return p.value;
    return {};
}

std::vector<ParametrizationTransfer> analyzeTransfer(const std::vector<TrialResult>& trials,
                                                     const std::string& lrKey,
                                                     const std::string& widthKey) {
    // (parametrization, width, log2 lr) -> seed losses (+inf for a diverged seed).
    std::map<std::string, std::map<double, std::map<double, std::vector<double>>>> losses;
    for (const TrialResult& t : trials) {
        const double lr = log2Value(t.param(lrKey));
        const std::optional<double> width = config::parseDouble(t.param(widthKey));
        if (std::isnan(lr) || !width) continue;
        auto& seeds = losses[t.parametrization][*width][lr];
        if (t.status == TrialStatus::Diverged)
            seeds.push_back(kInf);
        else if (t.status == TrialStatus::Finished && std::isfinite(t.finalLoss))
            seeds.push_back(t.finalLoss);
        // pruned, stopped, failed, running: no comparable final loss
    }
    std::vector<ParametrizationTransfer> out;
    for (const auto& [name, byWidth] : losses) {
        ParametrizationTransfer p;
        p.parametrization = name;
        std::set<double> lrs;
        for (const auto& [width, byLr] : byWidth) {
            WidthOptimum w;
            w.width = width;
            for (const auto& [lr, seeds] : byLr) {
                lrs.insert(lr);
                if (seeds.empty()) continue;
                double sum = 0;
                for (double l : seeds) sum += l;
                const double mean = sum / double(seeds.size());
                w.lossByLog2Lr[lr] = mean;
                if (std::isnan(w.bestLoss) || mean < w.bestLoss) {  // ties: the smaller LR
                    w.bestLoss = mean;
                    w.bestLog2Lr = lr;
                }
            }
            if (std::isinf(w.bestLoss)) w.bestLog2Lr = kNaN;  // every point diverged
            p.widths.push_back(std::move(w));
        }
        for (auto it = lrs.begin(); it != lrs.end() && std::next(it) != lrs.end(); ++it) {
            const double gap = *std::next(it) - *it;
            if (std::isnan(p.gridStep) || gap < p.gridStep) p.gridStep = gap;
        }
        std::vector<double> optima;
        for (const auto& w : p.widths)
            if (!std::isnan(w.bestLog2Lr)) optima.push_back(w.bestLog2Lr);
        if (p.widths.size() < 2) {
            p.note = "one width only: no drift or transfer to measure";
        } else if (optima.size() < 2) {
            p.note = "fewer than two widths have a finished trial";
        } else {
            const auto [lo, hi] = std::minmax_element(optima.begin(), optima.end());
            p.driftSteps = std::isnan(p.gridStep) ? 0.0 : (*hi - *lo) / p.gridStep;
        }
        const WidthOptimum& narrow = p.widths.front();
        const WidthOptimum& wide = p.widths.back();
        if (p.widths.size() >= 2) {
            if (std::isnan(narrow.bestLog2Lr) || std::isnan(wide.bestLoss) ||
                std::isinf(wide.bestLoss)) {
                if (p.note.empty()) p.note = "the narrowest or widest model has no finished trial";
            } else if (auto at = wide.lossByLog2Lr.find(narrow.bestLog2Lr);
                       at == wide.lossByLog2Lr.end()) {
                p.note =
                    "the widest model has no finished trial at the narrowest model's best "
                    "learning rate (pruned or not run)";
            } else {
                p.regret = at->second - wide.bestLoss;
            }
        }
        out.push_back(std::move(p));
    }
    return out;
}

}  // namespace ws::sweep
