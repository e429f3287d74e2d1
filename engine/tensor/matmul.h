// The one matmul interface every GEMM of the model goes through (row-major, BLAS semantics):
//   C[M,N] = alpha * op(A) * op(B) + beta * C,   op(X) = X or Xᵀ,
// where op(A) is (M,K), op(B) is (K,N), and lda/ldb/ldc are row strides in elements (so a head's
// columns inside a (B*T, 3C) qkv buffer can be used in place).
//
// Backends are single-threaded kernels; this layer splits C into a static partition of row or
// column blocks, one per compute thread (tensor/threads.h), so every output element is computed by
// one thread with the kernel's own fixed K-order: the same inputs and thread count give
// bit-identical results. Called from inside a parallel region (e.g. per attention head), it runs
// serially on the calling thread. A bf16 (oneDNN) backend can be added as one more enumerator and
// one kernel.
//
// Thread-safety: matmul() is reentrant; the default backend is an atomic setting.
// Failure contract: shapes are programmer input (asserted in debug builds), nothing is thrown.
#pragma once

#include <optional>
#include <string_view>

namespace ws::tensor {

enum class MatmulBackend {
    OpenBlas,  // OpenBLAS cblas_?gemm (runtime CPU dispatch; fastest fp32 here, see bench/)
    Eigen,     // Eigen 3.4 Maps: portable reference, compiled for the baseline x86-64 ISA
};

enum class Trans { No, Yes };

std::string_view matmulBackendName(MatmulBackend backend);
std::optional<MatmulBackend> parseMatmulBackend(std::string_view name);

// The backend used by the overloads without an explicit backend. Default: OpenBlas.
MatmulBackend defaultMatmulBackend();
void setDefaultMatmulBackend(MatmulBackend backend);

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

}  // namespace ws::tensor
