// SPDX-License-Identifier: GPL-3.0-or-later
// Token sampling (see sampler.h). The candidates are ordered only as far as needed: a partial
// sort for top-k, a full sort for top-p, none for plain temperature sampling (ids in order).
#include "engine/sample/sampler.h"

#include <fmt/format.h>

#include <algorithm>
#include <cassert>
#include <cmath>
#include <limits>
#include <numeric>

#include "engine/model/random.h"

namespace ws::sample {

namespace {

float finiteOrLowest(float x) {
    return std::isnan(x) ? -std::numeric_limits<float>::infinity() : x;
}

// Fills order with the candidate ids (most likely first when ordering is needed) and weights with
// their unnormalized probabilities, after temperature, top-k and top-p.
void buildCandidates(const float* logits, int vocab, const SamplingOptions& o,
                     std::vector<int32_t>& order, std::vector<double>& weights) {
    order.resize(size_t(vocab));
    std::iota(order.begin(), order.end(), 0);
    auto moreLikely = [logits](int32_t a, int32_t b) {
        const float la = finiteOrLowest(logits[a]), lb = finiteOrLowest(logits[b]);
        return la > lb || (la == lb && a < b);
    };
    const int k = o.topK > 0 ? std::min(o.topK, vocab) : vocab;
    const bool needOrder = k < vocab || o.topP < 1.0;
    if (k < vocab) {
        std::partial_sort(order.begin(), order.begin() + k, order.end(), moreLikely);
        order.resize(size_t(k));
    } else if (needOrder) {
        std::sort(order.begin(), order.end(), moreLikely);
    }
    float maxLogit = -std::numeric_limits<float>::infinity();
    for (int32_t id : order) maxLogit = std::max(maxLogit, finiteOrLowest(logits[id]));
    weights.resize(order.size());
    double total = 0.0;
    for (size_t i = 0; i < order.size(); ++i) {
        const float l = finiteOrLowest(logits[order[i]]);
        // All -inf (or an empty row): fall back to uniform rather than dividing by zero.
        weights[i] = std::isinf(maxLogit) ? 1.0 : std::exp((double(l) - maxLogit) / o.temperature);
        total += weights[i];
    }
    if (o.topP < 1.0) {
        const double target = o.topP * total;
        double sum = 0.0;
        size_t keep = 0;
        while (keep < weights.size()) {
            sum += weights[keep++];
            if (sum >= target) break;
        }
        order.resize(keep);
        weights.resize(keep);
    }
}

}  // namespace

Status SamplingOptions::validate() const {
    if (!std::isfinite(temperature) || temperature < 0.0) {
        return Error{
            fmt::format("temperature {} is not allowed: use 0 (greedy) or a positive "
                        "number such as 0.8",
                        temperature)};
    }
    if (topK < 0) return Error{fmt::format("top_k {} is negative: use 0 (off) or k >= 1", topK)};
    if (!(topP > 0.0 && topP <= 1.0)) {
        return Error{fmt::format("top_p {} is outside (0, 1]: use 1 (off) or e.g. 0.9", topP)};
    }
    if (maxTokens < 1) {
        return Error{
            fmt::format("max_tokens {} is not allowed: generate at least 1 token", maxTokens)};
    }
    for (const int32_t id : stopTokens)
        if (id < 0) return Error{fmt::format("stop token {} is not a token id (ids are >= 0)", id)};
    return Status::success();
}

int32_t argmax(const float* logits, int vocab) {
    int32_t best = 0;
    float bestValue = finiteOrLowest(logits[0]);
    for (int32_t i = 1; i < vocab; ++i) {
        const float v = finiteOrLowest(logits[i]);
        if (v > bestValue) {
            bestValue = v;
            best = i;
        }
    }
    return best;
}

std::vector<std::pair<int32_t, double>> samplingDistribution(const float* logits, int vocab,
                                                             const SamplingOptions& options) {
    if (options.greedy()) return {{argmax(logits, vocab), 1.0}};
    std::vector<int32_t> order;
    std::vector<double> weights;
    buildCandidates(logits, vocab, options, order, weights);
    const double total = std::accumulate(weights.begin(), weights.end(), 0.0);
    std::vector<std::pair<int32_t, double>> out;
    out.reserve(order.size());
    for (size_t i = 0; i < order.size(); ++i) out.emplace_back(order[i], weights[i] / total);
    std::stable_sort(out.begin(), out.end(), [](const auto& a, const auto& b) {
        return a.second > b.second || (a.second == b.second && a.first < b.first);
    });
    return out;
}

TokenSampler::TokenSampler(const SamplingOptions& options)
    : m_options(options), m_key(model::rng::deriveKey(options.seed, 0x5A4D504Cull)) {
    assert(options.validate().ok());
}

int32_t TokenSampler::pick(const float* logits, int vocab, uint64_t draw) {
    assert(vocab >= 1);
    if (m_options.greedy()) return argmax(logits, vocab);
    buildCandidates(logits, vocab, m_options, m_order, m_weights);
    const double total = std::accumulate(m_weights.begin(), m_weights.end(), 0.0);
    const double u = model::rng::uniform(m_key, draw) * total;
    double sum = 0.0;
    for (size_t i = 0; i < m_order.size(); ++i) {
        sum += m_weights[i];
        if (u < sum) return m_order[i];
    }
    // u rounded up to the total: the last candidate that can be drawn at all.
    size_t last = m_order.size() - 1;
    while (last > 0 && m_weights[last] <= 0.0) --last;
    return m_order[last];
}

}  // namespace ws::sample
