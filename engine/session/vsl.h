// SPDX-License-Identifier: GPL-3.0-or-later
// Variable sequence length in a training session: which steps pack what (train_input.use_vsl's
// documents, the two-stage schedule's short sequences), the position_ids of a step's rows, and the
// emulated clock when steps differ - each step is timed by the cycle model at its own attention
// length (wafer/attention_span.h), and steps follow each other on the emulated clock, so the
// emulated time of a run is the sum of its steps' own times (resumed runs replay the earlier
// steps' lengths, so their clock continues where it was).
// Thread-safety: EmulatedSteps::attach may run on any thread while no beginStep runs (the
// session calls beginStep between steps); everything else on the session's worker thread.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "engine/config/config.h"
#include "engine/core/result.h"
#include "engine/data/dataset.h"
#include "engine/data/packing.h"
#include "engine/streaming/spans.h"
#include "engine/wafer/cycle_model.h"
#include "engine/wafer/emulated_time.h"

namespace ws::session {

// Tokens per packed short sequence at 0-based step `step` (train_input.short_sequence_length
// during the first short_sequence_steps steps), 0 when the step trains full-length rows.
int shortSegmentAt(const config::InputConfig& input, int64_t step);
// True when some step of the run packs (documents, or short sequences).
bool packsSequences(const config::InputConfig& input);

// The documents of a corpus for use_vsl: errors (naming `key`'s use_vsl, e.g. "train_input", and
// the section whose data_dir holds the corpus, `dataKey`, empty: the same) when it is a single
// document, which leaves nothing to pack.
Result<data::DocumentIndex> documentIndexFor(const data::CorpusDocuments& corpus,
                                             const data::TokenCache& cache,
                                             const std::vector<int32_t>& tokenBytes,
                                             const std::string& key,
                                             const std::string& dataKey = {});

// position_ids (B,T) of step `step`'s training rows into `out` (resized); false (out untouched)
// when the step is dense: neither use_vsl nor a short stage.
bool trainPositionIds(const data::Dataset& dataset, const data::DocumentIndex& documents,
                      const config::InputConfig& input, int64_t step, int B, int T,
                      std::vector<int32_t>& out);
// The same for validation batch `index` (use_vsl only; evaluation is always full-length).
void validationPositionIds(const data::Dataset& dataset, const data::DocumentIndex& documents,
                           int64_t index, int B, int T, std::vector<int32_t>& out);

class EmulatedSteps {
public:
    using Predict =
        std::function<Result<std::shared_ptr<const wafer::StepPrediction>>(int attentionLength)>;
    // full: the prediction of a full-length step (attention length T).
    EmulatedSteps(std::shared_ptr<const wafer::StepPrediction> full, int T, Predict predict);

    // Starts step `step` with this attention length (data::attentionLength of its rows; T for a
    // dense step): its schedule starts where the previous step's ended. Lengths are rounded to a
    // 32nd of T so a run plans at most 32 schedules. Fails when the cycle model cannot plan it.
    Status beginStep(int64_t step, double attentionLength);
    // Sets the span's emulated times from the current step's schedule (SpanClock::attach).
    bool attach(streaming::Span& span) const;
    double stepStart() const { return m_start; }
    // The emulated time of the first `steps` steps (a step begun but not finished - a stop
    // inside it - does not count).
    double elapsedThrough(int64_t steps) const { return m_lastStep < steps ? m_elapsed : m_start; }
    const std::shared_ptr<const wafer::StepPrediction>& prediction() const;

private:
    int m_T;
    Predict m_predict;
    std::map<int, std::unique_ptr<wafer::SpanClock>> m_clocks;  // by rounded attention length
    const wafer::SpanClock* m_current = nullptr;
    double m_start = 0.0, m_elapsed = 0.0;
    int64_t m_lastStep = -1;  // the last begun step
};

}  // namespace ws::session
