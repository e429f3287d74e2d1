// Metric series, EMA smoothing and min/max decimation: see metric_series.h.
#include "ui/training/metric_series.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace ws::ui {

void MetricSeries::append(double stepValue, double wallSeconds, double v) {
    step.push_back(stepValue);
    wall.push_back(wallSeconds);
    value.push_back(v);
}

std::vector<double> MetricSeries::xs(XAxisKind kind, double tokensPerStep) const {
    switch (kind) {
        case XAxisKind::Step:
            return step;
        case XAxisKind::WallTime:
            return wall;
        case XAxisKind::Tokens: {
            std::vector<double> out(step.size());
            for (size_t i = 0; i < step.size(); ++i) out[i] = step[i] * tokensPerStep;
            return out;
        }
    }
    return step;
}

void emaSmooth(std::span<const double> values, double weight, std::vector<double>& out) {
    out.resize(values.size());
    weight = std::clamp(weight, 0.0, 0.999);
    double biased = 0.0;
    double correction = 1.0;
    for (size_t i = 0; i < values.size(); ++i) {
        const double v = values[i];
        if (!std::isfinite(v)) {
            out[i] = v;
            continue;
        }
        biased = weight * biased + (1.0 - weight) * v;
        correction *= weight;
        out[i] = biased / (1.0 - correction);
    }
}

void decimateMinMax(std::span<const double> x, std::span<const double> y, double xLo, double xHi,
                    int buckets, Decimated& out) {
    out.x.clear();
    out.y.clear();
    out.divergeX.clear();
    out.divergeY.clear();
    const size_t n = std::min(x.size(), y.size());
    if (n == 0 || !(xHi >= xLo)) return;
    size_t begin = size_t(std::lower_bound(x.begin(), x.begin() + ptrdiff_t(n), xLo) - x.begin());
    size_t end = size_t(std::upper_bound(x.begin(), x.begin() + ptrdiff_t(n), xHi) - x.begin());
    if (begin > 0) --begin;
    if (end < n) ++end;
    buckets = std::max(buckets, 1);

    double lastFinite = std::numeric_limits<double>::quiet_NaN();
    for (size_t i = begin; i-- > 0;) {  // the value a divergence marker sits on
        if (std::isfinite(y[i])) {
            lastFinite = y[i];
            break;
        }
    }
    const double width = (xHi - xLo) / buckets;
    auto bucketOf = [&](double xv) -> int64_t {
        return width > 0 ? int64_t(std::floor((xv - xLo) / width)) : 0;
    };
    auto addDivergence = [&](double xv) {
        if (!out.divergeX.empty() && bucketOf(out.divergeX.back()) == bucketOf(xv)) return;
        out.divergeX.push_back(xv);
        out.divergeY.push_back(lastFinite);
    };

    if (end - begin <= size_t(2 * buckets)) {
        out.x.reserve(end - begin);
        out.y.reserve(end - begin);
        for (size_t i = begin; i < end; ++i) {
            if (std::isfinite(y[i])) {
                out.x.push_back(x[i]);
                out.y.push_back(y[i]);
                lastFinite = y[i];
            } else {
                addDivergence(x[i]);
            }
        }
        return;
    }
    out.x.reserve(size_t(2 * buckets) + 4);
    out.y.reserve(size_t(2 * buckets) + 4);
    int64_t current = std::numeric_limits<int64_t>::min();
    size_t minAt = 0, maxAt = 0;
    bool any = false;
    auto flush = [&] {
        if (!any) return;
        const size_t first = std::min(minAt, maxAt), second = std::max(minAt, maxAt);
        out.x.push_back(x[first]);
        out.y.push_back(y[first]);
        if (second != first) {
            out.x.push_back(x[second]);
            out.y.push_back(y[second]);
        }
        any = false;
    };
    for (size_t i = begin; i < end; ++i) {
        const int64_t b = bucketOf(x[i]);
        if (b != current) {
            flush();
            current = b;
        }
        const double v = y[i];
        if (!std::isfinite(v)) {
            addDivergence(x[i]);
            continue;
        }
        lastFinite = v;
        if (!any) {
            minAt = maxAt = i;
            any = true;
        } else if (v < y[minAt]) {
            minAt = i;
        } else if (v > y[maxAt]) {
            maxAt = i;
        }
    }
    flush();
}

std::vector<TimeGap> findTimeGaps(std::span<const double> wall) {
    std::vector<TimeGap> gaps;
    if (wall.size() < 3) return gaps;
    std::vector<double> intervals;
    intervals.reserve(wall.size() - 1);
    for (size_t i = 1; i < wall.size(); ++i) intervals.push_back(wall[i] - wall[i - 1]);
    std::vector<double> sorted = intervals;
    auto mid = sorted.begin() + ptrdiff_t(sorted.size() / 2);
    std::nth_element(sorted.begin(), mid, sorted.end());
    const double threshold = std::max(kPauseFactor * *mid, kMinPauseSec);
    for (size_t i = 0; i < intervals.size(); ++i) {
        if (intervals[i] > threshold) gaps.push_back({wall[i], wall[i + 1]});
    }
    return gaps;
}

void breakAtGaps(std::span<const TimeGap> gaps, Decimated& d) {
    if (gaps.empty() || d.x.size() < 2) return;
    std::vector<double> x, y;
    x.reserve(d.x.size() + gaps.size());
    y.reserve(d.y.size() + gaps.size());
    size_t g = 0;
    x.push_back(d.x[0]);
    y.push_back(d.y[0]);
    for (size_t i = 1; i < d.x.size(); ++i) {
        // Decimated points are points of the series, so a gap lies between two of them exactly
        // when it starts at or after the first and ends at or before the second.
        while (g < gaps.size() && gaps[g].from < d.x[i - 1]) ++g;
        if (g < gaps.size() && gaps[g].to <= d.x[i]) {
            x.push_back(0.5 * (gaps[g].from + gaps[g].to));
            y.push_back(std::numeric_limits<double>::quiet_NaN());
        }
        x.push_back(d.x[i]);
        y.push_back(d.y[i]);
    }
    d.x = std::move(x);
    d.y = std::move(y);
}

}  // namespace ws::ui
