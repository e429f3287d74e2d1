// SPDX-License-Identifier: GPL-3.0-or-later
// bf16 matrix-vector products for token-by-token generation: C (M,N) = alpha · bf16(A) (M,K) ·
// B (K,N) [+ C], with M one or a few rows and B a weight matrix packed to bf16 once
// (Bf16PanelMatrix), so each product reads 2 bytes per weight instead of 4. One decoded token's
// products are bound by reading the weights from memory; this kernel streams them once, in order.
//
// Layout: B is stored in panels of kGemvPanelColumns columns; panel p holds rows k = 0..K-1 of
// columns [p·64, p·64 + 64) contiguously (64 bf16 per k), the last panel zero-padded. Every panel
// is read front to back, so the hardware prefetcher sees one sequential stream per thread.
//
// Numerics (the contract the tests check bit for bit): every product bf16(a)·b of two bf16 values
// is exact in fp32 (8 + 8 significant bits), and each output is
//     s = 0; for k = 0..K-1: s = fl(s + bf16(A[m,k]) · B[k,n]);   C[m,n] = fl(fl(alpha·s) + C[m,n])
// (the last addition only with accumulate). That is the same order on every Highway target (one
// vector lane per output column, k sequential) and for any thread count (threads split the panels),
// so results are bit-identical across targets and thread counts. Exceptions to "exact product":
// products that overflow fp32 or fall below its normal range (flushed under FTZ, tensor/threads.h).
//
// Thread-safety: a Bf16PanelMatrix is immutable after construction and may be shared by threads.
// gemvBf16 may use the compute threads (tensor/threads.h) when called outside a parallel region.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/tensor/matmul.h"

namespace ws::tensor {

inline constexpr int kGemvPanelColumns = 64;

class Bf16PanelMatrix {
public:
    Bf16PanelMatrix() = default;
    // Packs op(B) (K,N), op(B) = B or Bᵀ, from row-major floats with leading dimension ldb,
    // rounding each value to bf16 (RNE, bf16.h).
    Bf16PanelMatrix(Trans transB, int K, int N, const float* B, int ldb);

    int rows() const { return m_k; }  // K
    int cols() const { return m_n; }  // N
    int panels() const { return (m_n + kGemvPanelColumns - 1) / kGemvPanelColumns; }
    bool empty() const { return m_data.empty(); }
    // Panel p: K rows of kGemvPanelColumns bf16 bits.
    const uint16_t* panel(int p) const {
        return m_data.data() + size_t(p) * size_t(m_k) * kGemvPanelColumns;
    }

private:
    int m_k = 0, m_n = 0;
    std::vector<uint16_t> m_data;  // (panels, K, kGemvPanelColumns)
};

// C[m, n] for m < M, n < B.cols(), as in the header comment. A (M, B.rows()) with row stride lda
// is rounded to bf16 here (exact if it holds bf16 values already). C has row stride ldc and must
// not overlap A.
void gemvBf16(int M, float alpha, const float* A, int lda, const Bf16PanelMatrix& B,
              bool accumulate, float* C, int ldc);

}  // namespace ws::tensor
