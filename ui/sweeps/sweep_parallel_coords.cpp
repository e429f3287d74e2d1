// SPDX-License-Identifier: GPL-3.0-or-later
// SweepParallelCoords: see sweep_parallel_coords.h.
#include "ui/sweeps/sweep_parallel_coords.h"

#include <qcustomplot.h>
#include <QMouseEvent>
#include <QToolTip>
#include <QVBoxLayout>
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>

#include "ui/sweeps/sweep_points.h"
#include "ui/sweeps/transfer_chart.h"

namespace ws::ui {
namespace {

constexpr const char* kSeedKey = "seed";
constexpr const char* kLossAxis = "final loss";
// Finite losses fill the loss axis up to here when some trial diverged; the diverged ones end
// at 1, so they are apart from every finite loss, however large.
constexpr double kLossTopWithDiverged = 0.86;
// The plot's height that is not axis: the key above, the axis names below, margins.
constexpr int kNonAxisHeight = 85;

bool parseNumber(const std::string& text, double& out) {
    if (text.empty()) return false;
    char* end = nullptr;
    out = std::strtod(text.c_str(), &end);
    return end == text.c_str() + text.size() && std::isfinite(out);
}

bool isPowerOfTwo(double v) {
    if (v <= 0.0) return false;
    const double e = std::log2(v);
    return std::abs(e - std::round(e)) < 1e-9;
}

// "256" for whole powers of two, "2^-7" below one (what the other sweep views call a rate).
QString log2Label(double exponent) {
    const long e = std::lround(exponent);
    if (e >= 0 && e < 31) return QString::number(1L << e);
    return QString::fromStdString(learningRateLabel(double(e)));
}

QString shortNumber(double v) {
    return QString::number(v, 'g', 4);
}

// A trial's loss on the loss axis: its final loss, or for a pruned trial the loss at the last
// rung it reached (ASHA stopped it there). NaN when it has none.
double placedLoss(const sweep::TrialResult& t) {
    if (std::isfinite(t.finalLoss)) return t.finalLoss;
    if (t.status == sweep::TrialStatus::Pruned && !t.rungLosses.empty() &&
        std::isfinite(t.rungLosses.rbegin()->second))
        return t.rungLosses.rbegin()->second;
    return std::nan("");
}

bool isDiverged(const sweep::TrialResult& t) {
    return t.status == sweep::TrialStatus::Diverged ||
           (t.status == sweep::TrialStatus::Finished && !std::isfinite(t.finalLoss));
}

// Viridis stops: perceptually even and legible on light and dark backgrounds alike.
QCPColorGradient lossGradient(bool darkBackground) {
    QCPColorGradient g;
    g.clearColorStops();
    g.setColorStopAt(0.0, QColor(0x44, 0x01, 0x54));
    g.setColorStopAt(0.25, QColor(0x3b, 0x52, 0x8b));
    g.setColorStopAt(0.5, QColor(0x21, 0x91, 0x8c));
    g.setColorStopAt(0.75, QColor(0x5e, 0xc9, 0x62));
    // Viridis' last yellow would vanish on a white plot: stop short of it.
    g.setColorStopAt(1.0, QColor(0xc8, 0xe0, 0x20));
    g.setColorInterpolation(QCPColorGradient::ciRGB);
    // The best (lowest-loss) trials get the colour that stands out against the background.
    return darkBackground ? g.inverted() : g;
}

// Drops labels closer than `minGap` (axis units) to a kept one, keeping the bottom and top ones.
std::vector<std::pair<double, QString>> thinLabels(std::vector<std::pair<double, QString>> ticks,
                                                   double minGap) {
    std::sort(ticks.begin(), ticks.end(),
              [](const auto& a, const auto& b) { return a.first < b.first; });
    if (ticks.size() < 3) return ticks;
    std::vector<std::pair<double, QString>> kept{ticks.front()};
    for (size_t i = 1; i + 1 < ticks.size(); ++i)
        if (ticks[i].first - kept.back().first >= minGap &&
            ticks.back().first - ticks[i].first >= minGap)
            kept.push_back(ticks[i]);
    kept.push_back(ticks.back());
    return kept;
}

}  // namespace

SweepParallelCoords::SweepParallelCoords(QWidget* parent) : QWidget(parent) {
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    m_plot = new QCustomPlot(this);
    m_plot->setObjectName(QStringLiteral("parallel_coords"));
    m_plot->setMinimumSize(360, 220);
    // The lines on a layer of their own, in the order drawn; a line moves to its end by passing
    // through the (never drawn) restack layer.
    m_plot->addLayer(QStringLiteral("trials"), m_plot->layer(QStringLiteral("main")),
                     QCustomPlot::limAbove);
    m_lineLayer = m_plot->layer(QStringLiteral("trials"));
    m_plot->addLayer(QStringLiteral("restack"), m_lineLayer, QCustomPlot::limAbove);
    m_restack = m_plot->layer(QStringLiteral("restack"));
    m_restack->setVisible(false);
    // Hundreds of lines: none of them in a legend (each would be a legend item to build).
    m_plot->setAutoAddPlottableToLegend(false);
    applySweepPlotTheme(m_plot);
    m_plot->yAxis->setVisible(false);
    m_plot->yAxis->setRange(-0.05, 1.05);
    QCPAxis* x = m_plot->xAxis;
    x->setBasePen(Qt::NoPen);
    x->setTickPen(Qt::NoPen);
    x->setSubTicks(false);
    x->grid()->setVisible(false);
    x->setTickLabelFont(QFont(font().family(), font().pointSize(), QFont::DemiBold));
    m_scale = new QCPColorScale(m_plot);
    m_scale->setType(QCPAxis::atRight);
    m_scale->setBarWidth(12);
    m_scale->axis()->setLabel(tr("final loss"));
    const QColor text = m_plot->palette().color(QPalette::Text);
    m_scale->axis()->setLabelColor(text);
    m_scale->axis()->setTickLabelColor(text);
    // A one-line key above the plot: what the colours and line styles mean.
    m_plot->plotLayout()->insertRow(0);
    m_caption = new QCPTextElement(m_plot, QString(),
                                   QFont(font().family(), std::max(7, font().pointSize() - 1)));
    QColor muted = text;
    muted.setAlpha(170);
    m_caption->setTextColor(muted);
    m_caption->setMargins(QMargins(0, 4, 0, 0));
    m_plot->plotLayout()->addElement(0, 0, m_caption);
    auto* group = new QCPMarginGroup(m_plot);
    m_plot->axisRect()->setMarginGroup(QCP::msTop | QCP::msBottom, group);
    m_scale->setMarginGroup(QCP::msTop | QCP::msBottom, group);
    layout->addWidget(m_plot);
    // Hovering a line names the trial: with hundreds of lines, the colour alone cannot.
    m_plot->setMouseTracking(true);
    connect(m_plot, &QCustomPlot::mouseMove, this, &SweepParallelCoords::showTrialTip);
    setResults({}, {});
}

std::string SweepParallelCoords::valueOf(const sweep::TrialResult& t,
                                         const std::string& key) const {
    std::string v = t.param(key);
    if (!v.empty()) return v;
    if (key == sweep::kParametrizationKey) return t.parametrization;
    if (key == kSeedKey) return std::to_string(t.seed);
    return {};
}

void SweepParallelCoords::setResults(const std::vector<sweep::TrialResult>& trials,
                                     const std::vector<std::string>& keys) {
    m_trials.clear();
    for (const auto& t : trials)
        if (t.status == sweep::TrialStatus::Finished || t.status == sweep::TrialStatus::Pruned ||
            t.status == sweep::TrialStatus::Diverged)
            m_trials.push_back(t);
    // The axes: the sweep's keys in its order, then parametrization and seed when they vary
    // (a sweep names neither as a key, yet both split its trials).
    m_keys = keys;
    if (m_keys.empty())
        for (const auto& t : trials)
            for (const auto& p : t.params)
                if (std::find(m_keys.begin(), m_keys.end(), p.key) == m_keys.end())
                    m_keys.push_back(p.key);
    for (const char* extra : {sweep::kParametrizationKey, kSeedKey}) {
        if (std::find(m_keys.begin(), m_keys.end(), extra) != m_keys.end()) continue;
        // A swept runconfig.seed is the trial's seed already: one axis for it is enough.
        if (extra == std::string(kSeedKey) &&
            std::find(m_keys.begin(), m_keys.end(), "runconfig.seed") != m_keys.end())
            continue;
        std::vector<std::string> seen;
        for (const auto& t : m_trials) {
            const std::string v = valueOf(t, extra);
            if (std::find(seen.begin(), seen.end(), v) == seen.end()) seen.push_back(v);
        }
        if (seen.size() > 1) m_keys.push_back(extra);
    }
    rebuild();
}

QString SweepParallelCoords::axisName(int i) const {
    return QString::fromStdString(m_axes.at(size_t(i)).key);
}

SweepParallelCoords::AxisScale SweepParallelCoords::axisScale(int i) const {
    return m_axes.at(size_t(i)).scale;
}

double SweepParallelCoords::axisPosition(int i, const std::string& value) const {
    const Axis& a = m_axes.at(size_t(i));
    if (a.scale == AxisScale::Categorical) {
        const auto it = std::find(a.categories.begin(), a.categories.end(), value);
        if (it == a.categories.end()) return std::nan("");
        const size_t k = a.categories.size();
        return k == 1 ? 0.5 : double(it - a.categories.begin()) / double(k - 1);
    }
    double v = 0.0;
    if (!parseNumber(value, v)) return std::nan("");
    const double c = a.scale == AxisScale::Log2    ? std::log2(v)
                     : a.scale == AxisScale::Log10 ? std::log10(v)
                                                   : v;
    if (!std::isfinite(c)) return std::nan("");
    return a.hi > a.lo ? (c - a.lo) / (a.hi - a.lo) : 0.5;
}

QCPCurve* SweepParallelCoords::lineOf(int trial) const {
    const auto it = m_lineOfTrial.find(trial);
    return it == m_lineOfTrial.end() ? nullptr : it->second.curve;
}

void SweepParallelCoords::showEmpty(const QString& text) {
    m_emptyText = text;
    m_plot->xAxis->setTicker(QSharedPointer<QCPAxisTickerText>::create());
    m_plot->xAxis->setRange(0, 1);
    m_caption->setText(QString());
    if (m_plot->plotLayout()->hasElement(1, 1)) {
        m_plot->plotLayout()->take(m_scale);
        m_plot->plotLayout()->simplify();
    }
    // Out of the layout the scale still draws, where it last was (or at the corner): hide it.
    m_scale->setVisible(false);
    auto* label = new QCPItemText(m_plot);
    label->position->setType(QCPItemPosition::ptAxisRectRatio);
    label->position->setCoords(0.5, 0.5);
    label->setText(text);
    QColor muted = m_plot->palette().color(QPalette::Text);
    muted.setAlpha(150);
    label->setColor(muted);
    label->setFont(QFont(font().family(), font().pointSize() + 1));
}

// Where the loss axis puts losses: finite ones (pruned trials at their last rung) bottom to top,
// diverged trials above them all. Colours span the finished trials' losses only, so a pruned
// trial's early, high loss does not wash out the differences between the finished ones.
struct SweepParallelCoords::LossRange {
    double lo = std::numeric_limits<double>::infinity(), hi = -lo;
    double colorLo = lo, colorHi = -lo;
    bool anyDiverged = false;
    bool anyLoss() const { return std::isfinite(lo); }
    double top() const { return anyDiverged ? kLossTopWithDiverged : 1.0; }
    double position(double l) const { return hi > lo ? (l - lo) / (hi - lo) * top() : top() * 0.5; }
    QCPRange colorRange() const {
        return QCPRange(colorLo, colorHi > colorLo ? colorHi : colorLo + 1e-3);
    }
};

void SweepParallelCoords::removeLines() {
    for (auto& [trial, line] : m_lineOfTrial) m_plot->removePlottable(line.curve);
    m_lineOfTrial.clear();
}

void SweepParallelCoords::rebuild() {
    m_emptyText.clear();
    std::vector<Axis> axes = keyAxes();
    // A view of one key is a scatter the μTransfer chart draws better; say so instead.
    if (axes.size() < 2 || m_trials.empty()) {
        const QString why =
            m_trials.empty() ? tr("No finished trials yet: a line appears per trial as it ends.")
            : axes.empty()
                ? tr("No swept values to show.")
                : tr("Parallel coordinates need a sweep over two or more keys; this one sweeps "
                     "only %1.")
                      .arg(QString::fromStdString(axes[0].key));
        removeLines();
        m_plot->clearItems();
        m_axes.clear();
        m_layoutKey.clear();
        showEmpty(why);
        replotIfShown();
        return;
    }
    const LossRange loss = lossRange();
    {
        Axis lossAxis;
        lossAxis.key = kLossAxis;
        lossAxis.lo = loss.lo;
        lossAxis.hi = loss.hi;
        axes.push_back(lossAxis);
    }
    m_axes = std::move(axes);
    const bool dark = m_plot->palette().color(QPalette::Base).lightness() < 128;
    QCPColorGradient gradient = lossGradient(dark);
    const bool crowded = m_trials.size() > 120;
    // Antialiasing hundreds of translucent polylines costs more than a live redraw may; in a
    // bundle that dense the jagged edges do not show.
    m_plot->setNotAntialiasedElements(crowded ? QCP::aePlottables : QCP::aeNone);
    const QString layout = layoutKey(loss, dark, crowded);
    const bool relayout = layout != m_layoutKey;
    if (relayout) {
        m_plot->clearItems();
        nameAxes();
        drawAxes(loss);
        m_layoutKey = layout;
    }
    updateLines(loss, gradient, relayout);
    QStringList key{tr("One line per trial, coloured by final loss")};
    if (loss.anyDiverged) key << tr("grey dashed: diverged");
    if (std::any_of(m_trials.begin(), m_trials.end(),
                    [](const auto& t) { return t.status == sweep::TrialStatus::Pruned; }))
        key << tr("faint grey: pruned (at its last rung's loss)");
    key << tr("hover a line for its values");
    m_caption->setText(key.join(QStringLiteral("  ·  ")));
    if (relayout) {
        m_scale->setGradient(gradient);
        m_scale->setDataRange(loss.colorRange());
    }
    replotIfShown();
}

QString SweepParallelCoords::layoutKey(const LossRange& loss, bool dark, bool crowded) const {
    QStringList parts;
    for (size_t i = 0; i < m_axes.size(); ++i) {
        const Axis& a = m_axes[i];
        parts << QString::fromStdString(a.key) << QString::number(int(a.scale))
              << QString::number(a.lo, 'g', 17) << QString::number(a.hi, 'g', 17);
        for (const auto& c : a.categories) parts << QString::fromStdString(c);
        const bool last = i + 1 == m_axes.size();
        for (const auto& [at, label] : last ? lossTicks(loss) : keyTicks(int(i)))
            parts << QString::number(at, 'g', 17) << label;
        parts << QStringLiteral("|");
    }
    parts << QString::number(loss.colorLo, 'g', 17) << QString::number(loss.colorHi, 'g', 17)
          << QString::number(loss.anyDiverged) << QString::number(dark) << QString::number(crowded)
          << QString::number(m_plot->height());
    return parts.join(QLatin1Char('\x1f'));
}

// A trial's values on the axes and its result: a line drawn from the same needs no change.
std::string SweepParallelCoords::lineKey(const sweep::TrialResult& t) const {
    std::string key = std::to_string(int(t.status)) + '\x1f' +
                      QString::number(placedLoss(t), 'g', 17).toStdString();
    for (size_t i = 0; i + 1 < m_axes.size(); ++i) key += '\x1f' + valueOf(t, m_axes[i].key);
    return key;
}

// One axis per key with a value in some drawn trial; its scale from the values it holds.
std::vector<SweepParallelCoords::Axis> SweepParallelCoords::keyAxes() const {
    std::vector<Axis> axes;
    for (const auto& key : m_keys) {
        Axis a;
        a.key = key;
        bool numeric = true, powers = true;
        double lo = std::numeric_limits<double>::infinity(), hi = -lo;
        for (const auto& t : m_trials) {
            const std::string v = valueOf(t, key);
            if (v.empty()) continue;
            if (std::find(a.categories.begin(), a.categories.end(), v) == a.categories.end())
                a.categories.push_back(v);
            double x = 0.0;
            if (!parseNumber(v, x)) {
                numeric = false;
                continue;
            }
            powers = powers && isPowerOfTwo(x);
            lo = std::min(lo, x);
            hi = std::max(hi, x);
        }
        if (a.categories.empty()) continue;
        if (numeric) {
            // A decade or more of positive values would crowd into one end of a linear axis.
            const bool decades = lo > 0 && hi >= 10 * lo;
            a.scale = powers ? AxisScale::Log2 : decades ? AxisScale::Log10 : AxisScale::Linear;
            a.lo = powers ? std::log2(lo) : decades ? std::log10(lo) : lo;
            a.hi = powers ? std::log2(hi) : decades ? std::log10(hi) : hi;
            a.categories.clear();
        } else {
            a.scale = AxisScale::Categorical;
        }
        axes.push_back(std::move(a));
    }
    return axes;
}

SweepParallelCoords::LossRange SweepParallelCoords::lossRange() const {
    LossRange r;
    for (const auto& t : m_trials) {
        if (isDiverged(t)) {
            r.anyDiverged = true;
            continue;
        }
        const double l = placedLoss(t);
        if (!std::isfinite(l)) continue;
        r.lo = std::min(r.lo, l);
        r.hi = std::max(r.hi, l);
        if (t.status == sweep::TrialStatus::Finished) {
            r.colorLo = std::min(r.colorLo, l);
            r.colorHi = std::max(r.colorHi, l);
        }
    }
    if (!std::isfinite(r.colorLo)) {
        r.colorLo = r.lo;
        r.colorHi = r.hi;
    }
    return r;
}

// Axis names along the bottom (the last part of the key, its section under it) and the colour
// scale beside the loss axis.
void SweepParallelCoords::nameAxes() {
    const int n = int(m_axes.size());
    auto names = QSharedPointer<QCPAxisTickerText>::create();
    for (int i = 0; i < n; ++i) {
        const QString key = axisName(i);
        const int dot = key.lastIndexOf('.');
        QString label = dot < 0 ? key : key.mid(dot + 1) + '\n' + key.left(dot);
        if (key == sweep::kParametrizationKey) label = tr("parametrization");
        names->addTick(i, label);
    }
    m_plot->xAxis->setTicker(names);
    // Room left of the first axis for its tick labels, right of the loss axis for its own.
    m_plot->xAxis->setRange(-0.55, n - 1 + 0.45);
    if (!m_plot->plotLayout()->hasElement(1, 1)) {
        m_plot->plotLayout()->addElement(1, 1, m_scale);
        m_scale->setVisible(true);
    }
}

// Each axis: its line, ticks and labels, as many labels as fit the height it has now; the
// "diverged" mark at the top of the loss axis.
void SweepParallelCoords::drawAxes(const LossRange& loss) {
    const int n = int(m_axes.size());
    m_builtForHeight = m_plot->height();
    const double axisPixels = std::max(120, m_builtForHeight - kNonAxisHeight);
    const double minGap =
        (QFontMetrics(tickFont()).height() + 8) * 1.1 / axisPixels;  // y spans 1.1
    for (int i = 0; i < n; ++i)
        drawAxis(i, thinLabels(i == n - 1 ? lossTicks(loss) : keyTicks(i), minGap));
    if (loss.anyDiverged) {
        auto* label = new QCPItemText(m_plot);
        label->position->setCoords(n - 1, 1.0);
        label->setLayer(QStringLiteral("axes"));
        label->setClipToAxisRect(false);
        label->setPositionAlignment(Qt::AlignLeft | Qt::AlignVCenter);
        label->setPadding(QMargins(8, 1, 3, 1));
        label->setText(tr("diverged"));
        label->setColor(QColor(0xd6, 0x27, 0x28));
        label->setFont(QFont(font().family(), font().pointSize(), QFont::DemiBold));
        QColor back = m_plot->palette().color(QPalette::Base);
        back.setAlpha(215);
        label->setBrush(back);
    }
}

std::vector<std::pair<double, QString>> SweepParallelCoords::lossTicks(
    const LossRange& loss) const {
    std::vector<std::pair<double, QString>> ticks;
    if (!loss.anyLoss()) return ticks;
    QVector<double> at;
    QVector<QString> labels;
    QCPAxisTicker ticker;
    ticker.setTickCount(4);
    const double pad = loss.hi > loss.lo ? 0.0 : 0.5;
    ticker.generate(QCPRange(loss.lo - pad, loss.hi + pad), locale(), 'g', 4, at, nullptr, &labels);
    // The extremes always (the best loss is the number one looks for), round values between
    // them where they do not crowd the extremes.
    ticks.push_back({loss.position(loss.lo), shortNumber(loss.lo)});
    if (loss.hi > loss.lo) {
        for (int k = 0; k < at.size(); ++k)
            if (at[k] > loss.lo && at[k] < loss.hi)
                ticks.push_back({loss.position(at[k]), labels[k]});
        ticks.push_back({loss.position(loss.hi), shortNumber(loss.hi)});
    }
    return ticks;
}

std::vector<std::pair<double, QString>> SweepParallelCoords::keyTicks(int i) const {
    const Axis& a = m_axes[size_t(i)];
    std::vector<std::pair<double, QString>> ticks;
    if (a.scale == AxisScale::Categorical) {
        for (const auto& c : a.categories)
            ticks.push_back({axisPosition(i, c), a.key == sweep::kParametrizationKey
                                                     ? parametrizationTitle(c)
                                                     : QString::fromStdString(c)});
        return ticks;
    }
    // Every value a trial has (a sweep's grid is short); thinned where they crowd.
    std::vector<double> values;
    for (const auto& t : m_trials) {
        double v = 0.0;
        if (parseNumber(valueOf(t, a.key), v)) values.push_back(v);
    }
    std::sort(values.begin(), values.end());
    values.erase(std::unique(values.begin(), values.end()), values.end());
    for (double v : values) {
        const QString label = a.scale == AxisScale::Log2 ? log2Label(std::log2(v)) : shortNumber(v);
        ticks.push_back({axisPosition(i, QString::number(v, 'g', 17).toStdString()), label});
    }
    return ticks;
}

// The lines: made for new trials (all of them reshaped when the layout changed), then stacked
// pruned first (faint), then diverged, then finished from worst to best, so the best trials are
// on top of the pile.
void SweepParallelCoords::updateLines(const LossRange& loss, QCPColorGradient& gradient,
                                      bool restyle) {
    const bool crowded = m_trials.size() > 120;
    std::map<int, Line> before = std::move(m_lineOfTrial);
    m_lineOfTrial.clear();
    for (size_t idx = 0; idx < m_trials.size(); ++idx) {
        const sweep::TrialResult& t = m_trials[idx];
        const std::string drawn = lineKey(t);
        Line line;
        if (auto it = before.find(t.trial); it != before.end()) {
            line = it->second;
            before.erase(it);
        } else {
            line.curve = new QCPCurve(m_plot->xAxis, m_plot->yAxis);
            line.curve->setSelectable(QCP::stNone);
            line.curve->setLayer(m_lineLayer);
        }
        if (restyle || line.drawn != drawn) {
            shapeLine(line.curve, t, loss, gradient, crowded);
            line.drawn = drawn;
        }
        line.result = idx;
        m_lineOfTrial[t.trial] = line;
    }
    for (auto& [trial, line] : before) m_plot->removePlottable(line.curve);  // gone
    stackLines();
}

void SweepParallelCoords::shapeLine(QCPCurve* curve, const sweep::TrialResult& t,
                                    const LossRange& loss, QCPColorGradient& gradient,
                                    bool crowded) const {
    const int n = int(m_axes.size());
    QVector<double> along, xs, ys;
    for (int i = 0; i + 1 < n; ++i) {
        // A trial without this key (a linked or conditional one) passes the axis by.
        const double y = axisPosition(i, valueOf(t, m_axes[size_t(i)].key));
        if (std::isnan(y)) continue;
        along.push_back(i);
        xs.push_back(i);
        ys.push_back(y);
    }
    const bool diverged = isDiverged(t);
    const double placed = placedLoss(t);
    if (diverged || std::isfinite(placed)) {
        along.push_back(n - 1);
        xs.push_back(n - 1);
        ys.push_back(diverged ? 1.0 : loss.position(placed));
    }
    curve->setData(along, xs, ys, true);
    const QColor text = m_plot->palette().color(QPalette::Text);
    QPen pen;
    if (diverged) {
        QColor grey = text;
        grey.setAlpha(crowded ? 90 : 140);
        pen = QPen(grey, crowded ? 1.0 : 1.2, Qt::DashLine);
    } else if (t.status == sweep::TrialStatus::Pruned) {
        // Its loss is from an early rung, not a final one: placed, but not coloured as one.
        QColor grey = text;
        grey.setAlpha(crowded ? 30 : 55);
        pen = QPen(grey, 1.0);
    } else {
        QColor c = gradient.color(placed, loss.colorRange());
        // Many trials: thinner, more transparent lines, so dense bundles still show their shape.
        c.setAlpha(crowded ? 110 : 200);
        pen = QPen(c, crowded ? 1.0 : 1.8);
    }
    curve->setPen(pen);
}

void SweepParallelCoords::stackLines() {
    std::vector<const Line*> order;
    order.reserve(m_lineOfTrial.size());
    for (const auto& [trial, line] : m_lineOfTrial) order.push_back(&line);
    auto rank = [&](const Line* l) {
        const auto& t = m_trials[l->result];
        if (t.status == sweep::TrialStatus::Pruned) return 0;
        return isDiverged(t) ? 1 : 2;
    };
    auto sortLoss = [&](const Line* l) {  // NaN would break the ordering: lossless ones go first
        const double loss = placedLoss(m_trials[l->result]);
        return std::isnan(loss) ? std::numeric_limits<double>::infinity() : loss;
    };
    // Ties keep the trials' order in the results (the order the old full redraw drew them in).
    std::stable_sort(order.begin(), order.end(), [&](const Line* a, const Line* b) {
        if (rank(a) != rank(b)) return rank(a) < rank(b);
        if (sortLoss(a) != sortLoss(b)) return sortLoss(a) > sortLoss(b);
        return a->result < b->result;
    });
    // Only the lines from the first one out of place on are moved (to the end, in order): a
    // new trial that lands in the middle of the pile moves the half above it, not all.
    const QList<QCPLayerable*> drawn = m_lineLayer->children();
    size_t same = 0;
    while (same < order.size() && same < size_t(drawn.size()) &&
           drawn[qsizetype(same)] == order[same]->curve)
        ++same;
    for (size_t i = same; i < order.size(); ++i) {
        order[i]->curve->setLayer(m_restack);
        order[i]->curve->setLayer(m_lineLayer);
    }
}

void SweepParallelCoords::replotIfShown() {
    // A live sweep redraws on every finished trial; while another tab is in front that work
    // waits for showEvent.
    m_stale = !isVisible();
    if (!m_stale) m_plot->replot(QCustomPlot::rpQueuedReplot);
}

QFont SweepParallelCoords::tickFont() const {
    return QFont(font().family(), std::max(7, font().pointSize() - 1));
}

void SweepParallelCoords::resizeEvent(QResizeEvent* event) {
    QWidget::resizeEvent(event);
    // Taller or shorter, a different number of tick labels fits: lay the axes out again.
    if (!m_lineOfTrial.empty() && std::abs(m_plot->height() - m_builtForHeight) > 30) rebuild();
}

void SweepParallelCoords::showEvent(QShowEvent* event) {
    QWidget::showEvent(event);
    if (!m_stale) return;
    m_stale = false;
    m_plot->replot();  // now, so the first paint already shows the lines
}

void SweepParallelCoords::drawAxis(int i, const std::vector<std::pair<double, QString>>& ticks) {
    const QColor text = m_plot->palette().color(QPalette::Text);
    QColor axisColor = text;
    axisColor.setAlpha(150);
    QColor back = m_plot->palette().color(QPalette::Base);
    back.setAlpha(215);
    // Labels of the loss axis go right of it: the lines all arrive from the left there.
    const bool right = i == int(m_axes.size()) - 1;
    auto* line = new QCPItemLine(m_plot);
    line->setLayer(QStringLiteral("axes"));
    line->start->setCoords(i, 0.0);
    line->end->setCoords(i, 1.0);
    line->setPen(QPen(axisColor, 1.5));
    for (const auto& [pos, name] : ticks) {
        auto* tick = new QCPItemLine(m_plot);
        tick->setLayer(QStringLiteral("axes"));
        tick->start->setCoords(i, pos);
        tick->end->setParentAnchor(tick->start);
        tick->end->setType(QCPItemPosition::ptAbsolute);
        tick->end->setCoords(right ? 5 : -5, 0);
        tick->setPen(QPen(axisColor, 1.2));
        auto* label = new QCPItemText(m_plot);
        // Above the lines, and free to reach past the plot's edge at an axis' ends.
        label->setLayer(QStringLiteral("axes"));
        label->setClipToAxisRect(false);
        label->position->setParentAnchor(tick->end);
        label->position->setType(QCPItemPosition::ptAbsolute);
        label->position->setCoords(right ? 1 : -1, 0);
        label->setPositionAlignment((right ? Qt::AlignLeft : Qt::AlignRight) | Qt::AlignVCenter);
        label->setPadding(QMargins(3, 0, 2, 0));
        label->setText(name);
        label->setColor(text);
        label->setFont(tickFont());
        // A veil under the label: lines crossing it must not make it unreadable.
        label->setBrush(back);
    }
}

void SweepParallelCoords::showTrialTip(QMouseEvent* event) {
    // The nearest line within the selection tolerance; of lines equally near (trials sharing a
    // segment), the one drawn first, as QCustomPlot::plottableAt picks in drawing order.
    QCPAbstractPlottable* hit = nullptr;
    double nearest = m_plot->selectionTolerance();
    for (QCPLayerable* layerable : m_lineLayer->children()) {
        auto* curve = qobject_cast<QCPCurve*>(layerable);
        // The lines are clipped to the axis rect (QCustomPlot::plottableAt asks clipRect()).
        if (!curve || !m_plot->axisRect()->rect().contains(event->position().toPoint())) continue;
        const double distance = curve->selectTest(event->position(), false);
        if (distance >= 0 && distance < nearest) {
            nearest = distance;
            hit = curve;
        }
    }
    const auto it = std::find_if(m_lineOfTrial.begin(), m_lineOfTrial.end(),
                                 [hit](const auto& l) { return l.second.curve == hit; });
    if (!hit || it == m_lineOfTrial.end()) {
        QToolTip::hideText();
        return;
    }
    const sweep::TrialResult& t = m_trials[it->second.result];
    QStringList rows;
    rows << tr("<b>trial %1</b> — %2").arg(t.trial).arg(sweep::trialStatusName(t.status));
    for (size_t i = 0; i + 1 < m_axes.size(); ++i)
        rows << QStringLiteral("%1 = %2").arg(
            QString::fromStdString(m_axes[i].key).toHtmlEscaped(),
            QString::fromStdString(valueOf(t, m_axes[i].key)).toHtmlEscaped());
    const double loss = placedLoss(t);
    rows << (isDiverged(t)                            ? tr("final loss: diverged")
             : t.status == sweep::TrialStatus::Pruned ? tr("pruned at loss %1").arg(loss, 0, 'f', 4)
                                                      : tr("final loss = %1").arg(loss, 0, 'f', 4));
    if (!t.reason.empty()) rows << QString::fromStdString(t.reason).toHtmlEscaped();
    QToolTip::showText(event->globalPosition().toPoint(), rows.join(QStringLiteral("<br>")),
                       m_plot);
}

}  // namespace ws::ui
