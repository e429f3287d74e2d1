// Metric series of one run as the charts keep them, and the two pure transforms the charts apply
// before drawing: EMA smoothing (TensorBoard's debiased form) and per-pixel min/max decimation.
// Decimation keeps, for every pixel column, the lowest and the highest point in their original
// order, so a one-step spike always survives; non-finite values are not dropped but returned as
// divergence positions for a marker. Thread-safety: plain data and pure functions, no Qt.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <vector>

namespace ws::ui {

enum class XAxisKind { Step, Tokens, WallTime };

struct MetricSeries {
    std::vector<double> step;   // sorted
    std::vector<double> wall;   // seconds since the run's first point
    std::vector<double> value;  // may hold NaN / +-Inf

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
    std::map<std::string, MetricSeries> metrics;  // by key above
};

// s_i = w*s_{i-1} + (1-w)*x_i, divided by (1 - w^i) so the start is not pulled towards 0.
// Non-finite inputs are carried through as they are and do not poison later values.
void emaSmooth(std::span<const double> values, double weight, std::vector<double>& out);

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

// Inserts a NaN point between two consecutive points of `d` that lie on either side of a gap,
// so the chart's line breaks there instead of drawing a straight stretch across the pause.
void breakAtGaps(std::span<const TimeGap> gaps, Decimated& d);

}  // namespace ws::ui
