// SPDX-License-Identifier: GPL-3.0-or-later
// SpanClock (emulated_time.h).
#include "engine/wafer/emulated_time.h"

namespace ws::wafer {
namespace {

// micro, system (+1, so SwarmX / MemoryX's -1 fits), layer, kind, for stream-ins the pass,
// and the MoE stream unit (expert + 1): one key per span (a layer's weights stream in once for
// forward, once for backward).
SpanClock::Key spanKey(int micro, int system, int layer, streaming::SpanKind kind, bool backward,
                       int expert) {
    backward = backward && kind == streaming::SpanKind::StreamIn;
    const uint64_t low = (uint64_t(uint32_t(system + 1) & 0xffff) << 24) |
                         (uint64_t(uint32_t(layer) & 0xfffff) << 4) | (uint64_t(kind) << 1) |
                         uint64_t(backward);
    return {low, (uint64_t(uint32_t(micro)) << 32) | uint64_t(uint32_t(expert + 1))};
}

}  // namespace

SpanClock::SpanClock(std::shared_ptr<const StepPrediction> prediction, int64_t firstStep,
                     double firstStartS)
    : m_prediction(std::move(prediction)), m_firstStep(firstStep), m_firstStartS(firstStartS) {
    for (const auto& s : m_prediction->spans) {
        m_byKey[spanKey(s.micro, s.system, s.layer, s.kind, s.backwardPass, s.expert)] = {s.startS,
                                                                                          s.endS};
    }
}

bool SpanClock::attach(streaming::Span& span) const {
    const auto it = m_byKey.find(
        spanKey(span.micro, span.system, span.layer, span.kind, span.backwardPass, span.expert));
    if (it == m_byKey.end()) return false;
    const double t0 = stepStart(span.step);
    span.emuStart = t0 + it->second.first;
    span.emuEnd = t0 + it->second.second;
    return true;
}

}  // namespace ws::wafer
