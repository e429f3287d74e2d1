// SPDX-License-Identifier: GPL-3.0-or-later
// SweepPoints: see sweep_points.h.
#include "ui/sweeps/sweep_points.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include <cstdio>
namespace ws::ui {

double SweepPoint::mean() const {
    if (losses.empty()) return std::nan("");
    return std::accumulate(losses.begin(), losses.end(), 0.0) / double(losses.size());
}
double SweepPoint::min() const {
    return losses.empty() ? std::nan("") : *std::min_element(losses.begin(), losses.end());
}
double SweepPoint::max() const {
    return losses.empty() ? std::nan("") : *std::max_element(losses.begin(), losses.end());
}
double SweepPoint::sd() const {
    if (losses.size() < 2) return 0.0;
    const double m = mean();
    double sum = 0.0;
    for (double l : losses) sum += (l - m) * (l - m);
    return std::sqrt(sum / double(losses.size() - 1));
}

std::vector<SweepPanelData> groupSweepPoints(const std::vector<sweep::TrialResult>& trials,
                                             const std::vector<std::string>& parametrizations) {
    // parametrization -> width -> log2 lr -> point
    std::map<std::string, std::map<double, std::map<double, SweepPoint>>> grouped;
    std::vector<std::string> order = parametrizations;
    if (order.empty()) order.push_back("");
    for (const auto& t : trials) {
        const double l2 = sweep::log2Value(t.param(kLrKey));
        const std::string w = t.param(kWidthKey);
        if (!std::isfinite(l2) || w.empty()) continue;
        const double width = std::strtod(w.c_str(), nullptr);
        if (std::find(order.begin(), order.end(), t.parametrization) == order.end())
            order.push_back(t.parametrization);
        SweepPoint& p = grouped[t.parametrization][width][l2];
        p.log2Lr = l2;
        if (t.status == sweep::TrialStatus::Diverged) {
            ++p.diverged;
        } else if (t.status == sweep::TrialStatus::Pruned) {
            ++p.pruned;
        } else if (t.status == sweep::TrialStatus::Finished && std::isfinite(t.finalLoss)) {
            p.losses.push_back(t.finalLoss);
        }
    }
    std::vector<SweepPanelData> panels;
    for (const auto& name : order) {
        SweepPanelData panel;
        panel.parametrization = name;
        for (const auto& [width, byLr] : grouped[name]) {
            SweepWidthCurve curve;
            curve.width = width;
            for (const auto& [l2, point] : byLr) curve.points.push_back(point);
            panel.curves.push_back(std::move(curve));
        }
        panels.push_back(std::move(panel));
    }
    return panels;
}

std::string learningRateLabel(double log2Lr) {
    if (std::abs(log2Lr - std::round(log2Lr)) < 1e-9)
        return "2^" + std::to_string(std::lround(log2Lr));
    char text[32];
    std::snprintf(text, sizeof text, "%g", std::exp2(log2Lr));
    return text;
}

}  // namespace ws::ui
