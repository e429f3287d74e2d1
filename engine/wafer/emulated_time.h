// Emulated hardware time for the streamed execution: the cycle model predicts one step's
// schedule (every stream-in, compute, stream-out, reduce and update on the emulated machine);
// SpanClock looks each real span of the streamed execution up in that schedule and gives it
// the emulated start and end, step k's schedule starting at k x the predicted step time (a static
// config runs the same schedule every step).
// Thread-safety: after construction, attach() is const and safe from any thread.
#pragma once

#include <cstdint>
#include <memory>
#include <unordered_map>
#include <utility>

#include "engine/streaming/spans.h"
#include "engine/wafer/cycle_model.h"

namespace ws::wafer {

class SpanClock {
public:
    explicit SpanClock(std::shared_ptr<const StepPrediction> prediction);
    // A schedule that takes over at `originStep` (emulated time `originS`): a run whose sparsity
    // masks change gets a new prediction from that step on, and its clock continues.
    SpanClock(std::shared_ptr<const StepPrediction> prediction, int64_t originStep, double originS);

    // Sets span.emuStart / emuEnd from the prediction; false (span unchanged) when the emulated
    // machine does no such work (e.g. a single system has no SwarmX reduce).
    bool attach(streaming::Span& span) const;
    double stepStart(int64_t step) const {
        return m_originS + double(step - m_originStep) * m_prediction->stepS;
    }
    const std::shared_ptr<const StepPrediction>& prediction() const { return m_prediction; }

private:
    std::shared_ptr<const StepPrediction> m_prediction;
    std::unordered_map<uint64_t, std::pair<double, double>> m_byKey;
    int64_t m_originStep = 0;
    double m_originS = 0.0;
};

}  // namespace ws::wafer
