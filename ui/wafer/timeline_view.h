// SPDX-License-Identifier: GPL-3.0-or-later
// TimelineView: a Gantt chart of one training step as weight streaming runs it: every
// stream-in, forward, backward, stream-out, SwarmX reduce and MemoryX update, per layer and per
// system, on the emulated machine's clock (default) or on the real CPU's wall clock. Lanes, top
// to bottom: MemoryX (updates), SwarmX (reduces), then per system its stream-in, compute and
// stream-out lanes (or, when the height is short, one row per system with three bands). On the
// emulated clock the step's planned schedule is drawn faintly behind, so a step in progress
// shows what is still to come. Bars of the highlighted layer carry a heavy outline; hovering a bar
// names it (layer, kind, bytes, both durations). On a LoRA run's emulated clock, each block's
// compute bar carries its LoRA adapter products (x·A, u·B forward; their four gradient products
// backward) as thin magenta bars at the times the cycle model runs them, a legend entry of their
// own, and a tooltip naming the op. Wheel / drag zoom and pan the time axis, a double-click fits
// the step again. A step whose plan offloads activations to MemoryX (wafer/activation_plan.h)
// gets a fourth lane per system, "activation offload", with each block's activations going out
// after its forward and back in before its backward (emulated clock; brown, in the legend only
// then; what has not run yet is drawn faintly with the planned schedule). In slow motion a vertical
// cursor marks the replay's time and the step after it is shaded. GUI thread only.
#pragma once

#include <qcustomplot.h>

#include <QString>
#include <QStringList>
#include <array>
#include <vector>

#include "ui/common/wafer_history.h"

namespace ws::ui {

class GanttBars;

class TimelineView : public QCustomPlot {
    Q_OBJECT
public:
    enum class Clock { Emulated, Real };

    explicit TimelineView(QWidget* parent = nullptr);

    // Shows `record` (null: nothing) of a run with `numSystems` systems and `numBlocks`
    // transformer blocks (for layer names); highlights `highlightLayer`'s bars (-1: none).
    // Copies what it draws, so the record may change afterwards. Does not replot; returns
    // false (and does nothing) when nothing it shows changed since the last call.
    bool setStep(const StepRecord* record, int numSystems, int numBlocks, Clock clock,
                 int highlightLayer);

    int laneCount() const { return int(m_laneNames.size()); }
    // Too little height for three lanes per system: one row per system with three bands.
    bool compact() const { return m_compact; }
    QStringList laneNames() const { return m_laneNames; }
    // Drawn (recorded) bars in a lane, planned ghosts not counted.
    int barCount(int lane) const;
    int plannedCount() const;
    // LoRA adapter op bars drawn (one per adapter product per block compute span shown).
    int adapterBarCount() const;
    static QColor adapterColor();
    // Activation-offload bars drawn (solid: run already; one per offload out or back in).
    int offloadBarCount() const;
    static QColor offloadColor();
    int lanesPerSystem() const { return m_lanesPerSystem; }
    // Spans of the step not drawn because they have no time on this clock (e.g. a single
    // system's reduce, which the emulated machine does not do).
    int untimedCount() const { return m_untimed; }
    // The tooltip text for the bar under a widget position ("" when none).
    QString describeAt(const QPointF& pos) const;
    // Time axis: seconds within the step -> axis units.
    double unitScale() const { return m_unitScale; }

    // Slow motion: the cursor at `timeS` seconds within the step (< 0: none). Does not replot.
    void setReplayCursor(double timeS);
    double replayCursor() const { return m_cursorS; }
    // Replaces the title (empty: the title setStep() writes), e.g. for a re-planned schedule.
    void setTitleOverride(const QString& title);
    QString titleText() const;

    static QColor kindColor(streaming::SpanKind kind);
    static QString kindLabel(streaming::SpanKind kind);

protected:
    void mouseMoveEvent(QMouseEvent* event) override;
    void mouseDoubleClickEvent(QMouseEvent* event) override;
    void wheelEvent(QWheelEvent* event) override;
    void mousePressEvent(QMouseEvent* event) override;
    void changeEvent(QEvent* event) override;
    void resizeEvent(QResizeEvent* event) override;  // the title and legend fit the width

private:
    void applyTheme();
    void fitTime();
    void fitTitle();
    void fitLegend(bool force);  // `force`: re-lay out even when the row length is the same
    // setStep's phases: the lanes (returns the systems that get lanes), the step's length on a
    // clock, the bars (recorded, planned, activation offload), the legend, the title.
    int layOutLanes(int numSystems, Clock clock, bool offloads);
    static double stepLengthS(const StepRecord* record, Clock clock);
    void addRecordedBars(const StepRecord& record, const wafer::StepPrediction* prediction,
                         int numBlocks, int highlightLayer);
    void addPlannedBars(const wafer::StepPrediction& prediction);
    void addOffloadBars(const StepRecord& record, const wafer::StepPrediction& prediction,
                        int highlightLayer);
    void showOptionalLegendEntries(bool offloads);
    void writeTitle(const StepRecord* record, Clock clock, int shownSystems, int totalSystems);

    std::array<GanttBars*, 6> m_kinds{};  // one plottable per span kind (and legend entry)
    GanttBars* m_planned = nullptr;
    GanttBars* m_adapters = nullptr;  // LoRA adapter ops inside the compute bars
    GanttBars* m_offload = nullptr;   // activations to MemoryX and back (their own lane)
    int m_lanesPerSystem = 3;         // 4 with the activation-offload lane
    QCPTextElement* m_title;
    QCPItemStraightLine* m_cursor;
    QCPItemRect* m_future;  // the step after the cursor, shaded
    double m_cursorS = -1;
    QString m_titleOverride, m_stepTitle;
    QStringList m_laneNames;
    std::vector<int> m_barsPerLane;
    int m_untimed = 0;
    int m_numBlocks = 0;
    Clock m_clock = Clock::Emulated;
    double m_unitScale = 1e3;
    double m_extent = 0;  // the step's length in axis units
    int64_t m_shownStep = -1;
    bool m_userZoomed = false;
    bool m_compact = false;
    int m_legendRows = 2;  // the legend's rows at the present width
    struct Shown {
        int64_t step = -2;
        size_t spans = 0;
        const wafer::StepPrediction* prediction = nullptr;
        int systems = 0, blocks = 0;
        Clock clock = Clock::Emulated;
        int highlight = -1;
        int height = 0;
        bool operator==(const Shown&) const = default;
    } m_shown;
};

}  // namespace ws::ui
