// SPDX-License-Identifier: GPL-3.0-or-later
// The one matmul interface every GEMM of the model goes through (row-major, BLAS semantics):
//   C[M,N] = alpha * op(A) * op(B) + beta * C,   op(X) = X or Xᵀ,
// where op(A) is (M,K), op(B) is (K,N), and lda/ldb/ldc are row strides in elements (so a head's
// columns inside a (B*T, 3C) qkv buffer can be used in place).
//
// Backends are single-threaded kernels; this layer splits C into a static partition of row or
// column blocks, one per compute thread (tensor/threads.h), so every output element is computed by
// one thread with the kernel's own fixed K-order: the same inputs and thread count give
// bit-identical results. Called from inside a parallel region (e.g. per attention head), it runs
// serially on the calling thread.
//
// The bf16 backend (OneDnnBf16, float only) rounds A and B to bf16 (RNE; exact for operands that
// already hold bf16 values), multiplies them with fp32 accumulation and writes fp32 C, as bf16
// accelerators do. It runs oneDNN's matmul primitive (one thread per block of the same static
// partition, so results are reproducible for a given thread count) where the CPU has bf16
// instructions (AMX or AVX512-BF16); elsewhere it emulates them: operands rounded to bf16 values
// in float buffers, multiplied by the fp32 OpenBLAS kernel (same rounding, no speed-up).
// bf16Path() says which runs.
//
// Thread-safety: matmul() is reentrant; the default backend is an atomic setting.
// Failure contract: shapes are programmer input (asserted in debug builds), nothing is thrown. If
// oneDNN cannot create a primitive for a shape, that product runs on the emulated path and
// bf16Path() names the failure.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace ws::tensor {

enum class MatmulBackend {
    OpenBlas,    // OpenBLAS cblas_?gemm (runtime CPU dispatch; fastest fp32 here, see bench/)
    Eigen,       // Eigen 3.4 Maps: portable reference, compiled for the baseline x86-64 ISA
    OneDnnBf16,  // bf16 inputs, fp32 accumulation and output (float only; double runs OpenBlas)
};

enum class Trans { No, Yes };

std::string_view matmulBackendName(MatmulBackend backend);
std::optional<MatmulBackend> parseMatmulBackend(std::string_view name);

// The backend used by the overloads without an explicit backend. Default: OpenBlas.
MatmulBackend defaultMatmulBackend();
void setDefaultMatmulBackend(MatmulBackend backend);

// Which kernel the bf16 backend runs on this machine (oneDNN's effective ISA, probed once).
enum class Bf16Path {
    Amx,         // oneDNN on Intel AMX tiles
    Avx512Bf16,  // oneDNN on AVX512-BF16 (vdpbf16ps)
    Emulated,    // no bf16 instructions: rounded operands through the fp32 kernel
};
Bf16Path bf16Path();
// "bf16 on AMX", "bf16 on AVX512-BF16" or "bf16 emulated in fp32 (this CPU has no bf16
// instructions)"; names a oneDNN failure if one forced a product onto the emulated path.
std::string bf16PathDescription();

// Instantiated for float and double.
template <typename T>
void matmul(MatmulBackend backend, Trans transA, Trans transB, int M, int N, int K, T alpha,
            const T* A, int lda, const T* B, int ldb, T beta, T* C, int ldc);

template <typename T>
void matmul(Trans transA, Trans transB, int M, int N, int K, T alpha, const T* A, int lda,
            const T* B, int ldb, T beta, T* C, int ldc) {
    matmul<T>(defaultMatmulBackend(), transA, transB, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

// Dense operands (lda/ldb/ldc are the natural row lengths of the stored matrices).
template <typename T>
void matmul(Trans transA, Trans transB, int M, int N, int K, T alpha, const T* A, const T* B,
            T beta, T* C) {
    const int lda = transA == Trans::No ? K : M;
    const int ldb = transB == Trans::No ? N : K;
    matmul<T>(defaultMatmulBackend(), transA, transB, M, N, K, alpha, A, lda, B, ldb, beta, C, N);
}

// The bf16 backend with operands the caller already packed to bf16 bits (floatToBf16, bf16.h), so
// weights used by many products are converted once: Abf16 (or Bbf16), when not null, holds the
// same matrix as A (B) in the same layout and leading dimension, and A (B) is not read (it may be
// null). Null packed operands are converted here.
void matmulBf16(Trans transA, Trans transB, int M, int N, int K, float alpha, const float* A,
                const uint16_t* Abf16, int lda, const float* B, const uint16_t* Bbf16, int ldb,
                float beta, float* C, int ldc);

namespace detail {
// Tests only: run the bf16 backend on the emulated path even where oneDNN has bf16 instructions.
void forceBf16Emulation(bool on);
// Creates (or finds in the cache) the oneDNN primitive for one block; returns an empty string on
// success, else a message naming the shape and oneDNN's status. Exposed for the bad-input test.
std::string prepareOneDnnBf16(Trans transA, Trans transB, int M, int N, int K, float alpha, int lda,
                              int ldb, float beta, int ldc);
}  // namespace detail

}  // namespace ws::tensor
