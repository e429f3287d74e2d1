// SPDX-License-Identifier: GPL-3.0-or-later
// WaferChartTabs: the charts beside the Wafer tab's timeline, one tab each: the shown step's
// gradient norm per layer, an MoE run's tokens per expert, a sparse run's sparsity per layer
// over the run (the last two only for runs that have them; a chart that appears is brought to
// the front, the tab bar shows only when there is a choice). A stored run's plan shows its
// recorded routing and sparsity (or none) until the live run's charts come back. GUI thread only.
#pragma once

#include <QTabWidget>
#include <optional>
#include <vector>

#include "engine/config/config.h"
#include "engine/session/events.h"
#include "ui/common/wafer_history.h"
#include "ui/wafer/stored_run_charts.h"

namespace ws::ui {

class ExpertLoadChart;
class LayerNormChart;
class SparsityChart;

class WaferChartTabs : public QTabWidget {
    Q_OBJECT
public:
    explicit WaferChartTabs(QWidget* parent = nullptr);

    // A new run of `config`: its MoE blocks for the expert chart, no sparsity yet.
    void beginRun(const config::Config& config);
    // The live run's sparsity of a step (shown unless a stored run's plan is).
    void addMetrics(const session::StepMetrics& metrics, bool planShown);
    // A plan is shown: a stored run's recorded routing and sparsity, or none for a config's.
    void showPlanCharts(std::optional<RecordedRouting> routing = std::nullopt,
                        const std::vector<SparsityPoint>& sparsity = {});
    void showLiveCharts();  // back to the live run's sparsity
    // The shown step's norms and routing. Both arrive after the step's spans: following the
    // run (`live`), the newest step that has them is shown rather than "not measured yet".
    void showStep(const WaferHistory& history, const StepRecord* record, bool live, bool planned,
                  int numBlocks);
    // Whether the chart's tab is offered (an MoE run's experts, a sparse run's sparsity).
    bool chartShown(const QWidget* chart) const;

private:
    void setChartShown(QWidget* chart, bool shown);
    void showSparsity(const std::vector<SparsityPoint>& points, bool sparseConfig);

    LayerNormChart* m_layerNorms;
    ExpertLoadChart* m_expertLoads;
    SparsityChart* m_sparsityChart;
    std::optional<RecordedRouting> m_storedRouting;  // a stored run's, while its plan is shown
    std::vector<SparsityPoint> m_liveSparsity;       // the live run's, to restore its chart
    bool m_liveSparse = false;                       // the live run's config prunes weights
};

}  // namespace ws::ui
