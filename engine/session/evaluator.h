// SPDX-License-Identifier: GPL-3.0-or-later
// Evaluator: a run's held-out loss. Up to runconfig.eval_steps batches of eval_input.batch_size
// sequences from the evaluation data (the training corpus's held-out split, or eval_input's own
// corpus), run forward on the host over MemoryX's weights (not streamed), in micro-batches no
// larger than a training micro-batch, whose memory the wafer fit has accepted: ModelZoo's eval
// batches (120 x 2048 tokens for Cerebras-GPT) need tens of GB of activations at once, and eval
// has no backward to accumulate, so splitting it only changes the order of a sum.
// Not thread-safe: the session's worker thread.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/config/config.h"
#include "engine/data/batch_source.h"
#include "engine/data/dataset.h"
#include "engine/data/packing.h"
#include "engine/model/gpt.h"
#include "engine/session/run_weights.h"

namespace ws::session {

class Evaluator {
public:
    struct Result {
        double loss;         // nats per trained token; NaN when there is nothing to evaluate
        double bitsPerByte;  // the same loss per byte of the text the trained targets decode to
        int64_t tokens = 0;  // the trained targets (>= 0) evaluated
    };

    // The largest divisor of the evaluation batch that is no larger than a training micro-batch.
    static int microBatch(int evalBatch, int trainMicroBatch);

    // `data` (and `documents`, eval_input.use_vsl's document index or null) must outlive this.
    // tokenBytes: (V) the bytes each token id decodes to (tokenizer::tokenByteCounts).
    Evaluator(const config::Config& config, const model::GptShape& shape, int T,
              int trainMicroBatch, const data::Dataset& data, const data::DocumentIndex* documents,
              std::vector<int32_t> tokenBytes);
    // The same over a BatchSource's validation batches (chat examples, ModelZoo's HDF5
    // samples), with its own position_ids when it has them. `source` must outlive this.
    Evaluator(const config::Config& config, const model::GptShape& shape, int T,
              int trainMicroBatch, const data::BatchSource& source,
              std::vector<int32_t> tokenBytes);

    int micro() const { return m_micro; }  // sequences per forward pass
    // The batches an evaluation reads: runconfig.eval_steps, fewer when the data holds fewer.
    int64_t batches() const;
    // The mean loss over the trained targets (>= 0; a target < 0 is masked) of batches(), NaN
    // when there are none, and the same in bits per byte.
    // NaN too when a source's batch cannot be read; lastError() then says why.
    Result evaluate(RunWeights& weights);
    const std::string& lastError() const { return m_lastError; }

private:
    const config::Config& m_config;
    int m_T;
    int m_micro;
    // Validation batch i into m_inputs, m_targets (and m_positionIds when positioned).
    Status readBatch(int64_t i);
    bool positioned() const { return m_documents || (m_source && m_source->hasPositionIds()); }

    const data::Dataset* m_data = nullptr;  // one of these two
    const data::BatchSource* m_source = nullptr;
    const data::DocumentIndex* m_documents = nullptr;
    std::string m_lastError;
    std::vector<int32_t> m_tokenBytes;
    model::Gpt<float> m_gpt;                   // (micro, T)
    std::vector<int32_t> m_inputs, m_targets;  // (eval batch, T)
    std::vector<int32_t> m_positionIds;        // (eval batch, T), when positioned()
};

}  // namespace ws::session
