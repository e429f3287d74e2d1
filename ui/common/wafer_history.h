// SPDX-License-Identifier: GPL-3.0-or-later
// WaferHistory: what the Wafer tab has seen of a run, step by step, so a teacher can scrub back
// to any recent step. Each step keeps its gradient norms (global and per layer), its emulated
// prediction (shared: a static config's steps all point at one StepPrediction) and its streamed
// spans in a compact form (times relative to the step, 32 bytes a span). Memory is capped: the
// oldest steps are dropped beyond kMaxSteps steps or kMaxSpans spans in all. Plain data, no
// widgets; GUI thread only (not synchronised).
#pragma once

#include <algorithm>
#include <cstdint>
#include <deque>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "engine/session/events.h"

namespace ws::ui {

struct RecordedSpan {
    float emuStart = -1;  // emulated seconds from the step's emulated start; < 0: not emulated
    float emuEnd = -1;
    float realStart = 0;  // wall seconds from the step's real origin (StepRecord::realOrigin)
    float realEnd = 0;
    int64_t bytes = 0;
    int16_t micro = 0;
    int16_t layer = 0;
    int16_t system = -1;  // -1: SwarmX / MemoryX work
    // streaming::SpanKind, the stream-in's pass, and the MoE stream unit + 1 (Span::expert; 0:
    // the shared part or a whole layer), packed to keep the span at 32 bytes.
    uint16_t kindCode : 4 = 0;
    uint16_t backwardPass : 1 = 0;
    uint16_t unit : 11 = 0;

    streaming::SpanKind kind() const { return streaming::SpanKind(kindCode); }
    int expert() const { return int(unit) - 1; }
    void setExpert(int expert) { unit = uint16_t(std::clamp(expert + 1, 0, 2047)); }
    bool emulated() const { return emuStart >= 0; }
    bool isCompute() const {
        return kind() == streaming::SpanKind::Forward || kind() == streaming::SpanKind::Backward;
    }
};

struct StepRecord {
    int64_t step = 0;           // 0-based, as streaming::Span::step
    double emulatedStart = -1;  // emulated seconds since the run's first step; < 0: none
    double realOrigin = 0;      // wall seconds (executor clock) of the step's first span
    std::shared_ptr<const wafer::StepPrediction> prediction;  // null: not emulated
    std::vector<RecordedSpan> spans;                          // in arrival order
    // From the step's StepMetrics (empty / NaN until they arrive, after the step's spans):
    // the global gradient norm and (layers + 2) each ParameterTable layer's, before clipping.
    double gradNorm = std::numeric_limits<double>::quiet_NaN();
    std::vector<double> layerGradNorms;
    // MoE: per block (a dense block's empty) the token-assignments each expert got in the step
    // (all systems and micro-batches); empty until they arrive, and for a dense model.
    std::vector<std::vector<int64_t>> expertTokens;
};

// The span's name on a timeline: its layer's, an MoE block's expert unit "h.3.expert.5".
std::string spanUnitName(const RecordedSpan& span, int numBlocks);

// Whether every MemoryX update of the step has run (the step's last work): with a prediction,
// every layer it updates (a LoRA run's frozen embeddings and head have none); a step without one
// is taken to update each of its numBlocks + 2 layers once.
bool stepComplete(const StepRecord& record, int numBlocks);

static_assert(sizeof(RecordedSpan) == 32, "kept compact: 2000 steps of spans stay small");

class WaferHistory {
public:
    static constexpr size_t kMaxSteps = 2000;
    static constexpr size_t kMaxSpans = 2'000'000;  // 64 MB of spans at most

    void clear();
    void addEmulatedStep(const session::EmulatedStep& step);
    void addSpans(const std::vector<streaming::Span>& spans);
    // Keeps the step's gradient norms and MoE routing (StepMetrics::step is 1-based: record
    // step - 1). Metrics of a step already dropped are ignored.
    void addMetrics(const session::StepMetrics& metrics);
    // An MoE step's routing (0-based step, StepRecord::expertTokens). Ignored for a dropped step.
    void addExpertTokens(int64_t step, std::vector<std::vector<int64_t>> tokens);

    bool empty() const { return m_steps.empty(); }
    size_t size() const { return m_steps.size(); }
    int64_t firstStep() const { return m_steps.empty() ? -1 : m_steps.front().step; }
    int64_t lastStep() const { return m_steps.empty() ? -1 : m_steps.back().step; }
    // The record of `step`, or null when it was never seen or has been dropped.
    const StepRecord* find(int64_t step) const;
    const StepRecord* last() const { return m_steps.empty() ? nullptr : &m_steps.back(); }
    size_t spanCount() const { return m_spanCount; }
    int64_t droppedSteps() const { return m_dropped; }
    // The most recent prediction seen (survives dropping old steps).
    const std::shared_ptr<const wafer::StepPrediction>& latestPrediction() const {
        return m_latestPrediction;
    }

private:
    StepRecord& recordFor(int64_t step);
    void enforceCap();

    std::deque<StepRecord> m_steps;  // ascending step
    size_t m_spanCount = 0;
    int64_t m_dropped = 0;
    std::shared_ptr<const wafer::StepPrediction> m_latestPrediction;
};

}  // namespace ws::ui
