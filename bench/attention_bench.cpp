// SPDX-License-Identifier: GPL-3.0-or-later
// wafer_attention_bench: causal self-attention forward + backward as the model runs it (memory
// per head linear in T: the backward recomputes each row block's probabilities from q, k and the
// saved row statistics) beside the implementation that stored the (B,NH,T,T) probabilities
// (tests/engine/model/stored_attention_reference.h, which gives the same bits), timed in the same
// run with the two taking turns, in fp32 and in bf16 mode, on GPT-2 small's attention (B=4,
// T=256, C=768, NH=12) and Cerebras-GPT 111M's at its context (B=1, T=2048, C=768, NH=12). Prints
// the median milliseconds of one layer's forward and backward, the ratio, and the bytes each
// keeps between them besides qkv. Usage: wafer_attention_bench [--threads N] [--repeats N].
// Not run by CTest.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "bench_machine.h"
#include "engine/model/ops.h"
#include "engine/model/random.h"
#include "engine/tensor/bf16.h"
#include "engine/tensor/matmul.h"
#include "engine/tensor/threads.h"
#include "stored_attention_reference.h"

namespace {

namespace model = ws::model;
namespace tensor = ws::tensor;
using Clock = std::chrono::steady_clock;

struct Shape {
    const char* label;
    int B, T, C, NH;
};

struct Timing {
    std::vector<double> forward, backward;
};

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

double seconds(Clock::time_point a, Clock::time_point b) {
    return std::chrono::duration<double>(b - a).count();
}

void run(const Shape& s, bool bf16, int repeats) {
    const size_t n = size_t(s.B) * s.T * s.C;
    std::vector<float> qkv(3 * n), dout(n);
    for (size_t i = 0; i < qkv.size(); ++i) qkv[i] = float(4.0 * model::rng::uniform(1, i) - 2.0);
    for (size_t i = 0; i < dout.size(); ++i) dout[i] = float(model::rng::uniform(2, i) - 0.5);
    if (bf16) tensor::roundToBf16(qkv.data(), qkv.size());
    const float scale = 1.0f / std::sqrt(float(s.C / s.NH));
    const double dropout = 0.0;
    const uint64_t key = 7;
    const size_t rows = size_t(s.B) * s.NH * s.T;
    std::vector<float> out(n), dqkv(3 * n), rowMax(rows), rowSum(rows);
    std::vector<float> probs(rows * size_t(s.T));
    Timing ours, stored;
    for (int r = 0; r < repeats + 1; ++r) {  // the first round warms up (page faults, primitives)
        auto t0 = Clock::now();
        model::ops::attentionForward(out.data(), rowMax.data(), rowSum.data(), qkv.data(), s.B, s.T,
                                     model::ops::AttentionShape{s.NH, s.NH, s.C / s.NH}, scale,
                                     dropout, key, bf16);
        auto t1 = Clock::now();
        model::ops::attentionBackward(
            dqkv.data(), dout.data(), qkv.data(), rowMax.data(), rowSum.data(), s.B, s.T,
            model::ops::AttentionShape{s.NH, s.NH, s.C / s.NH}, scale, dropout, key, bf16);
        auto t2 = Clock::now();
        if (r > 0) {
            ours.forward.push_back(seconds(t0, t1));
            ours.backward.push_back(seconds(t1, t2));
        }
        t0 = Clock::now();
        model::testing::storedAttentionForward(out.data(), probs.data(), qkv.data(), s.B, s.T, s.C,
                                               s.NH, scale, dropout, key, bf16);
        t1 = Clock::now();
        model::testing::storedAttentionBackward(dqkv.data(), dout.data(), qkv.data(), probs.data(),
                                                s.B, s.T, s.C, s.NH, scale, dropout, key, bf16);
        t2 = Clock::now();
        if (r > 0) {
            stored.forward.push_back(seconds(t0, t1));
            stored.backward.push_back(seconds(t1, t2));
        }
    }
    const double of = median(ours.forward) * 1e3, ob = median(ours.backward) * 1e3;
    const double sf = median(stored.forward) * 1e3, sb = median(stored.backward) * 1e3;
    std::printf(
        "  %s  recompute: forward %7.1f + backward %7.1f = %7.1f ms   stored: %7.1f + %7.1f "
        "= %7.1f ms   => %.2fx the stored time\n",
        bf16 ? "bf16" : "fp32", of, ob, of + ob, sf, sb, sf + sb, (of + ob) / (sf + sb));
    if (!bf16) {
        std::printf(
            "        kept between forward and backward besides qkv: %.2f MiB (row max and "
            "sum) vs %.1f MiB (probabilities)\n",
            double(2 * rows * sizeof(float)) / (1 << 20),
            double(probs.size() * sizeof(float)) / (1 << 20));
    }
}

}  // namespace

int main(int argc, char** argv) {
    ws::bench::printMachine();
    int threads = 0, repeats = 5;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if (a == "--threads" && i + 1 < argc) {
            threads = std::atoi(argv[++i]);
        } else if (a == "--repeats" && i + 1 < argc) {
            repeats = std::max(1, std::atoi(argv[++i]));
        } else {
            std::printf("usage: wafer_attention_bench [--threads N] [--repeats N]\n");
            return a == "--help" || a == "-h" ? 0 : 2;
        }
    }
    tensor::setComputeThreads(threads);
    std::printf("bf16 matmuls: %s; %d compute threads; median of %d, the two take turns\n",
                tensor::bf16PathDescription().c_str(), tensor::computeThreads(), repeats);
    const Shape shapes[] = {
        {"GPT-2 small attention, one layer (B=4, T=256, C=768, NH=12)", 4, 256, 768, 12},
        {"Cerebras-GPT 111M attention, one layer (B=1, T=2048, C=768, NH=12)", 1, 2048, 768, 12}};
    for (const Shape& s : shapes) {
        std::printf("\n== %s\n", s.label);
        for (bool bf16 : {false, true}) run(s, bf16, repeats);
    }
    return 0;
}
