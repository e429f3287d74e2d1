// SPDX-License-Identifier: GPL-3.0-or-later
// GUI-thread stalls while a run trains: a 5 ms precise timer on the studio's event loop records
// how late each firing is, first on the idle studio (the reference: what the platform's timers
// give with nothing to do), then while the gpt-nano preset trains with the Training tab's charts
// live, then with the Wafer tab's views live (heatmap, diagram and timeline of the live step,
// emulator on as the preset has it). This measures the design (engine on its own threads, events
// drained on a coalescing timer, one replot per batch); the bound for the worst stall is
// 50 ms. Run it alone: on a shared machine other processes' load shows up as stalls.
// The test this replaces (tests/ui/shell/live_run_test.cpp) keeps the non-timing checks.
#include <QApplication>
#include <QElapsedTimer>
#include <QEventLoop>
#include <QTemporaryDir>
#include <QTimer>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>

#include "bench_machine.h"
#include "ui/common/run_controller.h"
#include "ui/config/config_document.h"
#include "ui/shell/main_window.h"

using ws::ui::MainWindow;

namespace {

constexpr int kIntervalMs = 5;

struct Stalls {
    int firings = 0;
    double worstMs = 0, meanLateMs = 0;
};

void spin(int ms) {
    QEventLoop loop;
    QTimer::singleShot(ms, &loop, &QEventLoop::quit);
    loop.exec();
}

// Runs the event loop until ready() or the timeout; exits the bench with `what` on a timeout.
void spinUntil(const std::function<bool()>& ready, int timeoutMs, const char* what) {
    QElapsedTimer clock;
    clock.start();
    while (!ready()) {
        if (clock.elapsed() > timeoutMs) {
            std::fprintf(stderr, "timed out waiting for %s\n", what);
            std::exit(1);
        }
        spin(10);
    }
}

// The probe: a kIntervalMs precise timer for `ms`; lateness of each firing past its interval.
Stalls probe(int ms) {
    QElapsedTimer clock;
    clock.start();
    qint64 last = clock.nsecsElapsed();
    Stalls s;
    double sumMs = 0;
    QTimer timer;
    timer.setTimerType(Qt::PreciseTimer);
    timer.setInterval(kIntervalMs);
    QObject::connect(&timer, &QTimer::timeout, [&] {
        const qint64 now = clock.nsecsElapsed();
        const double late = double(now - last) / 1e6 - kIntervalMs;
        last = now;
        s.worstMs = std::max(s.worstMs, late);
        sumMs += std::max(late, 0.0);
        ++s.firings;
    });
    timer.start();
    spin(ms);
    timer.stop();
    s.meanLateMs = sumMs / std::max(s.firings, 1);
    return s;
}

void print(const char* what, const Stalls& s, const Stalls& idle) {
    std::printf("  %-34s: %5d firings, worst stall %6.1f ms, mean lateness %5.2f ms", what,
                s.firings, s.worstMs, s.meanLateMs);
    if (&s == &idle) {
        std::printf(" (reference)\n");
    } else {
        std::printf(" (worst %.1fx the reference)\n", s.worstMs / std::max(idle.worstMs, 1e-3));
    }
}

}  // namespace

int main(int argc, char** argv) {
    // The studio keeps settings and a run store: keep them out of the user's folders.
    QTemporaryDir home;
    for (const char* var : {"XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_CACHE_HOME"})
        qputenv(var, (home.path() + '/' + var).toUtf8());
    if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM")) qputenv("QT_QPA_PLATFORM", "offscreen");
    QApplication app(argc, argv);
    QApplication::setOrganizationName("WaferStudioBench");
    ws::bench::printMachine();
    constexpr int kProbeMs = 6000;

    MainWindow window(home.filePath("runs.sqlite"));
    window.resize(1400, 900);
    window.show();
    spin(300);  // first layout and paint
    const Stalls idle = probe(kProbeMs);

    if (!window.openConfig(WAFER_SOURCE_DIR "/presets/gpt-nano.yaml") ||
        !window.document()->setField("runconfig.max_steps", "5000") ||
        !window.document()->setField("runconfig.log_steps", "1") || !window.startRun()) {
        std::fprintf(stderr, "could not start the gpt-nano run\n");
        return 1;
    }
    // Measure once training runs (preparation is on the worker too, but steps and replots are
    // the load that matters).
    spinUntil([&] { return window.controller()->state() == ws::session::RunState::Running; },
              120000, "the run to start training");
    // Steps that reached the GUI thread (each one charted on the Training tab).
    size_t steps = 0;
    QObject::connect(
        window.controller(), &ws::ui::RunController::metrics,
        [&](const std::vector<ws::session::StepMetrics>& batch) { steps += batch.size(); });
    window.showTab(QStringLiteral("training"));
    spin(300);  // a tab's first layout and paint are a tab switch, not a stall while training
    const size_t stepsBefore = steps;
    const Stalls training = probe(kProbeMs);
    const size_t stepsTraining = steps - stepsBefore;

    window.showTab(QStringLiteral("wafer"));
    spin(300);
    const size_t stepsBeforeWafer = steps;
    const Stalls wafer = probe(kProbeMs);
    const size_t stepsWafer = steps - stepsBeforeWafer;

    bool finished = false;
    QObject::connect(window.controller(), &ws::ui::RunController::finished,
                     [&] { finished = true; });
    window.controller()->stop();
    spinUntil([&] { return finished; }, 60000, "the run to stop");

    std::printf("GUI event loop, %d ms precise timer for %.0f s each, 1400x900 offscreen window\n",
                kIntervalMs, kProbeMs / 1000.0);
    print("idle studio, no run", idle, idle);
    print("gpt-nano training, Training tab", training, idle);
    std::printf("  %-34s  %zu steps reached the GUI meanwhile\n", "", stepsTraining);
    print("gpt-nano training, Wafer tab", wafer, idle);
    std::printf("  %-34s  %zu steps reached the GUI meanwhile\n", "", stepsWafer);
    std::printf("  (bound for the worst stall while training: 50 ms)\n");
    return 0;
}
