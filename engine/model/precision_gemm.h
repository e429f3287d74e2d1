// The products of the model's ops in the model's precision (internal to model/): fp32 through the
// default matmul backend, or, in bf16 mode (Gpt<float> with GptShape::bf16), through the bf16
// backend with any operand the caller already packed to bf16 bits. Real = double always runs the
// default backend (the gradient-check reference has no bf16 mode).
//
// Thread-safety: as tensor::matmul.
#pragma once

#include <cstdint>
#include <type_traits>

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

}  // namespace ws::model
