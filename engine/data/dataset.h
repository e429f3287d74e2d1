// SPDX-License-Identifier: GPL-3.0-or-later
// Dataset: training and validation windows over a TokenCache, with an exact, documented formula
// so that runs are reproducible and other implementations can produce the same batches.
// (Includes corpus.h and token_cache.h: this header is the data module's front door.)
//
// Notation: N tokens in the cache, f = validationFraction, B sequences of T tokens per batch.
// Split:      V = floor(N * f) validation tokens at the END of the stream; the first
//             trainTokens = N - V tokens are the training split.
// Training:   M = trainTokens - T window starts keep every target inside the split.
//             Row i of step s starts at
//               shuffle = false:  a = ((s * B + i) * T) mod M
//               shuffle = true:   a = mix64(seed + (s * B + i + 1) * 0x9E3779B97F4A7C15) mod M
//             where s * B + i is computed in 64-bit arithmetic, the product with T is reduced
//             mod M exactly (no overflow), and mix64 is SplitMix64's finaliser
//               z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9; z = (z ^ (z >> 27)) * 0x94D049BB133111EB;
//               z = z ^ (z >> 31)   (all mod 2^64).
//             So consecutive steps read consecutive text until the end of the split, then wrap
//             around by taking the start mod M (the phase shifts, windows stay in range).
//             Shuffled starts depend only on (seed, s, B, i): reproducible and independent of
//             how many threads or systems fetch the rows.
//             inputs[i][t] = train[a + t], targets[i][t] = train[a + t + 1], t in [0, T).
// Validation: W = floor((V - 1) / T) non-overlapping windows; window k starts at token
//             trainTokens + k * T (inputs k*T.., targets shifted by one). validationBatches(B, T)
//             is floor(W / B) when W >= B, else 1; row i of batch j uses window (j * B + i) mod W
//             (only a split smaller than one batch repeats windows).
//
// Thread-safety: immutable; every const method may run concurrently. Copies share the cache's
// mapping, so a Dataset stays valid after the TokenCache it came from is destroyed.
#pragma once

#include <cstdint>

#include "engine/core/result.h"
#include "engine/data/corpus.h"
#include "engine/data/token_cache.h"

namespace ws::data {

class Dataset {
public:
    // Checks that the splits fit windows of T tokens (see check()) and builds the dataset.
    // validationFraction in [0, 1]: 0 means no validation split, 1 means the whole cache is
    // validation data (a separate evaluation corpus).
    static Result<Dataset> create(const TokenCache& cache, double validationFraction, int T);
    // Unchecked: call check(T) before drawing batches of length T.
    Dataset(const TokenCache& cache, double validationFraction);

    // Errors name the numbers and the fix: a training split shorter than T + 1 tokens (unless
    // validationFraction is 1), a validation split shorter than T + 1 (when it is above 0).
    Status check(int T) const;

    // Start (index into the training split) of row `row` of step `step`; see the formula above.
    int64_t trainWindowStart(int64_t step, int B, int T, int row, bool shuffle,
                             uint64_t seed) const;
    // inputs, targets: (B, T) row-major int32 token ids.
    void trainBatch(int64_t step, int B, int T, bool shuffle, uint64_t seed, int32_t* inputs,
                    int32_t* targets) const;

    int64_t validationBatches(int B, int T) const;  // 0 when there is no validation window
    // Start (index into the token cache) of row `row` of validation batch `index`.
    int64_t validationWindowStart(int64_t index, int B, int T, int row) const;
    // inputs, targets: (B, T); index in [0, validationBatches(B, T)).
    void validationBatch(int64_t index, int B, int T, int32_t* inputs, int32_t* targets) const;

    size_t trainTokens() const { return m_trainTokens; }
    size_t validationTokens() const { return m_cache.size() - m_trainTokens; }
    int vocabSize() const { return m_cache.vocabSize(); }

    // Entropy of the training split's unigram distribution: the loss a model that ignores
    // context would reach. NaN when there is no training split.
    double unigramEntropyNats() const { return m_unigramEntropyNats; }
    double unigramEntropyBits() const;

private:
    TokenCache m_cache;
    double m_validationFraction = 0.0;
    size_t m_trainTokens = 0;
    double m_unigramEntropyNats = 0.0;
};

}  // namespace ws::data
