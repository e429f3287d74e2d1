// SPDX-License-Identifier: GPL-3.0-or-later
// SparsityChart: see sparsity_chart.h.
#include "ui/wafer/sparsity_chart.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "ui/common/plot_theme.h"

namespace ws::ui {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Tableau 10: distinct on light and dark backgrounds.
QColor blockColor(int block) {
    static const QColor kColors[] = {{0x4e, 0x79, 0xa7}, {0xf2, 0x8e, 0x2b}, {0xe1, 0x57, 0x59},
                                     {0x76, 0xb7, 0xb2}, {0x59, 0xa1, 0x4f}, {0xed, 0xc9, 0x48},
                                     {0xb0, 0x7a, 0xa1}, {0xff, 0x9d, 0xa7}, {0x9c, 0x75, 0x5f},
                                     {0xba, 0xb0, 0xac}};
    return kColors[block % 10];
}

}  // namespace

SparsityChart::SparsityChart(QWidget* parent) : QCustomPlot(parent) {
    setObjectName(QStringLiteral("sparsityChart"));
    setMinimumSize(240, 140);
    setToolTip(
        tr("Solid: the share of each block's masked weights held at zero (left axis). Dashed: the "
           "imbalance those zeros cause (right axis): the busiest output column's nonzeros over "
           "the mean column's. The cores that hold the busiest column finish last, so a layer "
           "takes as long as its densest column; 1 means balanced. Dynamic sparsity (SET, RigL) "
           "moves the zeros every few steps, and the emulator re-plans the wafer each time."));
    plotLayout()->insertRow(0);
    m_title = new QCPTextElement(this, QString(), QFont(font().family(), font().pointSize()));
    plotLayout()->addElement(0, 0, m_title);
    QFont small = font();
    small.setPointSizeF(font().pointSizeF() * 0.9);
    for (QCPAxis* axis : {xAxis, yAxis, yAxis2}) {
        axis->setTickLabelFont(small);
        axis->setLabelFont(small);
    }
    xAxis->setLabel(tr("step"));
    yAxis->setLabel(tr("zero weights (%)"));
    yAxis2->setLabel(tr("imbalance (×)"));
    yAxis2->setVisible(true);
    yAxis->setRange(0, 100);
    yAxis2->setRange(1, 2);
    xAxis->setRange(0, 1);
    legend->setVisible(true);
    legend->setFont(small);
    legend->setRowSpacing(-2);
    axisRect()->insetLayout()->setInsetAlignment(0, Qt::AlignBottom | Qt::AlignLeft);
    applyTheme();
    clear();
}

void SparsityChart::applyTheme() {
    const PlotColors colors = applyPlotPalette(this);
    yAxis2->setBasePen(QPen(colors.grid));
    yAxis2->setTickPen(QPen(colors.grid));
    yAxis2->setSubTickPen(QPen(colors.grid));
    yAxis2->setTickLabelColor(colors.text);
    yAxis2->setLabelColor(colors.text);
    m_title->setTextColor(colors.text);
    legend->setBrush(QBrush(colors.base));
    legend->setBorderPen(QPen(colors.grid));
    legend->setTextColor(colors.text);
}

void SparsityChart::changeEvent(QEvent* event) {
    QCustomPlot::changeEvent(event);
    if (event->type() == QEvent::PaletteChange || event->type() == QEvent::StyleChange) {
        applyTheme();
        replot(QCustomPlot::rpQueuedReplot);
    }
}

void SparsityChart::clear() {
    clearGraphs();
    m_levels.clear();
    m_imbalance.clear();
    m_lastStep = 0;
    m_title->setText(tr("Sparsity per layer\nno sparse run yet"));
    replot(QCustomPlot::rpQueuedReplot);
}

void SparsityChart::ensureBlocks(int blocks) {
    while (int(m_levels.size()) < blocks) {
        const int b = int(m_levels.size());
        QCPGraph* level = addGraph(xAxis, yAxis);
        level->setName(QStringLiteral("h.%1").arg(b));
        level->setPen(QPen(blockColor(b), 1.6));
        QCPGraph* skew = addGraph(xAxis, yAxis2);
        QPen dashed(blockColor(b), 1.0, Qt::DashLine);
        skew->setPen(dashed);
        skew->removeFromLegend();
        m_levels.push_back(level);
        m_imbalance.push_back(skew);
    }
}

void SparsityChart::addPoint(int64_t step, const std::vector<double>& levels,
                             const std::vector<double>& imbalance) {
    ensureBlocks(int(levels.size()));
    for (size_t b = 0; b < levels.size(); ++b) {
        m_levels[b]->addData(double(step), 100.0 * levels[b]);
        if (b < imbalance.size()) m_imbalance[b]->addData(double(step), imbalance[b]);
    }
    m_lastStep = std::max(m_lastStep, step);
}

void SparsityChart::redraw() {
    if (m_levels.empty()) {
        replot(QCustomPlot::rpQueuedReplot);
        return;
    }
    xAxis->setRange(0, std::max<double>(1.0, double(m_lastStep)));
    double top = 1.05;
    double mean = 0;
    for (size_t b = 0; b < m_levels.size(); ++b) {
        bool found = false;
        const QCPRange r = m_imbalance[b]->getValueRange(found);
        if (found) top = std::max(top, r.upper);
        mean += lastLevel(int(b));
    }
    mean /= double(m_levels.size());
    yAxis2->setRange(1.0, top + 0.1 * (top - 1.0) + 0.02);
    double worst = 1.0;
    for (int b = 0; b < blockCount(); ++b) worst = std::max(worst, lastImbalance(b));
    m_title->setText(tr("Sparsity per layer · imbalance\nstep %1: %2% zeros, "
                        "busiest column %3× mean")
                         .arg(m_lastStep)
                         .arg(100.0 * mean, 0, 'f', 1)
                         .arg(worst, 0, 'f', 2));
    replot(QCustomPlot::rpQueuedRefresh);
}

int SparsityChart::pointCount(int block) const {
    return block < blockCount() ? m_levels[size_t(block)]->dataCount() : 0;
}

double SparsityChart::lastLevel(int block) const {
    if (pointCount(block) == 0) return kNaN;
    return (m_levels[size_t(block)]->data()->constEnd() - 1)->value / 100.0;
}

double SparsityChart::lastImbalance(int block) const {
    if (block >= blockCount() || m_imbalance[size_t(block)]->dataCount() == 0) return kNaN;
    return (m_imbalance[size_t(block)]->data()->constEnd() - 1)->value;
}

QString SparsityChart::titleText() const {
    return m_title->text();
}

}  // namespace ws::ui
