// SPDX-License-Identifier: GPL-3.0-or-later
// WaferTab: the Wafer tab. What the emulated wafer-scale cluster does in each training step:
// a summary of the cycle model's prediction (step time, tokens/s, MFU, where the time goes,
// whether weight streaming hides behind compute) beside the real CPU's tokens/s; the per-core
// utilization heatmap of the layer phase that just ran (or a chosen phase, or the whole step);
// the MemoryX -> SwarmX -> systems diagram with this step's traffic; the step's gradient norm
// per layer (and, for a mixture-of-experts model, the tokens each expert got); and the step's
// timeline.
// A step slider scrubs back over the last WaferHistory::kMaxSteps steps; Live follows the run
// again. Events are recorded as they arrive and drawn by one coalesced redraw (40 ms
// single-shot timer), only while the tab is visible. Says plainly when there is nothing to
// show: no run yet, the emulator switched off, or a config the emulator could not plan.
// Slow motion (the bar under the step controls; wafer_tab_replay.cpp): the shown step's emulated
// schedule replays at a chosen pace, the views drawing the moment under the cursor; Play pins the
// shown step (leaves Live), Live leaves the replay. A stored run opened from the Runs dock, whose
// spans are not stored, shows and replays the step its config plans (showPlannedRun).
// Its parts, each owning its widgets: WaferSummary (the prediction rows), StepControls (step
// slider, Live), WaferViewControls (heatmap phase, colours, clock), WaferStepViews (heatmap,
// diagram, buffer slots, timeline and the WaferChartTabs beside it) and the SlowMotionBar with
// its StepReplayer. The tab keeps the run's record, decides which step and phase they show, and
// swaps a stored run's plan in and out.
// GUI thread only.
#pragma once

#include <QImage>
#include <QWidget>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "engine/config/config.h"
#include "engine/session/events.h"
#include "engine/store/placement_records.h"
#include "engine/wafer/narration.h"
#include "ui/common/animation_export.h"
#include "ui/common/wafer_history.h"
#include "ui/wafer/timeline_view.h"

class QHBoxLayout;
class QLabel;
class QStackedWidget;
class QTimer;

namespace ws::store {
class RunStore;
}

namespace ws::ui {

class SlowMotionBar;
class StepControls;
class StepReplayer;
class WaferStepViews;
class WaferSummary;
class WaferViewControls;

class WaferTab : public QWidget {
    Q_OBJECT
public:
    enum class Emulation { NoRun, Waiting, On, Off, NotPlanned };

    explicit WaferTab(QWidget* parent = nullptr);

    // A new run of `config` starts: forget the previous one (and its placement).
    void beginRun(const config::Config& config);
    // A run across processes: which rank on which host computes which systems (the run store's
    // record, store::placement); the diagram names them in each system's box. Empty: one process.
    void setPlacement(const std::vector<store::RankPlacement>& ranks);
    void appendSpans(const std::vector<streaming::Span>& spans);
    void addEmulatedStep(const session::EmulatedStep& step);
    // Every step's metrics: real tokens/s and the gradient norms kept for scrubbing.
    void appendMetrics(const std::vector<session::StepMetrics>& batch);
    // An MoE run's routing of a step (0-based; per block, per expert), for the tokens-per-expert
    // chart.
    void addExpertTokens(int64_t step, const std::vector<std::vector<int64_t>>& tokens);
    // Log lines tell why the emulator could not plan a run ("emulator off for this run: ...").
    void noteLog(int level, const QString& message);
    void setRunState(session::RunState state);
    // The run shown trains in other processes (a cluster job the studio follows through the run
    // store): `note` replaces the emulator's banner, saying what the tab can and cannot show of
    // it. beginRun clears it.
    void setFollowedNote(const QString& note);
    // The real tokens/s of a run followed through the run store (its recorded tokens_per_s, as
    // the Training tab draws it): the summary's "Real training on this CPU" figure.
    void setMeasuredTokensPerSec(double tokensPerSec);
    QString realSummaryText() const;

    void redrawNow();  // draw now (tests, screenshots), visible or not

    // The recorded steps (read-only: the main window asks whether a step is kept, tests what it
    // holds). The views are the tab's own: tests reach them by type (tests/support/
    // wafer_tab_views.h), lessons by object name.
    const WaferHistory& history() const { return m_history; }
    bool hasStep(int64_t step) const { return m_history.find(step) != nullptr; }  // 0-based
    // Whether the chart's tab is offered (an MoE run's experts, a sparse run's sparsity).
    bool chartShown(const QWidget* chart) const;
    Emulation emulation() const { return m_emulation; }
    QString noticeText() const;  // the empty-state or banner text shown now ("" when none)
    int64_t shownStep() const { return m_shownStep; }  // 0-based; -1 none
    // The layer phase just computed (layer -1: none yet in this run); Step Layer advances it.
    // While the run is paused and followed (Live), the tab shows that phase's step.
    std::pair<int, bool> followedPhase() const { return {m_followLayer, m_followBackward}; }
    bool isLive() const { return m_live; }
    void showStep(int64_t step);  // scrub (leaves Live)
    void goLive();
    // Heatmap phase: follow the run's latest layer (-2), the whole step (-1), or layer*2+backward.
    void setPhase(int phaseCode);
    void setClock(TimelineView::Clock clock);
    // What the Heatmap choice shows now ("follow the run", "slow motion: h.1 forward", ...).
    QString phaseChoiceText() const;

    // Slow motion (wafer_tab_replay.cpp): the bar ("slowMotionBar") and the clock behind it (a
    // StepReplayer child of the tab).
    bool isReplaying() const;
    // Play / pause the shown step's replay (playing pins the shown step: leaves Live).
    void setReplayPlaying(bool play);
    // Tests and exports: the cursor at emulated `timeS` of the shown step (enters the replay,
    // draws now), or as if `wallS` seconds passed at the chosen pace.
    void setReplayTime(double timeS);
    void advanceReplay(double wallS);
    void leaveReplay();  // back to the step's normal picture
    // The line under the cursor ("h.0 forward on system 0 while h.1's weights stream in").
    QString replayLine() const;
    // An animation of the shown step's replay at the chosen pace: its frame count at `fps`, and
    // frame i drawn (heatmap, diagram, buffer slots, timeline and norms, as on screen) at emulated
    // time min(step, i / fps x pace). Rendering enters the replay (paused) at that time.
    int replayFrameCount(double fps) const;
    QImage renderReplayFrame(int frame, double fps);
    // Writes those frames (kAnimationFps a second) to `path` (.png animated PNG, .gif, .mp4)
    // behind a progress dialog; Export… on the bar asks for the path first.
    // A replay longer than kMaxAnimationFrames frames (a 25-ms step at 1 µs = 20 ms lasts 8
    // minutes) is refused with a message naming a faster speed (replayTooLongToExport: empty when
    // it can be exported).
    static constexpr int kAnimationFps = 25;
    static constexpr int kMaxAnimationFrames = 120 * kAnimationFps;
    AnimationExportResult exportReplayAnimation(const QString& path);
    QString replayTooLongToExport();
    // Stored runs from the Runs dock: `config`'s planned step (re-planned through the engine,
    // session::predictConfigStep), shown and replayed with a banner saying so; the history of the
    // run trained in this window is kept, and Live or leavePlannedRun() return to it. False (and
    // `error` set) when the emulator cannot plan the config. `origin` starts the banner ("A
    // lesson's preset"; empty: "Selected in the Runs dock").
    bool showPlannedRun(const config::Config& config, const QString& runLabel,
                        QString* error = nullptr, const QString& origin = {});
    void leavePlannedRun();
    // A run selected in the Runs dock: its planned step (from its stored config YAML), or back
    // to the recorded steps when it is the run trained in this window (liveRunId). False with
    // `error` set when its config does not parse or plan.
    // With `store`, its recorded tokens per expert (newest log step) and sparsity per layer
    // show in their charts instead of the live run's.
    bool showStoredRun(int64_t runId, const QString& name, const std::string& configYaml,
                       QString* error = nullptr, const store::RunStore* store = nullptr);
    bool showsPlannedRun() const { return m_plannedActive; }
    // The run store's id of the run trained in this window (-1: none or not recorded), so the
    // main window knows which stored run the history already holds.
    void setLiveRunId(int64_t id) { m_liveRunId = id; }
    int64_t liveRunId() const { return m_liveRunId; }

protected:
    void showEvent(QShowEvent* event) override;
    void resizeEvent(QResizeEvent* event) override;  // the timeline may switch lane layout

private:
    void connectControls();
    void scheduleRedraw();
    // The heatmap and clock choices beside the step controls when the tab is wide enough, on a
    // row of their own otherwise.
    void placeViewControls();
    void updateStepControls();
    void updateNotices();
    void updateSummary(const StepRecord* record);
    // The heatmap of the shown step at the chosen phase (or the one just computed); returns the
    // frame drawn and the layer phase highlighted (layer -1: none).
    struct ShownPhase {
        const wafer::UtilizationFrame* frame = nullptr;
        int layer = -1;
        bool backward = false;
    };
    ShownPhase showHeatmap(const StepRecord* record,
                           const std::shared_ptr<const wafer::StepPrediction>& prediction,
                           bool inProgress, bool followed, bool paused);
    QString phaseName(int layer, bool backward) const;  // "h.2 backward"
    const StepRecord* shownRecord() const;
    // The run whose layers the tab names: the live run's, or a stored run's while its plan shows.
    struct RunShape {
        int numBlocks = 0;
        int numSystems = 1;
        int bufferLayers = 2;    // wafer.weight_buffer_layers of the run
        double ioBytesPerS = 0;  // the run's spec's (planned bytes of the replay)
    };
    // Slow motion (wafer_tab_replay.cpp).
    void setUpReplay();
    void syncReplay(const StepRecord* record);  // the replayed step follows the shown one
    void applyReplay();                         // draws the replay's moment into the views
    void drawReplay();                          // ... and replots (on every replay tick)

    WaferHistory m_history;
    Emulation m_emulation = Emulation::NoRun;
    QString m_notPlannedReason;
    QString m_followedNote;  // setFollowedNote
    RunShape m_run;
    int64_t m_shownStep = -1;
    bool m_live = true;
    int m_followLayer = -1;  // the latest compute span (its layer, pass and step)
    int64_t m_followStep = -1;
    bool m_followBackward = false;
    double m_realTokensPerS = 0;
    session::RunState m_runState = session::RunState::Finished;
    bool m_dirty = true;

    QStackedWidget* m_stack;
    QLabel* m_emptyLabel;
    QLabel* m_banner;
    WaferSummary* m_summary;
    StepControls* m_stepControls;
    WaferViewControls* m_viewControls;
    QHBoxLayout* m_viewRow;
    SlowMotionBar* m_slowBar;
    WaferStepViews* m_views;  // the heatmap, diagram, timeline area (replay frames grab it)
    QTimer* m_redrawTimer;
    bool m_replayDrawn = false;  // the views show the replay's moment (drawReplay)
    StepReplayer* m_replayer;
    wafer::NarrationContext m_narration;  // of the replayed step's prediction
    // A stored run's planned step (showPlannedRun) and what it replaced while shown.
    bool m_plannedActive = false;
    StepRecord m_planned;
    QString m_plannedNote;
    RunShape m_savedRun;  // the live run's, while a plan is shown
    int64_t m_liveRunId = -1;
};

}  // namespace ws::ui
