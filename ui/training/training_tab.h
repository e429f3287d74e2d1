// SPDX-License-Identifier: GPL-3.0-or-later
// TrainingTab: the Training tab. Four live charts (train + eval loss, learning rate, gradient
// norm, tokens/s) over the run being trained and every run selected in the Runs dock, with an
// EMA smoothing slider, log-y (the toolbar's for the loss chart; every chart's own in its context
// menu), x as step / tokens / wall time, a synced crosshair, and export to PNG (the charts only,
// not the controls), PDF and CSV. The run being trained is labelled "(now)" until it ends. A
// chart's context menu drills down from a point of the run trained in this window (a loss spike,
// say) to that step on the Wafer tab. New points are appended as they arrive and drawn by one
// coalesced redraw (40 ms single-shot timer), so a burst of events costs one replot. GUI thread
// only.
#pragma once

#include <QWidget>
#include <functional>
#include <map>
#include <memory>
#include <vector>

#include "engine/session/events.h"
#include "ui/common/store_follower.h"
#include "ui/training/chart_panel.h"

class QCheckBox;
class QComboBox;
class QLabel;
class QMenu;
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

    // The run being trained now: clears its series and names it (the charts add "(now)"). The
    // runs trained in this window before it leave the charts unless they are selected: the
    // charts show the live run and the runs chosen, not every earlier run (issue 31).
    // `lossCounts`: what the run's loss counts (session::lossCountsLabel), named in the legend.
    void beginLiveRun(const QString& name, double tokensPerStep, const QString& lossCounts = {});
    // Drops the runs trained in this window that ended and are not selected (a lesson opening:
    // the last lesson's runs do not stay on its charts).
    void forgetEndedRuns();
    // A resumed run: the live series starts as stored run `runId` up to `fromStep` (the
    // checkpoint's step), so the new points continue the same curves.
    void continueLiveRun(int64_t runId, store::RunStore* store, int64_t fromStep,
                         double tokensPerStep, const QString& lossCounts = {});
    void appendLive(const std::vector<session::StepMetrics>& metrics);
    // The live run has ended: it loses its "(now)", and once the store has numbered it
    // (runId > 0) it becomes that run (no duplicate on selection).
    void adoptLiveRun(int64_t runId);
    bool isTrainingNow() const { return m_trainingNow; }
    // Shows exactly these stored runs beside the live one (loads metrics the first time).
    void setOverlayRuns(const std::vector<int64_t>& runIds, store::RunStore* store);
    // Adds a run's series directly (benchmarks, tests, imported data).
    void addRun(RunSeries run);
    // Following the store (store_follower.h): the metric tails of the shown stored runs above
    // their last drawn step, and the rows a poll read for them, appended (a run another process
    // trains grows on the charts).
    std::vector<StoreFollower::Tail> followRequests() const;
    void appendStored(const std::vector<StoreFollower::Tail>& tails);

    const std::map<int64_t, RunSeries>& runs() const { return m_runs; }
    std::vector<ChartPanel*> panels() const { return m_panels; }
    ChartPanel* lossPanel() const { return m_panels.front(); }
    // options.logY is the loss chart's scale (the toolbar's "Log scale"); the other charts keep
    // their own, linear until chosen in their context menu.
    void setOptions(const ChartPanel::Options& options);
    const ChartPanel::Options& options() const { return m_options; }
    void setPanelLogY(size_t panel, bool logY);
    bool panelLogY(size_t panel) const { return m_panelLogY.at(panel); }

    void redrawNow();  // rebuild curves if needed, redraw every panel and replot at once
    bool exportPng(const QString& path);  // the four charts as on screen, without the toolbar
    bool exportPdf(const QString& path);  // vector charts, A4 landscape
    bool exportSvg(const QString& path);  // vector charts
    bool exportCsv(const QString& path) const;

    // Drill-down. The Wafer tab keeps the recent steps of the run trained in this window (the
    // live run, and the stored run it becomes); `canInspect(step)` (1-based) says whether it
    // still holds a step. Unset: nothing can be inspected.
    void setStepInspector(std::function<bool(int64_t step)> canInspect);
    // The step of that run nearest x on the charts' x axis (step, tokens or wall time, mapped
    // back through the run's own points); -1 when the run has no points here.
    int64_t stepAt(double x) const;
    // The charts' context menu at x: "Inspect step k on the Wafer tab", disabled with a tooltip
    // saying why when it cannot; when `parent` is one of the charts, also its "Log scale"
    // toggle. The caller owns the menu.
    QMenu* chartMenu(double x, QWidget* parent);
    // Emits inspectStepRequested(step) if the Wafer tab holds it; returns whether it did.
    bool inspectStep(int64_t step);

signals:
    void inspectStepRequested(int64_t step);  // 1-based, as StepMetrics::step

private:
    bool paintCharts(QPaintDevice* device, const QRectF& page);
    void scheduleRedraw();
    // After m_runs gained, lost or replaced a run: the charts' curves are rebuilt at once, so
    // no panel keeps a pointer into a series that was erased (issue 12, item 2).
    void runsChanged();
    void rebuildCurves();
    void applyPanelOptions();
    void exportDialog();
    QColor colorFor(int64_t runId) const;
    bool canInspect(int64_t step) const { return m_canInspect && step >= 1 && m_canInspect(step); }

    std::map<int64_t, RunSeries> m_runs;
    std::map<int64_t, double> m_wallOrigin;  // stored runs: the wall time their x counts from
    std::vector<int64_t> m_overlay;          // the runs selected (setOverlayRuns)
    std::vector<int64_t> m_endedLive;        // runs trained here that ended (adoptLiveRun)
    std::vector<ChartPanel*> m_panels;
    ChartPanel::Options m_options;
    std::vector<bool> m_panelLogY;  // per chart; [0] (loss) follows m_options.logY
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
    int64_t m_waferRunId = -1;    // the run the Wafer tab shows: 0 while live, then its id
    bool m_trainingNow = false;   // run 0 is being trained (labelled "(now)")
    std::function<bool(int64_t)> m_canInspect;
};

}  // namespace ws::ui
