// SPDX-License-Identifier: GPL-3.0-or-later
// Causal self-attention with grouped-query heads and optional ALiBi, forward and backward (see
// ops.h), with memory per head linear in T: nothing of size T x T outlives a row block. In the
// forward each (batch, query head) pair is independent, so pairs are split statically over
// threads; in the backward the query heads sharing a KV head add into its dk and dv, so a thread
// owns whole (batch, KV head) groups and runs the group's heads in order (deterministic; with
// KV == NH a group is one pair, as before). Every product inside a pair is a small GEMM through
// tensor::matmul on the pair's strided slices of qkv (row stride qkvWidth), run serially on the
// owning thread. Query rows go in blocks of kRowBlock; a block only multiplies against the keys it
// can see (0 .. last row of the block), so the causal mask wastes at most one block-diagonal of
// work instead of half the matrix.
//
// Stored and recomputed: the forward computes a block's scores into a per-thread kRowBlock x T
// scratch, turns them into probabilities there, multiplies by v, and keeps only each query row's
// softmax statistics (max and sum, (B,NH,T) each). The backward recomputes the block's scores with
// the very same product (same operands, shape and strides, so the same bits), and its
// probabilities with the very same softmax loop started from the saved max
// (kernels::causalSoftmaxRows with maxKnown), then rounds them to bf16 in bf16 mode, where the
// model used to round the stored matrix: so training is bit-identical to storing the (B,NH,T,T)
// probabilities (tests/engine/model/attention_recompute_test.cpp keeps that implementation as its
// reference). The price is one more QKᵀ product and softmax per block in the backward; the saved
// sum lets debug builds check that the recomputation reproduced the forward. ALiBi's bias is
// added to the scores after the product, the same way in both passes, so it keeps that property;
// it is constant in q and k, so their gradients are unchanged by it.
#include <algorithm>
#include <cassert>
#include <cmath>
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

template <typename Real>
void attentionForward(Real* out, Real* rowMax, Real* rowSum, const Real* qkv, int B, int T,
                      const AttentionShape& shape, Real scale, double dropout, uint64_t key,
                      bool bf16, const Real* alibiSlopes) {
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
            const HeadColumns col = headColumns(shape, h);
            const Real* row0 = qkv + size_t(b) * T * ld;
            const Real* q = row0 + col.q;  // (T, hs), stride ld
            const Real* k = row0 + col.k;
            const Real* v = row0 + col.v;
            Real* o = out + size_t(b) * T * C + size_t(h) * hs;  // (T, hs), stride C
            Real* maxes = rowMax + size_t(bh) * T;               // (T)
            Real* sums = rowSum + size_t(bh) * T;                // (T)
            for (int r0 = 0; r0 < T; r0 += kRowBlock) {
                const int rows = std::min(kRowBlock, T - r0), cols = r0 + rows;
                Real* Pb = probs.data();
                precisionGemm<Real>(bf16, Trans::No, Trans::Yes, rows, cols, hs, scale,
                                    q + size_t(r0) * ld, ld, k, ld, Real(0), Pb, T);
                if (alibiSlopes) {
                    for (int i = 0; i < rows; ++i) {
                        addAlibiRow(Pb + size_t(i) * T, alibiSlopes[h], 0, r0 + i, 0, r0 + i + 1);
                    }
                }
                kernels::causalSoftmaxRows(Pb, rows, r0 + 1, T, maxes + r0, sums + r0, false);
                const Real* weights = Pb;
                if (mask.active) {
                    for (int i = 0; i < rows; ++i) {
                        mask.apply(dropped.data() + size_t(i) * T, Pb + size_t(i) * T, cols,
                                   (uint64_t(bh) * T + uint64_t(r0 + i)) * T);
                    }
                    weights = dropped.data();
                }
                precisionGemm<Real>(bf16, Trans::No, Trans::No, rows, hs, cols, Real(1), weights, T,
                                    v, ld, Real(0), o + size_t(r0) * C, C);
            }
        }
    });
}

template <typename Real>
void attentionBackward(Real* dqkv, const Real* dout, const Real* qkv, const Real* rowMax,
                       const Real* rowSum, int B, int T, const AttentionShape& shape, Real scale,
                       double dropout, uint64_t key, bool bf16, const Real* alibiSlopes) {
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
                    const int rows = std::min(kRowBlock, T - r0), cols = r0 + rows;
                    // The forward's probabilities again: its product, its softmax from its max.
                    Real* Pb = probs.data();
                    precisionGemm<Real>(bf16, Trans::No, Trans::Yes, rows, cols, hs, scale,
                                        q + size_t(r0) * ld, ld, k, ld, Real(0), Pb, T);
                    if (alibiSlopes) {
                        for (int i = 0; i < rows; ++i) {
                            addAlibiRow(Pb + size_t(i) * T, alibiSlopes[h], 0, r0 + i, 0,
                                        r0 + i + 1);
                        }
                    }
                    std::copy_n(rowMax + size_t(bh) * T + r0, rows, maxes.begin());
                    kernels::causalSoftmaxRows(Pb, rows, r0 + 1, T, maxes.data(), sums.data(),
                                               true);
                    for (int i = 0; i < rows; ++i) {  // the forward's row sums again, to the bit
                        assert(attention::sameBits(sums[size_t(i)],
                                                   rowSum[size_t(bh) * T + size_t(r0 + i)]));
                    }
                    roundProbabilities(bf16, Pb, rows, cols, T);
                    const Real* dOb = dO + size_t(r0) * C;
                    // d(dropped probs) = dO · vᵀ, and dv += (dropped probs)ᵀ · dO.
                    precisionGemm<Real>(bf16, Trans::No, Trans::Yes, rows, cols, hs, Real(1), dOb,
                                        C, v, ld, Real(0), dS.data(), T);
                    const Real* weights = Pb;
                    if (mask.active) {
                        for (int i = 0; i < rows; ++i) {
                            const uint64_t base = (uint64_t(bh) * T + uint64_t(r0 + i)) * T;
                            mask.apply(dropped.data() + size_t(i) * T, Pb + size_t(i) * T, cols,
                                       base);
                            mask.apply(dS.data() + size_t(i) * T, dS.data() + size_t(i) * T,
                                       r0 + i + 1, base);
                        }
                        weights = dropped.data();
                    }
                    precisionGemm<Real>(bf16, Trans::Yes, Trans::No, cols, hs, rows, Real(1),
                                        weights, T, dOb, C, Real(1), dv, ld);
                    // Softmax backward: dS = P ∘ (dP - rowsum(P ∘ dP)); zero above the diagonal.
                    for (int i = 0; i < rows; ++i) {
                        softmaxBackwardRow(Pb + size_t(i) * T, dS.data() + size_t(i) * T, 0,
                                           r0 + i + 1, cols);
                    }
                    // Scores were scale · q · kᵀ (+ a constant bias): dq = scale · dS · k, dk +=
                    // scale · dSᵀ · q.
                    precisionGemm<Real>(bf16, Trans::No, Trans::No, rows, hs, cols, scale,
                                        dS.data(), T, k, ld, Real(0), dq + size_t(r0) * ld, ld);
                    precisionGemm<Real>(bf16, Trans::Yes, Trans::No, cols, hs, rows, scale,
                                        dS.data(), T, q + size_t(r0) * ld, ld, Real(1), dk, ld);
                }
            }
        }
    });
}

#define WAFER_INSTANTIATE_ATTENTION(Real)                                                     \
    template void attentionForward<Real>(Real*, Real*, Real*, const Real*, int, int,          \
                                         const AttentionShape&, Real, double, uint64_t, bool, \
                                         const Real*);                                        \
    template void attentionBackward<Real>(Real*, const Real*, const Real*, const Real*,       \
                                          const Real*, int, int, const AttentionShape&, Real, \
                                          double, uint64_t, bool, const Real*);

WAFER_INSTANTIATE_ATTENTION(float)
WAFER_INSTANTIATE_ATTENTION(double)

std::vector<double> alibiSlopes(int heads) {
    assert(heads > 0);
    int p = 1;  // the largest power of two <= heads
    while (p * 2 <= heads) p *= 2;
    std::vector<double> slopes;
    slopes.reserve(size_t(heads));
    for (int h = 1; h <= p; ++h) slopes.push_back(std::exp2(-8.0 * h / p));
    for (int k = 0; int(slopes.size()) < heads; ++k)
        slopes.push_back(std::exp2(-4.0 * (2 * k + 1) / p));
    return slopes;
}

}  // namespace ws::model::ops
