// SPDX-License-Identifier: GPL-3.0-or-later
// SweepsTab: the studio's view of one sweep, live or stored. On top the μTransfer chart
// (transfer_chart.h); below, tabs with the trial table (sweep_table.h) and the width x LR
// heatmap (sweep_heatmap.h), the parallel coordinates over every swept key
// (sweep_parallel_coords.h), and the μP coord check (coord_check_view.h). Trials are added as they
// finish; the views redraw on a ~40 ms coalescing timer, so a burst of finished trials costs one
// redraw. The header counts every trial the sweep plans (all points, seeds and
// parametrizations, also for a stored sweep that stopped early) and, while a sweep runs, an ETA
// from engine/sweep/eta.h (per-shape step times, the steps left, the trials run at once: the
// same estimate as `wafer sweep`'s). The progress bar shows its percentage readably in every
// palette (the text beside the bar, never over its own fill). GUI thread only.
#pragma once

#include <QElapsedTimer>
#include <QWidget>
#include <map>
#include <optional>
#include <vector>

#include "engine/sweep/eta.h"
#include "engine/sweep/runner.h"

class QLabel;
class QProgressBar;
class QPushButton;
class QTabWidget;
class QTimer;

namespace ws::store {
class RunStore;
}

namespace ws::ui {

class CoordCheckView;
class SweepHeatmap;
class SweepParallelCoords;
class SweepTable;
class TransferChart;

class SweepsTab : public QWidget {
    Q_OBJECT
public:
    explicit SweepsTab(QWidget* parent = nullptr);

    // The timed steps Run Sweep measured before asking (eta.h): the ETA's start until the
    // sweep's own trials are timed. Used by the next beginSweep only.
    void setCalibration(std::optional<sweep::SweepCalibration> calibration) {
        m_calibration = std::move(calibration);
    }
    void beginSweep(const sweep::SweepPlan& plan);
    void noteTrialStarted(const sweep::TrialStarted& trial);
    void noteProgress(const std::vector<sweep::TrialProgress>& batch);
    void addResult(const sweep::TrialResult& result);
    void endSweep(const sweep::SweepOutcome& outcome);
    // Shows a sweep recorded in the store (run of kind "sweep"); false with `error` if it cannot.
    bool showStoredSweep(store::RunStore* store, int64_t sweepRunId, QString* error = nullptr);
    void redrawNow();
    void showError(const QString& message);  // planning errors, in red above the chart

    std::vector<sweep::TrialResult> results() const;
    size_t plannedTrials() const { return m_planned; }  // every trial of the sweep
    // The running sweep's ETA in seconds (sweep::SweepEta); NaN when none runs or no step has
    // been timed yet.
    double etaSeconds() const;
    QString headerText() const;
    // The μP optimum: the best log2 learning rate of the sweep's narrowest width under "mup"
    // (the proxy), NaN when there is none yet. `width` receives that width.
    double proxyBestLog2Lr(double* width) const;
    // The config of the sweep's μP trials (its "mup" bundle applied), for μTransfer; nullptr
    // when the sweep has no mup parametrization.
    const config::Config* mupProxy() const { return m_hasBase ? &m_base : nullptr; }

    TransferChart* chart() const { return m_chart; }
    SweepTable* table() const { return m_table; }
    SweepHeatmap* heatmap() const { return m_heatmap; }
    SweepParallelCoords* parallelCoords() const { return m_parallel; }
    QTabWidget* views() const { return m_views; }
    CoordCheckView* coordCheck() const { return m_coordCheck; }
    QPushButton* transferButton() const { return m_transferButton; }
    QProgressBar* progressBar() const { return m_progress; }
    QLabel* percentLabel() const { return m_percent; }

signals:
    void transferRequested();

private:
    void scheduleRedraw();
    void updateHeader();

    TransferChart* m_chart;
    SweepTable* m_table;
    SweepHeatmap* m_heatmap;
    SweepParallelCoords* m_parallel;
    CoordCheckView* m_coordCheck;
    QTabWidget* m_views;
    QLabel* m_header;
    QProgressBar* m_progress;
    QLabel* m_percent;  // the bar's percentage, beside it
    QPushButton* m_transferButton;
    QTimer* m_redrawTimer;
    std::vector<std::string> m_parametrizations;
    std::vector<std::string> m_keys;  // swept keys, in the sweep's order
    std::map<int, sweep::TrialResult> m_results;
    std::map<int, sweep::TrialProgress> m_running;
    std::vector<sweep::ParametrizationTransfer> m_transfer;
    config::Config m_base;
    bool m_hasBase = false;
    size_t m_planned = 0;
    QElapsedTimer m_clock;  // started with the sweep
    std::optional<sweep::SweepEta> m_eta;
    std::optional<sweep::SweepCalibration> m_calibration;
    QString m_title;
    QString m_state;
};

}  // namespace ws::ui
