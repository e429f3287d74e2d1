// SPDX-License-Identifier: GPL-3.0-or-later
// A run's held-out loss (see evaluator.h).
#include "engine/session/evaluator.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>

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

Status Evaluator::readBatch(int64_t i) {
    const int B = m_config.evalInput.batchSize;
    if (m_source) {
        const auto read = m_source->validationBatch(
            i, B,
            {m_inputs.data(), m_targets.data(), positioned() ? m_positionIds.data() : nullptr});
        return read.ok() ? Status() : Status(read.error());
    }
    m_data->validationBatch(i, B, m_T, m_inputs.data(), m_targets.data());
    if (m_documents) validationPositionIds(*m_data, *m_documents, i, B, m_T, m_positionIds);
    return {};
}

// The loss is token-weighted over every batch's trained targets (>= 0): each forward's summed
// loss / D with D = G / (batches x micro-batches), G the trained targets of all batches, so the
// mean over batches of the mean over micro-batches is the total nats / G. Nothing masked: D is a
// micro-batch's tokens and the value is the mean of equal micro-batches' means, as before.
// Total nats / ln 2 / the bytes the trained targets decode to is loss x (G / bytes) / ln 2 (the
// ratio is exactly 1 for the byte tokenizer).
Evaluator::Result Evaluator::evaluate(RunWeights& runWeights) {
    constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
    const int evalB = m_config.evalInput.batchSize;
    const int T = m_T;
    const int64_t batches = this->batches();
    if (batches <= 0) return {kNaN, kNaN};
    const int micros = evalB / m_micro;
    // The trained targets of every batch, and the bytes they decode to, before any forward.
    m_lastError.clear();
    int64_t trained = 0, targetBytes = 0;
    for (int64_t i = 0; i < batches; ++i) {
        if (Status st = readBatch(i); !st.ok()) {
            m_lastError = st.error().message;
            return {kNaN, kNaN};
        }
        for (const int32_t t : m_targets) {
            if (t < 0) continue;
            ++trained;
            targetBytes += m_tokenBytes[size_t(t)];
        }
    }
    if (trained == 0) return {kNaN, kNaN};
    m_gpt.setLossDenominator(double(trained) / double(batches * micros));
    double sum = 0.0;
    const size_t microTokens = size_t(m_micro) * size_t(T);
    // MemoryX sharded: the forward pass reads every weight, so they are gathered here for the
    // evaluation, tensor by tensor (the weights only, a quarter of an AdamW MemoryX), and freed.
    std::vector<float> gathered;
    const float* weights = runWeights.allWeights(gathered);
    for (int64_t i = 0; i < batches; ++i) {
        if (Status st = readBatch(i); !st.ok()) {  // read once already: cannot fail now
            m_lastError = st.error().message;
            return {kNaN, kNaN};
        }
        double batchSum = 0.0;
        for (int m = 0; m < micros; ++m) {
            m_gpt.setPositionIds(positioned() ? m_positionIds.data() + m * microTokens : nullptr);
            batchSum += m_gpt.forward(weights, m_inputs.data() + m * microTokens,
                                      m_targets.data() + m * microTokens, false, 0);
        }
        sum += batchSum / double(micros);
    }
    const double loss = sum / double(batches);
    return {
        loss,
        targetBytes > 0 ? loss * (double(trained) / double(targetBytes)) / std::numbers::ln2 : kNaN,
        trained};
}

}  // namespace ws::session
