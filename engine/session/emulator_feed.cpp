// SPDX-License-Identifier: GPL-3.0-or-later
// The wafer emulator beside a training run (see emulator_feed.h).
#include "engine/session/emulator_feed.h"

#include <fmt/format.h>

#include <algorithm>

#include "engine/core/units.h"
#include "engine/session/emulation.h"

namespace ws::session {

EmulatorFeed::EmulatorFeed(const config::Config& config, const model::GptShape& shape,
                           int microBatch, int T, const std::vector<wafer::BlockSparsity>& blocks,
                           std::vector<wafer::BlockSparsity> staticBlocks, EventQueue& events,
                           Log log)
    : m_config(config),
      m_shape(shape),
      m_microBatch(microBatch),
      m_staticBlocks(std::move(staticBlocks)),
      m_events(events),
      m_log(std::move(log)) {
    const config::Config& cfg = m_config;
    if (!cfg.wafer.emulate) return;
    auto prediction = predictRunStep(cfg, m_shape, m_microBatch, blocks);
    if (!prediction.ok()) {
        m_log(LogLine::Level::Warning,
              "emulator off for this run (training is unaffected): " + prediction.error().message);
        return;
    }
    m_clock.emplace(std::move(prediction).value());
    if (packsSequences(cfg.trainInput)) {
        m_steps.emplace(m_clock->prediction(), T,
                        [&cfg, shape = m_shape, micro = m_microBatch,
                         blocks = m_staticBlocks](int attentionLength) {
                            return predictRunStep(cfg, shape, micro, blocks, true, {},
                                                  attentionLength);
                        });
    }
    const auto& e = *m_clock->prediction();
    m_log(
        LogLine::Level::Info,
        fmt::format("emulated {}: {} system(s), {} per step, {:.3g} tokens/s, MFU {:.1f}%; "
                    "weight streaming {}",
                    e.waferName, e.numSystems, formatSeconds(e.stepS), e.tokensPerS, 100.0 * e.mfu,
                    e.weightStreamingHidden ? "hidden behind compute"
                                            : "not hidden (the step waits for weights)"));
}

void EmulatorFeed::publish(const streaming::Span& span) {
    if (!m_clock) return m_events.push(span);
    streaming::Span timed = span;
    if (m_steps) {
        m_steps->attach(timed);
    } else {
        m_clock->attach(timed);
    }
    m_events.push(timed);
}

// Times step `step` on the emulated clock at its rows' attention length (vsl.h). A length the
// cycle model cannot plan turns the per-step clock off (the full-length schedule goes on).
bool EmulatorFeed::beginPackedStep(int64_t step, const AttentionLength& attentionLength) {
    if (Status st = m_steps->beginStep(step, attentionLength(step)); !st.ok()) {
        m_log(LogLine::Level::Warning,
              "emulator: each step at its own sequence length is off (every step is timed at "
              "full length): " +
                  st.error().message);
        m_steps.reset();
        return false;
    }
    return true;
}

void EmulatorFeed::catchUp(int64_t startStep, const AttentionLength& attentionLength) {
    for (int64_t k = 0; m_steps && k < startStep; ++k) {
        if (!beginPackedStep(k, attentionLength)) break;
    }
}

void EmulatorFeed::beginStep(int64_t step, const AttentionLength& attentionLength) {
    if (m_steps && beginPackedStep(step, attentionLength)) {
        m_events.push(EmulatedStep{step, m_steps->stepStart(), m_steps->prediction()});
    } else if (m_clock) {
        m_events.push(EmulatedStep{step, m_clock->stepStart(step), m_clock->prediction()});
    }
}

// An MoE step's schedule depends on its routing, known only once it has run: the step was
// published (EmulatedStep) and its spans timed with the routing of the step before (uniform for
// the first); now it is published again, planned with its own routing, so the heatmap, the time
// split and the tokens per expert agree, and the next step starts from its end on the emulated
// clock with the same routing until its own is known.
void EmulatorFeed::routed(int64_t step, const std::vector<std::vector<int64_t>>& expertTokens,
                          int passes) {
    if (!m_clock || expertTokens.empty()) return;
    auto perPass = perPassExpertTokens(expertTokens, passes);
    if (perPass != m_routing || !m_routedPrediction) {
        auto prediction =
            predictRunStep(m_config, m_shape, m_microBatch, m_staticBlocks, true, perPass);
        if (!prediction.ok()) {
            // Cannot happen for a run whose uniform routing planned (the same ops, other rows);
            // if it does, the step keeps its first plan.
            m_log(LogLine::Level::Warning,
                  "emulator: step " + std::to_string(step + 1) +
                      " could not be re-planned with its routing: " + prediction.error().message);
            return;
        }
        m_routing = std::move(perPass);
        m_routedPrediction = std::move(prediction).value();
    }
    const double start = m_clock->stepStart(step);
    m_events.push(EmulatedStep{step, start, m_routedPrediction});
    m_clock.emplace(m_routedPrediction, step + 1, start + m_routedPrediction->stepS);
}

void EmulatorFeed::masksChanged(int64_t stepsDone,
                                const std::vector<wafer::BlockSparsity>& blocks) {
    if (!m_clock) return;
    auto prediction = predictRunStep(m_config, m_shape, m_microBatch, blocks);
    if (!prediction.ok()) return;  // keep the previous plan; training is unaffected
    const double at = m_clock->stepStart(stepsDone);
    m_clock.emplace(std::move(prediction).value(), stepsDone, at);
}

double EmulatorFeed::stepFlops(int64_t tokensPerStep, int64_t prunedWeights) const {
    if (!m_clock) return 0.0;
    const auto& e = *m_clock->prediction();
    return e.modelFlopsPerStep - 6.0 * double(tokensPerStep) * double(prunedWeights);
}

double EmulatorFeed::elapsedThrough(int64_t steps) const {
    if (m_steps) return m_steps->elapsedThrough(steps);
    return m_clock ? m_clock->stepStart(steps) : 0.0;
}

}  // namespace ws::session
