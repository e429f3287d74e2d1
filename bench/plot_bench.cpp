// SPDX-License-Identifier: GPL-3.0-or-later
// Chart replot cost: 20 overlaid runs x 200k points each (every series smoothed and decimated
// per pixel, as the Training tab does) beside one run of 1k points, measured in the same process
// on offscreen 1600x1000 windows. Target (issue 31): a median frame under one 60 Hz frame
// (16.7 ms) and no frame over 50 ms at 20 x 200k. Prints:
// - taking the runs in: smoothing and min/max levels, once per data change (addRun);
// - static replots (the data unchanged, e.g. a crosshair-free repaint or a resize), the first
//   frame after taking the runs in included in the worst;
// - live frames: a run being trained appends 25 steps per coalesced update (40 ms) and the x
//   axis follows it, so every series is decimated again for the new range each frame;
// - a zoom: the x range halved, every series decimated for it.
// Each frame is TrainingTab::redrawNow() (what the 40 ms timer runs) plus the replot of the four
// charts it queues, done at once here. Figures are the GUI thread's CPU time per frame (what a
// frame costs on a free core; the offscreen painter runs on that thread), with the wall-clock
// median and worst beside them: on a machine shared with other jobs the wall clock also counts
// the time the thread waited for a core.
#include <QApplication>
#include <QElapsedTimer>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <random>
#include <vector>

#include "bench_machine.h"
#include "ui/training/training_tab.h"

namespace {

ws::ui::RunSeries syntheticRun(int64_t id, size_t points, std::mt19937& rng) {
    // A loss-like curve with noise and rare spikes, and the other charts' metrics.
    std::normal_distribution<double> noise(0.0, 0.05);
    ws::ui::RunSeries run;
    run.runId = id;
    run.name = "run " + std::to_string(id);
    run.tokensPerStep = 2048;
    auto& loss = run.metrics[ws::ui::kLoss];
    auto& lr = run.metrics[ws::ui::kLearningRate];
    auto& norm = run.metrics[ws::ui::kGradNorm];
    auto& speed = run.metrics[ws::ui::kTokensPerSec];
    for (size_t i = 0; i < points; ++i) {
        const double step = double(i + 1);
        const double wall = step * 0.01;
        double l = 2.0 + 3.5 * std::exp(-step / (double(points) / 8)) + noise(rng);
        if (i % 9973 == 0) l += 2.0;  // spikes that decimation must keep
        loss.append(step, wall, l);
        lr.append(step, wall, 3e-3 * std::min(1.0, step / 1000.0));
        norm.append(step, wall, 0.5 + std::fabs(noise(rng)));
        speed.append(step, wall, 20000 + 500 * noise(rng));
    }
    return run;
}

// This thread's CPU time in ms.
double threadCpuMs() {
    timespec t{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return double(t.tv_sec) * 1e3 + double(t.tv_nsec) / 1e6;
}

// A stopwatch of both clocks.
struct Clocks {
    QElapsedTimer wall;
    double cpu0 = threadCpuMs();
    Clocks() { wall.start(); }
    struct Ms {
        double cpu = 0, wall = 0;
    };
    Ms elapsed() const { return {threadCpuMs() - cpu0, double(wall.nsecsElapsed()) / 1e6}; }
};
using Ms = Clocks::Ms;

struct Timing {
    double median = 0, worst = 0;          // CPU
    double wallMedian = 0, wallWorst = 0;  // wall clock
};

Timing summarize(const std::vector<Ms>& frames) {
    std::vector<double> cpu, wall;
    for (const Ms& f : frames) {
        cpu.push_back(f.cpu);
        wall.push_back(f.wall);
    }
    if (frames.empty()) return {};
    std::sort(cpu.begin(), cpu.end());
    std::sort(wall.begin(), wall.end());
    return {cpu[cpu.size() / 2], cpu[cpu.size() - 1], wall[wall.size() / 2], wall[wall.size() - 1]};
}

Ms frame(ws::ui::TrainingTab& tab) {
    const Clocks clocks;
    tab.redrawNow();
    for (auto* panel : tab.panels()) panel->replot(QCustomPlot::rpImmediateRefresh);
    return clocks.elapsed();
}

// `repeats` frames with the data unchanged.
std::vector<Ms> staticFrames(ws::ui::TrainingTab& tab, int repeats) {
    std::vector<Ms> ms;
    for (int r = 0; r < repeats; ++r) ms.push_back(frame(tab));
    return ms;
}

// A live run appending 25 steps per frame from step `firstStep` on; the charts follow it.
std::vector<Ms> liveFrames(ws::ui::TrainingTab& tab, int64_t firstStep, int frames,
                           std::mt19937& rng) {
    std::normal_distribution<double> noise(0.0, 0.05);
    tab.beginLiveRun(QStringLiteral("live"), 2048);
    frame(tab);  // the live run's curves appear (a data change, not a live frame)
    std::vector<Ms> ms;
    int64_t step = firstStep;
    for (int f = 0; f < frames; ++f) {
        std::vector<ws::session::StepMetrics> batch(25);
        for (auto& m : batch) {
            m.step = step++;
            m.loss = 2.5 + noise(rng);
            m.evalLoss = std::nan("");
            m.learningRate = 3e-3;
            m.gradNorm = 0.6;
            m.logStep = true;
            m.tokensPerSec = 20000;
        }
        const Clocks clocks;
        tab.appendLive(batch);
        const Ms append = clocks.elapsed();
        const Ms drawn = frame(tab);
        ms.push_back({append.cpu + drawn.cpu, append.wall + drawn.wall});
    }
    return ms;
}

Ms zoomFrame(ws::ui::TrainingTab& tab) {
    ws::ui::ChartPanel* loss = tab.lossPanel();
    const QCPRange r = loss->xAxis->range();
    loss->xAxis->setRange(r.lower + r.size() / 4, r.upper - r.size() / 4);  // synced to all
    return frame(tab);
}

// Moving the crosshair over every chart (what hovering does): only the overlay layer redraws.
double timeCrosshair(ws::ui::TrainingTab& tab, int repeats) {
    std::vector<Ms> ms;
    for (int r = 0; r < repeats; ++r) {
        const Clocks clocks;
        for (auto* panel : tab.panels()) {
            const QCPRange x = panel->xAxis->range();
            panel->setCrosshair(x.lower + (x.upper - x.lower) * (0.2 + 0.1 * r), true);
            panel->repaint();
        }
        ms.push_back(clocks.elapsed());
    }
    return summarize(ms).median;
}

struct Scenario {
    Ms takeIn;  // addRun of every run: smoothing and levels, once per data change
    Timing still, live, all;
    Ms zoom;
    double crosshair = 0;
};

Scenario measure(int runs, size_t points, std::mt19937& rng) {
    constexpr int kStatic = 15, kLive = 40;
    Scenario s;
    ws::ui::TrainingTab tab;
    tab.resize(1600, 1000);
    tab.show();
    QApplication::processEvents();
    std::vector<ws::ui::RunSeries> data;
    for (int64_t id = 1; id <= runs; ++id) data.push_back(syntheticRun(id, points, rng));
    const Clocks clocks;
    for (auto& run : data) tab.addRun(std::move(run));
    s.takeIn = clocks.elapsed();
    std::vector<Ms> all = staticFrames(tab, kStatic);  // the first frame included
    s.still = summarize(all);
    // The live run goes on past the stored runs' last step: the x range grows every frame.
    const std::vector<Ms> live = liveFrames(tab, int64_t(points) + 1, kLive, rng);
    s.live = summarize(live);
    all.insert(all.end(), live.begin(), live.end());
    s.zoom = zoomFrame(tab);
    all.push_back(s.zoom);
    s.all = summarize(all);
    s.crosshair = timeCrosshair(tab, kStatic);
    return s;
}

}  // namespace

int main(int argc, char** argv) {
    ws::bench::printMachine();
    if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM")) qputenv("QT_QPA_PLATFORM", "offscreen");
    QApplication app(argc, argv);
    std::mt19937 rng(7);
    const Scenario one = measure(1, 1000, rng);
    const Scenario many = measure(20, 200000, rng);

    std::printf(
        "Training tab, 4 charts, offscreen 1600x1000, smoothing 0.6, min/max levels; a frame = "
        "redrawNow + replot of the 4 charts; GUI-thread CPU ms [wall ms] (60 Hz frame = "
        "16.7 ms)\n");
    auto row = [](const char* what, const Scenario& s, const Scenario* ref) {
        std::printf("  %s\n", what);
        std::printf("    take-in (once per data change) %8.1f [%8.1f]\n", s.takeIn.cpu,
                    s.takeIn.wall);
        std::printf("    static frames: median %6.2f worst %6.2f [%6.2f %6.2f]\n", s.still.median,
                    s.still.worst, s.still.wallMedian, s.still.wallWorst);
        std::printf("    live frames:   median %6.2f worst %6.2f [%6.2f %6.2f]\n", s.live.median,
                    s.live.worst, s.live.wallMedian, s.live.wallWorst);
        std::printf("    zoom frame:           %6.2f [%6.2f]\n", s.zoom.cpu, s.zoom.wall);
        std::printf("    all frames:    median %6.2f worst %6.2f [%6.2f %6.2f]", s.all.median,
                    s.all.worst, s.all.wallMedian, s.all.wallWorst);
        if (ref) {
            std::printf(" (%.1fx the reference's median)\n",
                        s.all.median / std::max(ref->all.median, 1e-6));
        } else {
            std::printf(" (reference)\n");
        }
    };
    row("1 run  x   1k points (reference)", one, nullptr);
    row("20 runs x 200k points", many, &one);
    std::printf("crosshair move over the 4 charts (hover): 20 x 200k %.2f ms, 1 x 1k %.2f ms\n",
                many.crosshair, one.crosshair);
    const bool met = many.all.median < 16.7 && many.all.worst <= 50.0;
    std::printf("target (CPU median < 16.7 ms, no frame over 50 ms at 20 x 200k): %s\n",
                met ? "met" : "NOT met");
    return 0;
}
