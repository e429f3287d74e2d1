// SPDX-License-Identifier: GPL-3.0-or-later
// WaferChartTabs: see wafer_chart_tabs.h.
#include "ui/wafer/wafer_chart_tabs.h"

#include <QTabBar>
#include <algorithm>

#include "ui/wafer/expert_load_chart.h"
#include "ui/wafer/layer_norm_chart.h"
#include "ui/wafer/sparsity_chart.h"

namespace ws::ui {

WaferChartTabs::WaferChartTabs(QWidget* parent) : QTabWidget(parent) {
    setObjectName(QStringLiteral("waferChartTabs"));
    setDocumentMode(true);
    m_layerNorms = new LayerNormChart(this);
    m_expertLoads = new ExpertLoadChart(this);
    m_sparsityChart = new SparsityChart(this);
    addTab(m_layerNorms, tr("Gradient norms"));
    addTab(m_expertLoads, tr("Tokens per expert"));
    addTab(m_sparsityChart, tr("Sparsity"));
    setChartShown(m_expertLoads, false);
    setChartShown(m_sparsityChart, false);
}

void WaferChartTabs::beginRun(const config::Config& config) {
    // An MoE model's chart: its MoE blocks (every moe_layer_frequency-th from block 0).
    const int numBlocks = config.model.numHiddenLayers;
    std::vector<int> moeBlocks;
    const auto& moe = config.model.moe;
    for (int b = 0; moe && b < numBlocks; ++b)
        if (b % std::max(1, moe->moeLayerFrequency) == 0) moeBlocks.push_back(b);
    m_expertLoads->setModel(numBlocks, moe ? moe->numExperts : 0, moe ? moe->topK : 1, moeBlocks);
    setChartShown(m_expertLoads, m_expertLoads->isMoe());
    m_liveSparsity.clear();
    m_liveSparse = config.sparsity && config.sparsity->sparsity > 0;
    showSparsity({}, m_liveSparse);
}

void WaferChartTabs::addMetrics(const session::StepMetrics& m, bool planShown) {
    if (m.blockSparsity.empty()) return;
    m_liveSparsity.push_back({m.step, m.blockSparsity, m.blockImbalance});
    if (!planShown) {  // a stored run's chart shows until Live
        m_sparsityChart->addPoint(m.step, m.blockSparsity, m.blockImbalance);
        setChartShown(m_sparsityChart, true);
    }
}

void WaferChartTabs::showPlanCharts(std::optional<RecordedRouting> routing,
                                    const std::vector<SparsityPoint>& sparsity) {
    m_storedRouting = std::move(routing);
    showSparsity(sparsity, false);
}

void WaferChartTabs::showLiveCharts() {
    m_storedRouting.reset();
    showSparsity(m_liveSparsity, m_liveSparse);
}

void WaferChartTabs::showStep(const WaferHistory& history, const StepRecord* record, bool live,
                              bool planned, int numBlocks) {
    const StepRecord* normsRecord = record;
    if (live && record && record->layerGradNorms.empty()) {
        const StepRecord* previous = history.find(record->step - 1);
        if (previous && !previous->layerGradNorms.empty()) normsRecord = previous;
    }
    m_layerNorms->setStep(normsRecord, numBlocks);
    const StepRecord* routingRecord = record;
    if (live && record && record->expertTokens.empty()) {
        const StepRecord* previous = history.find(record->step - 1);
        if (previous && !previous->expertTokens.empty()) routingRecord = previous;
    }
    if (planned) {
        setChartShown(m_expertLoads,
                      m_expertLoads->setPlanned(record ? record->prediction.get() : nullptr,
                                                m_storedRouting ? &*m_storedRouting : nullptr));
    } else {
        m_expertLoads->setPlanned(nullptr);
        setChartShown(m_expertLoads, m_expertLoads->isMoe());
        m_expertLoads->setStep(routingRecord);
    }
    if (m_sparsityChart->isVisible()) m_sparsityChart->redraw();
}

void WaferChartTabs::showSparsity(const std::vector<SparsityPoint>& points, bool sparseConfig) {
    m_sparsityChart->clear();
    for (const auto& p : points) m_sparsityChart->addPoint(p.step, p.levels, p.imbalance);
    setChartShown(m_sparsityChart, sparseConfig || !points.empty());
    if (!points.empty()) m_sparsityChart->redraw();
}

void WaferChartTabs::setChartShown(QWidget* chart, bool shown) {
    const int index = indexOf(chart);
    if (index < 0 || isTabVisible(index) == shown) return;
    setTabVisible(index, shown);
    // A chart that appears (an MoE or sparse run) is what that run is about: show it first.
    if (shown) setCurrentIndex(index);
    tabBar()->setVisible(count() > 0 && (isTabVisible(1) || isTabVisible(2)));
}

bool WaferChartTabs::chartShown(const QWidget* chart) const {
    const int index = indexOf(const_cast<QWidget*>(chart));
    return index >= 0 && isTabVisible(index);
}

}  // namespace ws::ui
