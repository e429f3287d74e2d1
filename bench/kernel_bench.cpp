// SPDX-License-Identifier: GPL-3.0-or-later
// wafer_kernel_bench: the Highway element kernels (tensor/simd.h) beside their scalar references
// measured in the same run, on GPT-2-small-sized buffers: the AdamW update over 124M parameters
// (p, g, m, v: 2 GB; memory-bound) and over a 64K-parameter slice that stays in L2 (the kernel's
// arithmetic), GELU forward and backward over B*T*4C = 4*256*3072 activations, LayerNorm forward
// and input gradient over B*T = 1024 rows of C = 768, the bf16 conversions (round in place,
// pack float -> bf16 bits, unpack) over a 768x3072 weight and 4*256x3072 activations, and
// SwarmX's gradient reduce of a GPT-2-small block over 4 and 16 systems. The
// references are the loops the kernels replaced: AdamW's and LayerNorm's compiled for baseline
// x86-64, GELU's with GCC target clones (already AVX-512 here). Each kernel runs on the target
// Highway chose and on every other target this CPU can run, single-threaded and on the compute
// threads (static partitions, as the engine runs them). Prints the median of several runs in G
// elements/s and GB/s.
// "*" marks the target the engine uses on this CPU.
// Usage: wafer_kernel_bench [--quick] [--threads N]. Not run by CTest.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "bench_machine.h"
#include "engine/model/element_kernels.h"
#include "engine/optim/adamw_kernel.h"
#include "engine/streaming/swarmx.h"
#include "engine/tensor/bf16.h"
#include "engine/tensor/simd.h"
#include "engine/tensor/threads.h"

namespace {

namespace kernels = ws::model::kernels;
namespace optim = ws::optim;
namespace streaming = ws::streaming;
namespace tensor = ws::tensor;
using Clock = std::chrono::steady_clock;

double medianSeconds(int repeats, const std::function<void()>& run) {
    run();  // warm-up: page faults, caches, the dispatch table
    std::vector<double> times;
    for (int r = 0; r < repeats; ++r) {
        const auto t0 = Clock::now();
        run();
        times.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
    }
    std::sort(times.begin(), times.end());
    return times[times.size() / 2];
}

std::vector<float> randomBuffer(size_t n, float scale, bool positive, uint32_t seed) {
    std::vector<float> v(n);
    std::mt19937 rng(seed);
    std::normal_distribution<float> normal(0.0f, scale);
    for (auto& x : v) x = positive ? std::abs(normal(rng)) : normal(rng);
    return v;
}

// Runs span(begin, end) over [0, n) in the engine's static partition for `threads` threads.
void partitioned(int64_t n, int threads, const std::function<void(int64_t, int64_t)>& span) {
    tensor::parallelFor(n, threads, [&](int64_t begin, int64_t end) { span(begin, end); });
}

struct Row {
    std::string kernel, impl;
    int threads;
    double seconds, elements, bytes;
    double reference;  // seconds of the reference at the same size and threads
};

void print(const Row& r) {
    std::printf("%-22s %-26s %2d  %9.3f ms  %7.2f Gelem/s  %6.1f GB/s  %5.2fx\n", r.kernel.c_str(),
                r.impl.c_str(), r.threads, r.seconds * 1e3, r.elements / r.seconds / 1e9,
                r.bytes / r.seconds / 1e9, r.reference / r.seconds);
}

}  // namespace

int main(int argc, char** argv) {
    bool quick = false;
    int threads = 0;
    for (int i = 1; i < argc; ++i) {
        if (std::strcmp(argv[i], "--quick") == 0) {
            quick = true;
        } else if (std::strcmp(argv[i], "--threads") == 0 && i + 1 < argc) {
            threads = std::atoi(argv[++i]);
        } else {
            std::fprintf(stderr, "usage: wafer_kernel_bench [--quick] [--threads N]\n");
            return 2;
        }
    }
    ws::bench::printMachine();
    tensor::setComputeThreads(threads);
    const int poolThreads = tensor::computeThreads();
    const std::string chosen = tensor::simdTargetName();
    std::printf("Highway target chosen: %s; compute threads: %d\n", chosen.c_str(), poolThreads);
    std::printf("%-22s %-26s %2s  %12s  %15s  %11s  %s\n", "kernel", "implementation", "th",
                "median", "throughput", "traffic", "vs reference");

    const int repeats = quick ? 3 : 7;
    const size_t adamParams = quick ? 12'400'000 : 124'439'808;  // GPT-2 small
    const size_t adamL2 = 65'536;
    const int64_t geluCount = 4LL * 256 * 4 * 768;  // B*T*4C

    optim::AdamwConstants c;
    c.gradScale = 1.0f;
    c.beta1 = 0.9f;
    c.beta2 = 0.95f;
    c.stepSize = 6e-4f;
    c.invSqrtC2 = 1.0f;
    c.keep = 1.0f - 6e-5f;
    c.eps = 1e-8f;
    auto p = randomBuffer(adamParams, 0.02f, false, 1);
    auto g = randomBuffer(adamParams, 1e-3f, false, 2);
    auto m = randomBuffer(adamParams, 1e-4f, false, 3);
    auto v = randomBuffer(adamParams, 1e-8f, true, 4);
    const auto x = randomBuffer(size_t(geluCount), 1.0f, false, 5);
    const auto dy = randomBuffer(size_t(geluCount), 1e-3f, false, 6);
    std::vector<float> y(static_cast<size_t>(geluCount)), dx(static_cast<size_t>(geluCount));
    // LayerNorm: B*T rows of C.
    const int lnRows = 4 * 256, lnC = 768;
    const auto lnX = randomBuffer(size_t(lnRows) * lnC, 1.0f, false, 7);
    const auto lnW = randomBuffer(size_t(lnC), 1.0f, false, 8);
    const auto lnB = randomBuffer(size_t(lnC), 0.1f, false, 9);
    const auto lnDy = randomBuffer(size_t(lnRows) * lnC, 1e-3f, false, 10);
    std::vector<float> lnY(lnX.size()), lnDx(lnX.size()), lnMean(static_cast<size_t>(lnRows)),
        lnRstd(static_cast<size_t>(lnRows));
    kernels::reference::layerNormRows(lnY.data(), lnMean.data(), lnRstd.data(), lnX.data(),
                                      lnW.data(), lnB.data(), 0, lnRows, lnC, 1e-5f);
    // bf16 conversions: a GPT-2-small MLP weight (C, 4C) and its activations (B*T, 4C).
    const int64_t bf16Weight = 768LL * 3072, bf16Act = 4LL * 256 * 3072;
    auto bfW = randomBuffer(size_t(bf16Weight), 0.02f, false, 11);
    auto bfA = randomBuffer(size_t(bf16Act), 1.0f, false, 12);
    std::vector<uint16_t> bfPacked(static_cast<size_t>(bf16Act));
    std::vector<float> bfOut(static_cast<size_t>(bf16Act));

    // Element-wise kernels: updating the same buffers repeatedly changes nothing about speed.
    using Span = std::function<void(int64_t, int64_t)>;
    struct Kernel {
        std::string name;
        int64_t count;
        double bytesPerElement;  // per element (per value of a LayerNorm row)
        Span reference, simd;
    };
    std::vector<Kernel> kernelsToRun = {
        {"adamw 124M params", int64_t(adamParams), 28.0,
         [&](int64_t b, int64_t e) {
             optim::adamwUpdateReference(c, p.data() + b, g.data() + b, m.data() + b, v.data() + b,
                                         size_t(e - b));
         },
         [&](int64_t b, int64_t e) {
             optim::adamwUpdate(c, p.data() + b, g.data() + b, m.data() + b, v.data() + b,
                                size_t(e - b));
         }},
        {"adamw 64K (in L2)", int64_t(adamL2), 28.0,
         [&](int64_t b, int64_t e) {
             for (int r = 0; r < 100; ++r)
                 optim::adamwUpdateReference(c, p.data() + b, g.data() + b, m.data() + b,
                                             v.data() + b, size_t(e - b));
         },
         [&](int64_t b, int64_t e) {
             for (int r = 0; r < 100; ++r)
                 optim::adamwUpdate(c, p.data() + b, g.data() + b, m.data() + b, v.data() + b,
                                    size_t(e - b));
         }},
        {"gelu forward 4x256x3072", geluCount, 8.0,
         [&](int64_t b, int64_t e) { kernels::reference::geluForward(y.data(), x.data(), b, e); },
         [&](int64_t b, int64_t e) { kernels::geluForward(y.data(), x.data(), b, e); }},
        {"gelu backward", geluCount, 12.0,
         [&](int64_t b, int64_t e) {
             kernels::reference::geluBackward(dx.data(), x.data(), dy.data(), b, e);
         },
         [&](int64_t b, int64_t e) {
             kernels::geluBackward(dx.data(), x.data(), dy.data(), b, e);
         }},
        {"layernorm fwd 1024x768", lnRows, 12.0,
         [&](int64_t b, int64_t e) {
             kernels::reference::layerNormRows(lnY.data(), lnMean.data(), lnRstd.data(), lnX.data(),
                                               lnW.data(), lnB.data(), int(b), int(e), lnC, 1e-5f);
         },
         [&](int64_t b, int64_t e) {
             kernels::layerNormRows(lnY.data(), lnMean.data(), lnRstd.data(), lnX.data(),
                                    lnW.data(), lnB.data(), int(b), int(e), lnC, 1e-5f);
         }},
        {"layernorm bwd (dinp)", lnRows, 16.0,
         [&](int64_t b, int64_t e) {
             kernels::reference::layerNormGradRows(lnDx.data(), lnDy.data(), lnX.data(), lnW.data(),
                                                   lnMean.data(), lnRstd.data(), int(b), int(e),
                                                   lnC);
         },
         [&](int64_t b, int64_t e) {
             kernels::layerNormGradRows(lnDx.data(), lnDy.data(), lnX.data(), lnW.data(),
                                        lnMean.data(), lnRstd.data(), int(b), int(e), lnC);
         }},
    };
    // Rounding in place: after the first run the values are bf16 already, which the integer
    // rounding does not notice.
    using BfSpan = void (*)(const float*, float*, size_t);
    using PackSpan = void (*)(const float*, uint16_t*, size_t);
    using UnpackSpan = void (*)(const uint16_t*, float*, size_t);
    const auto roundIn = [](std::vector<float>& buf, BfSpan f) {
        return
            [&buf, f](int64_t b, int64_t e) { f(buf.data() + b, buf.data() + b, size_t(e - b)); };
    };
    const auto packFrom = [&](std::vector<float>& buf, PackSpan f) {
        return [&buf, &bfPacked, f](int64_t b, int64_t e) {
            f(buf.data() + b, bfPacked.data() + b, size_t(e - b));
        };
    };
    const auto unpackTo = [&](UnpackSpan f) {
        return [&bfPacked, &bfOut, f](int64_t b, int64_t e) {
            f(bfPacked.data() + b, bfOut.data() + b, size_t(e - b));
        };
    };
    for (auto [label, buf, count] :
         {std::tuple{"768x3072", &bfW, bf16Weight}, std::tuple{"4x256x3072", &bfA, bf16Act}}) {
        kernelsToRun.push_back({std::string("bf16 round ") + label, count, 8.0,
                                roundIn(*buf, tensor::reference::roundToBf16Span),
                                roundIn(*buf, tensor::roundToBf16Span)});
        kernelsToRun.push_back({std::string("bf16 pack ") + label, count, 6.0,
                                packFrom(*buf, tensor::reference::floatToBf16Span),
                                packFrom(*buf, tensor::floatToBf16Span)});
        kernelsToRun.push_back({std::string("bf16 unpack ") + label, count, 6.0,
                                unpackTo(tensor::reference::bf16ToFloatSpan),
                                unpackTo(tensor::bf16ToFloatSpan)});
    }

    std::vector<int> teamSizes = {1};
    if (poolThreads > 1) teamSizes.push_back(poolThreads);
    for (const auto& k : kernelsToRun) {
        const double inner = k.name.find("in L2") != std::string::npos ? 100.0 : 1.0;
        const double perItem = k.name.rfind("layernorm", 0) == 0 ? double(lnC) : 1.0;
        const double elements = double(k.count) * inner * perItem;
        for (int team : teamSizes) {
            const double ref =
                medianSeconds(repeats, [&] { partitioned(k.count, team, k.reference); });
            print({k.name, "scalar reference", team, ref, elements, elements * k.bytesPerElement,
                   ref});
            for (int64_t target : tensor::simdRunnableTargets()) {
                tensor::simdForceTarget(target);
                const double t =
                    medianSeconds(repeats, [&] { partitioned(k.count, team, k.simd); });
                const std::string name = tensor::simdTargetLabel(target);
                const std::string label = "highway " + name + (name == chosen ? " *" : "");
                print({k.name, label, team, t, elements, elements * k.bytesPerElement, ref});
            }
            tensor::simdForceTarget(0);
        }
    }

    // SwarmX's gradient reduce of one GPT-2-small block's gradients (7.1M) over 4 and 16 systems:
    // the one-pass tree (compiler clones, not Highway) beside the first implementation (a copy
    // and a read-modify-write pass per child). Traffic counts the unavoidable part: every input
    // read once and the output written once.
    const size_t blockParams = quick ? 708'787 : 7'087'872;
    for (int systems : {4, 16}) {
        std::vector<std::vector<float>> grads;
        for (int s = 0; s < systems; ++s) {
            grads.push_back(randomBuffer(blockParams, 1e-3f, false, uint32_t(20 + s)));
        }
        std::vector<float> reduced(blockParams);
        using Reduce =
            void (*)(const std::vector<const float*>&, size_t, float*, bool, std::vector<float>&);
        const auto reduceSpan = [&](Reduce f) {
            return [&, f](int64_t b, int64_t e) {
                thread_local std::vector<float> scratch;
                std::vector<const float*> inputs;
                for (const auto& system : grads) inputs.push_back(system.data() + b);
                f(inputs, size_t(e - b), reduced.data() + b, false, scratch);
            };
        };
        char name[48];
        std::snprintf(name, sizeof name, "swarmx reduce %d x %.1fM", systems, blockParams / 1e6);
        const double elements = double(blockParams), bytes = elements * 4.0 * (systems + 1);
        for (int team : teamSizes) {
            const double ref = medianSeconds(repeats, [&] {
                partitioned(int64_t(blockParams), team,
                            reduceSpan(streaming::reference::treeReduce));
            });
            print({name, "first implementation", team, ref, elements, bytes, ref});
            const double t = medianSeconds(repeats, [&] {
                partitioned(int64_t(blockParams), team, reduceSpan(streaming::treeReduce));
            });
            print({name, "one pass per node", team, t, elements, bytes, ref});
        }
    }
    return 0;
}
