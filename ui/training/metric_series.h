// SPDX-License-Identifier: GPL-3.0-or-later
// Metric series of one run as the charts keep them, and the transforms the charts apply before
// drawing: EMA smoothing (TensorBoard's debiased form) and min/max decimation. Decimation keeps,
// for every pixel column, the lowest and the highest point in their original order, so a
// one-step spike always survives; non-finite values are not dropped but returned as divergence
// positions for a marker. Long series are decimated through MinMaxLevels, built once per data
// change (appends extend it), so a replot costs the same at 1k points as at 200k (issue 31).
// Thread-safety: plain data and pure functions, no Qt.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <vector>

namespace ws::ui {

enum class XAxisKind { Step, Tokens, WallTime };

// A number no other series created in this process has: what a chart's cached decimation is
// keyed on, with the series' address (an erased series' address may be reused by another).
uint64_t newSeriesIdentity();

struct MetricSeries {
    std::vector<double> step;   // sorted
    std::vector<double> wall;   // seconds since the run's first point
    std::vector<double> value;  // may hold NaN / +-Inf
    // Append-only: points are only ever added at the end (append()); a series whose points are
    // replaced is a new series (with a new identity).
    uint64_t identity = newSeriesIdentity();

    void append(double stepValue, double wallSeconds, double v);
    size_t size() const { return step.size(); }
    // The x coordinates for an axis kind (tokens = step * tokensPerStep).
    std::vector<double> xs(XAxisKind kind, double tokensPerStep) const;
};

// Metric keys as the run store spells them.
inline constexpr const char* kLoss = "loss";
inline constexpr const char* kEvalLoss = "eval_loss";
inline constexpr const char* kLearningRate = "lr";
inline constexpr const char* kGradNorm = "grad_norm";
inline constexpr const char* kTokensPerSec = "tokens_per_s";

struct RunSeries {
    int64_t runId = 0;  // 0: the run being trained now, before the store has numbered it
    std::string name;
    double tokensPerStep = 1;
    // What its loss counts (session::lossCountsLabel: "answer tokens"); empty: every token.
    std::string lossCounts;
    std::map<std::string, MetricSeries> metrics;  // by key above
};

// s_i = w*s_{i-1} + (1-w)*x_i, divided by (1 - w^i) so the start is not pulled towards 0.
// Non-finite inputs are carried through as they are and do not poison later values.
void emaSmooth(std::span<const double> values, double weight, std::vector<double>& out);

// emaSmooth continued: smooths values[out.size()...] onto the end of `out`, carrying `state`
// (start with a default one and an empty `out`). The result equals emaSmooth of all values.
struct EmaState {
    double biased = 0.0;
    double correction = 1.0;
};
void emaSmoothAppend(std::span<const double> values, double weight, EmaState& state,
                     std::vector<double>& out);

// Min/max levels of detail of an append-only series of values: level k holds, for every block
// of blockSize(k) = kFinestBlock << k consecutive points, the indices of its lowest and highest
// finite values; the non-finite values are kept as runs of indices. extend() takes in appended
// values in time proportional to their number (the last, partial block of each level is
// recomputed). A chart then draws any range from the level whose blocks are about a pixel wide:
// at most two points per block, so the cost follows the plot's width, not the series' length.
// Memory: about 8 bytes per kFinestBlock / 2 points. Up to 2^32 - 1 points.
class MinMaxLevels {
public:
    static constexpr size_t kFinestBlock = 16;
    static constexpr uint32_t kNone = UINT32_MAX;  // a block without a finite value
    struct Block {
        uint32_t minAt = kNone, maxAt = kNone;
    };
    struct NonFiniteRun {
        size_t from = 0, to = 0;  // [from, to): every value there is NaN or +-Inf
    };

    // Takes in values[size()...]; the first size() values must be the ones already taken in.
    void extend(std::span<const double> values);
    void clear();
    size_t size() const { return m_size; }
    int levelCount() const { return int(m_levels.size()); }
    static size_t blockSize(int level) { return kFinestBlock << level; }
    const std::vector<Block>& level(int k) const { return m_levels[size_t(k)]; }
    const std::vector<NonFiniteRun>& nonFinite() const { return m_nonFinite; }
    // The last finite value before index i (NaN when none), found through the non-finite runs.
    double lastFiniteBefore(std::span<const double> values, size_t i) const;

private:
    std::vector<std::vector<Block>> m_levels;
    std::vector<NonFiniteRun> m_nonFinite;
    size_t m_size = 0;
};

struct Decimated {
    std::vector<double> x, y;      // finite points to draw, in x order
    std::vector<double> divergeX;  // x of non-finite values in range (one per pixel column)
    std::vector<double> divergeY;  // the last finite value before each (or NaN if none)
};

// Decimates the points of (x, y) whose x lies in [xLo, xHi] (plus one neighbour on each side, so
// lines reach the plot edges) into at most 2 points per bucket; `buckets` is the plot's width in
// pixels. x must be sorted. When the range holds fewer than 2*buckets points all are kept.
void decimateMinMax(std::span<const double> x, std::span<const double> y, double xLo, double xHi,
                    int buckets, Decimated& out);

// The same through `levels` (built over y): where the range holds more than kFinestBlock points
// per pixel column, each block of the finest level whose blocks hold at least as many points as
// a column does gives its lowest and highest point (in their order), and the partial blocks at
// the range's ends are scanned; so at most about 2 points per column, every extreme of the range
// kept (a block's may stand for its neighbour column's), in time proportional to `buckets`.
// Divergence markers as above: one per pixel column that holds a non-finite value, on the last
// finite value before it. Fewer points per column: decimateMinMax's result exactly.
void decimateMinMax(std::span<const double> x, std::span<const double> y,
                    const MinMaxLevels& levels, double xLo, double xHi, int buckets,
                    Decimated& out);

// What that decimation reads for a range, so a chart knows when it would give the same points
// again: the points in range [lo, hi) with a neighbour each side [begin, end), the level used
// (-1: the full scan of decimateSpan, whose buckets follow the range itself), and the series'
// length. Equal plans of a series without non-finite values give equal results, whatever the
// exact range (a live run's growing x axis leaves the other runs' points as they were).
struct DecimationPlan {
    size_t begin = 0, end = 0, lo = 0, hi = 0, size = 0;
    int level = -1;
    bool operator==(const DecimationPlan&) const = default;
};
DecimationPlan planDecimation(std::span<const double> x, size_t size, const MinMaxLevels& levels,
                              double xLo, double xHi, int buckets);

// A stretch of wall time with no points: a pause, or the time between a stop and its resume.
struct TimeGap {
    double from = 0, to = 0;  // the wall times of the points either side
};

// The gaps of a sorted wall-time series that no training filled: an interval between two points
// longer than kPauseFactor times the median interval and than kMinPauseSec. Judged from the data
// alone, so stored runs (which keep no pause events) break the same way as the live one.
inline constexpr double kPauseFactor = 10.0;
inline constexpr double kMinPauseSec = 2.0;
std::vector<TimeGap> findTimeGaps(std::span<const double> wall);

// findTimeGaps of a growing series without reading it all on every append: the median interval
// is measured again (all of findTimeGaps) whenever the series has grown by a quarter since it
// last was; in between, appended intervals are judged against the threshold then found.
class TimeGapTracker {
public:
    const std::vector<TimeGap>& extend(std::span<const double> wall);
    const std::vector<TimeGap>& gaps() const { return m_gaps; }

private:
    std::vector<TimeGap> m_gaps;
    size_t m_size = 0;      // points judged
    size_t m_measured = 0;  // points when the threshold was measured
    double m_threshold = 0;
};

// Inserts a NaN point between two consecutive points of `d` that lie on either side of a gap,
// so the chart's line breaks there instead of drawing a straight stretch across the pause.
void breakAtGaps(std::span<const TimeGap> gaps, Decimated& d);

}  // namespace ws::ui
