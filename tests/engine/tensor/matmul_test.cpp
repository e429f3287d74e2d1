// SPDX-License-Identifier: GPL-3.0-or-later
// matmul(): every backend, transpose combination and precision against a naive triple loop, with
// alpha/beta, padded leading dimensions, the threaded partition and calls from parallel regions.
#include "engine/tensor/matmul.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "engine/tensor/threads.h"

namespace ws::tensor {
namespace {

struct Case {
    int M, N, K;
};

template <typename T>
std::vector<T> randomMatrix(size_t count, std::mt19937& gen) {
    std::uniform_real_distribution<double> dist(-1.0, 1.0);
    std::vector<T> v(count);
    for (T& x : v) x = T(dist(gen));
    return v;
}

// C = alpha op(A) op(B) + beta C in double, straight from the definition.
template <typename T>
void naiveGemm(Trans ta, Trans tb, int M, int N, int K, double alpha, const T* A, int lda,
               const T* B, int ldb, double beta, T* C, int ldc) {
    for (int i = 0; i < M; ++i) {
        for (int j = 0; j < N; ++j) {
            double acc = 0.0;
            for (int k = 0; k < K; ++k) {
                const double a = ta == Trans::No ? A[size_t(i) * lda + k] : A[size_t(k) * lda + i];
                const double b = tb == Trans::No ? B[size_t(k) * ldb + j] : B[size_t(j) * ldb + k];
                acc += a * b;
            }
            T& c = C[size_t(i) * ldc + j];
            c = T(alpha * acc + (beta == 0.0 ? 0.0 : beta * double(c)));
        }
    }
}

template <typename T>
void checkAgainstNaive(MatmulBackend backend, Trans ta, Trans tb, Case cs, double alpha,
                       double beta, int pad) {
    std::mt19937 gen(uint32_t(cs.M * 131 + cs.N * 7 + cs.K + int(ta) * 2 + int(tb)));
    const int aRows = ta == Trans::No ? cs.M : cs.K, aCols = ta == Trans::No ? cs.K : cs.M;
    const int bRows = tb == Trans::No ? cs.K : cs.N, bCols = tb == Trans::No ? cs.N : cs.K;
    const int lda = aCols + pad, ldb = bCols + pad, ldc = cs.N + pad;
    const auto A = randomMatrix<T>(size_t(aRows) * lda, gen);
    const auto B = randomMatrix<T>(size_t(bRows) * ldb, gen);
    auto C = randomMatrix<T>(size_t(cs.M) * ldc, gen);
    if (beta == 0.0) {
        // BLAS semantics: with beta == 0, C's old contents (even NaN) must not leak through.
        std::fill(C.begin(), C.end(), std::numeric_limits<T>::quiet_NaN());
    }
    const auto original = C;
    auto expected = C;
    naiveGemm(ta, tb, cs.M, cs.N, cs.K, alpha, A.data(), lda, B.data(), ldb, beta, expected.data(),
              ldc);
    matmul<T>(backend, ta, tb, cs.M, cs.N, cs.K, T(alpha), A.data(), lda, B.data(), ldb, T(beta),
              C.data(), ldc);
    const double tol = (std::is_same_v<T, float> ? 2e-6 : 1e-14) * std::sqrt(double(cs.K)) * 4;
    for (int i = 0; i < cs.M; ++i) {
        for (int j = 0; j < cs.N; ++j) {
            const double e = expected[size_t(i) * ldc + j], g = C[size_t(i) * ldc + j];
            ASSERT_NEAR(g, e, tol * (1.0 + std::abs(e)))
                << matmulBackendName(backend) << " ta=" << int(ta) << " tb=" << int(tb)
                << " M=" << cs.M << " N=" << cs.N << " K=" << cs.K << " at (" << i << "," << j
                << ")";
        }
        // Padding columns of C are never written.
        const size_t pad0 = size_t(i) * ldc + cs.N;
        ASSERT_EQ(std::memcmp(&C[pad0], &original[pad0], sizeof(T) * (ldc - cs.N)), 0);
    }
}

class MatmulTest : public ::testing::TestWithParam<MatmulBackend> {};

TEST_P(MatmulTest, AllTransposeCombinationsMatchNaiveLoop) {
    // Small (serial path), odd sizes, and large enough to be split over threads by rows or columns.
    const Case cases[] = {{1, 1, 1}, {3, 5, 7}, {17, 33, 9}, {130, 70, 40}, {40, 150, 60}};
    for (Trans ta : {Trans::No, Trans::Yes}) {
        for (Trans tb : {Trans::No, Trans::Yes}) {
            for (const Case& cs : cases) {
                checkAgainstNaive<float>(GetParam(), ta, tb, cs, 1.0, 0.0, 0);
                checkAgainstNaive<double>(GetParam(), ta, tb, cs, 1.0, 0.0, 0);
                checkAgainstNaive<float>(GetParam(), ta, tb, cs, -0.5, 1.0, 3);
                checkAgainstNaive<double>(GetParam(), ta, tb, cs, 0.75, 0.25, 2);
            }
        }
    }
}

TEST_P(MatmulTest, ZeroInnerDimensionScalesC) {
    std::vector<double> C = {1, 2, 3, 4};
    const double unused = 0;
    matmul<double>(GetParam(), Trans::No, Trans::No, 2, 2, 0, 1.0, &unused, 1, &unused, 2, 0.5,
                   C.data(), 2);
    EXPECT_EQ(C, (std::vector<double>{0.5, 1, 1.5, 2}));
}

TEST_P(MatmulTest, SameInputsGiveBitIdenticalResultsAndInsideParallelRegions) {
    std::mt19937 gen(7);
    const int M = 96, N = 200, K = 64;
    const auto A = randomMatrix<float>(size_t(M) * K, gen);
    const auto B = randomMatrix<float>(size_t(K) * N, gen);
    std::vector<float> first(size_t(M) * N), second(size_t(M) * N);
    matmul<float>(GetParam(), Trans::No, Trans::No, M, N, K, 1.0f, A.data(), K, B.data(), N, 0.0f,
                  first.data(), N);
    matmul<float>(GetParam(), Trans::No, Trans::No, M, N, K, 1.0f, A.data(), K, B.data(), N, 0.0f,
                  second.data(), N);
    EXPECT_EQ(std::memcmp(first.data(), second.data(), first.size() * sizeof(float)), 0);

    // Each thread of a region multiplies its own row block (serially, being inside a region);
    // the union must equal the full product.
    std::vector<float> blocks(size_t(M) * N);
    parallelRun(4, [&](int blk, int) {
        EXPECT_TRUE(inParallelRegion());
        const int rows = M / 4;
        matmul<float>(GetParam(), Trans::No, Trans::No, rows, N, K, 1.0f,
                      A.data() + size_t(blk) * rows * K, K, B.data(), N, 0.0f,
                      blocks.data() + size_t(blk) * rows * N, N);
    });
    for (size_t i = 0; i < blocks.size(); ++i) ASSERT_NEAR(blocks[i], first[i], 1e-4) << i;
}

INSTANTIATE_TEST_SUITE_P(Backends, MatmulTest,
                         ::testing::Values(MatmulBackend::OpenBlas, MatmulBackend::Eigen),
                         [](const ::testing::TestParamInfo<MatmulBackend>& param) {
                             return std::string(matmulBackendName(param.param));
                         });

TEST(MatmulBackendTest, NamesRoundTripAndDefaultIsSettable) {
    for (MatmulBackend b : {MatmulBackend::OpenBlas, MatmulBackend::Eigen}) {
        EXPECT_EQ(parseMatmulBackend(matmulBackendName(b)), b);
    }
    EXPECT_FALSE(parseMatmulBackend("cublas").has_value());
    const MatmulBackend before = defaultMatmulBackend();
    EXPECT_EQ(before, MatmulBackend::OpenBlas);
    setDefaultMatmulBackend(MatmulBackend::Eigen);
    EXPECT_EQ(defaultMatmulBackend(), MatmulBackend::Eigen);
    // The dense overload goes to the default backend and gives the right answer.
    const float A[] = {1, 2, 3, 4}, B[] = {5, 6, 7, 8};
    float C[4] = {};
    matmul<float>(Trans::No, Trans::Yes, 2, 2, 2, 1.0f, A, B, 0.0f, C);
    EXPECT_EQ(std::vector<float>(C, C + 4), (std::vector<float>{17, 23, 39, 53}));
    setDefaultMatmulBackend(before);
}

}  // namespace
}  // namespace ws::tensor
