// Parallel-coordinates redraw cost, offscreen at 1100x480: setResults + replot of 500 synthetic
// trials (the size of a large sweep; a live sweep redraws on every finished trial, coalesced to
// 40 ms) beside the same for 20 trials as the reference. The test that used to time this
// (tests/ui/sweeps/sweep_parallel_coords_test.cpp) keeps what the view shows. Prints median and
// worst of several rounds; the old test's budget was 1500 ms for the 500-trial redraw.
#include <qcustomplot.h>
#include <QApplication>
#include <QElapsedTimer>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "bench_machine.h"
#include "support/synthetic_trials.h"
#include "ui/sweeps/sweep_parallel_coords.h"

namespace {

struct Timing {
    double buildMedian = 0, totalMedian = 0, totalWorst = 0;
};

// One round: a fresh result set (as a finished trial brings) laid out and replotted.
Timing timeRedraws(int trialCount, int rounds) {
    ws::ui::SweepParallelCoords view;
    view.resize(1100, 480);
    view.show();
    QApplication::processEvents();
    auto trials = ws::testing::syntheticTrials(trialCount);
    for (auto& t : trials) t.seed = t.trial % 4;  // a seed axis too, as in the test
    std::vector<double> build, total;
    for (int r = 0; r < rounds; ++r) {
        QElapsedTimer timer;
        timer.start();
        view.setResults(trials, ws::testing::syntheticTrialKeys());
        build.push_back(double(timer.nsecsElapsed()) / 1e6);
        view.plot()->replot(QCustomPlot::rpImmediateRefresh);
        total.push_back(double(timer.nsecsElapsed()) / 1e6);
    }
    if (view.lineCount() != trialCount) {  // a line per settled trial, as the test checks
        std::fprintf(stderr, "expected %d lines, the view drew %d\n", trialCount, view.lineCount());
        std::exit(1);
    }
    std::sort(build.begin(), build.end());
    std::sort(total.begin(), total.end());
    return {build[build.size() / 2], total[total.size() / 2], total.back()};
}

}  // namespace

int main(int argc, char** argv) {
    if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM")) qputenv("QT_QPA_PLATFORM", "offscreen");
    QApplication app(argc, argv);
    ws::bench::printMachine();
    constexpr int kRounds = 9;
    const Timing small = timeRedraws(20, kRounds);
    const Timing large = timeRedraws(500, kRounds);
    std::printf(
        "parallel coordinates redraw (setResults + replot), offscreen 1100x480, "
        "median / worst of %d rounds\n",
        kRounds);
    std::printf("   20 trials: %8.2f / %8.2f ms, layout %.2f ms (reference)\n", small.totalMedian,
                small.totalWorst, small.buildMedian);
    std::printf(
        "  500 trials: %8.2f / %8.2f ms, layout %.2f ms (%.1fx the reference; the live "
        "sweep coalesces redraws to 40 ms)\n",
        large.totalMedian, large.totalWorst, large.buildMedian,
        large.totalMedian / std::max(small.totalMedian, 1e-6));
    return 0;
}
