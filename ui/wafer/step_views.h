// SPDX-License-Identifier: GPL-3.0-or-later
// WaferStepViews: the Wafer tab's picture of one step, in splitters: the per-core heatmap beside
// the MemoryX -> SwarmX -> systems diagram on top; below, the weight buffer's slots on the
// timeline (whose stream-in lane they explain) beside the per-layer charts. It draws a layer
// phase into the heatmap (which matrix each region of cores holds, the phase's whole time) and
// the buffer as the run's executor held it at that phase; the owner (WaferTab) decides which
// step and phase. Replay frames grab this widget. GUI thread only.
#pragma once

#include <QSplitter>
#include <memory>
#include <optional>

#include "engine/wafer/cycle_model.h"
#include "engine/wafer/replay.h"
#include "ui/common/wafer_history.h"

namespace ws::ui {

class BufferSlotsView;
class ClusterDiagram;
class CoreHeatmap;
class TimelineView;
class WaferChartTabs;

class WaferStepViews : public QSplitter {
    Q_OBJECT
public:
    explicit WaferStepViews(QWidget* parent = nullptr);

    // The views, for the tab that fills them.
    CoreHeatmap* heatmap() const { return m_map; }
    ClusterDiagram* diagram() const { return m_diagram; }
    TimelineView* timeline() const { return m_timeline; }
    WaferChartTabs* charts() const { return m_charts; }

    // The heatmap shows `frame` of `prediction`; for a layer phase (`layer` >= 0) with the
    // regions of cores its matrices hold and its whole time (its wait for weights included).
    void showHeatmap(const std::shared_ptr<const wafer::StepPrediction>& prediction,
                     const wafer::UtilizationFrame* frame, int layer, bool backward,
                     const QString& phase, const QString& note, int numBlocks);
    void showNoHeatmap(const QString& why);
    // The weight buffer's slots at a layer phase of the shown step (layer < 0: none): what the
    // run's executor held as the phase ended, a planned step's schedule's middle of it.
    void showBufferAtPhase(const StepRecord* record, const wafer::StepPrediction* prediction,
                           int layer, bool backward, int numBlocks, int bufferLayers);
    // Slow motion: the buffer at the replay's moment: what the run's executor held at that point
    // of the phase (`record`, its real spans), else the emulated schedule's `scheduled`.
    void showBufferAtReplay(const StepRecord* record, const wafer::StepPrediction& prediction,
                            const wafer::ReplayState& state, int numBlocks);

private:
    CoreHeatmap* m_map;
    ClusterDiagram* m_diagram;
    BufferSlotsView* m_bufferSlots;
    TimelineView* m_timeline;
    WaferChartTabs* m_charts;
};

}  // namespace ws::ui
