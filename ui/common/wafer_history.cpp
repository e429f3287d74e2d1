// SPDX-License-Identifier: GPL-3.0-or-later
// WaferHistory: see wafer_history.h.
#include "ui/common/wafer_history.h"

#include <algorithm>
#include <set>

#include "engine/wafer/narration.h"

namespace ws::ui {

std::string spanUnitName(const RecordedSpan& span, int numBlocks) {
    const std::string layer = wafer::layerName(span.layer, numBlocks);
    return span.expert() >= 0 ? layer + ".expert." + std::to_string(span.expert()) : layer;
}

void WaferHistory::clear() {
    m_steps.clear();
    m_spanCount = 0;
    m_dropped = 0;
    m_latestPrediction.reset();
}

bool stepComplete(const StepRecord& record, int numBlocks) {
    const auto isUpdate = [](streaming::SpanKind k) { return k == streaming::SpanKind::Update; };
    if (!record.prediction) {
        const auto done = std::count_if(record.spans.begin(), record.spans.end(),
                                        [&](const RecordedSpan& s) { return isUpdate(s.kind()); });
        return done >= std::ptrdiff_t(numBlocks + 2);
    }
    // Only the updates the emulated machine does count (a LoRA run updates no frozen layer).
    std::set<int> planned;
    for (const auto& t : record.prediction->spans)
        if (isUpdate(t.kind)) planned.insert(t.layer);
    const auto done = std::count_if(record.spans.begin(), record.spans.end(), [&](const auto& s) {
        return isUpdate(s.kind()) && planned.count(s.layer) > 0;
    });
    return done >= std::ptrdiff_t(planned.size());
}

const StepRecord* WaferHistory::find(int64_t step) const {
    auto it = std::lower_bound(m_steps.begin(), m_steps.end(), step,
                               [](const StepRecord& r, int64_t s) { return r.step < s; });
    return it != m_steps.end() && it->step == step ? &*it : nullptr;
}

StepRecord& WaferHistory::recordFor(int64_t step) {
    // Steps arrive in order; the newest is almost always the one asked for.
    if (!m_steps.empty() && m_steps.back().step == step) return m_steps.back();
    if (m_steps.empty() || m_steps.back().step < step) {
        StepRecord record;
        record.step = step;
        m_steps.push_back(std::move(record));
        return m_steps.back();
    }
    auto it = std::lower_bound(m_steps.begin(), m_steps.end(), step,
                               [](const StepRecord& r, int64_t s) { return r.step < s; });
    if (it != m_steps.end() && it->step == step) return *it;
    StepRecord record;
    record.step = step;
    return *m_steps.insert(it, std::move(record));
}

void WaferHistory::addEmulatedStep(const session::EmulatedStep& step) {
    StepRecord& record = recordFor(step.step);
    record.emulatedStart = step.emulatedStart;
    record.prediction = step.prediction;
    if (step.prediction) m_latestPrediction = step.prediction;
    enforceCap();
}

void WaferHistory::addSpans(const std::vector<streaming::Span>& spans) {
    StepRecord* record = nullptr;
    for (const auto& span : spans) {
        if (!record || record->step != span.step) {
            record = &recordFor(span.step);
            if (record->spans.empty()) record->realOrigin = span.start;
        }
        RecordedSpan r;
        if (span.emuStart >= 0 && record->emulatedStart >= 0) {
            r.emuStart = float(std::max(0.0, span.emuStart - record->emulatedStart));
            r.emuEnd = float(std::max(0.0, span.emuEnd - record->emulatedStart));
        }
        r.realStart = float(span.start - record->realOrigin);
        r.realEnd = float(span.end - record->realOrigin);
        r.bytes = span.bytes;
        r.micro = int16_t(span.micro);
        r.layer = int16_t(span.layer);
        r.system = int16_t(span.system);
        r.kindCode = uint8_t(span.kind);
        r.backwardPass = span.backwardPass;
        r.setExpert(span.expert);
        record->spans.push_back(r);
        ++m_spanCount;
    }
    enforceCap();
}

void WaferHistory::addExpertTokens(int64_t step, std::vector<std::vector<int64_t>> tokens) {
    if (step < 0 || (m_dropped > 0 && step < firstStep())) return;
    recordFor(step).expertTokens = std::move(tokens);
}

void WaferHistory::addMetrics(const session::StepMetrics& metrics) {
    const int64_t step = metrics.step - 1;
    if (step < 0 || (m_dropped > 0 && step < firstStep())) return;
    StepRecord& record = recordFor(step);
    record.gradNorm = metrics.gradNorm;
    record.layerGradNorms = metrics.layerGradNorms;
    if (!metrics.expertTokens.empty()) record.expertTokens = metrics.expertTokens;
    enforceCap();
}

void WaferHistory::enforceCap() {
    // Never drop the newest step: it is the one being drawn live.
    while (m_steps.size() > 1 && (m_steps.size() > kMaxSteps || m_spanCount > kMaxSpans)) {
        m_spanCount -= m_steps.front().spans.size();
        m_steps.pop_front();
        ++m_dropped;
    }
}

}  // namespace ws::ui
