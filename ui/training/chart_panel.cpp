// SPDX-License-Identifier: GPL-3.0-or-later
// ChartPanel: see chart_panel.h.
#include "ui/training/chart_panel.h"

#include <QElapsedTimer>
#include <QLocale>
#include <QToolTip>
#include <cmath>
#include <limits>
#include <map>

#include "ui/common/plot_theme.h"

namespace ws::ui {
namespace {

QVector<double> toQVector(const std::vector<double>& v) {
    return QVector<double>(v.begin(), v.end());
}

QString formatValue(double v) {
    if (std::isnan(v)) return QStringLiteral("NaN");
    if (std::isinf(v)) return v > 0 ? QStringLiteral("+Inf") : QStringLiteral("-Inf");
    const double a = std::fabs(v);
    if (a >= 1e5) return humanNumber(v, 4);  // 123.4k tokens/s, as the axis reads
    if (a != 0 && a < 1e-3) return QString::number(v, 'e', 3);
    return QString::number(v, 'g', 5);
}

}  // namespace

QString humanNumber(double v, int significant) {
    if (!std::isfinite(v)) return formatValue(v);
    significant = std::max(significant, 1);
    static const char* const kSuffix[] = {"", "k", "M", "B", "T"};
    const double a = std::fabs(v);
    if (a < 1000) return QString::number(v, 'g', std::max(significant, 6));
    int unit = std::min(int(std::floor(std::log10(a) / 3)), 4);
    for (;;) {
        const double scaled = v / std::pow(1000.0, unit);
        const int digits = int(std::floor(std::log10(std::fabs(scaled)))) + 1;  // 1 to 3
        QString text = QString::number(scaled, 'f', std::max(significant - digits, 0));
        // Rounding can carry into the next unit (999,999 -> "1000k"): say "1M" instead.
        if (std::fabs(text.toDouble()) >= 1000 && unit < 4) {
            ++unit;
            continue;
        }
        if (text.contains('.')) {
            while (text.endsWith('0')) text.chop(1);
            if (text.endsWith('.')) text.chop(1);
        }
        return text + QLatin1String(kSuffix[unit]);
    }
}

QStringList humanTickLabels(const QVector<double>& ticks) {
    double largest = 0;
    for (double t : ticks) largest = std::max(largest, std::fabs(t));
    if (largest < 1000) return {};
    // The value a label reads as ("100.25k" -> 100250), to check that a label says its tick.
    auto readBack = [](QString label) {
        static const QString kSuffixes = QStringLiteral("kMBT");
        double scale = 1;
        if (!label.isEmpty() && kSuffixes.contains(label.back())) {
            scale = std::pow(1000.0, double(kSuffixes.indexOf(label.back()) + 1));
            label.chop(1);
        }
        return label.toDouble() * scale;
    };
    for (int significant = 3;; ++significant) {
        QStringList labels;
        bool exact = true;
        for (double t : ticks) {
            // A tick computed as 0 can come out as 1e-12; it reads "0".
            const double tick = std::fabs(t) < 1e-9 * largest ? 0.0 : t;
            labels << humanNumber(tick, significant);
            exact = exact && std::fabs(readBack(labels.back()) - tick) <= 1e-9 * largest;
        }
        // Ticks are round numbers: the fewest digits that say each one exactly, up to the
        // digits a double holds.
        if (exact || significant >= 15) return labels;
    }
}

QVector<QString> HumanAxisTicker::createLabelVector(const QVector<double>& ticks,
                                                    const QLocale& locale, QChar formatChar,
                                                    int precision) {
    const QStringList labels = humanTickLabels(ticks);
    if (labels.isEmpty())
        return QCPAxisTicker::createLabelVector(ticks, locale, formatChar, precision);
    return QVector<QString>(labels.begin(), labels.end());
}

ChartPanel::ChartPanel(const QString& title, const QString& yLabel, QWidget* parent)
    : QCustomPlot(parent), m_yLabel(yLabel) {
    setObjectName(title);
    plotLayout()->insertRow(0);
    m_title = new QCPTextElement(this, title,
                                 QFont(font().family(), font().pointSize() + 1, QFont::DemiBold));
    plotLayout()->addElement(0, 0, m_title);
    yAxis->setLabel(yLabel);
    xAxis->setTicker(QSharedPointer<HumanAxisTicker>::create());
    yAxis->setTicker(QSharedPointer<HumanAxisTicker>::create());
    setInteractions(QCP::iRangeDrag | QCP::iRangeZoom);
    axisRect()->setRangeDrag(Qt::Horizontal | Qt::Vertical);
    axisRect()->setRangeZoom(Qt::Horizontal);
    setNoAntialiasingOnDrag(true);
    // Many long overlaid runs: the fast polyline path and no antialiasing for the faint raw
    // lines keep a replot inside a frame (bench/plot_bench.cpp).
    setPlottingHint(QCP::phFastPolylines, true);
    // The legend goes below the plot area (placeLegend), in columns filled left to right.
    legend->setVisible(false);
    axisRect()->insetLayout()->take(legend);
    axisRect()->insetLayout()->simplify();
    legend->setFillOrder(QCPLayoutGrid::foColumnsFirst, false);
    legend->setBorderPen(Qt::NoPen);
    legend->setBrush(Qt::NoBrush);
    legend->setMargins(QMargins(6, 0, 6, 2));
    legend->setColumnSpacing(14);
    legend->setRowSpacing(0);
    legend->setIconSize(22, 10);
    legend->setFont(QFont(font().family(), std::max(7, font().pointSize() - 1)));
    m_crosshair = new QCPItemStraightLine(this);
    // On the buffered overlay layer: moving it redraws only that layer, never the curves.
    m_crosshair->setLayer(QStringLiteral("overlay"));
    layer(QStringLiteral("overlay"))->setMode(QCPLayer::lmBuffered);
    m_crosshair->setVisible(false);
    m_crosshair->setSelectable(false);
    setMinimumSize(260, 180);
    applyTheme();
    connect(xAxis, qOverload<const QCPRange&>(&QCPAxis::rangeChanged), this,
            [this](const QCPRange& r) {
                if (m_inRedraw) return;
                emit userChangedXRange(r);
            });
}

void ChartPanel::applyTheme() {
    // Follow the system palette so the charts read in light and dark themes.
    const PlotColors c = applyPlotPalette(this);
    const QColor text = c.text;
    m_title->setTextColor(text);
    legend->setTextColor(text);
    m_crosshair->setPen(QPen(text, 1, Qt::DashLine));
    for (size_t i = 0; i < m_graphs.size() && i < m_curves.size(); ++i)
        m_graphs[i].raw->setPen(QPen(faintOf(m_curves[i].color), 1));
}

// The raw values' colour: the curve's colour a quarter of the way from the chart's background,
// mixed here rather than drawn with alpha (blending every pixel of 20 long overlaid runs
// costs more than the rest of the chart).
QColor ChartPanel::faintOf(const QColor& color) const {
    const QColor base = palette().color(QPalette::Base);
    constexpr double kShare = 0.25;
    auto mix = [](double a, double b) { return int(std::lround(b + kShare * (a - b))); };
    return QColor(mix(color.red(), base.red()), mix(color.green(), base.green()),
                  mix(color.blue(), base.blue()));
}

void ChartPanel::setCurves(std::vector<Curve> curves) {
    // The prepared data of series shown before is kept: a new curve list (a run added, a key
    // appeared) costs no smoothing or levels of the runs already drawn.
    std::map<const MetricSeries*, std::unique_ptr<Prepared>> kept;
    for (Graphs& g : m_graphs)
        if (g.prep && g.prep->series) kept[g.prep->series] = std::move(g.prep);
    clearGraphs();
    m_curves = std::move(curves);
    m_graphs.clear();
    m_graphs.resize(m_curves.size());
    bool anyLegend = false;
    for (size_t i = 0; i < m_curves.size(); ++i) {
        const Curve& c = m_curves[i];
        Graphs& g = m_graphs[i];
        const auto same = kept.find(c.series);
        g.prep = same != kept.end() && same->second ? std::move(same->second)
                                                    : std::make_unique<Prepared>();
        g.raw = addGraph();
        g.raw->setPen(QPen(faintOf(c.color), 1));
        g.raw->setAntialiased(false);
        g.raw->removeFromLegend();
        g.smooth = addGraph();
        QPen pen(c.color, c.dashed ? 1.6 : 2.0);
        if (c.dashed) pen.setStyle(Qt::DashLine);
        g.smooth->setPen(pen);
        g.smooth->setName(c.name);
        if (c.markers) g.smooth->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssCircle, 5));
        if (!c.inLegend) g.smooth->removeFromLegend();
        anyLegend = anyLegend || c.inLegend;
        g.diverged = addGraph();
        g.diverged->setLineStyle(QCPGraph::lsNone);
        g.diverged->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssTriangleInverted,
                                                    QColor(0xe5, 0x39, 0x35),
                                                    QColor(0xe5, 0x39, 0x35), 11));
        g.diverged->setName(tr("%1 diverged (NaN/Inf)").arg(c.name));
        g.diverged->removeFromLegend();
    }
    m_anyLegend = anyLegend;
    placeLegend();
    // Smoothing and levels of new series now, when their data arrives, not in the next frame.
    for (size_t i = 0; i < m_curves.size(); ++i) prepare(m_curves[i], m_graphs[i]);
    // Antialiasing and wide pens cost more than they give once many runs overlap: thin aliased
    // lines draw several times faster (bench/plot_bench.cpp).
    for (const Graphs& g : m_graphs) {
        g.smooth->setAntialiased(!crowded());
        if (crowded()) {
            QPen pen = g.smooth->pen();
            pen.setWidthF(1.0);
            g.smooth->setPen(pen);
        }
    }
}

void ChartPanel::setLegendShown(bool shown) {
    m_legendShown = shown;
    placeLegend();
    replot(QCustomPlot::rpQueuedReplot);
}

namespace {

// The legend's last entry when not every run fits: "+7 more (hover a curve for its name)".
class MoreEntriesItem : public QCPAbstractLegendItem {
public:
    MoreEntriesItem(QCPLegend* parent, const QString& text)
        : QCPAbstractLegendItem(parent), m_text(text) {}
    QString text() const { return m_text; }

protected:
    void draw(QCPPainter* painter) override {
        painter->setFont(mParentLegend->font());
        painter->setPen(QPen(mParentLegend->textColor()));
        painter->drawText(mRect, Qt::AlignLeft | Qt::AlignVCenter, m_text);
    }
    QSize minimumOuterSizeHint() const override {
        const QFontMetrics metrics(mParentLegend->font());
        return QSize(metrics.horizontalAdvance(m_text), metrics.height()) +
               QSize(mMargins.left() + mMargins.right(), mMargins.top() + mMargins.bottom());
    }

private:
    QString m_text;
};

}  // namespace

void ChartPanel::placeLegend() {
    const bool show = m_legendShown && m_anyLegend;
    const bool placed = plotLayout()->hasElement(2, 0) && plotLayout()->element(2, 0) == legend;
    if (show && !placed) {
        if (plotLayout()->rowCount() < 3) plotLayout()->insertRow(2);
        plotLayout()->addElement(2, 0, legend);
        // Its own height, no more: the plot area takes the rest.
        plotLayout()->setRowStretchFactor(2, 0.001);
    } else if (!show && placed) {
        plotLayout()->take(legend);
        plotLayout()->simplify();
    }
    legend->setVisible(show);
    if (!show) return;
    // As many columns as the widest entry allows across the chart's width, and at most a
    // quarter of its height in rows: the plot area keeps the room (the crosshair's read-out
    // names every curve).
    const QFontMetrics metrics(legend->font());
    int widest = 0, entries = 0;
    for (size_t i = 0; i < m_curves.size(); ++i) {
        if (!m_curves[i].inLegend) continue;
        widest = std::max(widest, metrics.horizontalAdvance(m_curves[i].name));
        ++entries;
    }
    const int entry = widest + legend->iconSize().width() + legend->iconTextPadding() + 8 +
                      legend->columnSpacing();
    const int columns = std::max(1, std::min(entries, std::max(width() - 20, entry) / entry));
    const int rowHeight = std::max(metrics.height(), legend->iconSize().height()) + 2;
    const int rows = std::max(1, height() / 4 / rowHeight);
    const int room = columns * rows;
    const int shown = entries <= room ? entries : room - 1;
    // Which curves have an entry: the first ones (the run trained now comes first).
    for (int i = legend->itemCount() - 1; i >= 0; --i)
        if (dynamic_cast<MoreEntriesItem*>(legend->item(i))) legend->removeItem(i);
    int listed = 0;
    for (size_t i = 0; i < m_curves.size(); ++i) {
        if (!m_curves[i].inLegend) continue;
        if (listed++ < shown) {
            m_graphs[i].smooth->addToLegend(legend);
        } else {
            m_graphs[i].smooth->removeFromLegend(legend);
        }
    }
    if (shown < entries)
        legend->addItem(new MoreEntriesItem(
            legend, tr("+%1 more (hover a curve for its name)").arg(entries - shown)));
    legend->setWrap(columns);
    legend->setFillOrder(QCPLayoutGrid::foColumnsFirst, true);
}

void ChartPanel::resizeEvent(QResizeEvent* event) {
    QCustomPlot::resizeEvent(event);
    if (legend->visible()) placeLegend();
}

QStringList ChartPanel::legendEntries() const {
    QStringList names;
    if (!legend->visible()) return names;
    for (int i = 0; i < legend->itemCount(); ++i) {
        if (auto* item = qobject_cast<QCPPlottableLegendItem*>(legend->item(i)))
            names << item->plottable()->name();
        else if (auto* more = dynamic_cast<MoreEntriesItem*>(legend->item(i)))
            names << more->text();
    }
    return names;
}

void ChartPanel::setOptions(const Options& options) {
    const bool axisChanged = options.xAxis != m_options.xAxis;
    m_options = options;
    if (m_options.logY) {
        yAxis->setScaleType(QCPAxis::stLogarithmic);
        yAxis->setTicker(QSharedPointer<QCPAxisTickerLog>::create());
    } else {
        yAxis->setScaleType(QCPAxis::stLinear);
        yAxis->setTicker(QSharedPointer<HumanAxisTicker>::create());
    }
    // Steps and tokens read 50k, 1.2M; seconds stay plain (1500 s, not "1.5k").
    if (axisChanged || !m_xTickerSet) {
        if (m_options.xAxis == XAxisKind::WallTime) {
            xAxis->setTicker(QSharedPointer<QCPAxisTicker>::create());
        } else {
            xAxis->setTicker(QSharedPointer<HumanAxisTicker>::create());
        }
        m_xTickerSet = true;
    }
    xAxis->setLabel(xLabel());
    if (axisChanged) m_follow = true;
    for (Graphs& g : m_graphs) g.decimated = false;
}

QString ChartPanel::xLabel() const {
    switch (m_options.xAxis) {
        case XAxisKind::Step:
            return tr("step");
        case XAxisKind::Tokens:
            return tr("tokens seen");
        case XAxisKind::WallTime:
            return tr("wall time (s)");
    }
    return {};
}

void ChartPanel::followData() {
    m_follow = true;
    redraw();
}

bool ChartPanel::prepare(const Curve& c, Graphs& g) {
    Prepared& p = *g.prep;
    if (!c.series) {
        const bool had = p.size > 0 || p.series;
        p = Prepared{};
        return had;
    }
    const MetricSeries& s = *c.series;
    const size_t size = s.size();
    if (p.series != c.series || p.identity != s.identity || size < p.size) {
        p = Prepared{};  // another series (or one that shrank): start again
        p.series = c.series;
        p.identity = s.identity;
        g.decimated = false;
    }
    bool changed = false;
    if (p.rawLevels.size() != size) {
        p.rawLevels.extend(s.value);
        changed = true;
    }
    const bool smoothing = m_options.smoothing > 0 && !c.markers && c.smoothed;
    if (smoothing && p.smoothing != m_options.smoothing) {
        p.smoothing = m_options.smoothing;
        p.ema = {};
        p.smoothY.clear();
        p.smoothLevels.clear();
        changed = true;
    } else if (!smoothing && p.smoothing >= 0) {
        p.smoothing = -1;
        p.smoothY = {};
        p.smoothLevels.clear();
        changed = true;
    }
    if (smoothing && p.smoothY.size() != size) {
        emaSmoothAppend(s.value, p.smoothing, p.ema, p.smoothY);
        p.smoothLevels.extend(p.smoothY);
        changed = true;
    }
    p.size = size;
    if (m_options.xAxis == XAxisKind::WallTime) p.gaps.extend(std::span(s.wall).first(size));
    return changed;
}

std::span<const double> ChartPanel::xOf(const Curve& c, Prepared& p) {
    if (!c.series) return {};
    const MetricSeries& s = *c.series;
    switch (m_options.xAxis) {
        case XAxisKind::Step:
            return std::span(s.step).first(p.size);
        case XAxisKind::WallTime:
            return std::span(s.wall).first(p.size);
        case XAxisKind::Tokens:
            if (p.tokensPerStep != c.tokensPerStep) {
                p.tokensPerStep = c.tokensPerStep;
                p.tokensX.clear();
            }
            for (size_t i = p.tokensX.size(); i < p.size; ++i)
                p.tokensX.push_back(s.step[i] * c.tokensPerStep);
            return std::span(p.tokensX).first(p.size);
    }
    return {};
}

void ChartPanel::decimate(const Curve& c, Graphs& g, const QCPRange& range, int buckets,
                          const DecimationPlan& plan) {
    Prepared& p = *g.prep;
    const std::span<const double> x = xOf(c, p);
    const std::span<const double> values =
        c.series ? std::span(c.series->value).first(p.size) : std::span<const double>{};
    const bool smoothing = p.smoothing >= 0;
    const std::vector<TimeGap> noGaps;
    const std::vector<TimeGap>& gaps =
        m_options.xAxis == XAxisKind::WallTime ? p.gaps.gaps() : noGaps;
    Decimated raw, smooth;
    if (smoothing) {
        decimateMinMax(x, p.smoothY, p.smoothLevels, range.lower, range.upper, buckets, smooth);
        decimateMinMax(x, values, p.rawLevels, range.lower, range.upper, buckets, raw);
        breakAtGaps(gaps, raw);
        g.raw->setData(toQVector(raw.x), toQVector(raw.y), true);
    } else {
        decimateMinMax(x, values, p.rawLevels, range.lower, range.upper, buckets, smooth);
        g.raw->data()->clear();
    }
    breakAtGaps(gaps, smooth);
    g.smooth->setData(toQVector(smooth.x), toQVector(smooth.y), true);
    // Divergence markers sit on the last finite value (or the plot's top when none).
    const Decimated& markers = smoothing ? raw : smooth;
    g.diverged->setData(toQVector(markers.divergeX), toQVector(markers.divergeY), true);
    g.hasExtent = false;
    for (const Decimated* d : {&raw, &smooth}) {
        if (d == &raw && !smoothing) continue;
        for (double v : d->y) {
            if (std::isnan(v) || (m_options.logY && v <= 0)) continue;  // NaN: a pause
            if (!g.hasExtent) {
                g.lastFiniteMin = g.lastFiniteMax = v;
                g.hasExtent = true;
            }
            g.lastFiniteMin = std::min(g.lastFiniteMin, v);
            g.lastFiniteMax = std::max(g.lastFiniteMax, v);
        }
    }
    g.decimated = true;
    g.decimatedRange = range;
    g.decimatedBuckets = buckets;
    g.decimatedAxis = m_options.xAxis;
    g.decimatedPlan = plan;
    g.rangeDependent = plan.level < 0 || !p.rawLevels.nonFinite().empty();
}

void ChartPanel::redraw() {
    QElapsedTimer timer;
    timer.start();
    m_inRedraw = true;
    // 1. Smoothing and min/max levels, extended by the points that arrived since the last
    // redraw (or rebuilt when the smoothing changed).
    double xMin = std::numeric_limits<double>::infinity(), xMax = -xMin;
    std::vector<bool> changed(m_curves.size());
    for (size_t i = 0; i < m_curves.size(); ++i) {
        changed[i] = prepare(m_curves[i], m_graphs[i]);
        const std::span<const double> x = xOf(m_curves[i], *m_graphs[i].prep);
        if (!x.empty()) {
            xMin = std::min(xMin, x.front());
            xMax = std::max(xMax, x.back());
        }
    }
    if (m_follow && xMin <= xMax) {
        const double pad = xMax > xMin ? 0.0 : 1.0;
        xAxis->setRange(xMin - pad, xMax + pad);
    }
    const QCPRange range = xAxis->range();
    // One min/max bucket per pixel column; two columns once many runs overlap, four once they
    // crowd the chart (spikes still show, as a column two or four pixels wide): the painter's
    // cost goes by the line segments, and 20 overlaid long runs must replot inside a frame
    // (bench/plot_bench.cpp).
    const int columns = m_curves.size() > 12 ? 4 : crowded() ? 2 : 1;
    const int buckets = std::max(axisRect()->width() / columns, 50);
    // 2. Decimation for the visible range, from the levels: skipped when nothing it depends on
    // changed, and otherwise proportional to the width, not to the points.
    double yLo = std::numeric_limits<double>::infinity(), yHi = -yLo;
    for (size_t i = 0; i < m_curves.size(); ++i) {
        Graphs& g = m_graphs[i];
        const DecimationPlan plan =
            planDecimation(xOf(m_curves[i], *g.prep), g.prep->size, g.prep->rawLevels, range.lower,
                           range.upper, buckets);
        if (changed[i] || !g.decimated || g.decimatedBuckets != buckets ||
            g.decimatedAxis != m_options.xAxis || g.decimatedPlan != plan ||
            (g.rangeDependent && g.decimatedRange != range))
            decimate(m_curves[i], g, range, buckets, plan);
        if (g.hasExtent) {
            yLo = std::min(yLo, g.lastFiniteMin);
            yHi = std::max(yHi, g.lastFiniteMax);
        }
    }
    for (size_t i = 0; i < m_graphs.size(); ++i) {
        QCPGraph* d = m_graphs[i].diverged;
        for (auto it = d->data()->begin(); it != d->data()->end(); ++it) {
            if (std::isnan(it->value)) it->value = std::isfinite(yHi) ? yHi : 1.0;
        }
    }
    if (m_follow && yLo <= yHi) {
        if (m_options.logY) {
            yAxis->setRange(yLo / 1.15, yHi * 1.15);
        } else {
            const double pad =
                yHi > yLo ? 0.06 * (yHi - yLo) : std::max(std::fabs(yHi) * 0.1, 1e-9);
            yAxis->setRange(yLo - pad, yHi + pad);
        }
    }
    m_inRedraw = false;
    replot(QCustomPlot::rpQueuedReplot);
    m_lastRedrawMs = double(timer.nsecsElapsed()) / 1e6;
}

void ChartPanel::setCrosshair(double x, bool visible) {
    m_crosshair->setVisible(visible);
    if (visible) {
        m_crosshair->point1->setCoords(x, 0);
        m_crosshair->point2->setCoords(x, 1);
    }
    m_crosshair->layer()->replot();
}

QString ChartPanel::formatX(double x) const {
    if (!std::isfinite(x)) return formatValue(x);
    QLocale locale;
    locale.setNumberOptions(QLocale::DefaultNumberOptions);  // the C locale omits the commas
    switch (m_options.xAxis) {
        case XAxisKind::Step:  // whole steps, grouped digits (149,000)
            return locale.toString(qlonglong(std::llround(x)));
        case XAxisKind::Tokens:
            return humanNumber(x, 3);
        case XAxisKind::WallTime:
            return QString::number(x, 'f', std::fabs(x) < 100 ? 1 : 0);
    }
    return formatValue(x);
}

QString ChartPanel::valuesAt(double x) const {
    QStringList lines;
    lines << QStringLiteral("<b>%1 %2</b>").arg(xLabel(), formatX(x));
    for (size_t i = 0; i < m_curves.size(); ++i) {
        const Curve& c = m_curves[i];
        const Prepared& p = *m_graphs[i].prep;
        const size_t n = std::min(p.size, c.series ? c.series->size() : 0);
        if (n == 0) continue;
        // The point nearest x among those drawn, on the current axis.
        auto xAt = [&](size_t k) {
            switch (m_options.xAxis) {
                case XAxisKind::WallTime:
                    return c.series->wall[k];
                case XAxisKind::Tokens:
                    return c.series->step[k] * c.tokensPerStep;
                case XAxisKind::Step:
                    break;
            }
            return c.series->step[k];
        };
        size_t lo = 0, hi = n;  // the first point at or right of x
        while (lo < hi) {
            const size_t mid = lo + (hi - lo) / 2;
            if (xAt(mid) < x) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        size_t at = lo;
        if (at == n || (at > 0 && std::fabs(xAt(at - 1) - x) < std::fabs(xAt(at) - x))) --at;
        const double raw = c.series->value[at];
        const double shown = p.smoothing >= 0 && at < p.smoothY.size() ? p.smoothY[at] : raw;
        QString line = QStringLiteral("<span style='color:%1'>■</span> %2: <b>%3</b>")
                           .arg(c.color.name(), c.name.toHtmlEscaped(), formatValue(shown));
        if (shown != raw || !std::isfinite(raw)) line += tr(" (raw %1)").arg(formatValue(raw));
        lines << line;
    }
    return lines.join(QStringLiteral("<br>"));
}

void ChartPanel::mousePressEvent(QMouseEvent* event) {
    // A right click opens the context menu; only a drag or a click stops following the data.
    if (event->button() != Qt::RightButton) m_follow = false;
    QCustomPlot::mousePressEvent(event);
}

void ChartPanel::wheelEvent(QWheelEvent* event) {
    m_follow = false;
    QCustomPlot::wheelEvent(event);
}

void ChartPanel::mouseDoubleClickEvent(QMouseEvent* event) {
    QCustomPlot::mouseDoubleClickEvent(event);
    followData();
}

void ChartPanel::mouseMoveEvent(QMouseEvent* event) {
    QCustomPlot::mouseMoveEvent(event);
    const QPointF pos = event->position();
    const bool inside = axisRect()->rect().contains(pos.toPoint());
    const double x = xAxis->pixelToCoord(pos.x());
    setCrosshair(x, inside);
    emit crosshairMoved(x, inside);
    if (inside && !m_curves.empty()) {
        QToolTip::showText(event->globalPosition().toPoint(), valuesAt(x), this);
    } else {
        QToolTip::hideText();
    }
}

void ChartPanel::leaveEvent(QEvent* event) {
    QCustomPlot::leaveEvent(event);
    setCrosshair(0, false);
    emit crosshairMoved(0, false);
}

void ChartPanel::changeEvent(QEvent* event) {
    QCustomPlot::changeEvent(event);
    if (event->type() == QEvent::PaletteChange || event->type() == QEvent::StyleChange) {
        applyTheme();
        replot(QCustomPlot::rpQueuedReplot);
    }
}

}  // namespace ws::ui
