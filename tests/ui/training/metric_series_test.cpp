// SPDX-License-Identifier: GPL-3.0-or-later
// Tests of the chart data transforms: min/max decimation keeps every spike and dip, reports
// non-finite values as divergence markers instead of dropping them, and EMA smoothing is
// debiased and not poisoned by a NaN. Issue 31: decimation through min/max levels (built once
// per data change, extended by appends) keeps the extremes of every range and a NaN marker in
// every pixel column that holds one, gives the full scan's result where few points are shown,
// and smoothing and pause detection carried on over appends agree with the whole-series ones.
#include <QTest>
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <random>
#include <set>
#include <span>
#include <tuple>
#include <vector>

#include "ui/training/metric_series.h"

using ws::ui::Decimated;
using ws::ui::decimateMinMax;
using ws::ui::emaSmooth;
using ws::ui::emaSmoothAppend;
using ws::ui::EmaState;
using ws::ui::MinMaxLevels;

namespace {

// A noisy loss curve of n points with one-step spikes and dips and NaN stretches (a run that
// diverged and one that came back), x = 1..n.
void spikyRun(size_t n, std::vector<double>& x, std::vector<double>& y) {
    std::mt19937 rng(31);
    std::normal_distribution<double> noise(0.0, 0.05);
    x.resize(n);
    y.resize(n);
    for (size_t i = 0; i < n; ++i) {
        x[i] = double(i + 1);
        y[i] = 2.0 + 3.0 * std::exp(-double(i) / double(n / 5 + 1)) + noise(rng);
        if (i % 7919 == 13) y[i] += 4.0 + double(i % 5);  // spikes of different heights
        if (i % 10007 == 5) y[i] -= 3.0;                  // dips
    }
    for (size_t i = n / 3; i < n / 3 + 40 && i < n; ++i) y[i] = std::nan("");
    if (n > 10) y[n - 7] = std::numeric_limits<double>::infinity();
}

// Which pixel column x falls in, as decimateMinMax buckets.
int64_t columnOf(double x, double lo, double hi, int buckets) {
    return int64_t(std::floor((x - lo) / ((hi - lo) / buckets)));
}

}  // namespace

class MetricSeriesTest : public QObject {
    Q_OBJECT
private slots:
    void decimationKeepsSpikesAndDips() {
        std::vector<double> x(200000), y(200000, 1.0);
        for (size_t i = 0; i < x.size(); ++i) x[i] = double(i);
        y[54321] = 10.0;  // one-step spike
        y[7] = -5.0;      // one-step dip
        Decimated out;
        decimateMinMax(x, y, 0, 199999, 500, out);
        QVERIFY(out.x.size() <= 2 * 500 + 4);
        QCOMPARE(*std::max_element(out.y.begin(), out.y.end()), 10.0);
        QCOMPARE(*std::min_element(out.y.begin(), out.y.end()), -5.0);
        QVERIFY(std::find(out.x.begin(), out.x.end(), 54321.0) != out.x.end());
        QVERIFY(std::is_sorted(out.x.begin(), out.x.end()));
        QVERIFY(out.divergeX.empty());
    }

    void nonFiniteValuesBecomeDivergenceMarkers() {
        const double nan = std::numeric_limits<double>::quiet_NaN();
        const double inf = std::numeric_limits<double>::infinity();
        std::vector<double> x(10000), y(10000, 2.0);
        for (size_t i = 0; i < x.size(); ++i) x[i] = double(i + 1);
        y[5000] = 3.5;
        y[5001] = nan;
        y[9000] = inf;
        Decimated out;
        decimateMinMax(x, y, 1, 10000, 100, out);
        QCOMPARE(out.divergeX.size(), size_t(2));
        QCOMPARE(out.divergeX[0], 5002.0);
        QCOMPARE(out.divergeY[0], 3.5);  // the marker sits on the last finite value
        QCOMPARE(out.divergeX[1], 9001.0);
        for (double v : out.y) QVERIFY(std::isfinite(v));
        // Few points: all kept, markers still reported.
        decimateMinMax(std::vector<double>{1, 2, 3}, std::vector<double>{1, nan, 2}, 0, 10, 100,
                       out);
        QCOMPARE(out.x, (std::vector<double>{1, 3}));
        QCOMPARE(out.divergeX, (std::vector<double>{2}));
    }

    void decimationClipsToTheVisibleRangePlusNeighbours() {
        std::vector<double> x, y;
        for (int i = 0; i < 1000; ++i) {
            x.push_back(i);
            y.push_back(i % 7);
        }
        Decimated out;
        decimateMinMax(x, y, 100, 200, 1000, out);
        QCOMPARE(out.x.front(), 99.0);
        QCOMPARE(out.x.back(), 201.0);
        QCOMPARE(out.x.size(), size_t(103));
    }

    void levelsKeepEveryExtremeAndNaNColumn() {
        std::vector<double> x, y;
        spikyRun(200000, x, y);
        MinMaxLevels levels;
        levels.extend(y);
        for (auto [lo, hi, buckets] :
             {std::tuple{1.0, 200000.0, 800}, std::tuple{1.0, 200000.0, 400},
              std::tuple{12345.5, 98765.25, 700}, std::tuple{60000.0, 70000.0, 333}}) {
            Decimated out;
            decimateMinMax(x, y, levels, lo, hi, buckets, out);
            const QString where =
                QStringLiteral("[%1, %2] in %3 columns").arg(lo).arg(hi).arg(buckets);
            // About two points per column (plus the neighbours and the partial blocks at the
            // ends), in x order, all finite.
            QVERIFY2(out.x.size() <= size_t(2 * buckets + 8), qPrintable(where));
            QVERIFY(std::is_sorted(out.x.begin(), out.x.end()));
            for (double v : out.y) QVERIFY(std::isfinite(v));
            // The highest and the lowest finite value of the range are among the points.
            const auto first = size_t(std::lower_bound(x.begin(), x.end(), lo) - x.begin());
            const auto last = size_t(std::upper_bound(x.begin(), x.end(), hi) - x.begin());
            double top = -INFINITY, bottom = INFINITY;
            for (size_t i = first; i < last; ++i) {
                if (!std::isfinite(y[i])) continue;
                top = std::max(top, y[i]);
                bottom = std::min(bottom, y[i]);
            }
            QCOMPARE(*std::max_element(out.y.begin(), out.y.end()), top);
            QCOMPARE(*std::min_element(out.y.begin(), out.y.end()), bottom);
            // Every column's own highest point shows in it or a column beside it (a block may
            // straddle two columns): a spike never vanishes.
            std::map<int64_t, double> columnTop, drawnTop;
            for (size_t i = first; i < last; ++i) {
                if (!std::isfinite(y[i])) continue;
                const int64_t c = columnOf(x[i], lo, hi, buckets);
                columnTop[c] = std::max(columnTop.count(c) ? columnTop[c] : -INFINITY, y[i]);
            }
            for (size_t k = 0; k < out.x.size(); ++k) {
                const int64_t c = columnOf(out.x[k], lo, hi, buckets);
                drawnTop[c] = std::max(drawnTop.count(c) ? drawnTop[c] : -INFINITY, out.y[k]);
            }
            for (const auto& [c, v] : columnTop) {
                double near = -INFINITY;
                for (int64_t d = -2; d <= 2; ++d)
                    if (drawnTop.count(c + d)) near = std::max(near, drawnTop[c + d]);
                QVERIFY2(
                    near >= v,
                    qPrintable(
                        QStringLiteral("%1: column %2's %3 not drawn").arg(where).arg(c).arg(v)));
            }
            // A NaN/Inf marker in every column that holds one, on the last finite value before.
            std::set<int64_t> nanColumns, markerColumns;
            for (size_t i = first; i < last; ++i)
                if (!std::isfinite(y[i])) nanColumns.insert(columnOf(x[i], lo, hi, buckets));
            for (size_t k = 0; k < out.divergeX.size(); ++k) {
                markerColumns.insert(columnOf(out.divergeX[k], lo, hi, buckets));
                const size_t at = size_t(out.divergeX[k]) - 1;  // x = index + 1
                QVERIFY(!std::isfinite(y[at]));
                size_t before = at;
                while (before > 0 && !std::isfinite(y[before - 1])) --before;
                QCOMPARE(out.divergeY[k], y[before - 1]);
            }
            for (int64_t c : nanColumns) QVERIFY2(markerColumns.count(c), qPrintable(where));
        }
    }

    void levelsGrownByAppendsAreTheLevelsOfTheWhole() {
        std::vector<double> x, y;
        spikyRun(50000, x, y);
        MinMaxLevels whole, grown;
        whole.extend(y);
        // Appends of every size, as a live run brings them (one step, a burst, a block edge).
        size_t n = 0;
        for (size_t chunk : {1, 1, 15, 16, 17, 100, 1000, 5, 4096, 3}) {
            n = std::min(n + chunk, y.size());
            grown.extend(std::span(y).first(n));
        }
        grown.extend(y);
        QCOMPARE(grown.size(), whole.size());
        QCOMPARE(grown.levelCount(), whole.levelCount());
        for (int k = 0; k < whole.levelCount(); ++k) {
            QCOMPARE(grown.level(k).size(), whole.level(k).size());
            for (size_t b = 0; b < whole.level(k).size(); ++b) {
                QCOMPARE(grown.level(k)[b].minAt, whole.level(k)[b].minAt);
                QCOMPARE(grown.level(k)[b].maxAt, whole.level(k)[b].maxAt);
            }
        }
        QCOMPARE(grown.nonFinite().size(), whole.nonFinite().size());
        Decimated a, b;
        decimateMinMax(x, y, whole, 1, 50000, 640, a);
        decimateMinMax(x, y, grown, 1, 50000, 640, b);
        QCOMPARE(a.x, b.x);
        QCOMPARE(a.divergeX, b.divergeX);
    }

    void fewPointsPerColumnGiveTheFullScansResult() {
        // Zoomed in (or a short run): the levels give what the full scan gives, exactly.
        std::vector<double> x, y;
        spikyRun(30000, x, y);
        MinMaxLevels levels;
        levels.extend(y);
        for (auto [lo, hi] : {std::pair{9000.0, 11000.0}, std::pair{9990.0, 10050.0},
                              std::pair{-5.0, 500.0}, std::pair{29000.0, 31000.0}}) {
            Decimated full, viaLevels;
            decimateMinMax(x, y, lo, hi, 400, full);
            decimateMinMax(x, y, levels, lo, hi, 400, viaLevels);
            QCOMPARE(viaLevels.x, full.x);
            QCOMPARE(viaLevels.y, full.y);
            QCOMPARE(viaLevels.divergeX, full.divergeX);
            QCOMPARE(viaLevels.divergeY, full.divergeY);
        }
        // Levels not (yet) built over the values: the full scan.
        Decimated full, unbuilt;
        decimateMinMax(x, y, 1, 30000, 300, full);
        decimateMinMax(x, y, MinMaxLevels{}, 1, 30000, 300, unbuilt);
        QCOMPARE(unbuilt.x, full.x);
    }

    void smoothingAndPausesCarriedOverAppends() {
        std::vector<double> x, y;
        spikyRun(5000, x, y);
        std::vector<double> whole, grown;
        emaSmooth(y, 0.6, whole);
        EmaState state;
        for (size_t n : {1, 2, 100, 101, 4000, 5000})
            emaSmoothAppend(std::span(y).first(n), 0.6, state, grown);
        QCOMPARE(grown.size(), whole.size());
        for (size_t i = 0; i < whole.size(); ++i)
            QVERIFY(whole[i] == grown[i] || (std::isnan(whole[i]) && std::isnan(grown[i])));
        // Wall time with two pauses, taken in as it grows: the same gaps as the whole series'.
        std::vector<double> wall;
        for (int i = 0; i < 3000; ++i)
            wall.push_back(i * 0.5 + (i >= 1000 ? 300 : 0) + (i >= 2500 ? 900 : 0));
        ws::ui::TimeGapTracker tracker;
        for (size_t n : {2, 3, 500, 1200, 1201, 2600, 3000})
            tracker.extend(std::span(wall).first(n));
        const auto expected = ws::ui::findTimeGaps(wall);
        QCOMPARE(tracker.gaps().size(), expected.size());
        QCOMPARE(expected.size(), size_t(2));
        for (size_t k = 0; k < expected.size(); ++k) {
            QCOMPARE(tracker.gaps()[k].from, expected[k].from);
            QCOMPARE(tracker.gaps()[k].to, expected[k].to);
        }
    }

    void emaIsDebiasedAndSkipsNaN() {
        std::vector<double> out;
        emaSmooth(std::vector<double>{4, 4, 4, 4}, 0.9, out);
        for (double v : out) QVERIFY(std::fabs(v - 4.0) < 1e-12);  // no pull towards 0
        const double nan = std::numeric_limits<double>::quiet_NaN();
        emaSmooth(std::vector<double>{1, nan, 1}, 0.5, out);
        QVERIFY(std::isnan(out[1]));
        QVERIFY(std::fabs(out[2] - 1.0) < 1e-12);
        emaSmooth(std::vector<double>{0, 10}, 0.0, out);  // weight 0: raw values
        QCOMPARE(out[1], 10.0);
    }
};

QTEST_GUILESS_MAIN(MetricSeriesTest)
#include "metric_series_test.moc"
