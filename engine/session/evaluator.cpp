// A run's held-out loss (see evaluator.h).
#include "engine/session/evaluator.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>

#include "engine/session/hdf5_run_data.h"
#include "engine/session/vsl.h"

namespace ws::session {

int Evaluator::microBatch(int evalBatch, int trainMicroBatch) {
    for (int m = std::min(evalBatch, trainMicroBatch); m > 1; --m)
        if (evalBatch % m == 0) return m;
    return 1;
}

Evaluator::Evaluator(const config::Config& config, const model::GptShape& shape, int T,
                     int trainMicroBatch, const data::Dataset& data,
                     const data::DocumentIndex* documents, std::vector<int32_t> tokenBytes)
    : m_config(config),
      m_T(T),
      m_micro(microBatch(config.evalInput.batchSize, trainMicroBatch)),
      m_data(&data),
      m_documents(documents),
      m_tokenBytes(std::move(tokenBytes)),
      m_gpt(shape, m_micro, T) {
    m_inputs.resize(size_t(config.evalInput.batchSize) * T);
    m_targets.resize(size_t(config.evalInput.batchSize) * T);
}

Evaluator::Evaluator(const config::Config& config, const model::GptShape& shape, int T,
                     int trainMicroBatch, const data::BatchSource& source,
                     std::vector<int32_t> tokenBytes)
    : m_config(config),
      m_T(T),
      m_micro(microBatch(config.evalInput.batchSize, trainMicroBatch)),
      m_source(&source),
      m_tokenBytes(std::move(tokenBytes)),
      m_gpt(shape, m_micro, T) {
    m_inputs.resize(size_t(config.evalInput.batchSize) * T);
    m_targets.resize(size_t(config.evalInput.batchSize) * T);
    if (source.hasPositionIds()) m_positionIds.resize(m_inputs.size());
}

int64_t Evaluator::batches() const {
    const int B = m_config.evalInput.batchSize;
    const int64_t available =
        m_source ? m_source->validationBatches(B) : m_data->validationBatches(B, m_T);
    return std::min<int64_t>(m_config.runconfig.evalSteps, available);
}

// Every batch holds evalB x T targets, so the mean is the total nats over the targets' count,
// and total nats / ln 2 / the bytes the targets decode to is mean x (targets / bytes) / ln 2
// (the ratio is exactly 1 for the byte tokenizer).
Evaluator::Result Evaluator::evaluate(RunWeights& runWeights) {
    constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
    const int evalB = m_config.evalInput.batchSize;
    const int T = m_T;
    const int64_t batches = this->batches();
    if (batches <= 0) return {kNaN, kNaN};
    double sum = 0.0;
    int64_t targetBytes = 0;
    const size_t microTokens = size_t(m_micro) * size_t(T);
    // MemoryX sharded: the forward pass reads every weight, so they are gathered here for the
    // evaluation, tensor by tensor (the weights only, a quarter of an AdamW MemoryX), and freed.
    std::vector<float> gathered;
    const float* weights = runWeights.allWeights(gathered);
    m_lastError.clear();
    const bool positions = m_documents || !m_positionIds.empty();
    for (int64_t i = 0; i < batches; ++i) {
        if (m_source) {
            auto read = m_source->validationBatch(
                i, evalB, {m_inputs.data(), m_targets.data(), m_positionIds.data()});
            Status s = read.ok() ? requireTrainableTargets(
                                       m_targets, "evaluation batch " + std::to_string(i + 1))
                                 : Status(read.error());
            if (!s.ok()) {
                m_lastError = s.error().message;
                return {kNaN, kNaN};
            }
        } else {
            m_data->validationBatch(i, evalB, T, m_inputs.data(), m_targets.data());
            if (m_documents)
                validationPositionIds(*m_data, *m_documents, i, evalB, T, m_positionIds);
        }
        for (const int32_t t : m_targets) targetBytes += m_tokenBytes[size_t(t)];
        // Equal micro-batches: the batch's mean loss is the mean of theirs.
        double batchSum = 0.0;
        for (int m = 0; m < evalB / m_micro; ++m) {
            m_gpt.setPositionIds(positions ? m_positionIds.data() + m * microTokens : nullptr);
            batchSum += m_gpt.forward(weights, m_inputs.data() + m * microTokens,
                                      m_targets.data() + m * microTokens, false, 0);
        }
        sum += batchSum / double(evalB / m_micro);
    }
    const double loss = sum / double(batches);
    const int64_t targets = batches * int64_t(evalB) * T;
    return {loss, targetBytes > 0
                      ? loss * (double(targets) / double(targetBytes)) / std::numbers::ln2
                      : kNaN};
}

}  // namespace ws::session
