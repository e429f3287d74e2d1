// SPDX-License-Identifier: GPL-3.0-or-later
// ChartPanel: one live QCustomPlot chart of one or two metrics for several runs. Each curve is
// drawn smoothed (EMA) over its raw values (faint), decimated per pixel with min/max buckets so
// spikes stay visible, and non-finite values (a diverging run) appear as red markers rather
// than gaps. Drag pans, wheel zooms, double-click returns to following the data; a crosshair
// shows the value of every visible curve under the mouse. Large numbers read as people write
// them (50k tokens, 1.2M, 3B) on the axes and in the crosshair, and on the wall-time axis a pause
// (a gap in the data, metric_series.h) breaks the line. GUI thread only; the series it points
// at must outlive the next setCurves().
#pragma once

#include <qcustomplot.h>

#include <QString>
#include <memory>
#include <span>
#include <vector>

#include "ui/training/metric_series.h"

namespace ws::ui {

// `v` with a k/M/B/T suffix from 1000 up, at most `significant` significant digits and no
// trailing zeros: 50000 -> "50k", 1200000 -> "1.2M", 3e9 -> "3B", 149321 -> "149k" (3 digits).
// Below 1000 the plain number ("750", "0.25").
QString humanNumber(double v, int significant = 3);

// Tick labels for one axis: humanNumber with the fewest significant digits (3 or more) that
// say every tick exactly ("100k", "100.25k", "100.5k"); empty when every tick is below 1000 (the
// axis' own labels are used then).
QStringList humanTickLabels(const QVector<double>& ticks);

// An axis ticker whose labels are humanTickLabels.
class HumanAxisTicker : public QCPAxisTicker {
protected:
    QVector<QString> createLabelVector(const QVector<double>& ticks, const QLocale& locale,
                                       QChar formatChar, int precision) override;
};

class ChartPanel : public QCustomPlot {
    Q_OBJECT
public:
    struct Curve {
        QString name;
        QColor color;
        const MetricSeries* series = nullptr;
        double tokensPerStep = 1;
        bool dashed = false;   // eval loss beside train loss
        bool markers = false;  // sparse series (eval points)
        bool inLegend = true;
        bool smoothed = true;  // false: drawn as it is (a schedule, not a noisy measurement)
    };
    struct Options {
        XAxisKind xAxis = XAxisKind::Step;
        double smoothing = 0.6;  // EMA weight in [0, 0.99]; 0 draws raw only
        bool logY = false;
    };

    ChartPanel(const QString& title, const QString& yLabel, QWidget* parent = nullptr);

    void setCurves(std::vector<Curve> curves);  // rebuilds the graphs; call redraw() after
    // The legend sits below the plot area, never over the curves, in as many columns as fit
    // (issue 31); it lists the curves with inLegend. Hidden (collapsed) by the user: none.
    // At most a quarter of the chart's height: when the entries do not fit, the last one says
    // how many more there are (the crosshair's read-out names every curve).
    void setLegendShown(bool shown);
    bool legendShown() const { return m_legendShown; }
    QStringList legendEntries() const;  // as listed, in order; empty when hidden
    void setOptions(const Options& options);
    // Recomputes smoothing and decimation for the current x range and replots once.
    void redraw();
    // Follows the data again (autoscale both axes on every redraw) after the user zoomed.
    void followData();
    bool followsData() const { return m_follow; }
    void setCrosshair(double x, bool visible);  // driven by the panel under the mouse
    // Text of the crosshair tooltip at x (every visible curve's value there), for tests too.
    QString valuesAt(double x) const;
    // The crosshair's x as the axis reads it: a whole step, human tokens, seconds.
    QString formatX(double x) const;
    double lastRedrawMs() const { return m_lastRedrawMs; }

signals:
    void crosshairMoved(double x, bool visible);
    void userChangedXRange(const QCPRange& range);

protected:
    void mousePressEvent(QMouseEvent* event) override;
    void mouseMoveEvent(QMouseEvent* event) override;
    void wheelEvent(QWheelEvent* event) override;
    void mouseDoubleClickEvent(QMouseEvent* event) override;
    void leaveEvent(QEvent* event) override;
    void changeEvent(QEvent* event) override;        // follows a light/dark palette switch
    void resizeEvent(QResizeEvent* event) override;  // the legend's columns follow the width

private:
    bool crowded() const { return m_curves.size() > 6; }
    QColor faintOf(const QColor& color) const;
    // What a curve is drawn from, kept across setCurves() for a series shown again (the same
    // address and identity) and extended as the series grows: smoothing, the min/max levels of
    // the raw and the smoothed values, the tokens axis' x and the pauses. A replot decimates
    // from the levels (its cost follows the plot's width, not the points), and only when the
    // data, the x range, the axis or the width changed (issue 31).
    struct Prepared {
        const MetricSeries* series = nullptr;  // compared, never read: it may have been erased
        uint64_t identity = 0;
        size_t size = 0;        // points taken in
        double smoothing = -1;  // the EMA weight of smoothY; -1: not smoothed
        EmaState ema;
        std::vector<double> smoothY;
        MinMaxLevels rawLevels, smoothLevels;
        double tokensPerStep = 0;
        std::vector<double> tokensX;  // step * tokensPerStep (the tokens axis only)
        TimeGapTracker gaps;          // the wall-time axis only
    };
    struct Graphs {
        QCPGraph* raw = nullptr;
        QCPGraph* smooth = nullptr;
        QCPGraph* diverged = nullptr;
        std::unique_ptr<Prepared> prep;
        // What the graphs' data was decimated for; the same again skips the work. Through the
        // levels, the points depend on the plan, not on the exact range (unless markers for
        // non-finite values or the full scan's buckets follow the range).
        bool decimated = false;
        QCPRange decimatedRange;
        int decimatedBuckets = -1;
        XAxisKind decimatedAxis = XAxisKind::Step;
        DecimationPlan decimatedPlan;
        bool rangeDependent = true;
        double lastFiniteMin = 0, lastFiniteMax = 0;  // y extent of the decimated data
        bool hasExtent = false;
    };
    // Brings g.prep up to the curve's series and the options; true when what it draws changed.
    bool prepare(const Curve& c, Graphs& g);
    // The series' x on the current axis (the prepared points only).
    std::span<const double> xOf(const Curve& c, Prepared& p);
    void decimate(const Curve& c, Graphs& g, const QCPRange& range, int buckets,
                  const DecimationPlan& plan);
    void applyTheme();
    QString xLabel() const;
    void placeLegend();  // in the layout below the plot area when shown and needed, else out

    QString m_yLabel;
    QCPTextElement* m_title = nullptr;
    std::vector<Curve> m_curves;
    std::vector<Graphs> m_graphs;
    Options m_options;
    QCPItemStraightLine* m_crosshair = nullptr;
    bool m_follow = true;
    bool m_inRedraw = false;
    bool m_xTickerSet = false;
    bool m_legendShown = true;
    bool m_anyLegend = false;
    double m_lastRedrawMs = 0;
};

}  // namespace ws::ui
