// SPDX-License-Identifier: GPL-3.0-or-later
// replay_bench: the cost of one slow-motion frame's engine work, wafer::StepReplay::stateAt (every
// link's bytes, the phase under the cursor, the buffer slots), which the Wafer tab calls ~30 times
// a second while a replay plays. Times (median of repeats, same run), for the schedule of a
// Cerebras-GPT 111M step (batch 120 x 2048, micro-batch 8) on 16 WSE-2 systems, the largest
// schedule a teacher is likely to replay (thousands of spans), and for gpt-nano on the teaching
// wafer: stateAt at 200 cursor positions, beside the reference wafer::bufferStateAt (the buffer
// slots alone, which the tab already draws per redraw) at the same positions. Not run by CTest.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <memory>
#include <vector>

#include "bench_machine.h"
#include "engine/wafer/replay.h"

namespace {

using Clock = std::chrono::steady_clock;

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

void run(const char* name, const ws::wafer::WaferSpec& spec, const ws::wafer::StepInput& in) {
    auto p = ws::wafer::predictStep(spec, in, {.frames = false});
    if (!p.ok()) {
        std::fprintf(stderr, "%s: %s\n", name, p.error().message.c_str());
        return;
    }
    auto prediction = std::make_shared<const ws::wafer::StepPrediction>(std::move(p).value());
    const ws::wafer::StepReplay replay(prediction, spec.ioBytesPerS());
    constexpr int kPositions = 200;
    double sink = 0;
    const double stateMs = medianMs(15, [&] {
        for (int i = 0; i < kPositions; ++i)
            sink += replay.stateAt(replay.durationS() * i / kPositions).weightsIn.bytesSoFar;
    });
    const double slotsMs = medianMs(15, [&] {
        for (int i = 0; i < kPositions; ++i)
            sink +=
                double(ws::wafer::bufferStateAt(*prediction, replay.durationS() * i / kPositions)
                           .slotStates.size());
    });
    std::printf(
        "%s: %zu spans; stateAt %.1f us per cursor position (reference bufferStateAt %.1f "
        "us, same positions); a 30 fps replay spends %.2f %% of a core on it%s\n",
        name, prediction->spans.size(), 1e3 * stateMs / kPositions, 1e3 * slotsMs / kPositions,
        100.0 * 30 * stateMs / kPositions / 1e3, sink < 0 ? " " : "");
}

}  // namespace

int main() {
    ws::bench::printMachine();
    auto wse2 = ws::wafer::loadWaferSpec("wse2");
    auto teaching = ws::wafer::loadWaferSpec("teaching-16x16");
    if (!wse2.ok() || !teaching.ok()) {
        std::fprintf(stderr, "cannot load wafer specs\n");
        return 1;
    }
    ws::wafer::StepInput big{shape(768, 10, 12, 50257, 2048), 120, 2048, 16, nullptr};
    big.microBatch = 8;
    run("Cerebras-GPT 111M, 16 x WSE-2, micro-batch 8", *wse2, big);
    ws::wafer::StepInput nano{shape(128, 4, 4, 256, 128), 16, 128, 1, nullptr};
    run("gpt-nano, teaching-16x16", *teaching, nano);
    return 0;
}
