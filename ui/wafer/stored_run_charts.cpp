// SPDX-License-Identifier: GPL-3.0-or-later
// Stored-run charts: see stored_run_charts.h.
#include "ui/wafer/stored_run_charts.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "engine/store/run_store.h"

namespace ws::ui {

std::optional<RecordedRouting> readRecordedRouting(const store::RunStore& store, int64_t run,
                                                   const config::Config& config) {
    const auto& moe = config.model.moe;
    if (!moe || moe->numExperts <= 0) return std::nullopt;
    RecordedRouting routing;
    routing.numBlocks = config.model.numHiddenLayers;
    routing.experts = moe->numExperts;
    routing.topK = std::max(1, moe->topK);
    for (int b = 0; b < routing.numBlocks; ++b)
        if (b % std::max(1, moe->moeLayerFrequency) == 0) routing.moeBlocks.push_back(b);
    if (routing.moeBlocks.empty()) return std::nullopt;
    // The newest step every expert of the first MoE block has a count for: the session logs a
    // step's counts together, so the other blocks have that step too.
    std::vector<std::vector<store::MetricPoint>> first(size_t(routing.experts));
    int64_t newest = -1;
    for (int e = 0; e < routing.experts; ++e) {
        auto points = store.metrics(
            run, fmt::format("moe/h.{}.expert_{}_tokens", routing.moeBlocks.front(), e));
        if (!points.ok() || points->empty()) return std::nullopt;
        const int64_t last = points->back().step;
        newest = e == 0 ? last : std::min(newest, last);
        first[size_t(e)] = std::move(*points);
    }
    auto countAt = [&](const std::vector<store::MetricPoint>& points) -> int64_t {
        for (auto it = points.rbegin(); it != points.rend(); ++it)
            if (it->step == newest) return std::max<int64_t>(0, int64_t(it->value));
        return 0;
    };
    routing.tokens.assign(size_t(routing.numBlocks), {});
    for (int b : routing.moeBlocks) {
        auto& counts = routing.tokens[size_t(b)];
        for (int e = 0; e < routing.experts; ++e) {
            if (b == routing.moeBlocks.front()) {
                counts.push_back(countAt(first[size_t(e)]));
                continue;
            }
            auto points = store.metrics(run, fmt::format("moe/h.{}.expert_{}_tokens", b, e));
            counts.push_back(points.ok() ? countAt(*points) : 0);
        }
    }
    routing.step = newest - 1;  // the store's steps are 1-based, the chart's 0-based
    return routing;
}

std::vector<SparsityPoint> readRecordedSparsity(const store::RunStore& store, int64_t run,
                                                int numBlocks) {
    std::map<int64_t, SparsityPoint> byStep;
    for (int b = 0; b < numBlocks; ++b) {
        auto levels = store.metrics(run, fmt::format("sparsity/h.{}", b));
        if (!levels.ok() || levels->empty()) return {};
        auto imbalance = store.metrics(run, fmt::format("sparsity_imbalance/h.{}", b));
        std::map<int64_t, double> skew;
        if (imbalance.ok())
            for (const auto& p : *imbalance) skew[p.step] = p.value;
        for (const auto& p : *levels) {
            auto& point = byStep[p.step];
            point.step = p.step;
            point.levels.resize(size_t(numBlocks), -1.0);
            point.imbalance.resize(size_t(numBlocks), 1.0);
            point.levels[size_t(b)] = p.value;
            if (auto it = skew.find(p.step); it != skew.end())
                point.imbalance[size_t(b)] = it->second;
        }
    }
    std::vector<SparsityPoint> out;
    for (auto& [step, point] : byStep) {
        const bool complete = std::none_of(point.levels.begin(), point.levels.end(),
                                           [](double level) { return level < 0; });
        if (complete) out.push_back(std::move(point));
    }
    return out;
}

}  // namespace ws::ui
