// SPDX-License-Identifier: GPL-3.0-or-later
// Choosing the next token from logits: temperature (0 = greedy argmax), top-k, top-p (nucleus),
// and a seeded counter-based random stream, so a (seed, options, model, prompt) gives the same
// text on every run, thread count and platform with IEEE floats (no std::*_distribution).
//
// The distribution: p_i ∝ exp((logit_i - max) / temperature) over the `vocab` first ids; keep the
// k most likely (ties: smaller id first); then keep the smallest most-likely-first prefix whose
// probability reaches top_p (at least one token); renormalize and draw. Greedy (temperature 0)
// and top_k 1 both give the argmax (smallest id among equal maxima).
//
// Thread-safety: SamplingOptions and samplingDistribution() are pure; a TokenSampler is used by
// one thread at a time (it owns scratch buffers).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "engine/core/result.h"

namespace ws::sample {

struct SamplingOptions {
    double temperature = 0.8;  // 0: greedy (argmax); > 0 divides the logits
    int topK = 0;              // keep the k most likely tokens; 0: all
    double topP = 1.0;         // nucleus: keep the most likely tokens up to this mass; 1: all
    int maxTokens = 200;       // tokens to generate
    uint64_t seed = 0;         // the random stream's seed (unused when greedy)
    // Generation ends when one of these ids is sampled (a chat template's end-of-turn token,
    // e.g. <|im_end|>, <|eot_id|>, </s>); the stop token is not part of the result.
    std::vector<int32_t> stopTokens;
    // ... or when the text contains one of these (stop_matcher.h); the text ends before it.
    std::vector<std::string> stopStrings;

    // Fails naming the option and what is allowed (temperature >= 0 and finite, top_k >= 0,
    // top_p in (0, 1], max_tokens >= 1).
    Status validate() const;
    bool greedy() const { return temperature == 0.0 || topK == 1; }
};

// The distribution the options sample from, as (token, probability) pairs, most likely first
// (ties: smaller id first), probabilities summing to 1. Greedy options give one pair.
std::vector<std::pair<int32_t, double>> samplingDistribution(const float* logits, int vocab,
                                                             const SamplingOptions& options);

class TokenSampler {
public:
    explicit TokenSampler(const SamplingOptions& options);

    // The token for draw number `draw` (0, 1, ...) of this seed's stream, from logits[0, vocab).
    // Precondition: vocab >= 1 and options.validate() is ok. NaN logits count as -infinity.
    int32_t pick(const float* logits, int vocab, uint64_t draw);

private:
    SamplingOptions m_options;
    uint64_t m_key;
    std::vector<int32_t> m_order;  // candidate ids, most likely first
    std::vector<double> m_weights;
};

// argmax over logits[0, vocab): the smallest id among equal maxima.
int32_t argmax(const float* logits, int vocab);

}  // namespace ws::sample
