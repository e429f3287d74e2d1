// SpanClock (emulated_time.h).
#include "engine/wafer/emulated_time.h"

namespace ws::wafer {
namespace {

// micro, system (+1, so SwarmX / MemoryX's -1 fits), layer, kind and, for stream-ins, the
// pass: one key per span (a layer's weights stream in once for forward, once for backward).
uint64_t spanKey(int micro, int system, int layer, streaming::SpanKind kind, bool backward) {
    backward = backward && kind == streaming::SpanKind::StreamIn;
    return (uint64_t(uint32_t(micro)) << 40) | (uint64_t(uint32_t(system + 1) & 0xffff) << 24) |
           (uint64_t(uint32_t(layer) & 0xfffff) << 4) | (uint64_t(kind) << 1) | uint64_t(backward);
}

}  // namespace

SpanClock::SpanClock(std::shared_ptr<const StepPrediction> prediction)
    : m_prediction(std::move(prediction)) {
    for (const auto& s : m_prediction->spans) {
        m_byKey[spanKey(s.micro, s.system, s.layer, s.kind, s.backwardPass)] = {s.startS, s.endS};
    }
}

SpanClock::SpanClock(std::shared_ptr<const StepPrediction> prediction, int64_t originStep,
                     double originS)
    : SpanClock(std::move(prediction)) {
    m_originStep = originStep;
    m_originS = originS;
}

bool SpanClock::attach(streaming::Span& span) const {
    const auto it =
        m_byKey.find(spanKey(span.micro, span.system, span.layer, span.kind, span.backwardPass));
    if (it == m_byKey.end()) return false;
    const double t0 = stepStart(span.step);
    span.emuStart = t0 + it->second.first;
    span.emuEnd = t0 + it->second.second;
    return true;
}

}  // namespace ws::wafer
