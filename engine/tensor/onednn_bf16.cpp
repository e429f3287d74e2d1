// SPDX-License-Identifier: GPL-3.0-or-later
// The bf16 matmul backend (see matmul.h): operands packed to bf16, oneDNN's matmul primitive run
// single-threaded on each block of the static partition, or the emulated path through the fp32
// kernel on CPUs without bf16 instructions.
//
// oneDNN here uses the OpenMP runtime. Inside our partition each block must run on its own thread
// only, so every execute sets the calling thread's OpenMP team size to 1 for its duration (oneDNN
// then runs its kernel inline; no second, spinning thread team is ever started) and restores it,
// so the optimizer's OpenMP loops on the same thread keep their team.
// Measured on GPT-2-small GEMMs with 2 threads (AMD EPYC, AVX512-BF16): oneDNN's own OpenMP
// threading was no faster than this partition (400-408 vs 384-436 GFLOP/s, identical bits) with
// OMP_WAIT_POLICY=PASSIVE, and without it libgomp's idle team spun against our pool and the
// partitioned products fell to 266-290 GFLOP/s. So oneDNN stays single-threaded per block.
//
// Primitives are created once per block shape (M, N, K, transposes, leading dimensions, alpha,
// beta) and kept in a process-wide cache: creating one costs ~100 µs (JIT), executing a 64x64x64
// block ~3 µs.
#include <omp.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cassert>
#include <cstring>
#include <memory>
#include <mutex>
#include <oneapi/dnnl/dnnl.hpp>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "engine/tensor/bf16.h"
#include "engine/tensor/matmul.h"
#include "engine/tensor/matmul_partition.h"
#include "engine/tensor/threads.h"

namespace ws::tensor {
namespace {

// More distinct shapes than this (a decoder's attention makes one per position) empties the
// cache; primitives in use stay alive through their shared_ptr.
constexpr size_t kMaxCachedPrimitives = 4096;

std::atomic<bool> g_forceEmulation{false};

struct GemmKey {
    int M, N, K, lda, ldb, ldc;
    bool ta, tb;
    uint32_t alphaBits, betaBits;
    bool operator==(const GemmKey&) const = default;
};

struct GemmKeyHash {
    size_t operator()(const GemmKey& k) const {
        uint64_t h = 0xcbf29ce484222325ull;
        for (uint64_t v :
             {uint64_t(uint32_t(k.M)), uint64_t(uint32_t(k.N)), uint64_t(uint32_t(k.K)),
              uint64_t(uint32_t(k.lda)), uint64_t(uint32_t(k.ldb)), uint64_t(uint32_t(k.ldc)),
              uint64_t(k.ta) | uint64_t(k.tb) << 1, uint64_t(k.alphaBits), uint64_t(k.betaBits)}) {
            h = (h ^ v) * 0x100000001b3ull;
        }
        return size_t(h);
    }
};

struct Gemm {
    dnnl::matmul primitive;
    dnnl::memory::desc a, b, c, scratchpad;
};

dnnl::engine& cpuEngine() {
    static dnnl::engine engine(dnnl::engine::kind::cpu, 0);
    return engine;
}

class GemmCache {
public:
    // The primitive for `key`, created on first use; null with *error set if oneDNN refuses.
    std::shared_ptr<const Gemm> get(const GemmKey& key, std::string* error) {
        {
            std::lock_guard lock(m_mutex);
            const auto it = m_entries.find(key);
            if (it != m_entries.end()) return it->second;
        }
        std::shared_ptr<const Gemm> created = create(key, error);
        if (!created) return nullptr;
        std::lock_guard lock(m_mutex);
        if (m_entries.size() >= kMaxCachedPrimitives) m_entries.clear();
        return m_entries.emplace(key, std::move(created)).first->second;
    }

private:
    static std::shared_ptr<const Gemm> create(const GemmKey& k, std::string* error) {
        using dnnl::memory;
        try {
            // Logical shapes (M,K)·(K,N) = (M,N); a transposed operand is the stored matrix read
            // through swapped strides.
            const memory::dims aStrides = k.ta ? memory::dims{1, k.lda} : memory::dims{k.lda, 1};
            const memory::dims bStrides = k.tb ? memory::dims{1, k.ldb} : memory::dims{k.ldb, 1};
            auto g = std::make_shared<Gemm>();
            g->a = memory::desc({k.M, k.K}, memory::data_type::bf16, aStrides);
            g->b = memory::desc({k.K, k.N}, memory::data_type::bf16, bStrides);
            g->c = memory::desc({k.M, k.N}, memory::data_type::f32, memory::dims{k.ldc, 1});
            dnnl::primitive_attr attr;
            // Our own per-thread scratchpad: blocks of different shapes run concurrently.
            attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
            const float alpha = std::bit_cast<float>(k.alphaBits);
            const float beta = std::bit_cast<float>(k.betaBits);
            if (alpha != 1.0f) attr.set_output_scales(0, {alpha});
            if (beta != 0.0f) {  // C = alpha·A·B + beta·C; with beta == 0, C is never read
                dnnl::post_ops ops;
                ops.append_sum(beta);
                attr.set_post_ops(ops);
            }
            const dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(g->a, g->b, g->c), attr,
                                                  cpuEngine());
            g->scratchpad = pd.scratchpad_desc();
            g->primitive = dnnl::matmul(pd);
            return g;
        } catch (const dnnl::error& e) {
            *error = "oneDNN could not create a bf16 matmul for M=" + std::to_string(k.M) +
                     " N=" + std::to_string(k.N) + " K=" + std::to_string(k.K) +
                     " (lda=" + std::to_string(k.lda) + " ldb=" + std::to_string(k.ldb) +
                     " ldc=" + std::to_string(k.ldc) + "): " + e.what() + " (status " +
                     std::to_string(int(e.status)) + ")";
            return nullptr;
        }
    }

    std::mutex m_mutex;
    std::unordered_map<GemmKey, std::shared_ptr<const Gemm>, GemmKeyHash> m_entries;
};

GemmCache& gemmCache() {
    static GemmCache cache;
    return cache;
}

// The first oneDNN failure, shown by bf16PathDescription().
std::mutex g_failureMutex;
std::string g_failure;

void recordFailure(const std::string& message) {
    std::lock_guard lock(g_failureMutex);
    if (g_failure.empty()) g_failure = message;
}

Bf16Path probePath() {
    static const Bf16Path path = [] {
        const auto isa = static_cast<unsigned>(dnnl::get_effective_cpu_isa());
        const auto has = [isa](dnnl::cpu_isa want) {
            const auto bits = static_cast<unsigned>(want);
            return (isa & bits) == bits;
        };
        if (has(dnnl::cpu_isa::avx512_core_amx)) return Bf16Path::Amx;
        if (has(dnnl::cpu_isa::avx512_core_bf16)) return Bf16Path::Avx512Bf16;
        return Bf16Path::Emulated;
    }();
    return path;
}

GemmKey keyFor(Trans ta, Trans tb, int M, int N, int K, float alpha, int lda, int ldb, float beta,
               int ldc) {
    return {M,
            N,
            K,
            lda,
            ldb,
            ldc,
            ta == Trans::Yes,
            tb == Trans::Yes,
            std::bit_cast<uint32_t>(alpha),
            std::bit_cast<uint32_t>(beta)};
}

// Runs one block with its OpenMP team pinned to the calling thread.
void execute(const Gemm& g, const uint16_t* A, const uint16_t* B, float* C) {
    thread_local dnnl::stream stream(cpuEngine());
    thread_local std::vector<std::byte> scratchpad;
    const size_t scratchBytes = g.scratchpad.get_size();
    if (scratchpad.size() < scratchBytes) scratchpad.resize(scratchBytes);
    const int team = omp_get_max_threads();
    omp_set_num_threads(1);
    dnnl::memory a(g.a, cpuEngine(), const_cast<uint16_t*>(A));
    dnnl::memory b(g.b, cpuEngine(), const_cast<uint16_t*>(B));
    dnnl::memory c(g.c, cpuEngine(), C);
    dnnl::memory pad(g.scratchpad, cpuEngine(), scratchpad.data());
    g.primitive.execute(
        stream,
        {{DNNL_ARG_SRC, a}, {DNNL_ARG_WEIGHTS, b}, {DNNL_ARG_DST, c}, {DNNL_ARG_SCRATCHPAD, pad}});
    stream.wait();
    omp_set_num_threads(team);
}

// Copies the (rows, cols) matrix at src (row stride ld) densely to dst, converting each row with
// convert (a Highway span from bf16.h).
template <typename From, typename To, typename Convert>
void packRows(const From* src, int ld, int rows, int cols, To* dst, Convert convert) {
    const int64_t count = int64_t{rows} * cols;
    const int threads = threadsForWork(count);
    if (ld == cols) {  // already dense: one span per thread, whatever the row length
        parallelFor(count, threads, [&](int64_t begin, int64_t end) {
            convert(src + begin, dst + begin, size_t(end - begin));
        });
        return;
    }
    parallelFor(rows, threads, [&](int64_t begin, int64_t end) {
        for (int64_t r = begin; r < end; ++r) {
            convert(src + r * ld, dst + r * cols, size_t(cols));
        }
    });
}

void packBf16(const float* src, int ld, int rows, int cols, uint16_t* dst) {
    packRows(src, ld, rows, cols, dst, floatToBf16Span);
}

// A bf16 operand's float values (rounded from floats, or unpacked from bf16 bits), dense.
void bf16Values(const float* values, const uint16_t* packed, int ld, int rows, int cols,
                float* dst) {
    if (packed) {
        packRows(packed, ld, rows, cols, dst, bf16ToFloatSpan);
    } else {
        packRows(values, ld, rows, cols, dst, roundToBf16Span);
    }
}

// Scratch for operands converted by a call, per calling thread (a call inside a parallel region
// uses its own thread's).
struct Scratch {
    std::vector<uint16_t> a, b;
    std::vector<float> fa, fb;
};
Scratch& scratch() {
    thread_local Scratch s;
    return s;
}

template <typename V>
typename V::value_type* sized(V& v, size_t n) {
    if (v.size() < n) v.resize(n);
    return v.data();
}

void emulatedGemm(Trans ta, Trans tb, int M, int N, int K, float alpha, const float* A,
                  const uint16_t* Abf16, int lda, const float* B, const uint16_t* Bbf16, int ldb,
                  float beta, float* C, int ldc) {
    const int aRows = ta == Trans::No ? M : K, aCols = ta == Trans::No ? K : M;
    const int bRows = tb == Trans::No ? K : N, bCols = tb == Trans::No ? N : K;
    Scratch& s = scratch();
    float* a = sized(s.fa, size_t(aRows) * aCols);
    float* b = sized(s.fb, size_t(bRows) * bCols);
    bf16Values(A, Abf16, lda, aRows, aCols, a);
    bf16Values(B, Bbf16, ldb, bRows, bCols, b);
    matmul<float>(MatmulBackend::OpenBlas, ta, tb, M, N, K, alpha, a, aCols, b, bCols, beta, C,
                  ldc);
}

}  // namespace

Bf16Path bf16Path() {
    return probePath();
}

std::string bf16PathDescription() {
    std::string text;
    switch (bf16Path()) {
        case Bf16Path::Amx:
            text = "bf16 on AMX";
            break;
        case Bf16Path::Avx512Bf16:
            text = "bf16 on AVX512-BF16";
            break;
        case Bf16Path::Emulated:
            text = "bf16 emulated in fp32 (this CPU has no bf16 instructions)";
            break;
    }
    std::lock_guard lock(g_failureMutex);
    if (!g_failure.empty()) text += "; some products emulated in fp32: " + g_failure;
    return text;
}

namespace detail {
void forceBf16Emulation(bool on) {
    g_forceEmulation.store(on, std::memory_order_relaxed);
}

std::string prepareOneDnnBf16(Trans ta, Trans tb, int M, int N, int K, float alpha, int lda,
                              int ldb, float beta, int ldc) {
    std::string error;
    gemmCache().get(keyFor(ta, tb, M, N, K, alpha, lda, ldb, beta, ldc), &error);
    return error;
}
}  // namespace detail

void matmulBf16(Trans ta, Trans tb, int M, int N, int K, float alpha, const float* A,
                const uint16_t* Abf16, int lda, const float* B, const uint16_t* Bbf16, int ldb,
                float beta, float* C, int ldc) {
    assert(M >= 0 && N >= 0 && K >= 0);
    assert(ldc >= N);
    assert(lda >= (ta == Trans::No ? K : M));
    assert(ldb >= (tb == Trans::No ? N : K));
    assert((A || Abf16 || K == 0) && (B || Bbf16 || K == 0));
    if (M <= 0 || N <= 0) return;
    if (K == 0) {  // nothing to multiply: C = beta·C, and C is not read when beta == 0
        for (int i = 0; i < M; ++i) {
            float* row = C + int64_t{i} * ldc;
            if (beta == 0.0f) {
                std::fill(row, row + N, 0.0f);
            } else if (beta != 1.0f) {
                for (int j = 0; j < N; ++j) row[j] *= beta;
            }
        }
        return;
    }
    if (bf16Path() == Bf16Path::Emulated || g_forceEmulation.load(std::memory_order_relaxed)) {
        emulatedGemm(ta, tb, M, N, K, alpha, A, Abf16, lda, B, Bbf16, ldb, beta, C, ldc);
        return;
    }

    // Operands not packed by the caller are packed densely (stored shape, leading dimension =
    // stored columns).
    const int aRows = ta == Trans::No ? M : K, aCols = ta == Trans::No ? K : M;
    const int bRows = tb == Trans::No ? K : N, bCols = tb == Trans::No ? N : K;
    Scratch& s = scratch();
    // The packed operand and its leading dimension: the caller's, or a dense copy in `buffer`.
    const auto operand = [](const float* values, const uint16_t* prepacked, int ld, int rows,
                            int cols, std::vector<uint16_t>& buffer) {
        if (prepacked) return std::pair<const uint16_t*, int>{prepacked, ld};
        uint16_t* packed = sized(buffer, size_t(rows) * cols);
        packBf16(values, ld, rows, cols, packed);
        return std::pair<const uint16_t*, int>{packed, cols};
    };
    // Plain variables, not structured bindings: clang 14 (the fuzz build) cannot capture those
    // in the lambda below.
    const std::pair<const uint16_t*, int> packedA = operand(A, Abf16, lda, aRows, aCols, s.a);
    const std::pair<const uint16_t*, int> packedB = operand(B, Bbf16, ldb, bRows, bCols, s.b);
    const uint16_t* const a = packedA.first;
    const uint16_t* const b = packedB.first;
    const int la = packedA.second, lb = packedB.second;

    // One primitive per block shape, found or created here on the calling thread, so a failure
    // is seen before any block runs (and the whole product then takes the emulated path).
    const detail::MatmulPartition part = detail::matmulPartition(M, N, K);
    std::vector<std::shared_ptr<const Gemm>> gemms(size_t(part.blocks));
    for (int i = 0; i < part.blocks; ++i) {
        const int len = part.end(i) - part.begin(i);
        if (len <= 0) continue;
        const int bm = part.splitRows ? len : M, bn = part.splitRows ? N : len;
        const bool same =
            i > 0 && gemms[size_t(i - 1)] && len == part.end(i - 1) - part.begin(i - 1);
        if (same) {
            gemms[size_t(i)] = gemms[size_t(i - 1)];
            continue;
        }
        std::string error;
        gemms[size_t(i)] =
            gemmCache().get(keyFor(ta, tb, bm, bn, K, alpha, la, lb, beta, ldc), &error);
        if (!gemms[size_t(i)]) {
            recordFailure(error);
            emulatedGemm(ta, tb, M, N, K, alpha, A, Abf16, lda, B, Bbf16, ldb, beta, C, ldc);
            return;
        }
    }
    const auto runBlock = [&](int index) {
        const int begin = part.begin(index), end = part.end(index);
        if (end <= begin) return;
        if (part.splitRows) {
            const uint16_t* ab = ta == Trans::No ? a + int64_t{begin} * la : a + begin;
            execute(*gemms[size_t(index)], ab, b, C + int64_t{begin} * ldc);
        } else {
            const uint16_t* bb = tb == Trans::No ? b + begin : b + int64_t{begin} * lb;
            execute(*gemms[size_t(index)], a, bb, C + begin);
        }
    };
    if (part.blocks == 1) {
        runBlock(0);
    } else {
        parallelRun(part.blocks, [&](int index, int) { runBlock(index); });
    }
}

}  // namespace ws::tensor
