// SPDX-License-Identifier: GPL-3.0-or-later
// LayerNormChart: see layer_norm_chart.h.
#include "ui/wafer/layer_norm_chart.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "engine/wafer/narration.h"
#include "ui/common/plot_theme.h"

namespace ws::ui {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

QString norm(double v) {
    if (!std::isfinite(v)) return QString::number(v);
    return QString::number(v, 'g', 3);
}

}  // namespace

LayerNormChart::LayerNormChart(QWidget* parent) : QCustomPlot(parent) {
    setObjectName(QStringLiteral("layerNormChart"));
    setMinimumSize(240, 140);
    m_help =
        tr("L2 norm of each layer's gradient in this step, before clipping. The global norm "
           "is the square root of the sum of their squares: a spike in the Gradient norm chart "
           "shows here as the layers whose bars jumped.");
    plotLayout()->insertRow(0);
    m_title = new QCPTextElement(this, QString(), QFont(font().family(), font().pointSize()));
    plotLayout()->addElement(0, 0, m_title);
    m_bars = new QCPBars(xAxis, yAxis);
    m_bars->setWidth(0.7);
    m_bars->setPen(Qt::NoPen);
    m_bars->setBrush(QColor(0x4e, 0x79, 0xa7));
    m_labels = QSharedPointer<QCPAxisTickerText>::create();
    xAxis->setTicker(m_labels);
    xAxis->setSubTicks(false);
    xAxis->setTickLength(0, 3);
    yAxis->setScaleType(QCPAxis::stLogarithmic);
    yAxis->setTicker(QSharedPointer<QCPAxisTickerLog>::create());
    yAxis->setNumberFormat(QStringLiteral("gb"));  // 10^-3 style labels
    yAxis->setNumberPrecision(0);
    yAxis->setLabel(tr("L2 norm"));
    QFont small = font();
    small.setPointSizeF(font().pointSizeF() * 0.9);
    xAxis->setTickLabelFont(small);
    yAxis->setTickLabelFont(small);
    yAxis->setLabelFont(small);
    axisRect()->setAutoMargins(QCP::msLeft | QCP::msBottom | QCP::msRight);
    axisRect()->setMargins(QMargins(0, 0, 8, 0));
    applyTheme();
    setStep(nullptr, 0);
}

void LayerNormChart::applyTheme() {
    // Follow the system palette, as the Training tab's charts do.
    const QColor text = applyPlotPalette(this).text;
    xAxis->grid()->setVisible(false);
    m_title->setTextColor(text);
}

void LayerNormChart::changeEvent(QEvent* event) {
    QCustomPlot::changeEvent(event);
    if (event->type() == QEvent::PaletteChange || event->type() == QEvent::StyleChange) {
        applyTheme();
        replot(QCustomPlot::rpQueuedReplot);
    }
}

void LayerNormChart::setStep(const StepRecord* record, int numBlocks) {
    const std::vector<double> none;
    const std::vector<double>& norms = record ? record->layerGradNorms : none;
    const int64_t step = record ? record->step : -1;
    const double global = record ? record->gradNorm : kNaN;
    if (step == m_shownStep && numBlocks == m_numBlocks && norms == m_shownNorms &&
        (global == m_shownGlobal || (std::isnan(global) && std::isnan(m_shownGlobal))))
        return;
    m_shownStep = step;
    m_numBlocks = numBlocks;
    m_shownNorms = norms;
    m_shownGlobal = global;

    // One labelled slot per layer, bars only where the norm can sit on a log axis.
    const int layers = norms.empty() ? numBlocks + 2 : int(norms.size());
    m_layers = layers;
    updateTickLabels();
    QVector<double> keys, values;
    double lo = std::numeric_limits<double>::infinity(), hi = 0;
    int missing = 0;
    for (int l = 0; l < layers; ++l) {
        if (size_t(l) >= norms.size()) continue;
        const double v = norms[size_t(l)];
        if (!(v > 0) || !std::isfinite(v)) {
            ++missing;
            continue;
        }
        keys.push_back(l);
        values.push_back(v);
        lo = std::min(lo, v);
        hi = std::max(hi, v);
    }
    m_bars->setData(keys, values, true);
    xAxis->setRange(-0.6, layers - 0.4);
    if (values.isEmpty()) {
        lo = 1e-3;
        hi = 1;
    }
    // Pad to whole decades so the log ticks frame the bars.
    const double yLo = std::pow(10.0, std::floor(std::log10(lo)));
    const double yHi = std::pow(10.0, std::ceil(std::log10(hi * 1.05)));
    yAxis->setRange(yLo, std::max(yHi, yLo * 10));
    m_bars->setBaseValue(yLo);

    QString title;
    if (!record) {
        title = tr("Gradient norm per layer\nno step yet");
    } else if (norms.empty()) {
        title = tr("Gradient norm per layer\nstep %1: not measured yet").arg(step + 1);
    } else {
        title = tr("Gradient norm per layer\nstep %1 · global %2").arg(step + 1).arg(norm(global));
        if (missing > 0) title += tr("\n%1 without a bar (0 or not finite)").arg(missing);
    }
    m_title->setText(title);
    // Thinned axis labels still leave every layer's name and exact norm one hover away.
    QStringList tip = {m_help};
    for (size_t l = 0; l < norms.size(); ++l) {
        tip << QStringLiteral("%1: %2").arg(
            QString::fromStdString(wafer::layerName(int(l), layers - 2)), norm(norms[l]));
    }
    setToolTip(tip.join('\n'));
    // Drawn now (a grab or a screenshot right after sees it); the repaint is queued.
    replot(QCustomPlot::rpQueuedRefresh);
}

void LayerNormChart::resizeEvent(QResizeEvent* event) {
    QCustomPlot::resizeEvent(event);
    updateTickLabels();
    replot(QCustomPlot::rpQueuedReplot);
}

void LayerNormChart::updateTickLabels() {
    m_labels->clear();
    if (m_layers <= 0) return;
    // The axis rect is known after the first layout; before that, estimate the y axis margin.
    const int plotWidth = axisRect()->width() > 0 ? axisRect()->width() : width() - 70;
    const double slot = std::max(1.0, double(plotWidth) / double(m_layers));
    const QFontMetrics metrics(xAxis->tickLabelFont());
    auto name = [&](int l, bool shortEmbeddings) {
        if (l == 0 && shortEmbeddings) return QStringLiteral("emb");
        return QString::fromStdString(wafer::layerName(l, m_layers - 2));
    };
    auto widest = [&](bool shortEmbeddings) {
        int w = 0;
        for (int l = 0; l < m_layers; ++l)
            w = std::max(w, metrics.horizontalAdvance(name(l, shortEmbeddings)) + 8);
        return w;
    };
    const bool shortEmbeddings = widest(false) > slot;
    const int every = std::max(1, int(std::ceil(widest(shortEmbeddings) / slot)));
    for (int l = 0; l < m_layers; ++l) {
        // The head is always named (its norm is often the largest); the block before it gives
        // way if the two would touch.
        const bool head = l == m_layers - 1;
        const bool named = head || (l % every == 0 && (m_layers - 1 - l >= every || l == 0));
        if (named) m_labels->addTick(l, name(l, shortEmbeddings));
    }
}

int LayerNormChart::barCount() const {
    return m_bars->data()->size();
}

double LayerNormChart::barValue(int layer) const {
    for (auto it = m_bars->data()->constBegin(); it != m_bars->data()->constEnd(); ++it)
        if (int(it->key) == layer) return it->value;
    return kNaN;
}

QString LayerNormChart::titleText() const {
    return m_title->text();
}

QString LayerNormChart::barLabel(int layer) const {
    return m_labels->ticks().value(layer);
}

}  // namespace ws::ui
