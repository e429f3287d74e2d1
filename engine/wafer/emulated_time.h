// SPDX-License-Identifier: GPL-3.0-or-later
// Emulated hardware time for the streamed execution: the cycle model predicts one step's
// schedule (every stream-in, compute, stream-out, reduce and update on the emulated machine);
// SpanClock looks each real span of the streamed execution up in that schedule and gives it
// the emulated start and end, step k's schedule starting at k x the predicted step time (a static
// config runs the same schedule every step). An MoE block's stream units (Span::expert) each
// have their own span in the schedule.
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
    // From step `firstStep` on, starting at `firstStartS` emulated seconds (an MoE run's steps
    // differ as their routing does: the session starts a new clock from each step's end).
    explicit SpanClock(std::shared_ptr<const StepPrediction> prediction, int64_t firstStep = 0,
                       double firstStartS = 0);

    // Sets span.emuStart / emuEnd from the prediction; false (span unchanged) when the emulated
    // machine does no such work (e.g. a single system has no SwarmX reduce).
    bool attach(streaming::Span& span) const;
    double stepStart(int64_t step) const {
        return m_firstStartS + double(step - m_firstStep) * m_prediction->stepS;
    }
    const std::shared_ptr<const StepPrediction>& prediction() const { return m_prediction; }

    using Key = std::pair<uint64_t, uint64_t>;

private:
    struct KeyHash {
        size_t operator()(const Key& k) const {
            return std::hash<uint64_t>()(k.first) ^ (std::hash<uint64_t>()(k.second) * 31);
        }
    };
    std::shared_ptr<const StepPrediction> m_prediction;
    int64_t m_firstStep = 0;
    double m_firstStartS = 0;
    std::unordered_map<Key, std::pair<double, double>, KeyHash> m_byKey;
};

}  // namespace ws::wafer
