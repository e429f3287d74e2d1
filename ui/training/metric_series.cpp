// SPDX-License-Identifier: GPL-3.0-or-later
// Metric series, EMA smoothing and min/max decimation: see metric_series.h.
#include "ui/training/metric_series.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>

namespace ws::ui {

uint64_t newSeriesIdentity() {
    static std::atomic<uint64_t> next{1};
    return next.fetch_add(1, std::memory_order_relaxed);
}

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
    EmaState state;
    out.clear();
    emaSmoothAppend(values, weight, state, out);
}

void emaSmoothAppend(std::span<const double> values, double weight, EmaState& state,
                     std::vector<double>& out) {
    const size_t from = std::min(out.size(), values.size());
    out.resize(values.size());
    weight = std::clamp(weight, 0.0, 0.999);
    for (size_t i = from; i < values.size(); ++i) {
        const double v = values[i];
        if (!std::isfinite(v)) {
            out[i] = v;
            continue;
        }
        state.biased = weight * state.biased + (1.0 - weight) * v;
        state.correction *= weight;
        out[i] = state.biased / (1.0 - state.correction);
    }
}

namespace {

// Decimates (x, y)[begin, end) into per-bucket min/max; `lastFinite` is the last finite value
// before `begin` (NaN when none), where a divergence marker at the start sits.
void decimateSpan(std::span<const double> x, std::span<const double> y, size_t begin, size_t end,
                  double xLo, double xHi, int buckets, double lastFinite, Decimated& out) {
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

void clearDecimated(Decimated& out) {
    out.x.clear();
    out.y.clear();
    out.divergeX.clear();
    out.divergeY.clear();
}

// The lowest and highest finite value of y[from, to) (first ones on ties).
MinMaxLevels::Block scanBlock(std::span<const double> y, size_t from, size_t to) {
    MinMaxLevels::Block b;
    for (size_t i = from; i < to; ++i) {
        const double v = y[i];
        if (!std::isfinite(v)) continue;
        if (b.minAt == MinMaxLevels::kNone) {
            b.minAt = b.maxAt = uint32_t(i);
        } else if (v < y[b.minAt]) {
            b.minAt = uint32_t(i);
        } else if (v > y[b.maxAt]) {
            b.maxAt = uint32_t(i);
        }
    }
    return b;
}

// Two neighbouring blocks as one (`left` before `right`; ties keep the earlier point).
MinMaxLevels::Block mergeBlocks(std::span<const double> y, MinMaxLevels::Block left,
                                MinMaxLevels::Block right) {
    if (right.minAt == MinMaxLevels::kNone) return left;
    if (left.minAt == MinMaxLevels::kNone) return right;
    MinMaxLevels::Block b = left;
    if (y[right.minAt] < y[left.minAt]) b.minAt = right.minAt;
    if (y[right.maxAt] > y[left.maxAt]) b.maxAt = right.maxAt;
    return b;
}

}  // namespace

void decimateMinMax(std::span<const double> x, std::span<const double> y, double xLo, double xHi,
                    int buckets, Decimated& out) {
    clearDecimated(out);
    const size_t n = std::min(x.size(), y.size());
    if (n == 0 || !(xHi >= xLo)) return;
    size_t begin = size_t(std::lower_bound(x.begin(), x.begin() + ptrdiff_t(n), xLo) - x.begin());
    size_t end = size_t(std::upper_bound(x.begin(), x.begin() + ptrdiff_t(n), xHi) - x.begin());
    if (begin > 0) --begin;
    if (end < n) ++end;
    double lastFinite = std::numeric_limits<double>::quiet_NaN();
    for (size_t i = begin; i-- > 0;) {  // the value a divergence marker sits on
        if (std::isfinite(y[i])) {
            lastFinite = y[i];
            break;
        }
    }
    decimateSpan(x, y, begin, end, xLo, xHi, std::max(buckets, 1), lastFinite, out);
}

void MinMaxLevels::clear() {
    m_levels.clear();
    m_nonFinite.clear();
    m_size = 0;
}

void MinMaxLevels::extend(std::span<const double> values) {
    if (values.size() < m_size) clear();  // not the series taken in: start again
    const size_t n0 = m_size, n = values.size();
    if (n == n0) return;
    for (size_t i = n0; i < n; ++i) {
        if (std::isfinite(values[i])) continue;
        if (!m_nonFinite.empty() && m_nonFinite.back().to == i) {
            ++m_nonFinite.back().to;
        } else {
            m_nonFinite.push_back({i, i + 1});
        }
    }
    if (m_levels.empty()) m_levels.emplace_back();
    // Level 0 from the values, from the block the new points start in (it may have been partial).
    size_t changed = n0 / kFinestBlock;
    std::vector<Block>& finest = m_levels[0];
    finest.resize((n + kFinestBlock - 1) / kFinestBlock);
    for (size_t b = changed; b < finest.size(); ++b)
        finest[b] = scanBlock(values, b * kFinestBlock, std::min((b + 1) * kFinestBlock, n));
    // Each coarser level from the one below, up to a level of one block.
    for (size_t k = 0; m_levels[k].size() > 1; ++k) {
        if (k + 1 == m_levels.size()) m_levels.emplace_back();
        const std::vector<Block>& fine = m_levels[k];
        std::vector<Block>& coarse = m_levels[k + 1];
        coarse.resize((fine.size() + 1) / 2);
        changed /= 2;
        for (size_t p = changed; p < coarse.size(); ++p)
            coarse[p] = 2 * p + 1 < fine.size() ? mergeBlocks(values, fine[2 * p], fine[2 * p + 1])
                                                : fine[2 * p];
    }
    m_size = n;
}

double MinMaxLevels::lastFiniteBefore(std::span<const double> values, size_t i) const {
    const double none = std::numeric_limits<double>::quiet_NaN();
    i = std::min(i, std::min(m_size, values.size()));
    if (i == 0) return none;
    const size_t j = i - 1;
    // The run holding j, if any: the last one starting at or before it.
    auto run = std::upper_bound(m_nonFinite.begin(), m_nonFinite.end(), j,
                                [](size_t at, const NonFiniteRun& r) { return at < r.from; });
    if (run == m_nonFinite.begin()) return values[j];
    --run;
    if (j >= run->to) return values[j];
    return run->from > 0 ? values[run->from - 1] : none;
}

DecimationPlan planDecimation(std::span<const double> x, size_t size, const MinMaxLevels& levels,
                              double xLo, double xHi, int buckets) {
    DecimationPlan plan;
    const size_t n = std::min(x.size(), size);
    plan.size = n;
    if (n == 0 || !(xHi >= xLo)) return plan;
    buckets = std::max(buckets, 1);
    const auto xEnd = x.begin() + ptrdiff_t(n);
    plan.lo = size_t(std::lower_bound(x.begin(), xEnd, xLo) - x.begin());
    plan.hi = size_t(std::upper_bound(x.begin(), xEnd, xHi) - x.begin());
    plan.begin = plan.lo > 0 ? plan.lo - 1 : plan.lo;  // a neighbour each side: lines reach
    plan.end = plan.hi < n ? plan.hi + 1 : plan.hi;    // the plot's edges
    if (levels.size() < n || plan.hi <= plan.lo) return plan;
    // Points per pixel column over the columns the points in range cover (a run shorter than
    // the axis covers only part of the width).
    const double width = (xHi - xLo) / buckets;
    const double covered = width > 0
                               ? std::clamp(std::floor((x[plan.hi - 1] - x[plan.lo]) / width) + 1,
                                            1.0, double(buckets))
                               : 1.0;
    const double perColumn = double(plan.hi - plan.lo) / covered;
    if (perColumn <= double(MinMaxLevels::kFinestBlock) ||
        plan.end - plan.begin <= size_t(2 * buckets))
        return plan;
    // The finest level whose blocks hold at least as many points as a column: at most one
    // block per column, so at most two points.
    int k = 0;
    while (k + 1 < levels.levelCount() && double(MinMaxLevels::blockSize(k)) < perColumn) ++k;
    plan.level = k;
    return plan;
}

void decimateMinMax(std::span<const double> x, std::span<const double> y,
                    const MinMaxLevels& levels, double xLo, double xHi, int buckets,
                    Decimated& out) {
    const size_t n = std::min(x.size(), y.size());
    if (levels.size() < n) {  // not built over y (yet): the full scan is still right
        decimateMinMax(x, y, xLo, xHi, buckets, out);
        return;
    }
    clearDecimated(out);
    if (n == 0 || !(xHi >= xLo)) return;
    buckets = std::max(buckets, 1);
    const DecimationPlan plan = planDecimation(x, n, levels, xLo, xHi, buckets);
    const size_t lo = plan.lo, hi = plan.hi, begin = plan.begin, end = plan.end;
    if (plan.level < 0) {
        decimateSpan(x, y, begin, end, xLo, xHi, buckets, levels.lastFiniteBefore(y, begin), out);
        return;
    }
    const size_t size = MinMaxLevels::blockSize(plan.level);
    const std::vector<MinMaxLevels::Block>& level = levels.level(plan.level);
    out.x.reserve(size_t(2 * buckets) + 8);
    out.y.reserve(size_t(2 * buckets) + 8);
    auto addPoint = [&](size_t i) {
        out.x.push_back(x[i]);
        out.y.push_back(y[i]);
    };
    auto addBlock = [&](MinMaxLevels::Block b) {
        if (b.minAt == MinMaxLevels::kNone) return;
        addPoint(std::min(b.minAt, b.maxAt));
        if (b.maxAt != b.minAt) addPoint(std::max(b.minAt, b.maxAt));
    };
    if (begin < lo && std::isfinite(y[begin])) addPoint(begin);
    // The partial block at the start, the whole blocks, the partial block at the end (a block
    // the series ends in is whole: the level holds it as it is).
    const size_t firstWhole = (lo + size - 1) / size;
    const size_t headEnd = std::min(firstWhole * size, hi);
    addBlock(scanBlock(y, lo, headEnd));
    size_t b = firstWhole;
    for (; b < level.size() && b * size < hi && std::min((b + 1) * size, levels.size()) <= hi; ++b)
        addBlock(level[b]);
    addBlock(scanBlock(y, std::max(b * size, headEnd), hi));
    if (hi < end && std::isfinite(y[hi])) addPoint(hi);

    // A marker per pixel column that holds a non-finite value, on the last finite value before
    // it: the runs of non-finite values in range, column by column.
    const double width = (xHi - xLo) / buckets;
    auto columnOf = [&](double xv) -> int64_t {
        return width > 0 ? int64_t(std::floor((xv - xLo) / width)) : 0;
    };
    const auto& runs = levels.nonFinite();
    auto run =
        std::upper_bound(runs.begin(), runs.end(), begin,
                         [](size_t at, const MinMaxLevels::NonFiniteRun& r) { return at < r.to; });
    int64_t lastColumn = std::numeric_limits<int64_t>::min();
    for (; run != runs.end() && run->from < end; ++run) {
        const double on =
            run->from > 0 ? y[run->from - 1] : std::numeric_limits<double>::quiet_NaN();
        const size_t stop = std::min(run->to, end);
        for (size_t i = std::max(run->from, begin); i < stop;) {
            const int64_t column = columnOf(x[i]);
            if (column != lastColumn) {
                out.divergeX.push_back(x[i]);
                out.divergeY.push_back(on);
                lastColumn = column;
            }
            if (!(width > 0)) break;
            const double next = xLo + double(column + 1) * width;
            const auto from = x.begin() + ptrdiff_t(i + 1);
            i = size_t(std::lower_bound(from, x.begin() + ptrdiff_t(stop), next) - x.begin());
        }
    }
}

namespace {

// The interval between two points above which findTimeGaps sees a pause (wall.size() >= 3).
double pauseThreshold(std::span<const double> wall) {
    std::vector<double> intervals;
    intervals.reserve(wall.size() - 1);
    for (size_t i = 1; i < wall.size(); ++i) intervals.push_back(wall[i] - wall[i - 1]);
    auto mid = intervals.begin() + ptrdiff_t(intervals.size() / 2);
    std::nth_element(intervals.begin(), mid, intervals.end());
    return std::max(kPauseFactor * *mid, kMinPauseSec);
}

void appendGaps(std::span<const double> wall, size_t from, double threshold,
                std::vector<TimeGap>& gaps) {
    for (size_t i = std::max<size_t>(from, 1); i < wall.size(); ++i) {
        if (wall[i] - wall[i - 1] > threshold) gaps.push_back({wall[i - 1], wall[i]});
    }
}

}  // namespace

std::vector<TimeGap> findTimeGaps(std::span<const double> wall) {
    std::vector<TimeGap> gaps;
    if (wall.size() < 3) return gaps;
    appendGaps(wall, 1, pauseThreshold(wall), gaps);
    return gaps;
}

const std::vector<TimeGap>& TimeGapTracker::extend(std::span<const double> wall) {
    if (wall.size() < m_size) *this = {};  // not the series judged: start again
    if (wall.size() == m_size) return m_gaps;
    if (wall.size() < 3) {
        m_gaps.clear();
    } else if (m_measured < 3 || wall.size() >= m_measured + m_measured / 4) {
        m_threshold = pauseThreshold(wall);
        m_measured = wall.size();
        m_gaps.clear();
        appendGaps(wall, 1, m_threshold, m_gaps);
    } else {
        appendGaps(wall, m_size, m_threshold, m_gaps);
    }
    m_size = wall.size();
    return m_gaps;
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
