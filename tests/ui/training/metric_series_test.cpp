// Tests of the chart data transforms: min/max decimation keeps every spike and dip, reports
// non-finite values as divergence markers instead of dropping them, and EMA smoothing is
// debiased and not poisoned by a NaN.
#include <QTest>
#include <cmath>
#include <limits>
#include <vector>

#include "ui/training/metric_series.h"

using ws::ui::Decimated;
using ws::ui::decimateMinMax;
using ws::ui::emaSmooth;

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
