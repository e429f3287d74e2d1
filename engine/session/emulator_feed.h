// SPDX-License-Identifier: GPL-3.0-or-later
// EmulatorFeed: the wafer emulator beside a training run. It plans the run's step on the
// emulated machine (predictRunStep, emulation.h), gives every streamed span its emulated time,
// and publishes each step's schedule (EmulatedStep) as training reaches it; it plans again when
// a step's real routing (MoE), its packed attention length (vsl.h) or the sparsity masks differ
// from what was planned, and keeps the run's emulated clock and FLOPs. A run the emulator
// cannot predict trains without it (a warning says so). Training itself never depends on it.
// Not thread-safe: the session's worker thread, except publish(), which the executor calls for
// its spans while the worker waits for the step.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/config/config.h"
#include "engine/model/parameters.h"
#include "engine/session/events.h"
#include "engine/session/vsl.h"
#include "engine/streaming/spans.h"
#include "engine/wafer/emulated_time.h"
#include "engine/wafer/sparsity.h"

namespace ws::session {

class EmulatorFeed {
public:
    using Log = std::function<void(LogLine::Level, std::string)>;
    // The attention length of training step `step`'s rows (data::attentionLength; T unpacked).
    using AttentionLength = std::function<double(int64_t step)>;

    // Off (and silent) unless wafer.emulate. `blocks`: the sparsity the wafer sees now (empty:
    // dense); `staticBlocks`: the static sparsity's, which re-plans for packed lengths and MoE
    // routing keep. `config` and `events` must outlive the feed.
    EmulatorFeed(const config::Config& config, const model::GptShape& shape, int microBatch, int T,
                 const std::vector<wafer::BlockSparsity>& blocks,
                 std::vector<wafer::BlockSparsity> staticBlocks, EventQueue& events, Log log);
    EmulatorFeed(const EmulatorFeed&) = delete;
    EmulatorFeed& operator=(const EmulatorFeed&) = delete;

    bool on() const { return m_clock.has_value(); }

    // A streamed span, with its emulated time when on, into the event queue.
    void publish(const streaming::Span& span);
    // A resumed run: the emulated clock of packed steps goes on from where steps [0, startStep)
    // left it.
    void catchUp(int64_t startStep, const AttentionLength& attentionLength);
    // Step `step` (0-based) begins: its schedule is published.
    void beginStep(int64_t step, const AttentionLength& attentionLength);
    // MoE, after step `step`: re-plans it with the routing it really had (per block, per expert,
    // over the whole step, `passes` = systems x micro-batches) and publishes it again; the next
    // step starts from its end with the same routing until its own is known.
    void routed(int64_t step, const std::vector<std::vector<int64_t>>& expertTokens, int passes);
    // The masks changed after `stepsDone` steps: the steps from there are planned with `blocks`
    // (a plan that fails keeps the previous one).
    void masksChanged(int64_t stepsDone, const std::vector<wafer::BlockSparsity>& blocks);

    // The training FLOPs of one step as planned now, without the multiply-adds of
    // `prunedWeights` zero weights (0 when off).
    double stepFlops(int64_t tokensPerStep, int64_t prunedWeights) const;
    // The emulated wafer time of the first `steps` steps (0 when off).
    double elapsedThrough(int64_t steps) const;

private:
    bool beginPackedStep(int64_t step, const AttentionLength& attentionLength);

    const config::Config& m_config;
    model::GptShape m_shape;
    int m_microBatch;
    std::vector<wafer::BlockSparsity> m_staticBlocks;
    EventQueue& m_events;
    Log m_log;
    std::optional<wafer::SpanClock> m_clock;
    // Steps that pack (vsl.h): each step timed at its own attention length; m_clock is then the
    // full-length step's.
    std::optional<EmulatedSteps> m_steps;
    // MoE: the last per-pass routing planned, and its prediction (reused while it repeats).
    std::vector<std::vector<int64_t>> m_routing;
    std::shared_ptr<const wafer::StepPrediction> m_routedPrediction;
};

}  // namespace ws::session
