// SPDX-License-Identifier: GPL-3.0-or-later
// The Wafer tab's views, for tests. WaferTab has no child-widget getters (the main window and the
// lessons need none: lessons find views by object name); a test that checks what a view draws
// finds it here by type, each being the only one of its type in the tab. Aborts the test when
// one is missing, naming it.
#pragma once

#include <QWidget>
#include <QtGlobal>

#include "ui/wafer/buffer_slots_view.h"
#include "ui/wafer/cluster_diagram.h"
#include "ui/wafer/core_heatmap.h"
#include "ui/wafer/expert_load_chart.h"
#include "ui/wafer/layer_norm_chart.h"
#include "ui/wafer/slow_motion_bar.h"
#include "ui/wafer/sparsity_chart.h"
#include "ui/wafer/step_replayer.h"
#include "ui/wafer/timeline_view.h"

namespace ws::testing {

struct WaferTabViews {
    explicit WaferTabViews(const QWidget& tab)
        : heatmap(find<ui::CoreHeatmap>(tab, "CoreHeatmap")),
          timeline(find<ui::TimelineView>(tab, "TimelineView")),
          bufferSlots(find<ui::BufferSlotsView>(tab, "BufferSlotsView")),
          diagram(find<ui::ClusterDiagram>(tab, "ClusterDiagram")),
          layerNorms(find<ui::LayerNormChart>(tab, "LayerNormChart")),
          expertLoads(find<ui::ExpertLoadChart>(tab, "ExpertLoadChart")),
          sparsity(find<ui::SparsityChart>(tab, "SparsityChart")),
          slowMotionBar(find<ui::SlowMotionBar>(tab, "SlowMotionBar")),
          replayer(find<ui::StepReplayer>(tab, "StepReplayer")) {}

    ui::CoreHeatmap* heatmap;
    ui::TimelineView* timeline;
    ui::BufferSlotsView* bufferSlots;
    ui::ClusterDiagram* diagram;
    ui::LayerNormChart* layerNorms;
    ui::ExpertLoadChart* expertLoads;
    ui::SparsityChart* sparsity;
    ui::SlowMotionBar* slowMotionBar;
    ui::StepReplayer* replayer;  // the slow-motion clock

private:
    template <typename T>
    static T* find(const QWidget& tab, const char* name) {
        const auto found = tab.findChildren<T*>();
        if (found.size() != 1)
            qFatal("WaferTabViews: %lld %s in the Wafer tab, expected one",
                   static_cast<long long>(found.size()), name);
        return found.front();
    }
};

}  // namespace ws::testing
