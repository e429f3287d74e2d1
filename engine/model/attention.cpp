// Causal multi-head self-attention, forward and backward (see ops.h), with memory per head linear
// in T: nothing of size T x T outlives a row block. Each (batch, head) pair is independent, so
// pairs are split statically over threads and every product inside a pair is a small GEMM through
// tensor::matmul on the pair's strided slices of qkv (row stride 3C), run serially on the owning
// thread. Query rows go in blocks of kRowBlock; a block only multiplies against the keys it can
// see (0 .. last row of the block), so the causal mask wastes at most one block-diagonal of work
// instead of half the matrix.
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
// sum lets debug builds check that the recomputation reproduced the forward.
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

using attention::DropoutMask;
using attention::kRowBlock;
using attention::roundProbabilities;
using attention::softmaxBackwardRow;
using tensor::Trans;

template <typename Real>
void attentionForward(Real* out, Real* rowMax, Real* rowSum, const Real* qkv, int B, int T, int C,
                      int NH, Real scale, double dropout, uint64_t key, bool bf16) {
    const int hs = C / NH, ld = 3 * C, pairs = B * NH;
    const DropoutMask mask(dropout, key);
    const int threads = tensor::threadsForWork(attention::work(B, T, C));
    tensor::parallelFor(pairs, threads, [&](int64_t begin, int64_t end) {
        std::vector<Real> probs(size_t(kRowBlock) * T);                      // (rows, T)
        std::vector<Real> dropped(mask.active ? size_t(kRowBlock) * T : 0);  // (rows, T)
        for (int bh = int(begin); bh < int(end); ++bh) {
            const int b = bh / NH, h = bh % NH;
            const Real* q = qkv + size_t(b) * T * ld + size_t(h) * hs;  // (T, hs), stride 3C
            const Real* k = q + C;
            const Real* v = q + 2 * C;
            Real* o = out + size_t(b) * T * C + size_t(h) * hs;  // (T, hs), stride C
            Real* maxes = rowMax + size_t(bh) * T;               // (T)
            Real* sums = rowSum + size_t(bh) * T;                // (T)
            for (int r0 = 0; r0 < T; r0 += kRowBlock) {
                const int rows = std::min(kRowBlock, T - r0), cols = r0 + rows;
                Real* Pb = probs.data();
                precisionGemm<Real>(bf16, Trans::No, Trans::Yes, rows, cols, hs, scale,
                                    q + size_t(r0) * ld, ld, k, ld, Real(0), Pb, T);
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
                       const Real* rowSum, int B, int T, int C, int NH, Real scale, double dropout,
                       uint64_t key, bool bf16) {
    (void)rowSum;  // read by the debug check only
    const int hs = C / NH, ld = 3 * C, pairs = B * NH;
    const DropoutMask mask(dropout, key);
    const int threads = tensor::threadsForWork(attention::work(B, T, C));
    tensor::parallelFor(pairs, threads, [&](int64_t begin, int64_t end) {
        std::vector<Real> probs(size_t(kRowBlock) * T);                      // (rows, T)
        std::vector<Real> dS(size_t(kRowBlock) * T);                         // (rows, T)
        std::vector<Real> dropped(mask.active ? size_t(kRowBlock) * T : 0);  // (rows, T)
        std::vector<Real> maxes(kRowBlock), sums(kRowBlock);                 // (rows)
        for (int bh = int(begin); bh < int(end); ++bh) {
            const int b = bh / NH, h = bh % NH;
            const Real* q = qkv + size_t(b) * T * ld + size_t(h) * hs;
            const Real* k = q + C;
            const Real* v = q + 2 * C;
            const Real* dO = dout + size_t(b) * T * C + size_t(h) * hs;  // (T, hs), stride C
            Real* dq = dqkv + size_t(b) * T * ld + size_t(h) * hs;       // (T, hs), stride 3C
            Real* dk = dq + C;
            Real* dv = dq + 2 * C;
            for (int t = 0; t < T; ++t) {  // dk, dv accumulate over row blocks
                std::fill_n(dk + size_t(t) * ld, hs, Real(0));
                std::fill_n(dv + size_t(t) * ld, hs, Real(0));
            }
            for (int r0 = 0; r0 < T; r0 += kRowBlock) {
                const int rows = std::min(kRowBlock, T - r0), cols = r0 + rows;
                // The forward's probabilities again: its product, its softmax from its max.
                Real* Pb = probs.data();
                precisionGemm<Real>(bf16, Trans::No, Trans::Yes, rows, cols, hs, scale,
                                    q + size_t(r0) * ld, ld, k, ld, Real(0), Pb, T);
                std::copy_n(rowMax + size_t(bh) * T + r0, rows, maxes.begin());
                kernels::causalSoftmaxRows(Pb, rows, r0 + 1, T, maxes.data(), sums.data(), true);
                for (int i = 0; i < rows; ++i) {  // the forward's row sums again, to the bit
                    assert(attention::sameBits(sums[size_t(i)],
                                               rowSum[size_t(bh) * T + size_t(r0 + i)]));
                }
                roundProbabilities(bf16, Pb, rows, cols, T);
                const Real* dOb = dO + size_t(r0) * C;
                // d(dropped probs) = dO · vᵀ, and dv += (dropped probs)ᵀ · dO.
                precisionGemm<Real>(bf16, Trans::No, Trans::Yes, rows, cols, hs, Real(1), dOb, C, v,
                                    ld, Real(0), dS.data(), T);
                const Real* weights = Pb;
                if (mask.active) {
                    for (int i = 0; i < rows; ++i) {
                        const uint64_t base = (uint64_t(bh) * T + uint64_t(r0 + i)) * T;
                        mask.apply(dropped.data() + size_t(i) * T, Pb + size_t(i) * T, cols, base);
                        mask.apply(dS.data() + size_t(i) * T, dS.data() + size_t(i) * T, r0 + i + 1,
                                   base);
                    }
                    weights = dropped.data();
                }
                precisionGemm<Real>(bf16, Trans::Yes, Trans::No, cols, hs, rows, Real(1), weights,
                                    T, dOb, C, Real(1), dv, ld);
                // Softmax backward: dS = P ∘ (dP - rowsum(P ∘ dP)); zero above the diagonal.
                for (int i = 0; i < rows; ++i) {
                    softmaxBackwardRow(Pb + size_t(i) * T, dS.data() + size_t(i) * T, 0, r0 + i + 1,
                                       cols);
                }
                // Scores were scale · q · kᵀ: dq = scale · dS · k, dk += scale · dSᵀ · q.
                precisionGemm<Real>(bf16, Trans::No, Trans::No, rows, hs, cols, scale, dS.data(), T,
                                    k, ld, Real(0), dq + size_t(r0) * ld, ld);
                precisionGemm<Real>(bf16, Trans::Yes, Trans::No, cols, hs, rows, scale, dS.data(),
                                    T, q + size_t(r0) * ld, ld, Real(1), dk, ld);
            }
        }
    });
}

template void attentionForward<float>(float*, float*, float*, const float*, int, int, int, int,
                                      float, double, uint64_t, bool);
template void attentionForward<double>(double*, double*, double*, const double*, int, int, int, int,
                                       double, double, uint64_t, bool);
template void attentionBackward<float>(float*, const float*, const float*, const float*,
                                       const float*, int, int, int, int, float, double, uint64_t,
                                       bool);
template void attentionBackward<double>(double*, const double*, const double*, const double*,
                                        const double*, int, int, int, int, double, double, uint64_t,
                                        bool);

}  // namespace ws::model::ops
