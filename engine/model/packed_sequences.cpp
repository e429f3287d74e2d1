// SPDX-License-Identifier: GPL-3.0-or-later
// Packed sequences (packed_sequences.h): the embedding with restarting positions and attention
// limited to each query's document. The attention follows attention.cpp step for step (row
// blocks of kRowBlock queries, per-thread (rows, T) scratch, statistics kept, probabilities
// recomputed in the backward) with one change: a block's key range starts at its first row's
// document start `lo` instead of 0, and a row whose document starts after `lo` has zeros before
// its start. The softmax runs through kernels::causalSoftmaxRows one row at a time, on the row's
// own span, so a one-document row computes what the dense kernel computes.
#include "engine/model/packed_sequences.h"

#include <fmt/format.h>

#include <algorithm>
#include <cassert>
#include <vector>

#include "engine/model/attention_kernels.h"
#include "engine/model/element_kernels.h"
#include "engine/model/ops.h"
#include "engine/model/precision_gemm.h"
#include "engine/tensor/matmul.h"
#include "engine/tensor/threads.h"

namespace ws::model::ops {

using attention::addAlibiRow;
using attention::BackwardScratch;
using attention::DropoutMask;
using attention::HeadColumns;
using attention::headColumns;
using attention::kRowBlock;
using attention::roundProbabilities;
using attention::softmaxBackwardRow;
using attention::zeroGroupKeyValueGrads;
using tensor::Trans;

namespace {

// The block of query rows [r0, r0 + rows) of one sequence: keys [lo, hi) cover every row's
// document (starts never decrease along a row of position_ids).
struct Block {
    int r0, rows, lo, hi;
    int width() const { return hi - lo; }
    // Row i's first key, relative to lo.
    int start(const int32_t* pos, int i) const { return r0 + i - pos[r0 + i] - lo; }
};

Block blockAt(const int32_t* pos, int r0, int T) {
    const int rows = std::min(kRowBlock, T - r0);
    return {r0, rows, r0 - pos[r0], r0 + rows};
}

// Row i of the block's scores (row stride T, keys lo..hi) becomes the softmax over its document's
// keys up to itself, zeros elsewhere in [0, width).
template <typename Real>
void softmaxBlock(Real* P, const Block& blk, const int32_t* pos, int T, Real* maxes, Real* sums,
                  bool maxKnown) {
    const int width = blk.width();
    for (int i = 0; i < blk.rows; ++i) {
        Real* row = P + size_t(i) * T;
        const int s = blk.start(pos, i);
        const int len = blk.r0 + i - blk.lo + 1;  // keys lo .. r0 + i
        kernels::causalSoftmaxRows(row + s, 1, len - s, width - s, maxes + i, sums + i, maxKnown);
        std::fill(row, row + s, Real(0));
    }
}

// ALiBi on the block's scores: row i's keys of its own document, absolute indices as in the dense
// kernel (attention::addAlibiRow), so a one-document row gets the dense bits.
template <typename Real>
void addAlibiBlock(Real* P, const Block& blk, const int32_t* pos, int T, Real slope) {
    for (int i = 0; i < blk.rows; ++i) {
        addAlibiRow(P + size_t(i) * T, slope, blk.lo, blk.r0 + i, blk.start(pos, i),
                    blk.r0 + i - blk.lo + 1);
    }
}

}  // namespace

Status checkPositionIds(const int32_t* positionIds, int B, int T) {
    for (int b = 0; b < B; ++b) {
        const int32_t* p = positionIds + size_t(b) * T;
        for (int t = 0; t < T; ++t) {
            const int32_t want = t == 0 ? 0 : p[t - 1] + 1;
            if (p[t] != 0 && p[t] != want) {
                return Error{fmt::format(
                    "position_ids row {} position {} is {}: each entry must be 0 (a document "
                    "starts) or the previous entry + 1 ({})",
                    b, t, p[t], want)};
            }
        }
    }
    return {};
}

template <typename Real>
void packedEmbeddingForward(Real* out, const int32_t* tokens, const int32_t* positionIds,
                            const Real* wte, const Real* wpe, int B, int T, int C) {
    const int N = B * T;
    tensor::parallelFor(N, tensor::threadsForWork(int64_t{N} * C), [&](int64_t begin, int64_t end) {
        for (int n = int(begin); n < int(end); ++n) {
            const Real* tok = wte + size_t(tokens[n]) * C;
            const Real* pos = wpe + size_t(positionIds[n]) * C;
            Real* y = out + size_t(n) * C;
#pragma omp simd
            for (int c = 0; c < C; ++c) y[c] = tok[c] + pos[c];
        }
    });
}

template <typename Real>
void packedPositionBackward(Real* dwpe, const Real* dout, const int32_t* positionIds, int B, int T,
                            int C) {
    // Threads own column blocks and visit every row in order, so repeated positions add up in
    // the same order whatever the thread count.
    constexpr int kColumns = 64;
    const int N = B * T, blocks = (C + kColumns - 1) / kColumns;
    tensor::parallelFor(blocks, tensor::threadsForWork(int64_t{N} * C),
                        [&](int64_t begin, int64_t end) {
                            for (int blk = int(begin); blk < int(end); ++blk) {
                                const int c0 = blk * kColumns, w = std::min(kColumns, C - c0);
                                for (int n = 0; n < N; ++n) {
                                    Real* dst = dwpe + size_t(positionIds[n]) * C + c0;
                                    const Real* src = dout + size_t(n) * C + c0;
#pragma omp simd
                                    for (int j = 0; j < w; ++j) dst[j] += src[j];
                                }
                            }
                        });
}

template <typename Real>
void packedAttentionForward(Real* out, Real* rowMax, Real* rowSum, const Real* qkv,
                            const int32_t* positionIds, int B, int T, const AttentionShape& shape,
                            Real scale, double dropout, uint64_t key, bool bf16,
                            const Real* alibiSlopes) {
    assert(shape.valid());
    const int NH = shape.heads, hs = shape.headDim, C = shape.qWidth(), ld = shape.qkvWidth();
    const int pairs = B * NH;
    const DropoutMask mask(dropout, key);
    const int threads = tensor::threadsForWork(attention::work(B, T, C));
    tensor::parallelFor(pairs, threads, [&](int64_t begin, int64_t end) {
        std::vector<Real> probs(size_t(kRowBlock) * T);                      // (rows, T)
        std::vector<Real> dropped(mask.active ? size_t(kRowBlock) * T : 0);  // (rows, T)
        for (int bh = int(begin); bh < int(end); ++bh) {
            const int b = bh / NH, h = bh % NH;
            const int32_t* pos = positionIds + size_t(b) * T;
            const HeadColumns col = headColumns(shape, h);
            const Real* row0 = qkv + size_t(b) * T * ld;
            const Real* q = row0 + col.q;  // (T, hs), stride ld
            const Real* k = row0 + col.k;
            const Real* v = row0 + col.v;
            Real* o = out + size_t(b) * T * C + size_t(h) * hs;  // (T, hs), stride C
            Real* maxes = rowMax + size_t(bh) * T;
            Real* sums = rowSum + size_t(bh) * T;
            for (int r0 = 0; r0 < T; r0 += kRowBlock) {
                const Block blk = blockAt(pos, r0, T);
                const int rows = blk.rows, width = blk.width();
                Real* Pb = probs.data();
                precisionGemm<Real>(bf16, Trans::No, Trans::Yes, rows, width, hs, scale,
                                    q + size_t(r0) * ld, ld, k + size_t(blk.lo) * ld, ld, Real(0),
                                    Pb, T);
                if (alibiSlopes) addAlibiBlock(Pb, blk, pos, T, alibiSlopes[h]);
                softmaxBlock(Pb, blk, pos, T, maxes + r0, sums + r0, false);
                const Real* weights = Pb;
                if (mask.active) {  // indexed by the absolute (query, key) pair, as attention.cpp
                    for (int i = 0; i < rows; ++i) {
                        mask.apply(dropped.data() + size_t(i) * T, Pb + size_t(i) * T, width,
                                   (uint64_t(bh) * T + uint64_t(r0 + i)) * T + uint64_t(blk.lo));
                    }
                    weights = dropped.data();
                }
                precisionGemm<Real>(bf16, Trans::No, Trans::No, rows, hs, width, Real(1), weights,
                                    T, v + size_t(blk.lo) * ld, ld, Real(0), o + size_t(r0) * C, C);
            }
        }
    });
}

template <typename Real>
void packedAttentionBackward(Real* dqkv, const Real* dout, const Real* qkv, const Real* rowMax,
                             const Real* rowSum, const int32_t* positionIds, int B, int T,
                             const AttentionShape& shape, Real scale, double dropout, uint64_t key,
                             bool bf16, const Real* alibiSlopes) {
    (void)rowSum;  // read by the debug check only
    assert(shape.valid());
    const int NH = shape.heads, hs = shape.headDim, C = shape.qWidth(), ld = shape.qkvWidth();
    const int KV = shape.kvHeads, G = shape.groupSize(), groups = B * KV;
    const DropoutMask mask(dropout, key);
    const int threads = tensor::threadsForWork(attention::work(B, T, C));
    tensor::parallelFor(groups, threads, [&](int64_t begin, int64_t end) {
        BackwardScratch<Real> scratch(T, mask.active);
        auto& [probs, dS, dropped, maxes, sums] = scratch;
        for (int bg = int(begin); bg < int(end); ++bg) {
            const int b = bg / KV, kvHead = bg % KV;
            const int32_t* pos = positionIds + size_t(b) * T;
            const Real* row0 = qkv + size_t(b) * T * ld;
            Real* drow0 = dqkv + size_t(b) * T * ld;
            // dk, dv (T, hs), stride ld: the group's heads accumulate into them over row blocks.
            const auto [dk, dv] = zeroGroupKeyValueGrads(drow0, shape, kvHead, T);
            for (int h = kvHead * G; h < (kvHead + 1) * G; ++h) {
                const int bh = b * NH + h;
                const HeadColumns col = headColumns(shape, h);
                const Real* q = row0 + col.q;
                const Real* k = row0 + col.k;
                const Real* v = row0 + col.v;
                const Real* dO = dout + size_t(b) * T * C + size_t(h) * hs;  // (T, hs), stride C
                Real* dq = drow0 + col.q;                                    // (T, hs), stride ld
                for (int r0 = 0; r0 < T; r0 += kRowBlock) {
                    const Block blk = blockAt(pos, r0, T);
                    const int rows = blk.rows, width = blk.width(), lo = blk.lo;
                    Real* Pb = probs.data();
                    precisionGemm<Real>(bf16, Trans::No, Trans::Yes, rows, width, hs, scale,
                                        q + size_t(r0) * ld, ld, k + size_t(lo) * ld, ld, Real(0),
                                        Pb, T);
                    if (alibiSlopes) addAlibiBlock(Pb, blk, pos, T, alibiSlopes[h]);
                    std::copy_n(rowMax + size_t(bh) * T + r0, rows, maxes.begin());
                    softmaxBlock(Pb, blk, pos, T, maxes.data(), sums.data(), true);
                    for (int i = 0; i < rows; ++i) {  // the forward's row sums again, to the bit
                        assert(attention::sameBits(sums[size_t(i)],
                                                   rowSum[size_t(bh) * T + size_t(r0 + i)]));
                    }
                    roundProbabilities(bf16, Pb, rows, width, T);
                    const Real* dOb = dO + size_t(r0) * C;
                    precisionGemm<Real>(bf16, Trans::No, Trans::Yes, rows, width, hs, Real(1), dOb,
                                        C, v + size_t(lo) * ld, ld, Real(0), dS.data(), T);
                    const Real* weights = Pb;
                    if (mask.active) {
                        for (int i = 0; i < rows; ++i) {
                            const uint64_t base =
                                (uint64_t(bh) * T + uint64_t(r0 + i)) * T + uint64_t(lo);
                            mask.apply(dropped.data() + size_t(i) * T, Pb + size_t(i) * T, width,
                                       base);
                            mask.apply(dS.data() + size_t(i) * T, dS.data() + size_t(i) * T,
                                       r0 + i - lo + 1, base);
                        }
                        weights = dropped.data();
                    }
                    precisionGemm<Real>(bf16, Trans::Yes, Trans::No, width, hs, rows, Real(1),
                                        weights, T, dOb, C, Real(1), dv + size_t(lo) * ld, ld);
                    // Softmax backward over the row's document: dS = P ∘ (dP - rowsum(P ∘ dP)).
                    for (int i = 0; i < rows; ++i) {
                        softmaxBackwardRow(Pb + size_t(i) * T, dS.data() + size_t(i) * T,
                                           blk.start(pos, i), r0 + i - lo + 1, width);
                    }
                    precisionGemm<Real>(bf16, Trans::No, Trans::No, rows, hs, width, scale,
                                        dS.data(), T, k + size_t(lo) * ld, ld, Real(0),
                                        dq + size_t(r0) * ld, ld);
                    precisionGemm<Real>(bf16, Trans::Yes, Trans::No, width, hs, rows, scale,
                                        dS.data(), T, q + size_t(r0) * ld, ld, Real(1),
                                        dk + size_t(lo) * ld, ld);
                }
            }
        }
    });
}

#define WAFER_INSTANTIATE_PACKED(Real)                                                             \
    template void packedEmbeddingForward<Real>(Real*, const int32_t*, const int32_t*, const Real*, \
                                               const Real*, int, int, int);                        \
    template void packedPositionBackward<Real>(Real*, const Real*, const int32_t*, int, int, int); \
    template void packedAttentionForward<Real>(Real*, Real*, Real*, const Real*, const int32_t*,   \
                                               int, int, const AttentionShape&, Real, double,      \
                                               uint64_t, bool, const Real*);                       \
    template void packedAttentionBackward<Real>(                                                   \
        Real*, const Real*, const Real*, const Real*, const Real*, const int32_t*, int, int,       \
        const AttentionShape&, Real, double, uint64_t, bool, const Real*);

WAFER_INSTANTIATE_PACKED(float)
WAFER_INSTANTIATE_PACKED(double)

}  // namespace ws::model::ops
