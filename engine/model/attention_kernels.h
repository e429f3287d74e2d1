// SPDX-License-Identifier: GPL-3.0-or-later
// The pieces the attention kernels share (internal to model/): attention.cpp's dense causal
// attention and packed_sequences.cpp's document-limited one take the very same steps (row blocks
// of kRowBlock queries, the dropout mask indexed by the absolute (query, key) pair, probabilities
// rounded to bf16 in bf16 mode, the softmax backward per row), so a one-document packed row
// computes the dense row's bits (tests/engine/model/packed_sequences_test.cpp checks it). One copy
// here keeps them from drifting apart. The products go through precisionGemm (precision_gemm.h).
//
// Thread-safety: pure functions; DropoutMask is immutable after construction.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <utility>
#include <vector>

#include "engine/model/attention_shape.h"
#include "engine/model/ops.h"
#include "engine/model/random.h"
#include "engine/tensor/bf16.h"

namespace ws::model::ops::attention {

// Query rows per block: a block multiplies only against the keys it can see, and its scores live
// in a per-thread (kRowBlock, T) scratch.
inline constexpr int kRowBlock = 64;

// The work of one attention call, for tensor::threadsForWork.
inline int64_t work(int B, int T, int C) {
    return int64_t{B} * T * T * C;
}

// Where query head h's slices start inside a qkv row (attention_shape.h): its q, and the k and v
// of its KV head h / (NH/KV). With KV == NH these are h·hs, C + h·hs and 2C + h·hs, GPT-2's.
struct HeadColumns {
    size_t q, k, v;
};
inline HeadColumns headColumns(const AttentionShape& s, int h) {
    const size_t kv = size_t(h / s.groupSize()) * size_t(s.headDim);
    return {size_t(h) * size_t(s.headDim), size_t(s.qWidth()) + kv,
            size_t(s.qWidth()) + size_t(s.kvWidth()) + kv};
}

// ALiBi on one row of scores: row[j] += slope · (firstKey + j - query) for j in [begin, end), where
// firstKey is the absolute key index of row[0]. The dense and the packed kernels call it with the
// same absolute indices, so a one-document packed row gets the dense row's bits.
template <typename Real>
void addAlibiRow(Real* row, Real slope, int firstKey, int query, int begin, int end) {
#pragma omp simd
    for (int j = begin; j < end; ++j) row[j] += slope * Real(firstKey + j - query);
}

// Dropout of attention probabilities with rate p: the mask of element `index` comes from
// rng::keep(key, index), so the backward recomputes the forward's mask without storing it.
struct DropoutMask {
    bool active;
    uint32_t threshold;
    double scale;
    uint64_t key;
    explicit DropoutMask(double p, uint64_t k)
        : active(p > 0.0), threshold(rng::dropThreshold(p)), scale(dropoutScale(p)), key(k) {}
    // dst[j] = src[j] * mask(base + j) for j < n (dst may be src).
    template <typename Real>
    void apply(Real* dst, const Real* src, int n, uint64_t base) const {
        const Real s = Real(scale);
        for (int j = 0; j < n; ++j) {
            dst[j] = rng::keep(key, base + uint64_t(j), threshold) ? src[j] * s : Real(0);
        }
    }
};

// bf16 mode: the probabilities the backward uses are rounded to bf16 (gpt.h), rows x cols of
// them at row stride ld. A no-op otherwise, and always for double.
template <typename Real>
void roundProbabilities(bool bf16, Real* P, int rows, int cols, int ld) {
    if constexpr (std::is_same_v<Real, float>) {
        if (!bf16) return;
        for (int i = 0; i < rows; ++i) {
            Real* row = P + size_t(i) * ld;
            tensor::roundToBf16Span(row, row, size_t(cols));
        }
    } else {
        (void)bf16, (void)P, (void)rows, (void)cols, (void)ld;
    }
}

// Softmax backward of one row whose keys are [start, len) of [0, width): d = p ∘ (d - Σ p ∘ d)
// over the keys, zero outside them. p is the row's probabilities, d its gradient (in place).
template <typename Real>
void softmaxBackwardRow(const Real* p, Real* d, int start, int len, int width) {
    Real dot = 0;
#pragma omp simd reduction(+ : dot)
    for (int j = start; j < len; ++j) dot += p[j] * d[j];
#pragma omp simd
    for (int j = start; j < len; ++j) d[j] = p[j] * (d[j] - dot);
    std::fill(d, d + start, Real(0));
    std::fill(d + len, d + width, Real(0));
}

// One thread's scratch for the backward: a row block's recomputed probabilities, their gradient,
// the dropped probabilities (with attention dropout only), and the rows' maxima and sums.
template <typename Real>
struct BackwardScratch {
    std::vector<Real> probs, dS, dropped, maxes, sums;  // (rows, T) x 3, (rows) x 2
    BackwardScratch(int T, bool dropout)
        : probs(size_t(kRowBlock) * T),
          dS(size_t(kRowBlock) * T),
          dropped(dropout ? size_t(kRowBlock) * T : 0),
          maxes(kRowBlock),
          sums(kRowBlock) {}
};

// The backward works on one KV group at a time (batch row b, KV head kvHead): its query heads all
// add into the group's dK and dV. Returns where they start inside the batch row's dqkv (T rows of
// stride ld), zeroed over the group's hs columns.
template <typename Real>
std::pair<Real*, Real*> zeroGroupKeyValueGrads(Real* drow0, const AttentionShape& shape, int kvHead,
                                               int T) {
    const HeadColumns group = headColumns(shape, kvHead * shape.groupSize());
    const int ld = shape.qkvWidth(), hs = shape.headDim;
    Real* dk = drow0 + group.k;  // (T, hs), stride ld
    Real* dv = drow0 + group.v;
    for (int t = 0; t < T; ++t) {
        std::fill_n(dk + size_t(t) * ld, hs, Real(0));
        std::fill_n(dv + size_t(t) * ld, hs, Real(0));
    }
    return {dk, dv};
}

// For the debug checks that a recomputed softmax reproduced the forward's statistics.
template <typename Real>
bool sameBits(Real a, Real b) {
    return std::memcmp(&a, &b, sizeof(Real)) == 0;
}

}  // namespace ws::model::ops::attention
