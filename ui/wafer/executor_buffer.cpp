// SPDX-License-Identifier: GPL-3.0-or-later
// ExecutorBuffer: see executor_buffer.h.
#include "ui/wafer/executor_buffer.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace ws::ui {

using streaming::SpanKind;

ExecutorBuffer::ExecutorBuffer(const StepRecord& record, int slotCount)
    : m_slots(std::max(1, slotCount)) {
    // Every system holds the same visits; the lowest one recorded (a rank's first) stands for
    // them.
    int system = std::numeric_limits<int>::max();
    for (const RecordedSpan& s : record.spans)
        if (s.system >= 0) system = std::min(system, int(s.system));
    if (system == std::numeric_limits<int>::max()) return;
    m_system = system;
    for (const RecordedSpan& s : record.spans) {
        if (s.system != system) continue;
        const SpanKind kind = s.kind();
        if (kind != SpanKind::StreamIn && kind != SpanKind::StreamOut && !s.isCompute()) continue;
        wafer::TimelineSpan t;
        t.system = system;
        t.micro = s.micro;
        t.layer = s.layer;
        t.kind = kind;
        t.backwardPass = s.backwardPass;
        t.startS = s.realStart;
        t.endS = s.realEnd;
        t.expert = s.expert();
        m_spans.push_back(t);
    }
    for (size_t i = 0; i < m_spans.size(); ++i)
        if (m_spans[i].kind == SpanKind::Forward || m_spans[i].kind == SpanKind::Backward)
            m_computes.push_back(i);
    std::stable_sort(m_computes.begin(), m_computes.end(),
                     [&](size_t a, size_t b) { return m_spans[a].startS < m_spans[b].startS; });
}

const wafer::TimelineSpan* ExecutorBuffer::compute(int layer, bool backward, int micro) const {
    const SpanKind kind = backward ? SpanKind::Backward : SpanKind::Forward;
    const wafer::TimelineSpan* found = nullptr;
    for (size_t i : m_computes) {
        const wafer::TimelineSpan& s = m_spans[i];
        if (s.kind == kind && s.layer == layer && (micro < 0 || s.micro == micro)) found = &s;
    }
    return found;  // the latest (a paused run's micro-batch when micro < 0)
}

wafer::BufferState ExecutorBuffer::at(double timeS) const {
    return wafer::bufferStateOf(m_spans, m_slots, timeS, m_system);
}

void ExecutorBuffer::addOwnGradients(wafer::BufferState& state,
                                     const wafer::TimelineSpan& compute) const {
    // A backward phase's own gradients stream out as it ends (the executor sends them right
    // after the compute): they belong to the phase, as the emulated schedule draws them.
    if (compute.kind != SpanKind::Backward) return;
    for (const wafer::TimelineSpan& s : m_spans)
        if (s.kind == SpanKind::StreamOut && s.layer == compute.layer && s.micro == compute.micro &&
            s.endS >= compute.startS &&
            std::find(state.streamingOut.begin(), state.streamingOut.end(), compute.layer) ==
                state.streamingOut.end())
            state.streamingOut.push_back(compute.layer);
}

std::optional<wafer::BufferState> ExecutorBuffer::atPhase(int layer, bool backward) const {
    const wafer::TimelineSpan* c = compute(layer, backward, -1);
    if (!c) return std::nullopt;
    wafer::BufferState state =
        at(c->endS > c->startS ? c->endS - 1e-3 * (c->endS - c->startS) : c->startS);
    addOwnGradients(state, *c);
    return state;
}

std::optional<wafer::BufferState> ExecutorBuffer::atReplayMoment(
    const wafer::PhaseAtTime& m) const {
    if (m_computes.empty()) return std::nullopt;
    const wafer::TimelineSpan* last =
        m.layer >= 0 ? compute(m.layer, m.backward, m.micro) : nullptr;
    if (m.layer >= 0 && !last) return std::nullopt;
    if (m.activity == wafer::WaferActivity::Computing && last) {
        wafer::BufferState state = at(last->startS + std::clamp(m.computedFraction, 0.0, 1.0) *
                                                         (last->endS - last->startS));
        addOwnGradients(state, *last);
        return state;
    }
    // Before the next phase (or the step's tail): between the last compute and the next one.
    const double from = last ? last->endS : std::min(0.0, m_spans[m_computes.front()].startS);
    if (m.nextLayer < 0) return at(from);  // the step's tail: every visit released
    const wafer::TimelineSpan* next = compute(m.nextLayer, m.nextBackward, m.nextMicro);
    if (!next) return std::nullopt;
    // As far into the wait as the next phase's weights are in, and before its compute starts.
    const double gap = std::max(0.0, next->startS - from);
    double t = from + std::clamp(m.nextStreamedFraction, 0.0, 1.0) * gap;
    if (gap > 0) t = std::min(t, std::nextafter(next->startS, from));
    return at(t);
}

}  // namespace ws::ui
