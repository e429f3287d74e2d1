// SPDX-License-Identifier: GPL-3.0-or-later
// The bf16 matrix-vector kernel (see gemv_bf16.h) on Google Highway, compiled per x86 target and
// dispatched at run time (tensor/simd.h). Each vector lane owns one output column: the weights of a
// panel row are widened bf16 -> fp32 (a 16-bit shift, exact) and multiplied by the broadcast
// activation, so the k-order of every sum is the same on every target. MulAdd is one FMA on AVX2
// and AVX-512 and a multiply then an add below; the product is exact, so both round the same.
// The file is compiled without the compiler's own contraction (CMakeLists.txt) so the scalar
// epilogue (alpha, accumulate) rounds the same everywhere too.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "engine/tensor/gemv_bf16.cpp"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
// foreach_target.h must come first: it re-includes this file once per target.
#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "engine/tensor/gemv_bf16.h"
#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace ws::tensor {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;
using DF = hn::ScalableTag<float>;
using DU = hn::RebindToUnsigned<DF>;
using D16 = hn::Rebind<uint16_t, DF>;  // one u16 lane per float lane
using V = hn::Vec<DF>;

constexpr size_t kPanel = size_t(kGemvPanelColumns);
// Accumulators live in registers: at most 8 vectors per pass over a panel (AVX-512 and AVX2 take a
// panel in one pass, SSE in two, SCALAR in eight; later passes find the panel in L1/L2).
constexpr size_t kMaxVectors = 8;

// out[0, kVectors·L) = Σ_k x[k] · w[k·kPanel + column], k in order, one lane per column.
template <size_t kVectors>
HWY_INLINE void panelPass(const float* HWY_RESTRICT x, int K, const uint16_t* HWY_RESTRICT w,
                          float* HWY_RESTRICT out) {
    const DF df;
    const DU du;
    const D16 d16;
    constexpr size_t L = hn::MaxLanes(DF());
    V acc[kVectors];
    for (size_t j = 0; j < kVectors; ++j) acc[j] = hn::Zero(df);
    for (int k = 0; k < K; ++k) {
        const V xk = hn::Set(df, x[k]);
        const uint16_t* row = w + size_t(k) * kPanel;
        for (size_t j = 0; j < kVectors; ++j) {
            const V wj =
                hn::BitCast(df, hn::ShiftLeft<16>(hn::PromoteTo(du, hn::LoadU(d16, row + j * L))));
            acc[j] = hn::MulAdd(xk, wj, acc[j]);
        }
    }
    for (size_t j = 0; j < kVectors; ++j) hn::StoreU(acc[j], df, out + j * L);
}

// Panels [p0, p1) of B for rows [0, M) of x (dense, bf16-rounded, M·K).
void gemvPanels(const float* x, int M, int K, const uint16_t* panels, int N, int p0, int p1,
                float alpha, bool accumulate, float* C, int ldc) {
    constexpr size_t L = hn::MaxLanes(DF());
    constexpr size_t kVectorsPerPanel = kPanel / L;
    constexpr size_t kVectors = std::min(kVectorsPerPanel, kMaxVectors);
    constexpr size_t kColumnsPerPass = kVectors * L;
    static_assert(kPanel % kColumnsPerPass == 0);
    HWY_ALIGN float sums[kPanel];
    for (int p = p0; p < p1; ++p) {
        const uint16_t* panel = panels + size_t(p) * size_t(K) * kPanel;
        const int first = p * kGemvPanelColumns;
        const int valid = std::min(kGemvPanelColumns, N - first);
        for (int m = 0; m < M; ++m) {
            const float* xm = x + size_t(m) * size_t(K);
            for (size_t c = 0; c < kPanel; c += kColumnsPerPass) {
                panelPass<kVectors>(xm, K, panel + c, sums + c);
            }
            float* out = C + size_t(m) * size_t(ldc) + first;
            for (int j = 0; j < valid; ++j) {
                const float scaled = alpha * sums[j];
                out[j] = accumulate ? scaled + out[j] : scaled;
            }
        }
    }
}

}  // namespace HWY_NAMESPACE
}  // namespace ws::tensor
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include <cassert>

#include "engine/tensor/bf16.h"
#include "engine/tensor/threads.h"

namespace ws::tensor {

HWY_EXPORT(gemvPanels);

namespace {
// Below this many multiply-adds a product runs on the calling thread, as matmul() does
// (matmul_partition.h): waking the pool costs more than it saves (gpt-nano's one-token products,
// 2^15-2^16 MACs, ran 4-7x slower split over 2 threads of a loaded machine).
constexpr int64_t kSerialMacs = int64_t{1} << 18;

int gemvThreads(int64_t macs) {
    return macs < kSerialMacs ? 1 : threadsForWork(macs);
}
}  // namespace

Bf16PanelMatrix::Bf16PanelMatrix(Trans transB, int K, int N, const float* B, int ldb)
    : m_k(K), m_n(N) {
    assert(K >= 0 && N >= 0);
    m_data.assign(size_t(panels()) * size_t(K) * kGemvPanelColumns, uint16_t(0));
    parallelFor(panels(), gemvThreads(int64_t(K) * N), [&](int64_t begin, int64_t end) {
        for (int p = int(begin); p < int(end); ++p) {
            uint16_t* panelData = m_data.data() + size_t(p) * size_t(K) * kGemvPanelColumns;
            const int first = p * kGemvPanelColumns;
            const int valid = std::min(kGemvPanelColumns, N - first);
            for (int k = 0; k < K; ++k) {
                uint16_t* row = panelData + size_t(k) * kGemvPanelColumns;
                for (int j = 0; j < valid; ++j) {
                    const size_t n = size_t(first + j);
                    const float value = transB == Trans::No ? B[size_t(k) * size_t(ldb) + n]
                                                            : B[n * size_t(ldb) + size_t(k)];
                    row[j] = floatToBf16Bits(value);
                }
            }
        }
    });
}

void gemvBf16(int M, float alpha, const float* A, int lda, const Bf16PanelMatrix& B,
              bool accumulate, float* C, int ldc) {
    const int K = B.rows(), N = B.cols();
    if (M <= 0 || N <= 0) return;
    // The activations, rounded once: every thread reads all of them.
    thread_local std::vector<float> rounded;
    rounded.resize(size_t(M) * size_t(K));
    for (int m = 0; m < M; ++m) {
        roundToBf16Span(A + size_t(m) * size_t(lda), rounded.data() + size_t(m) * size_t(K),
                        size_t(K));
    }
    const float* x = rounded.data();
    const uint16_t* panels = K > 0 ? B.panel(0) : nullptr;
    parallelFor(B.panels(), gemvThreads(int64_t(M) * K * N), [&](int64_t begin, int64_t end) {
        HWY_DYNAMIC_DISPATCH(gemvPanels)
        (x, M, K, panels, N, int(begin), int(end), alpha, accumulate, C, ldc);
    });
}

}  // namespace ws::tensor
#endif  // HWY_ONCE
