// SPDX-License-Identifier: GPL-3.0-or-later
// Variable sequence length in a session (vsl.h).
#include "engine/session/vsl.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace ws::session {

int shortSegmentAt(const config::InputConfig& input, int64_t step) {
    return input.shortSequenceLength > 0 && step < input.shortSequenceSteps
               ? input.shortSequenceLength
               : 0;
}

bool packsSequences(const config::InputConfig& input) {
    return input.useVsl || (input.shortSequenceLength > 0 && input.shortSequenceSteps > 0);
}

Result<data::DocumentIndex> documentIndexFor(const data::CorpusDocuments& corpus,
                                             const data::TokenCache& cache,
                                             const std::vector<int32_t>& tokenBytes,
                                             const std::string& key, const std::string& dataKey) {
    const std::string& data = dataKey.empty() ? key : dataKey;
    data::DocumentIndex index =
        data::DocumentIndex::fromByteOffsets(cache, tokenBytes, corpus.documentStarts);
    if (index.documents() < 2) {
        return Error{fmt::format(
            "{}.use_vsl: the corpus is a single document ({} file(s) in {}.data_dir, {} with "
            "text), so there are no document boundaries to pack at: each file is one document, "
            "so list two or more text files (or a folder of them) in {}.data_dir, or set "
            "{}.use_vsl: false",
            key, corpus.documentStarts.size(), data, index.documents(), data, key)};
    }
    return index;
}

bool trainPositionIds(const data::Dataset& dataset, const data::DocumentIndex& documents,
                      const config::InputConfig& input, int64_t step, int B, int T,
                      std::vector<int32_t>& out) {
    const int segment = shortSegmentAt(input, step);
    if (!input.useVsl && segment == 0) return false;
    out.resize(size_t(B) * size_t(T));
    static const data::DocumentIndex kOneDocument;
    const data::DocumentIndex& docs = input.useVsl ? documents : kOneDocument;
    const auto seed = static_cast<uint64_t>(input.shuffleSeed);
    for (int i = 0; i < B; ++i) {
        const int64_t first = dataset.trainWindowStart(step, B, T, i, input.shuffle, seed);
        docs.positionIds(first, T, segment, out.data() + size_t(i) * size_t(T));
    }
    return true;
}

void validationPositionIds(const data::Dataset& dataset, const data::DocumentIndex& documents,
                           int64_t index, int B, int T, std::vector<int32_t>& out) {
    out.resize(size_t(B) * size_t(T));
    for (int i = 0; i < B; ++i) {
        documents.positionIds(dataset.validationWindowStart(index, B, T, i), T, 0,
                              out.data() + size_t(i) * size_t(T));
    }
}

EmulatedSteps::EmulatedSteps(std::shared_ptr<const wafer::StepPrediction> full, int T,
                             Predict predict)
    : m_T(T), m_predict(std::move(predict)) {
    m_clocks[T] = std::make_unique<wafer::SpanClock>(std::move(full));
    m_current = m_clocks[T].get();
}

Status EmulatedSteps::beginStep(int64_t step, double attentionLength) {
    const int quantum = std::max(1, m_T / 32);
    const int length = std::clamp(int(std::lround(attentionLength / quantum)) * quantum, 1, m_T);
    auto it = m_clocks.find(length);
    if (it == m_clocks.end()) {
        auto prediction = m_predict(length);
        if (!prediction.ok()) return prediction.error();
        it = m_clocks.emplace(length, std::make_unique<wafer::SpanClock>(*prediction)).first;
    }
    m_current = it->second.get();
    m_start = m_elapsed;
    m_elapsed += m_current->prediction()->stepS;
    m_lastStep = step;
    return {};
}

bool EmulatedSteps::attach(streaming::Span& span) const {
    if (!m_current->attach(span)) return false;
    const double shift = m_start - m_current->stepStart(span.step);
    span.emuStart += shift;
    span.emuEnd += shift;
    return true;
}

const std::shared_ptr<const wafer::StepPrediction>& EmulatedSteps::prediction() const {
    return m_current->prediction();
}

}  // namespace ws::session
