// Chart replot cost: 20 overlaid runs x 200k points each (every series smoothed and decimated
// per pixel, as the Training tab does on each redraw) beside one run of 1k points, measured in
// the same process on an offscreen 1600x1000 window. Target: the large replot well under one
// 60 Hz frame (16.7 ms). Prints median and worst of several replots of each.
#include <QApplication>
#include <QElapsedTimer>
#include <algorithm>
#include <cmath>
#include <cstdio>
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

struct Timing {
    double median, worst;
    double prepareMs;  // smoothing + decimation share of the median replot
};

Timing timeReplots(ws::ui::TrainingTab& tab, int repeats) {
    std::vector<double> ms, prepare;
    for (int r = 0; r < repeats; ++r) {
        QElapsedTimer timer;
        timer.start();
        tab.redrawNow();
        prepare.push_back(double(timer.nsecsElapsed()) / 1e6);
        for (auto* panel : tab.panels()) panel->replot(QCustomPlot::rpImmediateRefresh);
        ms.push_back(double(timer.nsecsElapsed()) / 1e6);
    }
    std::sort(ms.begin(), ms.end());
    std::sort(prepare.begin(), prepare.end());
    return {ms[ms.size() / 2], ms.back(), prepare[prepare.size() / 2]};
}

// Moving the crosshair over every chart (what hovering does): only the overlay layer redraws.
double timeCrosshair(ws::ui::TrainingTab& tab, int repeats) {
    std::vector<double> ms;
    for (int r = 0; r < repeats; ++r) {
        QElapsedTimer timer;
        timer.start();
        for (auto* panel : tab.panels()) {
            const QCPRange x = panel->xAxis->range();
            panel->setCrosshair(x.lower + (x.upper - x.lower) * (0.2 + 0.1 * r), true);
            panel->repaint();
        }
        ms.push_back(double(timer.nsecsElapsed()) / 1e6);
    }
    std::sort(ms.begin(), ms.end());
    return ms[ms.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
    ws::bench::printMachine();
    if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM")) qputenv("QT_QPA_PLATFORM", "offscreen");
    QApplication app(argc, argv);
    std::mt19937 rng(7);
    constexpr int kRepeats = 7;

    ws::ui::TrainingTab small;
    small.resize(1600, 1000);
    small.show();
    small.addRun(syntheticRun(1, 1000, rng));
    const Timing one = timeReplots(small, kRepeats);

    ws::ui::TrainingTab large;
    large.resize(1600, 1000);
    large.show();
    for (int64_t id = 1; id <= 20; ++id) large.addRun(syntheticRun(id, 200000, rng));
    const Timing many = timeReplots(large, kRepeats);
    const double oneCrosshair = timeCrosshair(small, kRepeats);
    const double manyCrosshair = timeCrosshair(large, kRepeats);

    std::printf("chart replot, 4 charts, offscreen 1600x1000, smoothing 0.6, min/max decimation\n");
    std::printf(
        "  1 run  x   1k points : median %7.2f ms, worst %7.2f ms, data prep %.2f ms (reference)\n",
        one.median, one.worst, one.prepareMs);
    std::printf(
        "  20 runs x 200k points: median %7.2f ms, worst %7.2f ms, data prep %.2f ms (%.1fx the "
        "reference; "
        "60 Hz frame = 16.7 ms)\n",
        many.median, many.worst, many.prepareMs, many.median / std::max(one.median, 1e-6));
    std::printf("crosshair move over the 4 charts (hover): 20 x 200k %.2f ms, 1 x 1k %.2f ms\n",
                manyCrosshair, oneCrosshair);
    return 0;
}
