// SPDX-License-Identifier: GPL-3.0-or-later
// wafer_bench: the emulator's own cost. Times (median of repeats, same run):
//   1. one full WSE-2-size utilization frame (750 x 994 cores) of a Cerebras-GPT 111M block's
//      forward at batch 120 x 2048 - every core's busy cycles from its real tile, averaged to
//      256 x 256 for display - beside the reference: memset + copy of a buffer of as many floats;
//   2. a whole step prediction (every layer phase, no frames) for the same model;
//   3. a step prediction with all 7 frames on the teaching wafer for the gpt-nano shape (what a
//      training run with the emulator on pays per step), beside one real forward + backward of
//      that model on the CPU (the step it would be attached to).
// Not run by CTest.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <vector>

#include "bench_machine.h"
#include "engine/model/gpt.h"
#include "engine/wafer/cycle_model.h"

namespace {

using Clock = std::chrono::steady_clock;
using ws::wafer::Pass;

double medianMs(int repeats, const std::function<void()>& work) {
    std::vector<double> ms;
    for (int i = 0; i < repeats; ++i) {
        const auto t0 = Clock::now();
        work();
        ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
    }
    std::sort(ms.begin(), ms.end());
    return ms[ms.size() / 2];
}

ws::model::GptShape shape(int C, int L, int NH, int V, int maxT) {
    ws::model::GptShape s;
    s.vocab = V;
    s.channels = C;
    s.layers = L;
    s.heads = NH;
    s.ffn = 4 * C;
    s.maxPositions = maxT;
    return s;
}

}  // namespace

int main() {
    ws::bench::printMachine();
    auto wse2 = ws::wafer::loadWaferSpec("wse2");
    auto teaching = ws::wafer::loadWaferSpec("teaching-16x16");
    if (!wse2.ok() || !teaching.ok()) {
        std::fprintf(stderr, "cannot load wafer specs: %s\n",
                     (!wse2.ok() ? wse2 : teaching).error().message.c_str());
        return 1;
    }
    const auto gpt111m = shape(768, 10, 12, 50257, 2048);
    auto block = ws::wafer::blockOps(gpt111m, 120, 2048, Pass::Forward, *wse2, nullptr);
    if (auto s = ws::wafer::planLayer(block, *wse2); !s.ok()) {
        std::fprintf(stderr, "%s\n", s.error().message.c_str());
        return 1;
    }
    const size_t cores = size_t(wse2->cores());
    float sink = 0;
    const double frameMs = medianMs(9, [&] {
        const auto busy = ws::wafer::coreBusyCycles(block, *wse2);
        const auto f =
            ws::wafer::downsample("h forward", busy, wse2->gridRows, wse2->gridCols, 256, 256);
        sink += f.busy[0];
    });
    std::vector<float> src(cores, 1.0f), dst(cores);
    const double refMs = medianMs(9, [&] {
        std::memset(dst.data(), 0, cores * sizeof(float));
        std::memcpy(dst.data(), src.data(), cores * sizeof(float));
        sink += dst[cores / 2];
    });
    std::printf("WSE-2 frame (%zu cores, %zu ops of a 111M block forward): %.2f ms\n", cores,
                block.ops.size(), frameMs);
    std::printf("  reference: memset + memcpy of %zu floats: %.3f ms (frame = %.0fx)\n", cores,
                refMs, frameMs / refMs);

    ws::wafer::StepInput in{gpt111m, 120, 2048, 16, nullptr};
    const double stepMs = medianMs(5, [&] {
        auto p = ws::wafer::predictStep(*wse2, in, {.frames = false});
        sink += float(p.ok() ? p->stepS : 0);
    });
    std::printf("WSE-2 step prediction, 111M on 16 systems, no frames: %.2f ms\n", stepMs);

    // presets/gpt-nano.yaml: 4 x 128, byte vocabulary, batch 16 x 128.
    ws::wafer::StepInput nano{shape(128, 4, 4, 256, 128), 16, 128, 1, nullptr};
    const double nanoMs = medianMs(21, [&] {
        auto p = ws::wafer::predictStep(*teaching, nano);
        sink += float(p.ok() ? p->frames.size() : 0);
    });
    ws::model::Gpt<float> gpt(nano.shape, 16, 128);
    std::vector<float> params(gpt.table().totalSize(), 0.01f), grads(params.size());
    std::vector<int32_t> tokens(16 * 128);
    for (size_t i = 0; i < tokens.size(); ++i) tokens[i] = int32_t((i * 31) % 256);
    const double trainMs = medianMs(7, [&] {
        sink += gpt.forward(params.data(), tokens.data(), tokens.data(), true, 1);
        gpt.backward(params.data(), grads.data());
    });
    std::printf("teaching-16x16 step prediction with 7 frames, gpt-nano B=16 T=128: %.3f ms\n",
                nanoMs);
    std::printf(
        "  reference: one gpt-nano forward + backward on this CPU: %.2f ms (emulator = "
        "%.2f%% of it)\n",
        trainMs, 100.0 * nanoMs / trainMs);
    return sink == -1.0f ? 1 : 0;
}
