// WaferTab (wafer_tab.h): the charts beside the timeline, one tab each: the gradient norms, an MoE
// run's tokens per expert, a sparse run's sparsity per layer (live or as its store recorded it).
#include <QTabBar>
#include <QTabWidget>

#include "ui/wafer/sparsity_chart.h"
#include "ui/wafer/wafer_tab.h"

namespace ws::ui {

void WaferTab::showSparsity(const std::vector<SparsityPoint>& points, bool sparseConfig) {
    m_sparsityChart->clear();
    for (const auto& p : points) m_sparsityChart->addPoint(p.step, p.levels, p.imbalance);
    setChartShown(m_sparsityChart, sparseConfig || !points.empty());
    if (!points.empty()) m_sparsityChart->redraw();
}

void WaferTab::setChartShown(QWidget* chart, bool shown) {
    const int index = m_chartTabs->indexOf(chart);
    if (index < 0 || m_chartTabs->isTabVisible(index) == shown) return;
    m_chartTabs->setTabVisible(index, shown);
    // A chart that appears (an MoE or sparse run) is what that run is about: show it first.
    if (shown) m_chartTabs->setCurrentIndex(index);
    m_chartTabs->tabBar()->setVisible(
        m_chartTabs->count() > 0 && (m_chartTabs->isTabVisible(1) || m_chartTabs->isTabVisible(2)));
}

bool WaferTab::chartShown(const QWidget* chart) const {
    const int index = m_chartTabs->indexOf(const_cast<QWidget*>(chart));
    return index >= 0 && m_chartTabs->isTabVisible(index);
}

}  // namespace ws::ui
