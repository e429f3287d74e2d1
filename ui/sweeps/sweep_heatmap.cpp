// SPDX-License-Identifier: GPL-3.0-or-later
// SweepHeatmap: see sweep_heatmap.h.
#include "ui/sweeps/sweep_heatmap.h"

#include <qcustomplot.h>
#include <QHBoxLayout>
#include <algorithm>
#include <cmath>

#include "ui/sweeps/transfer_chart.h"

namespace ws::ui {

SweepHeatmap::SweepHeatmap(QWidget* parent) : QWidget(parent) {
    m_layout = new QHBoxLayout(this);
    m_layout->setContentsMargins(0, 0, 0, 0);
    m_layout->setSpacing(4);
}

void SweepHeatmap::setResults(const std::vector<SweepPanelData>& panels) {
    // Shared axes: every width and rate any panel has, so cells line up between panels.
    std::vector<double> widths, rates;
    double lo = std::numeric_limits<double>::infinity(), hi = -lo;
    for (const auto& p : panels) {
        for (const auto& c : p.curves) {
            widths.push_back(c.width);
            for (const auto& pt : c.points) {
                rates.push_back(pt.log2Lr);
                if (!pt.losses.empty() && pt.diverged == 0) {
                    lo = std::min(lo, pt.mean());
                    hi = std::max(hi, pt.mean());
                }
            }
        }
    }
    for (auto* v : {&widths, &rates}) {
        std::sort(v->begin(), v->end());
        v->erase(std::unique(v->begin(), v->end()), v->end());
    }
    if (!std::isfinite(lo)) {
        lo = 0.0;
        hi = 1.0;
    }
    auto indexOf = [](const std::vector<double>& v, double x) {
        return int(std::lower_bound(v.begin(), v.end(), x) - v.begin());
    };
    // Plots are kept between redraws (a live sweep redraws often): rebuilt only when the
    // parametrizations change, else emptied and refilled.
    std::vector<std::string> names;
    for (const auto& p : panels) names.push_back(p.parametrization);
    if (names != m_names) {
        for (QCustomPlot* p : m_plots) delete p;
        m_plots.clear();
        m_scales.clear();
        m_names = names;
        for (const auto& name : names) {
            auto* plot = new QCustomPlot(this);
            plot->setObjectName(QStringLiteral("heatmap_") + QString::fromStdString(name));
            plot->setMinimumSize(260, 200);
            applySweepPlotTheme(plot);
            plot->plotLayout()->insertRow(0);
            auto* title =
                new QCPTextElement(plot, parametrizationTitle(name),
                                   QFont(font().family(), font().pointSize() + 1, QFont::Bold));
            title->setTextColor(plot->palette().color(QPalette::Text));
            plot->plotLayout()->addElement(0, 0, title);
            auto* scale = new QCPColorScale(plot);
            plot->plotLayout()->addElement(1, 1, scale);
            scale->setType(QCPAxis::atRight);
            scale->axis()->setLabel(tr("final loss"));
            const QColor text = plot->palette().color(QPalette::Text);
            scale->axis()->setLabelColor(text);
            scale->axis()->setTickLabelColor(text);
            auto* group = new QCPMarginGroup(plot);
            plot->axisRect()->setMarginGroup(QCP::msBottom | QCP::msTop, group);
            scale->setMarginGroup(QCP::msBottom | QCP::msTop, group);
            for (QCPAxis* a : {plot->xAxis, plot->yAxis}) a->grid()->setVisible(false);
            m_layout->addWidget(plot, 1);
            plot->show();
            m_plots.push_back(plot);
            m_scales.push_back(scale);
        }
    }
    for (size_t i = 0; i < panels.size(); ++i) {
        const SweepPanelData& panel = panels[i];
        QCustomPlot* plot = m_plots[i];
        QCPColorScale* scale = m_scales[i];
        plot->clearPlottables();
        plot->clearItems();
        const QColor text = plot->palette().color(QPalette::Text);
        auto* map = new QCPColorMap(plot->xAxis, plot->yAxis);
        const int nx = std::max(1, int(rates.size())), ny = std::max(1, int(widths.size()));
        map->data()->setSize(nx, ny);
        map->data()->setRange(QCPRange(0, nx - 1), QCPRange(0, ny - 1));
        for (int x = 0; x < nx; ++x)
            for (int y = 0; y < ny; ++y) map->data()->setCell(x, y, std::nan(""));
        QCPColorGradient gradient(QCPColorGradient::gpThermal);
        gradient.setNanHandling(QCPColorGradient::nhNanColor);
        gradient.setNanColor(QColor(128, 128, 128, 90));
        map->setGradient(gradient.inverted());  // low loss bright
        map->setInterpolate(false);
        map->setDataRange(QCPRange(lo, hi > lo ? hi : lo + 1e-3));
        const bool labels = nx * ny <= 120;
        for (const auto& c : panel.curves) {
            const int y = indexOf(widths, c.width);
            for (const auto& pt : c.points) {
                const int x = indexOf(rates, pt.log2Lr);
                const bool diverged = pt.diverged > 0;
                const bool has = !pt.losses.empty() && !diverged;
                if (has) map->data()->setCell(x, y, pt.mean());
                if (!labels || (!has && !diverged)) continue;
                auto* label = new QCPItemText(plot);
                label->position->setType(QCPItemPosition::ptPlotCoords);
                label->position->setCoords(x, y);
                label->setText(diverged ? tr("div") : QString::number(pt.mean(), 'f', 2));
                const double t = has ? (pt.mean() - lo) / std::max(hi - lo, 1e-9) : 0.0;
                label->setColor(has && t < 0.45 ? Qt::black : Qt::white);
                if (!has) label->setColor(text);
                label->setFont(QFont(font().family(), std::max(7, font().pointSize() - 1)));
            }
        }
        auto xTicks = QSharedPointer<QCPAxisTickerText>::create();
        for (size_t k = 0; k < rates.size(); ++k)
            xTicks->addTick(double(k), QString::number(rates[k]));
        auto yTicks = QSharedPointer<QCPAxisTickerText>::create();
        for (size_t k = 0; k < widths.size(); ++k)
            yTicks->addTick(double(k), QString::number(widths[k]));
        plot->xAxis->setTicker(xTicks);
        plot->yAxis->setTicker(yTicks);
        plot->xAxis->setLabel(tr("log2(learning rate)"));
        plot->yAxis->setLabel(tr("width (hidden_size)"));
        plot->xAxis->setRange(-0.5, nx - 0.5);
        plot->yAxis->setRange(-0.5, ny - 0.5);
        scale->setDataRange(map->dataRange());
        scale->setGradient(map->gradient());
        map->setColorScale(scale);
        plot->replot(QCustomPlot::rpQueuedReplot);
    }
}

double SweepHeatmap::cell(int mapIndex, int w, int l) const {
    QCustomPlot* p = plot(mapIndex);
    for (int i = 0; i < p->plottableCount(); ++i)
        if (auto* map = qobject_cast<QCPColorMap*>(p->plottable(i))) return map->data()->cell(l, w);
    return std::nan("");
}

}  // namespace ws::ui
