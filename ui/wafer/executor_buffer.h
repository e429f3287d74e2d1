// SPDX-License-Identifier: GPL-3.0-or-later
// ExecutorBuffer: what the executor's bounded weight buffer really held during one recorded step,
// read off the step's real spans (wall clock, the lowest system recorded): the CPU run streams
// layer k+1 into the free slot while layer k computes, and the Wafer tab's buffer row shows that
// at the moment it shows (wafer::bufferStateOf). The emulated schedule says when the machine
// would do each phase; these spans say which weights were in the buffer during it. A moment is
// named by the layer phase it falls in (the heatmap's phase, or the slow-motion cursor's), so
// the two clocks meet on the phase, not on a time. Plain logic, no widgets; GUI thread only.
#pragma once

#include <optional>
#include <vector>

#include "engine/wafer/buffer_slots.h"
#include "engine/wafer/replay.h"
#include "ui/common/wafer_history.h"

namespace ws::ui {

class ExecutorBuffer {
public:
    // `slotCount`: wafer.weight_buffer_layers of the run.
    ExecutorBuffer(const StepRecord& record, int slotCount);

    // Whether the record holds the real stream-ins and computes to read (a stored run's planned
    // step has none).
    bool empty() const { return m_computes.empty(); }
    // As the latest real compute of that phase in the step ends (what a run paused after it
    // holds; within a phase the next layer's weights only ever arrive, so this is the phase's
    // fullest moment), with a backward phase's own gradients streaming out; nullopt when the
    // step has not computed it.
    std::optional<wafer::BufferState> atPhase(int layer, bool backward) const;
    // At the point of the real step that an emulated slow-motion moment stands for: the same
    // fraction of the same phase's compute, or of the wait before the next phase; nullopt when
    // the record has no such phase.
    std::optional<wafer::BufferState> atReplayMoment(const wafer::PhaseAtTime& moment) const;

private:
    const wafer::TimelineSpan* compute(int layer, bool backward, int micro) const;
    wafer::BufferState at(double timeS) const;
    void addOwnGradients(wafer::BufferState& state, const wafer::TimelineSpan& compute) const;

    std::vector<wafer::TimelineSpan> m_spans;  // real times (s from the step's real origin)
    std::vector<size_t> m_computes;            // indices of the compute spans, by start
    int m_slots = 1;
    int m_system = 0;
};

}  // namespace ws::ui
