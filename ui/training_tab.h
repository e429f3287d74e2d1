// TrainingTab: the Training tab. Four live charts (train + eval loss, learning rate, gradient
// norm, tokens/s) over the run being trained and every run selected in the Runs dock, with an
// EMA smoothing slider, log-y, x as step / tokens / wall time, a synced crosshair, and export to
// PNG, PDF and CSV. New points are appended as they arrive and drawn by one coalesced redraw
// (40 ms single-shot timer), so a burst of events costs one replot. GUI thread only.
#pragma once

#include <QWidget>
#include <map>
#include <memory>
#include <vector>

#include "engine/session/events.h"
#include "ui/chart_panel.h"

class QCheckBox;
class QComboBox;
class QLabel;
class QSlider;
class QTimer;

namespace ws::store {
class RunStore;
}

namespace ws::ui {

class TrainingTab : public QWidget {
    Q_OBJECT
public:
    explicit TrainingTab(QWidget* parent = nullptr);

    // The run being trained now: clears its series and names it.
    void beginLiveRun(const QString& name, double tokensPerStep);
    // A resumed run: the live series starts as stored run `runId` up to `fromStep` (the
    // checkpoint's step), so the new points continue the same curves.
    void continueLiveRun(int64_t runId, store::RunStore* store, int64_t fromStep,
                         double tokensPerStep);
    void appendLive(const std::vector<session::StepMetrics>& metrics);
    // Once the store has numbered the live run, it becomes that run (no duplicate on selection).
    void adoptLiveRun(int64_t runId);
    // Shows exactly these stored runs beside the live one (loads metrics the first time).
    void setOverlayRuns(const std::vector<int64_t>& runIds, store::RunStore* store);
    // Adds a run's series directly (benchmarks, tests, imported data).
    void addRun(RunSeries run);

    const std::map<int64_t, RunSeries>& runs() const { return m_runs; }
    std::vector<ChartPanel*> panels() const { return m_panels; }
    ChartPanel* lossPanel() const { return m_panels.front(); }
    void setOptions(const ChartPanel::Options& options);
    const ChartPanel::Options& options() const { return m_options; }

    void redrawNow();  // rebuild curves if needed, redraw every panel and replot at once
    bool exportPng(const QString& path);
    bool exportPdf(const QString& path);  // vector charts, A4 landscape
    bool exportSvg(const QString& path);  // vector charts
    bool exportCsv(const QString& path) const;

private:
    bool paintCharts(QPaintDevice* device, const QRectF& page);
    void scheduleRedraw();
    void rebuildCurves();
    void exportDialog();
    QColor colorFor(int64_t runId) const;

    std::map<int64_t, RunSeries> m_runs;
    std::vector<ChartPanel*> m_panels;
    ChartPanel::Options m_options;
    QSlider* m_smoothing;
    QLabel* m_smoothingValue;
    QCheckBox* m_logY;
    QComboBox* m_xAxis;
    QLabel* m_emptyHint;
    QTimer* m_redrawTimer;
    bool m_curvesDirty = true;
    bool m_syncingRange = false;
    double m_liveWallStart = -1;
    double m_liveWallOffset = 0;  // a resumed run's wall time before the resume
};

}  // namespace ws::ui
