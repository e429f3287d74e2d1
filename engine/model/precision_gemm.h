// SPDX-License-Identifier: GPL-3.0-or-later
// The products of the model's ops in the model's precision (internal to model/): fp32 through the
// default matmul backend, or, in bf16 mode (Gpt<float> with GptShape::bf16), through the bf16
// backend with any operand the caller already packed to bf16 bits. Real = double always runs the
// default backend (the gradient-check reference has no bf16 mode).
//
// Thread-safety: as tensor::matmul.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "engine/tensor/bf16.h"
#include "engine/tensor/matmul.h"

namespace ws::model {

template <typename Real>
void precisionGemm(bool bf16, tensor::Trans ta, tensor::Trans tb, int M, int N, int K, Real alpha,
                   const Real* A, const uint16_t* Abf16, int lda, const Real* B,
                   const uint16_t* Bbf16, int ldb, Real beta, Real* C, int ldc) {
    if constexpr (std::is_same_v<Real, float>) {
        if (bf16) {
            tensor::matmulBf16(ta, tb, M, N, K, alpha, A, Abf16, lda, B, Bbf16, ldb, beta, C, ldc);
            return;
        }
    }
    (void)Abf16;
    (void)Bbf16;
    tensor::matmul<Real>(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

// The same with no operand pre-packed: the ops' own small products (attention's per-head blocks,
// the LoRA adapters).
template <typename Real>
void precisionGemm(bool bf16, tensor::Trans ta, tensor::Trans tb, int M, int N, int K, Real alpha,
                   const Real* A, int lda, const Real* B, int ldb, Real beta, Real* C, int ldc) {
    precisionGemm<Real>(bf16, ta, tb, M, N, K, alpha, A, nullptr, lda, B, nullptr, ldb, beta, C,
                        ldc);
}

// bf16 mode: src (count floats, e.g. a gradient used by two products) packed to bf16 bits once, in
// a per-thread buffer valid until the next call on this thread; null when not bf16 (or double).
template <typename Real>
const uint16_t* packOnceForBf16(bool bf16, const Real* src, size_t count) {
    if constexpr (std::is_same_v<Real, float>) {
        if (bf16) {
            thread_local std::vector<uint16_t> packed;
            if (packed.size() < count) packed.resize(count);
            tensor::floatToBf16(src, packed.data(), count);
            return packed.data();
        }
    }
    (void)bf16;
    (void)src;
    (void)count;
    return nullptr;
}

}  // namespace ws::model
