// SPDX-License-Identifier: GPL-3.0-or-later
// wafer_sample_bench: greedy generation speed of the KV-cached decoder (sample::KvDecoder) against
// the reference measured in the same run: re-running model::Gpt<float>::forward over the whole
// prefix for every new token (what generation costs without a cache). For each shape (the
// gpt-nano preset's shape, a GPT-2-small-like shape and SmolLM-135M's Llama shape with
// grouped-query attention (9 heads sharing 3 KV heads, so the cache holds a third of the K and V
// multi-head attention would), random weights) and each length N, both
// generate N - 1 tokens after a one-token prompt; the reference's Gpt objects are built outside
// the timed region, so only its forward passes count. Prints tokens/s of both, the speed-up, and
// whether both produced the same tokens (they must, up to float reassociation).
// --precision bf16 instead times the decoder in bf16 mode (GptShape::bf16: weights packed to bf16
// once; decoded tokens on the bf16 GEMV, tensor/gemv_bf16.h) against the same decoder in fp32,
// runs interleaved in the same process, and prints tokens/s of both, bf16 / fp32, the GB/s of
// weights each reads per second beside a same-run reference (the compute threads reading a buffer
// as large as the bf16 weights), the SIMD target of the GEMV and the bf16 path oneDNN chose, and
// one decoded token's block and logits products on each kernel.
// Usage: wafer_sample_bench [--quick] [--threads N] [--precision fp32|bf16]. Not run by CTest.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "bench_machine.h"
#include "engine/model/gpt.h"
#include "engine/model/parameters.h"
#include "engine/model/random.h"
#include "engine/sample/kv_decoder.h"
#include "engine/sample/sampler.h"
#include "engine/tensor/bf16.h"
#include "engine/tensor/gemv_bf16.h"
#include "engine/tensor/matmul.h"
#include "engine/tensor/simd.h"
#include "engine/tensor/threads.h"

namespace {

namespace model = ws::model;
namespace sample = ws::sample;
using Clock = std::chrono::steady_clock;

double secondsSince(Clock::time_point start) {
    return std::chrono::duration<double>(Clock::now() - start).count();
}

struct BenchShape {
    const char* label;
    model::GptShape shape;
    std::vector<int> lengths;
};

model::GptShape makeShape(int V, int C, int L, int NH, int F, int maxT) {
    model::GptShape s;
    s.vocab = V;
    s.channels = C;
    s.layers = L;
    s.heads = NH;
    s.ffn = F;
    s.maxPositions = maxT;
    return s;
}

std::vector<float> randomParams(const model::GptShape& s) {
    const model::ParameterTable table(s);
    std::vector<float> p(table.totalSize());
    for (const auto& t : table.tensors()) {
        const bool gain =
            t.name.find("ln_") != std::string::npos && t.name.find(".weight") != std::string::npos;
        for (size_t i = 0; i < t.size; ++i) {
            const double z = model::rng::standardNormal(17, t.offset + i);
            p[t.offset + i] = float(gain ? 1.0 + 0.1 * z : 0.05 * z);
        }
    }
    return p;
}

struct Timing {
    double seconds = 0.0;
    std::vector<int32_t> tokens;
};

Timing runCached(const model::GptShape& s, const std::vector<float>& params, int length) {
    sample::KvDecoder decoder(s, params.data());
    Timing t;
    t.tokens = {1};
    const auto start = Clock::now();
    decoder.append(t.tokens);
    while (int(t.tokens.size()) < length) {
        const int32_t next = sample::argmax(decoder.logits(), s.vocab);
        t.tokens.push_back(next);
        if (int(t.tokens.size()) < length) decoder.append(std::vector<int32_t>{next});
    }
    t.seconds = secondsSince(start);
    return t;
}

Timing runReference(const model::GptShape& s, const std::vector<float>& params, int length) {
    Timing t;
    t.tokens = {1};
    while (int(t.tokens.size()) < length) {
        const int T = int(t.tokens.size());
        model::Gpt<float> gpt(s, 1, T);  // built outside the timed region
        const auto start = Clock::now();
        gpt.forward(params.data(), t.tokens.data(), nullptr, false, 0);
        const int32_t next = sample::argmax(gpt.logits(0, T - 1), s.vocab);
        t.seconds += secondsSince(start);
        t.tokens.push_back(next);
    }
    return t;
}

// Weights of the matrix products one decoded token reads: every block's four, and the logits'.
double matrixWeights(const model::GptShape& s) {
    const double C = s.channels, F = s.ffn;
    const double block = C * s.qkvWidth() + double(s.qWidth()) * C + C * s.mlpInWidth() + F * C;
    return s.layers * block + double(s.vocab) * C;
}

// SmolLM-135M: rotary, RMSNorm, SwiGLU, 3 KV heads for 9 query heads, no biases, tied head.
model::GptShape smollmShape() {
    model::GptShape s = makeShape(49152, 576, 30, 9, 1536, 2048);
    s.position = model::GptShape::Position::Rotary;
    s.norm = model::GptShape::Norm::RmsNorm;
    s.mlp = model::GptShape::Mlp::SwiGlu;
    s.kvHeads = 3;
    s.qkvBias = s.attnProjBias = s.mlpBias = false;
    return s;
}

// The reference for GB/s: the compute threads summing a buffer of `bytes` (the weights' size, 8
// independent sums), as a GEMV streams its weights; GB/s of the best of `reps` timings, each
// passing over the buffer often enough to take >= 20 ms.
double readBandwidth(size_t bytes, int reps) {
    static std::vector<uint64_t> buffer;
    buffer.assign(bytes / sizeof(uint64_t) / 8 * 8, 1);
    const int64_t n = int64_t(buffer.size());
    const int threads = ws::tensor::computeThreads();
    const int passes = int(std::max<size_t>(1, (size_t(400) << 20) / std::max<size_t>(bytes, 1)));
    std::vector<uint64_t> sums(size_t(threads), 0);
    double best = 0.0;
    for (int r = 0; r < reps; ++r) {
        const auto start = Clock::now();
        for (int pass = 0; pass < passes; ++pass) {
            ws::tensor::parallelRun(threads, [&](int index, int count) {
                const int64_t begin = n / 8 * index / count * 8;
                const int64_t end = n / 8 * (index + 1) / count * 8;
                uint64_t s[8] = {};
                for (int64_t i = begin; i < end; i += 8) {
                    for (int j = 0; j < 8; ++j) s[j] += buffer[size_t(i + j)];
                }
                for (uint64_t v : s) sums[size_t(index)] += v;
            });
        }
        best = std::max(best, double(bytes) * passes / secondsSince(start) / 1e9);
    }
    uint64_t total = 0;
    for (uint64_t v : sums) total += v;
    if (total != uint64_t(n) * uint64_t(reps) * uint64_t(passes)) std::printf("(miscounted)\n");
    return best;
}

// bf16 against fp32 generation with the KV-cached decoder: for each length, `rounds` rounds that
// each time fp32 then bf16 (so a change in the machine's load hits both alike); tokens/s from
// the summed times, and the GB/s of matrix weights that means (4 or 2 bytes each). Greedy tokens
// may differ between the precisions (random weights make the logits nearly tied), so the
// matching prefix is printed instead of a verdict.
void bf16AgainstFp32(const BenchShape& b, int rounds) {
    const double weights = matrixWeights(b.shape);
    const model::GptShape& sh = b.shape;
    std::printf(
        "\n%s, KV-cached, %d interleaved rounds; %.1f M matrix weights per token; KV cache %d "
        "bytes per token in fp32 (%d KV heads of %d)\n",
        b.label, rounds, weights / 1e6, 2 * sh.layers * sh.kvWidth() * 4, sh.kvHeadCount(),
        sh.heads);
    std::printf("%6s  %12s  %12s  %10s  %9s  %9s  %15s\n", "N", "fp32 tok/s", "bf16 tok/s",
                "bf16/fp32", "fp32 GB/s", "bf16 GB/s", "same prefix");
    model::GptShape bf16Shape = b.shape;
    bf16Shape.bf16 = true;
    const std::vector<float> params = randomParams(b.shape);
    for (int length : b.lengths) {
        double fp32Seconds = 0.0, bf16Seconds = 0.0;
        Timing fp32, bf16;
        for (int r = 0; r < rounds; ++r) {
            fp32 = runCached(b.shape, params, length);
            bf16 = runCached(bf16Shape, params, length);
            fp32Seconds += fp32.seconds;
            bf16Seconds += bf16.seconds;
        }
        const double generated = double(length - 1) * rounds;
        const auto mismatch = std::mismatch(fp32.tokens.begin(), fp32.tokens.end(),
                                            bf16.tokens.begin(), bf16.tokens.end());
        const long same = long(mismatch.first - fp32.tokens.begin());
        const double fp32Rate = generated / fp32Seconds, bf16Rate = generated / bf16Seconds;
        std::printf("%6d  %12.1f  %12.1f  %9.2fx  %9.1f  %9.1f  %8ld of %3d\n", length, fp32Rate,
                    bf16Rate, fp32Seconds / bf16Seconds, fp32Rate * weights * 4 / 1e9,
                    bf16Rate * weights * 2 / 1e9, same, length);
        std::fflush(stdout);
    }
    // Weights that fit in the last-level cache (gpt-nano's) are not bound by memory bandwidth.
    if (weights * 2 >= 64e6) {
        std::printf(
            "reference: %d threads read a buffer of the bf16 weights' size (%.0f MB) at "
            "%.1f GB/s\n",
            ws::tensor::computeThreads(), weights * 2 / 1e6, readBandwidth(size_t(weights * 2), 5));
    }
}

// One decoded token's projection, x (1,C) · W (C,F), through each matmul backend: the reason
// KvDecoder sends single rows to Eigen (a GEMV) rather than OpenBLAS's sgemm (which packs W).
void oneRowProduct(int C, int F) {
    std::vector<float> x(size_t(C), 0.5f), w(size_t(C) * F, 0.25f), y(static_cast<size_t>(F));
    std::printf("\none-row product (1,%d)x(%d,%d), GB/s of weights read:", C, C, F);
    for (auto backend : {ws::tensor::MatmulBackend::OpenBlas, ws::tensor::MatmulBackend::Eigen}) {
        const int reps = 200;
        const auto start = Clock::now();
        for (int r = 0; r < reps; ++r) {
            ws::tensor::matmul<float>(backend, ws::tensor::Trans::No, ws::tensor::Trans::No, 1, F,
                                      C, 1.0f, x.data(), C, w.data(), F, 0.0f, y.data(), F);
        }
        const double s = secondsSince(start);
        std::printf("  %s %.1f", std::string(ws::tensor::matmulBackendName(backend)).c_str(),
                    double(reps) * double(w.size()) * sizeof(float) / s / 1e9);
    }
    std::printf("\n");
}

// One decoded token's products with the weight packed once: the bf16 GEMV (as KvDecoder runs
// them) and the oneDNN bf16 backend, beside Eigen's fp32 GEMV (what the fp32 decoder runs), in
// G weights/s (bf16 reads half the bytes per weight): a block's (1,C)x(C,4C) and the logits'
// (1,C)x(V,C)^T. The block's weights fit in the last-level cache, the logits' do not.
void oneRowProductBf16(int C, int F, int V) {
    namespace tensor = ws::tensor;
    std::printf("\none-row products, G weights/s:\n");
    for (const bool transposed : {false, true}) {
        const int N = transposed ? V : F;
        const tensor::Trans tb = transposed ? tensor::Trans::Yes : tensor::Trans::No;
        const int ldb = transposed ? C : N;
        std::vector<float> x(size_t(C), 0.5f), w(size_t(C) * N, 0.25f), y(static_cast<size_t>(N));
        std::vector<uint16_t> packed(w.size());
        tensor::floatToBf16(w.data(), packed.data(), w.size());
        const tensor::Bf16PanelMatrix panels(tb, C, N, w.data(), ldb);
        std::printf("  (1,%d)x%s:", C,
                    transposed ? ("(" + std::to_string(V) + "," + std::to_string(C) + ")^T").c_str()
                               : ("(" + std::to_string(C) + "," + std::to_string(F) + ")").c_str());
        for (const char* kernel : {"fp32 (eigen)", "bf16 (oneDNN)", "bf16 (gemv)"}) {
            const int reps = transposed ? 20 : 200;
            const auto start = Clock::now();
            for (int r = 0; r < reps; ++r) {
                if (kernel[6] == 'g') {
                    tensor::gemvBf16(1, 1.0f, x.data(), C, panels, false, y.data(), N);
                } else if (kernel[0] == 'b') {
                    tensor::matmulBf16(tensor::Trans::No, tb, 1, N, C, 1.0f, x.data(), nullptr, C,
                                       w.data(), packed.data(), ldb, 0.0f, y.data(), N);
                } else {
                    tensor::matmul<float>(tensor::MatmulBackend::Eigen, tensor::Trans::No, tb, 1, N,
                                          C, 1.0f, x.data(), C, w.data(), ldb, 0.0f, y.data(), N);
                }
            }
            const double s = secondsSince(start);
            std::printf("  %s %.2f", kernel, double(reps) * double(w.size()) / s / 1e9);
        }
        std::printf("\n");
    }
}

}  // namespace

int main(int argc, char** argv) {
    ws::bench::printMachine();
    bool quick = false;
    std::string precision = "fp32";
    for (int i = 1; i < argc; ++i) {
        if (std::strcmp(argv[i], "--quick") == 0) {
            quick = true;
        } else if (std::strcmp(argv[i], "--precision") == 0 && i + 1 < argc &&
                   (std::strcmp(argv[i + 1], "fp32") == 0 ||
                    std::strcmp(argv[i + 1], "bf16") == 0)) {
            precision = argv[++i];
        } else if (std::strcmp(argv[i], "--threads") == 0 && i + 1 < argc) {
            ws::tensor::setComputeThreads(std::atoi(argv[++i]));
        } else {
            std::printf("usage: %s [--quick] [--threads N] [--precision fp32|bf16]\n", argv[0]);
            return std::strcmp(argv[i], "--help") == 0 ? 0 : 2;
        }
    }
    const std::vector<BenchShape> shapes = {
        {"gpt-nano (V=256, C=128, L=4, NH=4, F=512, maxT=128)", makeShape(256, 128, 4, 4, 512, 128),
         quick ? std::vector<int>{32, 128} : std::vector<int>{32, 64, 128}},
        {"GPT-2 small (V=50257, C=768, L=12, NH=12, F=3072, maxT=1024)",
         makeShape(50257, 768, 12, 12, 3072, 1024),
         quick ? std::vector<int>{16, 64} : std::vector<int>{16, 64, 128}},
        {"SmolLM-135M, Llama blocks (V=49152, C=576, L=30, NH=9, KV heads=3, F=1536)",
         smollmShape(), quick ? std::vector<int>{16, 64} : std::vector<int>{16, 64, 128}},
    };
    std::printf("compute threads: %d; greedy generation of N-1 tokens after a 1-token prompt\n",
                ws::tensor::computeThreads());
    if (precision == "bf16") {
        std::printf("bf16 matmuls: %s; bf16 GEMV (decoding) on %s\n",
                    ws::tensor::bf16PathDescription().c_str(),
                    ws::tensor::simdTargetName().c_str());
        for (const BenchShape& b : shapes) bf16AgainstFp32(b, quick ? 1 : 3);
        oneRowProductBf16(768, 3072, 50257);
        return 0;
    }
    for (const BenchShape& b : shapes) {
        std::printf("\n%s\n", b.label);
        std::printf("%6s  %14s  %14s  %8s  %11s\n", "N", "cached tok/s", "full-fwd tok/s",
                    "speed-up", "same tokens");
        const std::vector<float> params = randomParams(b.shape);
        for (int length : b.lengths) {
            const Timing cached = runCached(b.shape, params, length);
            const Timing reference = runReference(b.shape, params, length);
            const double generated = double(length - 1);
            const double cachedRate = generated / cached.seconds;
            const double referenceRate = generated / reference.seconds;
            std::printf("%6d  %14.1f  %14.1f  %7.1fx  %11s\n", length, cachedRate, referenceRate,
                        cachedRate / referenceRate,
                        cached.tokens == reference.tokens ? "yes" : "NO");
            std::fflush(stdout);
        }
    }
    oneRowProduct(768, 3072);
    return 0;
}
