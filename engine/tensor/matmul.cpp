// SPDX-License-Identifier: GPL-3.0-or-later
// Matmul backends (single-threaded kernels) and the static partition that runs them on the
// compute threads. See matmul.h for the contract.
#include "engine/tensor/matmul.h"

#include <cblas.h>

#include <Eigen/Core>
#include <algorithm>
#include <atomic>
#include <cassert>
#include <cstdint>
#include <mutex>
#include <type_traits>

#include "engine/tensor/matmul_partition.h"
#include "engine/tensor/threads.h"

namespace ws::tensor {
namespace {

std::atomic<MatmulBackend> g_defaultBackend{MatmulBackend::OpenBlas};

template <typename T>
using RowMat = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
template <typename T>
using ConstMap = Eigen::Map<const RowMat<T>, Eigen::Unaligned, Eigen::OuterStride<>>;
template <typename T>
using MutMap = Eigen::Map<RowMat<T>, Eigen::Unaligned, Eigen::OuterStride<>>;

template <typename T>
void eigenKernel(Trans ta, Trans tb, int M, int N, int K, T alpha, const T* A, int lda, const T* B,
                 int ldb, T beta, T* C, int ldc) {
    MutMap<T> c(C, M, N, Eigen::OuterStride<>(ldc));
    if (beta == T(0)) {
        c.setZero();  // BLAS semantics: C is not read when beta == 0 (it may hold NaN garbage)
    } else if (beta != T(1)) {
        c *= beta;
    }
    if (K == 0) return;
    // Stored shapes: A is (M,K) or, transposed, (K,M); likewise B.
    const ConstMap<T> a(A, ta == Trans::No ? M : K, ta == Trans::No ? K : M,
                        Eigen::OuterStride<>(lda));
    const ConstMap<T> b(B, tb == Trans::No ? K : N, tb == Trans::No ? N : K,
                        Eigen::OuterStride<>(ldb));
    if (ta == Trans::No && tb == Trans::No) {
        c.noalias() += alpha * (a * b);
    } else if (ta == Trans::No) {
        c.noalias() += alpha * (a * b.transpose());
    } else if (tb == Trans::No) {
        c.noalias() += alpha * (a.transpose() * b);
    } else {
        c.noalias() += alpha * (a.transpose() * b.transpose());
    }
}

void blasKernel(Trans ta, Trans tb, int M, int N, int K, float alpha, const float* A, int lda,
                const float* B, int ldb, float beta, float* C, int ldc) {
    cblas_sgemm(CblasRowMajor, ta == Trans::No ? CblasNoTrans : CblasTrans,
                tb == Trans::No ? CblasNoTrans : CblasTrans, M, N, K, alpha, A, lda, B, ldb, beta,
                C, ldc);
}

void blasKernel(Trans ta, Trans tb, int M, int N, int K, double alpha, const double* A, int lda,
                const double* B, int ldb, double beta, double* C, int ldc) {
    cblas_dgemm(CblasRowMajor, ta == Trans::No ? CblasNoTrans : CblasTrans,
                tb == Trans::No ? CblasNoTrans : CblasTrans, M, N, K, alpha, A, lda, B, ldb, beta,
                C, ldc);
}

template <typename T>
void runKernel(MatmulBackend backend, Trans ta, Trans tb, int M, int N, int K, T alpha, const T* A,
               int lda, const T* B, int ldb, T beta, T* C, int ldc) {
    if (M <= 0 || N <= 0) return;
    switch (backend) {
        case MatmulBackend::OpenBlas:
        case MatmulBackend::OneDnnBf16:  // double only (matmul<float> hands it to matmulBf16)
            blasKernel(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
            return;
        case MatmulBackend::Eigen:
            eigenKernel<T>(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
            return;
    }
}

}  // namespace

std::string_view matmulBackendName(MatmulBackend backend) {
    switch (backend) {
        case MatmulBackend::OpenBlas:
            return "openblas";
        case MatmulBackend::Eigen:
            return "eigen";
        case MatmulBackend::OneDnnBf16:
            return "onednn-bf16";
    }
    return "unknown";
}

std::optional<MatmulBackend> parseMatmulBackend(std::string_view name) {
    if (name == "openblas") return MatmulBackend::OpenBlas;
    if (name == "eigen") return MatmulBackend::Eigen;
    if (name == "onednn-bf16") return MatmulBackend::OneDnnBf16;
    return std::nullopt;
}

MatmulBackend defaultMatmulBackend() {
    return g_defaultBackend.load(std::memory_order_relaxed);
}

void setDefaultMatmulBackend(MatmulBackend backend) {
    g_defaultBackend.store(backend, std::memory_order_relaxed);
}

template <typename T>
void matmul(MatmulBackend backend, Trans ta, Trans tb, int M, int N, int K, T alpha, const T* A,
            int lda, const T* B, int ldb, T beta, T* C, int ldc) {
    assert(M >= 0 && N >= 0 && K >= 0);
    assert(ldc >= N);
    assert(lda >= (ta == Trans::No ? K : M));
    assert(ldb >= (tb == Trans::No ? N : K));
    if constexpr (std::is_same_v<T, float>) {
        if (backend == MatmulBackend::OneDnnBf16) {
            matmulBf16(ta, tb, M, N, K, alpha, A, nullptr, lda, B, nullptr, ldb, beta, C, ldc);
            return;
        }
    }
    detail::pinLibraryThreadsOnce();
    const detail::MatmulPartition part = detail::matmulPartition(M, N, K);
    if (part.blocks == 1) {
        runKernel(backend, ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
        return;
    }
    parallelRun(part.blocks, [&](int index, int) {
        const int begin = part.begin(index), end = part.end(index);
        if (end <= begin) return;
        if (part.splitRows) {
            const T* a = ta == Trans::No ? A + int64_t{begin} * lda : A + begin;
            runKernel(backend, ta, tb, end - begin, N, K, alpha, a, lda, B, ldb, beta,
                      C + int64_t{begin} * ldc, ldc);
        } else {
            const T* b = tb == Trans::No ? B + begin : B + int64_t{begin} * ldb;
            runKernel(backend, ta, tb, M, end - begin, K, alpha, A, lda, b, ldb, beta, C + begin,
                      ldc);
        }
    });
}

template void matmul<float>(MatmulBackend, Trans, Trans, int, int, int, float, const float*, int,
                            const float*, int, float, float*, int);
template void matmul<double>(MatmulBackend, Trans, Trans, int, int, int, double, const double*, int,
                             const double*, int, double, double*, int);

}  // namespace ws::tensor
