// SPDX-License-Identifier: GPL-3.0-or-later
// Test-only reference (see stored_attention_reference.h): engine/model/attention.cpp as it was
// when the forward stored the (B,NH,T,T) probabilities, renamed, plus Gpt's bf16 rounding of them.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>

#include "stored_attention_reference.h"

#include "engine/model/element_kernels.h"
#include "engine/model/ops.h"
#include "engine/model/precision_gemm.h"
#include "engine/model/random.h"
#include "engine/tensor/bf16.h"
#include "engine/tensor/matmul.h"
#include "engine/tensor/threads.h"

namespace ws::model::testing {

using tensor::Trans;

namespace {

constexpr int kRowBlock = 64;

struct DropoutMask {
    bool active;
    uint32_t threshold;
    double scale;
    uint64_t key;
    explicit DropoutMask(double p, uint64_t k)
        : active(p > 0.0), threshold(rng::dropThreshold(p)), scale(ops::dropoutScale(p)), key(k) {}
    // dst[j] = src[j] * mask(base + j) for j < n.
    template <typename Real>
    void apply(Real* dst, const Real* src, int n, uint64_t base) const {
        const Real s = Real(scale);
        for (int j = 0; j < n; ++j) {
            dst[j] = rng::keep(key, base + uint64_t(j), threshold) ? src[j] * s : Real(0);
        }
    }
};

// One product of a (batch, head) pair, in the model's precision (no operand is pre-packed).
template <typename Real>
void gemm(bool bf16, Trans ta, Trans tb, int M, int N, int K, Real alpha, const Real* A, int lda,
          const Real* B, int ldb, Real beta, Real* C, int ldc) {
    precisionGemm<Real>(bf16, ta, tb, M, N, K, alpha, A, nullptr, lda, B, nullptr, ldb, beta, C,
                        ldc);
}

int64_t attentionWork(int B, int T, int C) {
    return int64_t{B} * T * T * C;
}

}  // namespace

template <typename Real>
void storedAttentionForward(Real* out, Real* probs, const Real* qkv, int B, int T, int C, int NH,
                            Real scale, double dropout, uint64_t key, bool bf16) {
    const int hs = C / NH, ld = 3 * C, pairs = B * NH;
    const DropoutMask mask(dropout, key);
    const int threads = tensor::threadsForWork(attentionWork(B, T, C));
    tensor::parallelFor(pairs, threads, [&](int64_t begin, int64_t end) {
        std::vector<Real> dropped(mask.active ? size_t(kRowBlock) * T : 0);  // (rows, T)
        for (int bh = int(begin); bh < int(end); ++bh) {
            const int b = bh / NH, h = bh % NH;
            const Real* q = qkv + size_t(b) * T * ld + size_t(h) * hs;  // (T, hs), stride 3C
            const Real* k = q + C;
            const Real* v = q + 2 * C;
            Real* P = probs + size_t(bh) * T * T;                // (T, T)
            Real* o = out + size_t(b) * T * C + size_t(h) * hs;  // (T, hs), stride C
            for (int r0 = 0; r0 < T; r0 += kRowBlock) {
                const int rows = std::min(kRowBlock, T - r0), cols = r0 + rows;
                Real* Pb = P + size_t(r0) * T;
                gemm<Real>(bf16, Trans::No, Trans::Yes, rows, cols, hs, scale, q + size_t(r0) * ld,
                           ld, k, ld, Real(0), Pb, T);
                kernels::causalSoftmaxRows(Pb, rows, r0 + 1, T);
                const Real* weights = Pb;
                if (mask.active) {
                    for (int i = 0; i < rows; ++i) {
                        mask.apply(dropped.data() + size_t(i) * T, Pb + size_t(i) * T, cols,
                                   (uint64_t(bh) * T + uint64_t(r0 + i)) * T);
                    }
                    weights = dropped.data();
                }
                gemm<Real>(bf16, Trans::No, Trans::No, rows, hs, cols, Real(1), weights, T, v, ld,
                           Real(0), o + size_t(r0) * C, C);
            }
        }
    });
    // Gpt::blockForward: roundActivation(probs) in bf16 mode, after the attention op.
    if constexpr (std::is_same_v<Real, float>) {
        if (bf16) tensor::roundToBf16(probs, size_t(B) * NH * T * T);
    }
}

template <typename Real>
void storedAttentionBackward(Real* dqkv, const Real* dout, const Real* qkv, const Real* probs,
                             int B, int T, int C, int NH, Real scale, double dropout, uint64_t key,
                             bool bf16) {
    const int hs = C / NH, ld = 3 * C, pairs = B * NH;
    const DropoutMask mask(dropout, key);
    const int threads = tensor::threadsForWork(attentionWork(B, T, C));
    tensor::parallelFor(pairs, threads, [&](int64_t begin, int64_t end) {
        std::vector<Real> dS(size_t(kRowBlock) * T);                         // (rows, T)
        std::vector<Real> dropped(mask.active ? size_t(kRowBlock) * T : 0);  // (rows, T)
        for (int bh = int(begin); bh < int(end); ++bh) {
            const int b = bh / NH, h = bh % NH;
            const Real* q = qkv + size_t(b) * T * ld + size_t(h) * hs;
            const Real* k = q + C;
            const Real* v = q + 2 * C;
            const Real* P = probs + size_t(bh) * T * T;
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
                const Real* Pb = P + size_t(r0) * T;
                const Real* dOb = dO + size_t(r0) * C;
                // d(dropped probs) = dO · vᵀ, and dv += (dropped probs)ᵀ · dO.
                gemm<Real>(bf16, Trans::No, Trans::Yes, rows, cols, hs, Real(1), dOb, C, v, ld,
                           Real(0), dS.data(), T);
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
                gemm<Real>(bf16, Trans::Yes, Trans::No, cols, hs, rows, Real(1), weights, T, dOb, C,
                           Real(1), dv, ld);
                // Softmax backward: dS = P ∘ (dP - rowsum(P ∘ dP)); zero above the diagonal.
                for (int i = 0; i < rows; ++i) {
                    const int len = r0 + i + 1;
                    const Real* p = Pb + size_t(i) * T;
                    Real* d = dS.data() + size_t(i) * T;
                    Real dot = 0;
#pragma omp simd reduction(+ : dot)
                    for (int j = 0; j < len; ++j) dot += p[j] * d[j];
#pragma omp simd
                    for (int j = 0; j < len; ++j) d[j] = p[j] * (d[j] - dot);
                    std::fill(d + len, d + cols, Real(0));
                }
                // Scores were scale · q · kᵀ: dq = scale · dS · k, dk += scale · dSᵀ · q.
                gemm<Real>(bf16, Trans::No, Trans::No, rows, hs, cols, scale, dS.data(), T, k, ld,
                           Real(0), dq + size_t(r0) * ld, ld);
                gemm<Real>(bf16, Trans::Yes, Trans::No, cols, hs, rows, scale, dS.data(), T,
                           q + size_t(r0) * ld, ld, Real(1), dk, ld);
            }
        }
    });
}

template void storedAttentionForward<float>(float*, float*, const float*, int, int, int, int, float,
                                            double, uint64_t, bool);
template void storedAttentionForward<double>(double*, double*, const double*, int, int, int, int,
                                             double, double, uint64_t, bool);
template void storedAttentionBackward<float>(float*, const float*, const float*, const float*, int,
                                             int, int, int, float, double, uint64_t, bool);
template void storedAttentionBackward<double>(double*, const double*, const double*, const double*,
                                              int, int, int, int, double, double, uint64_t, bool);

}  // namespace ws::model::testing
