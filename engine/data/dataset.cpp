// SPDX-License-Identifier: GPL-3.0-or-later
// Dataset: the window formulas of dataset.h, implemented literally.
#include "engine/data/dataset.h"

#include <fmt/format.h>

#include <cassert>
#include <cmath>
#include <limits>
#include <vector>

namespace ws::data {
namespace {

__extension__ typedef unsigned __int128 Uint128;  // exact (s*B + i) * T mod M

uint64_t mix64(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

size_t validationTokensFor(size_t n, double fraction) {
    if (fraction >= 1.0) return n;
    return std::min(n, size_t(std::floor(double(n) * fraction)));
}

}  // namespace

Dataset::Dataset(const TokenCache& cache, double validationFraction)
    : m_cache(cache),
      m_validationFraction(validationFraction),
      m_trainTokens(cache.size() - validationTokensFor(cache.size(), validationFraction)) {
    if (m_trainTokens == 0) {
        m_unigramEntropyNats = std::numeric_limits<double>::quiet_NaN();
        return;
    }
    std::vector<int64_t> counts(size_t(std::max(cache.vocabSize(), 1)), 0);
    std::vector<int32_t> block(size_t(1) << 16);
    for (size_t first = 0; first < m_trainTokens; first += block.size()) {
        const size_t n = std::min(block.size(), m_trainTokens - first);
        m_cache.copyTokens(first, n, block.data());
        for (size_t i = 0; i < n; ++i) ++counts[size_t(block[i])];
    }
    double entropy = 0.0;
    for (const int64_t c : counts) {
        if (c == 0) continue;
        const double p = double(c) / double(m_trainTokens);
        entropy -= p * std::log(p);
    }
    m_unigramEntropyNats = entropy;
}

Result<Dataset> Dataset::create(const TokenCache& cache, double validationFraction, int T) {
    if (!(validationFraction >= 0.0 && validationFraction <= 1.0)) {
        return Error{fmt::format("validation_fraction {} is outside [0, 1]", validationFraction)};
    }
    Dataset dataset(cache, validationFraction);
    if (Status s = dataset.check(T); !s.ok()) return s.error();
    return dataset;
}

Status Dataset::check(int T) const {
    if (T < 1) return Error{fmt::format("max_sequence_length {} must be at least 1", T)};
    const size_t n = m_cache.size();
    const size_t needed = size_t(T) + 1;
    if (m_validationFraction >= 1.0) {
        if (n < needed) {
            return Error{fmt::format(
                "the evaluation corpus has {} tokens but one window of max_sequence_length {} "
                "needs {}: add text to it or lower max_sequence_length",
                n, T, needed)};
        }
        return {};
    }
    if (m_trainTokens < needed) {
        return Error{fmt::format(
            "the training split has {} tokens ({} in the corpus, {} held out by "
            "validation_fraction {}) but max_sequence_length {} needs at least {}: lower "
            "max_sequence_length or validation_fraction, or add text",
            m_trainTokens, n, validationTokens(), m_validationFraction, T, needed)};
    }
    if (m_validationFraction > 0.0 && validationTokens() < needed) {
        return Error{fmt::format(
            "the validation split has {} tokens (validation_fraction {} of {}) but one window "
            "of max_sequence_length {} needs {}: raise validation_fraction, lower "
            "max_sequence_length, or add text",
            validationTokens(), m_validationFraction, n, T, needed)};
    }
    return {};
}

int64_t Dataset::trainWindowStart(int64_t step, int B, int T, int row, bool shuffle,
                                  uint64_t seed) const {
    assert(step >= 0 && B > 0 && T > 0 && row >= 0 && row < B);
    assert(m_trainTokens > size_t(T) && "call check(T) first");
    const uint64_t starts = m_trainTokens - size_t(T);  // M
    const uint64_t sample = uint64_t(step) * uint64_t(B) + uint64_t(row);
    if (shuffle) {
        return int64_t(mix64(seed + (sample + 1) * 0x9E3779B97F4A7C15ull) % starts);
    }
    return int64_t(uint64_t((Uint128(sample) * uint64_t(T)) % starts));
}

void Dataset::trainBatch(int64_t step, int B, int T, bool shuffle, uint64_t seed, int32_t* inputs,
                         int32_t* targets) const {
    for (int i = 0; i < B; ++i) {
        const auto a = size_t(trainWindowStart(step, B, T, i, shuffle, seed));
        m_cache.copyTokens(a, size_t(T), inputs + size_t(i) * size_t(T));
        m_cache.copyTokens(a + 1, size_t(T), targets + size_t(i) * size_t(T));
    }
}

int64_t Dataset::validationBatches(int B, int T) const {
    assert(B > 0 && T > 0);
    const size_t v = validationTokens();
    if (v < size_t(T) + 1) return 0;
    const auto windows = int64_t((v - 1) / size_t(T));
    return windows >= B ? windows / B : 1;
}

int64_t Dataset::validationWindowStart(int64_t index, int B, int T, int row) const {
    const auto windows = uint64_t((validationTokens() - 1) / size_t(T));
    const uint64_t k = (uint64_t(index) * uint64_t(B) + uint64_t(row)) % windows;
    return int64_t(m_trainTokens + size_t(k) * size_t(T));
}

void Dataset::validationBatch(int64_t index, int B, int T, int32_t* inputs,
                              int32_t* targets) const {
    assert(index >= 0 && validationBatches(B, T) > 0);
    for (int i = 0; i < B; ++i) {
        const auto start = size_t(validationWindowStart(index, B, T, i));
        m_cache.copyTokens(start, size_t(T), inputs + size_t(i) * size_t(T));
        m_cache.copyTokens(start + 1, size_t(T), targets + size_t(i) * size_t(T));
    }
}

double Dataset::unigramEntropyBits() const {
    return m_unigramEntropyNats / std::log(2.0);
}

}  // namespace ws::data
