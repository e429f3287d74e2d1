// SPDX-License-Identifier: GPL-3.0-or-later
// The weight buffer's slots at a moment of the emulated step (buffer_slots.h).
#include "engine/wafer/buffer_slots.h"

#include <algorithm>
#include <limits>

namespace ws::wafer {

using streaming::SpanKind;

const char* slotActivityName(SlotActivity a) {
    switch (a) {
        case SlotActivity::Empty:
            return "empty";
        case SlotActivity::StreamingIn:
            return "streaming in";
        case SlotActivity::Waiting:
            return "waiting";
        case SlotActivity::Computing:
            return "computing";
    }
    return "?";
}

namespace {

bool isCompute(const TimelineSpan& s) {
    return s.kind == SpanKind::Forward || s.kind == SpanKind::Backward;
}

double fraction(double t, double a, double b) {
    if (b <= a) return t >= b ? 1.0 : 0.0;
    return std::clamp((t - a) / (b - a), 0.0, 1.0);
}

}  // namespace

BufferState bufferStateAt(const StepPrediction& p, double t) {
    return bufferStateOf(p.spans, p.weightBufferLayers, t, 0);
}

BufferState bufferStateOf(const std::vector<TimelineSpan>& spans, int slotCount, double t,
                          int system) {
    BufferState out;
    out.timeS = t;
    const int slots = std::max(1, slotCount);
    out.slotStates.assign(size_t(slots), SlotState{});
    // A visit's stream-in span (an MoE block's: its first unit, the shared part; the visit ends
    // with its last unit, visitEnd).
    std::vector<const TimelineSpan*> visits;
    for (const auto& s : spans)
        if (s.system == system && s.kind == SpanKind::StreamIn && s.expert < 0)
            visits.push_back(&s);
    const auto computeOf = [&](const TimelineSpan& streamIn) -> const TimelineSpan* {
        const SpanKind kind = streamIn.backwardPass ? SpanKind::Backward : SpanKind::Forward;
        for (const auto& s : spans)
            if (s.system == system && s.kind == kind && s.layer == streamIn.layer &&
                s.micro == streamIn.micro)
                return &s;
        return nullptr;
    };
    auto visitEnd = [&](const TimelineSpan& first) {
        double end = first.endS;
        for (const auto& s : spans)
            if (s.system == system && s.kind == SpanKind::StreamIn && s.expert >= 0 &&
                s.layer == first.layer && s.micro == first.micro &&
                s.backwardPass == first.backwardPass)
                end = std::max(end, s.endS);
        return end;
    };
    std::stable_sort(
        visits.begin(), visits.end(),
        [](const TimelineSpan* a, const TimelineSpan* b) { return a->startS < b->startS; });
    for (size_t v = 0; v < visits.size(); ++v) {
        const TimelineSpan& in = *visits[v];
        const TimelineSpan* compute = computeOf(in);
        const double inEnd = visitEnd(in);
        // A visit not computed yet (a paused run's next layer) holds its slot, waiting.
        const double end = compute ? compute->endS : std::numeric_limits<double>::infinity();
        if (t < in.startS || t >= end) continue;
        SlotState& slot = out.slotStates[v % size_t(slots)];
        slot.layer = in.layer;
        slot.backward = in.backwardPass;
        slot.micro = in.micro;
        slot.streamedFraction = fraction(t, in.startS, inEnd);
        slot.computedFraction = compute ? fraction(t, compute->startS, compute->endS) : 0.0;
        if (compute && t >= compute->startS)
            slot.activity = SlotActivity::Computing;  // possibly as its last weights arrive
        else if (t < inEnd)
            slot.activity = SlotActivity::StreamingIn;
        else
            slot.activity = SlotActivity::Waiting;
    }
    for (const auto& s : spans)
        if (s.system == system && s.kind == SpanKind::StreamOut && t >= s.startS && t < s.endS &&
            std::find(out.streamingOut.begin(), out.streamingOut.end(), s.layer) ==
                out.streamingOut.end())  // (an MoE block's units: the layer once)
            out.streamingOut.push_back(s.layer);
    return out;
}

double phaseMidpoint(const StepPrediction& p, int layer, bool backward, int micro) {
    for (const auto& s : p.spans)
        if (s.system == 0 && isCompute(s) && s.layer == layer && s.micro == micro &&
            (s.kind == SpanKind::Backward) == backward)
            return 0.5 * (s.startS + s.endS);
    return -1.0;
}

}  // namespace ws::wafer
