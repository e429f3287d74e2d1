// SPDX-License-Identifier: GPL-3.0-or-later
// Wafer tab redraw cost, offscreen at 1600x1000: setting and replotting a WSE-2 utilization frame
// (750 x 994 cores, averaged to at most 256 x 256 display cells) beside a 16 x 16 teaching-wafer
// frame as the reference, and a whole tab redraw (heatmap, diagram, timeline) of a teaching
// step with 4 systems and every span. Frames alternate so each round really sets every cell.
// Target: well under one 60 Hz frame (16.7 ms). Prints median and worst of several rounds.
#include <QApplication>
#include <QElapsedTimer>
#include <algorithm>
#include <cstdio>
#include <vector>

#include "bench_machine.h"
#include "engine/wafer/cycle_model.h"
#include "engine/wafer/spec.h"
#include "ui/wafer/core_heatmap.h"
#include "ui/wafer/wafer_tab.h"

namespace {

std::shared_ptr<const ws::wafer::StepPrediction> predict(const char* spec, int systems) {
    auto loaded = ws::wafer::loadWaferSpecFile(std::string(WAFER_SOURCE_DIR "/presets/wafers/") +
                                               spec + ".yaml");
    if (!loaded.ok()) {
        std::fprintf(stderr, "%s\n", loaded.error().message.c_str());
        std::exit(1);
    }
    ws::wafer::StepInput input;
    input.shape.vocab = 256;
    input.shape.channels = 128;
    input.shape.layers = 4;
    input.shape.heads = 4;
    input.shape.ffn = 512;
    input.shape.maxPositions = 128;
    input.batchPerSystem = 4;
    input.seqLen = 128;
    input.numSystems = systems;
    input.microBatch = 1;
    auto p = ws::wafer::predictStep(*loaded, input);
    if (!p.ok()) {
        std::fprintf(stderr, "%s\n", p.error().message.c_str());
        std::exit(1);
    }
    return std::make_shared<const ws::wafer::StepPrediction>(std::move(p).value());
}

struct Timing {
    double median = 0, worst = 0;
};

template <class F>
Timing timeRounds(int rounds, F&& round) {
    std::vector<double> ms;
    for (int r = 0; r < rounds; ++r) {
        QElapsedTimer timer;
        timer.start();
        round(r);
        ms.push_back(double(timer.nsecsElapsed()) / 1e6);
    }
    std::sort(ms.begin(), ms.end());
    return {ms[ms.size() / 2], ms.back()};
}

Timing timeFrames(const std::shared_ptr<const ws::wafer::StepPrediction>& p, int rounds) {
    ws::ui::CoreHeatmap map;
    map.resize(1000, 700);
    map.show();
    QApplication::processEvents();
    return timeRounds(rounds, [&](int r) {
        map.showFrame(p, p->frameFor(r % 2 ? 1 : -1, false));
        map.replot(QCustomPlot::rpImmediateRefresh);
    });
}

}  // namespace

int main(int argc, char** argv) {
    ws::bench::printMachine();
    if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM")) qputenv("QT_QPA_PLATFORM", "offscreen");
    QApplication app(argc, argv);
    constexpr int kRounds = 21;

    const auto teaching = predict("teaching-16x16", 4);
    const auto wse2 = predict("wse2", 1);
    const auto* big = wse2->frameFor(-1, false);
    const Timing small = timeFrames(teaching, kRounds);
    const Timing large = timeFrames(wse2, kRounds);

    // A whole tab: the teaching step with every span of 4 systems, redrawn (live step).
    ws::ui::WaferTab tab;
    tab.resize(1600, 1000);
    tab.show();
    ws::config::Config config;
    config.model.numHiddenLayers = 4;
    config.runconfig.numCsx = 4;
    tab.beginRun(config);
    tab.setRunState(ws::session::RunState::Running);
    tab.addEmulatedStep({0, 0.0, teaching});
    std::vector<ws::streaming::Span> spans;
    for (const auto& t : teaching->spans) {
        ws::streaming::Span s;
        s.system = t.system;
        s.micro = t.micro;
        s.layer = t.layer;
        s.kind = t.kind;
        s.backwardPass = t.backwardPass;
        s.emuStart = s.start = t.startS;
        s.emuEnd = s.end = t.endS;
        spans.push_back(s);
    }
    tab.appendSpans(spans);
    QApplication::processEvents();
    const Timing whole = timeRounds(kRounds, [&](int) {
        tab.redrawNow();  // every view set and replotted into its buffer
        tab.repaint();    // and painted
    });

    std::printf("Wafer tab redraw, offscreen, median / worst of %d rounds\n", kRounds);
    std::printf("  heatmap 16 x 16 teaching frame      : %7.2f / %7.2f ms (reference)\n",
                small.median, small.worst);
    std::printf(
        "  heatmap %d x %d WSE-2 frame        : %7.2f / %7.2f ms (%.1fx the reference; "
        "60 Hz frame = 16.7 ms)\n",
        big->rows, big->cols, large.median, large.worst,
        large.median / std::max(small.median, 1e-6));
    std::printf("  whole tab, %zu spans of 4 systems  : %7.2f / %7.2f ms\n", spans.size(),
                whole.median, whole.worst);
    return 0;
}
