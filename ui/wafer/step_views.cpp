// SPDX-License-Identifier: GPL-3.0-or-later
// WaferStepViews: see step_views.h.
#include "ui/wafer/step_views.h"

#include <QVBoxLayout>

#include "engine/wafer/narration.h"
#include "ui/wafer/buffer_slots_view.h"
#include "ui/wafer/cluster_diagram.h"
#include "ui/wafer/core_heatmap.h"
#include "ui/wafer/core_regions.h"
#include "ui/wafer/executor_buffer.h"
#include "ui/wafer/timeline_view.h"
#include "ui/wafer/wafer_chart_tabs.h"
#include "ui/wafer/wafer_view_controls.h"

namespace ws::ui {
namespace {

// Which matrix each region of cores holds in a layer phase; an MoE block: its experts' shares
// of the wafer and the tokens each got.
CoreRegions regionsOf(const wafer::StepPrediction& prediction, int layer, bool backward,
                      int numBlocks) {
    const std::string name = wafer::layerName(layer, numBlocks);
    const size_t block = size_t(layer - 1);
    if (layer >= 1 && block < prediction.expertTokens.size() &&
        !prediction.expertTokens[block].empty())
        return coreRegionsOfExperts(prediction.expertRegions, prediction.expertTokens[block]);
    const wafer::Pass pass = backward ? wafer::Pass::Backward : wafer::Pass::Forward;
    for (const auto& timing : prediction.layers)
        if (timing.layer == name && timing.pass == pass) return coreRegionsFor(timing);
    return {};
}

// The layer phase's whole time on the wafer (its wait for weights included); 0 if none.
double phaseSecondsOf(const wafer::StepPrediction& prediction, int layer, bool backward,
                      int numBlocks) {
    const std::string name = wafer::layerName(layer, numBlocks);
    const wafer::Pass pass = backward ? wafer::Pass::Backward : wafer::Pass::Forward;
    for (const auto& timing : prediction.layers)
        if (timing.layer == name && timing.pass == pass) return timing.timeS;
    return 0;
}

}  // namespace

WaferStepViews::WaferStepViews(QWidget* parent) : QSplitter(Qt::Vertical, parent) {
    auto* top = new QSplitter(Qt::Horizontal, this);
    m_map = new CoreHeatmap(top);
    m_diagram = new ClusterDiagram(top);
    top->addWidget(m_map);
    top->addWidget(m_diagram);
    top->setStretchFactor(0, 3);
    top->setStretchFactor(1, 2);
    // The per-layer gradient norms sit under the diagram, beside the timeline: under the
    // diagram itself they would make the top row taller than the default window allows and
    // squeeze the heatmap and the timeline's lanes; the timeline can spare some width.
    auto* bottom = new QSplitter(Qt::Horizontal, this);
    // The weight buffer's slots sit on the timeline, whose stream-in lane they explain.
    auto* timelineBox = new QWidget(bottom);
    auto* timelineLayout = new QVBoxLayout(timelineBox);
    timelineLayout->setContentsMargins(0, 0, 0, 0);
    timelineLayout->setSpacing(2);
    m_bufferSlots = new BufferSlotsView(timelineBox);
    m_timeline = new TimelineView(timelineBox);
    timelineLayout->addWidget(m_bufferSlots);
    timelineLayout->addWidget(m_timeline, 1);
    // The gradient norms, an MoE run's tokens per expert and a sparse run's sparsity per layer
    // over the run, as tabs (the last two only for runs that have them): the column is as tall
    // as the timeline, too short for two readable charts at the default window size.
    m_charts = new WaferChartTabs(bottom);
    bottom->addWidget(timelineBox);
    bottom->addWidget(m_charts);
    bottom->setStretchFactor(0, 5);
    bottom->setStretchFactor(1, 2);
    // Start at those proportions: the size hints alone leave the diagram and the bar chart at
    // their minimum widths, clipping the diagram's labels and the chart's title.
    top->setSizes({3000, 2000});
    bottom->setSizes({5000, 2000, 2000});
    addWidget(top);
    addWidget(bottom);
    // The timeline keeps the height it had before the slow-motion bar took a row: its lanes
    // go compact (one row per system) under ~210 px.
    setStretchFactor(0, 4);
    setStretchFactor(1, 3);
}

void WaferStepViews::showHeatmap(const std::shared_ptr<const wafer::StepPrediction>& prediction,
                                 const wafer::UtilizationFrame* frame, int layer, bool backward,
                                 const QString& phase, const QString& note, int numBlocks) {
    m_map->setRegions(layer >= 0 ? regionsOf(*prediction, layer, backward, numBlocks)
                                 : CoreRegions{});
    m_map->setPhaseSeconds(layer >= 0 ? phaseSecondsOf(*prediction, layer, backward, numBlocks)
                                      : 0.0);
    m_map->showFrame(prediction, frame, phase, note);
}

void WaferStepViews::showNoHeatmap(const QString& why) {
    m_map->setRegions({});
    m_map->showNothing(why);
}

void WaferStepViews::showBufferAtPhase(const StepRecord* record,
                                       const wafer::StepPrediction* prediction, int layer,
                                       bool backward, int numBlocks, int bufferLayers) {
    if (layer < 0 || !record) {
        m_bufferSlots->setState(std::nullopt, numBlocks,
                                prediction ? tr("shown for one layer phase at a time (pick one "
                                                "under Heatmap, or Step Layer)")
                                           : tr("no emulated schedule"));
        return;
    }
    // What the executor's buffer held as the phase ended (the run's real spans: the next layer
    // already in the other slot); a planned step has none: its emulated schedule's middle.
    const ExecutorBuffer executor(*record,
                                  prediction ? prediction->weightBufferLayers : bufferLayers);
    if (auto state = executor.atPhase(layer, backward)) {
        m_bufferSlots->setState(std::move(state), numBlocks, {},
                                tr("What the run's weight buffer held as %1 ended (its real "
                                   "stream-in and compute spans).")
                                    .arg(phaseName(layer, backward, numBlocks)));
    } else if (!executor.empty()) {
        m_bufferSlots->setState(
            std::nullopt, numBlocks,
            tr("%1 has not run yet in this step").arg(phaseName(layer, backward, numBlocks)));
    } else if (const double t =
                   prediction ? wafer::phaseMidpoint(*prediction, layer, backward) : -1.0;
               t >= 0) {
        m_bufferSlots->setState(wafer::bufferStateAt(*prediction, t), numBlocks, {},
                                tr("The planned schedule's buffer in the middle of %1.")
                                    .arg(phaseName(layer, backward, numBlocks)));
    } else {
        m_bufferSlots->setState(std::nullopt, numBlocks, tr("no emulated schedule"));
    }
}

void WaferStepViews::showBufferAtReplay(const StepRecord* record,
                                        const wafer::StepPrediction& prediction,
                                        const wafer::ReplayState& state, int numBlocks) {
    // A phase the run has not run yet (a paused step) has no such picture; a planned step has
    // only its schedule's.
    const std::optional<ExecutorBuffer> executor =
        record
            ? std::optional<ExecutorBuffer>(std::in_place, *record, prediction.weightBufferLayers)
            : std::nullopt;
    if (executor && !executor->empty()) {
        if (auto held = executor->atReplayMoment(state.phase))
            m_bufferSlots->setState(std::move(held), numBlocks, {},
                                    tr("What the run's weight buffer held at this point of the "
                                       "phase (its real stream-in and compute spans)."));
        else
            m_bufferSlots->setState(std::nullopt, numBlocks,
                                    tr("this phase has not run yet in this step"));
    } else {
        m_bufferSlots->setState(state.buffer, numBlocks, {},
                                tr("The emulated schedule's buffer at the cursor."));
    }
}

}  // namespace ws::ui
