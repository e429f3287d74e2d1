// SPDX-License-Identifier: GPL-3.0-or-later
// A live run in the studio: while the gpt-nano preset trains, the Training tab charts its steps,
// and with the Wafer tab shown (heatmap, diagram and timeline redrawn on each coalesced batch,
// emulator on as the preset has it) the charts keep up too; Stop ends the run. How late the
// GUI thread's timers fire meanwhile is a measurement, not a test: bench/event_latency_bench.cpp.
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>

#include "support/gui_test.h"
#include "ui/common/run_controller.h"
#include "ui/config/config_document.h"
#include "ui/shell/main_window.h"
#include "ui/training/training_tab.h"

using namespace ws::ui;

namespace {

size_t stepsCharted(const MainWindow& window) {
    const auto& runs = window.findChild<TrainingTab*>("trainingTab")->runs();
    const auto live = runs.find(0);  // the live run's series
    if (live == runs.end()) return 0;
    const auto loss = live->second.metrics.find("loss");
    return loss == live->second.metrics.end() ? 0 : loss->second.size();
}

}  // namespace

class LiveRunTest : public QObject {
    Q_OBJECT
private slots:
    void trainingTabChartsTheLiveRun() { chartWhileShown(QStringLiteral("training")); }
    void chartsKeepUpWithTheWaferTabShown() { chartWhileShown(QStringLiteral("wafer")); }

private:
    void chartWhileShown(const QString& tab) {
        QTemporaryDir dir;
        MainWindow window(dir.filePath("runs.sqlite"));
        window.resize(1400, 900);
        window.show();
        QVERIFY(QTest::qWaitForWindowExposed(&window));
        QVERIFY(window.openConfig(WAFER_SOURCE_DIR "/presets/gpt-nano.yaml"));
        QVERIFY(window.document()->setField("runconfig.max_steps", "5000"));
        QVERIFY(window.document()->setField("runconfig.log_steps", "1"));
        QVERIFY(window.startRun());
        QTRY_VERIFY_WITH_TIMEOUT(window.controller()->state() == ws::session::RunState::Running,
                                 120000);
        QVERIFY(window.showTab(tab));
        const size_t before = stepsCharted(window);
        // Waits for the event itself (more steps on the chart), not for a guessed time.
        QTRY_VERIFY_WITH_TIMEOUT(stepsCharted(window) > before + 10, 120000);
        QCOMPARE(window.controller()->state(), ws::session::RunState::Running);
        QSignalSpy finished(window.controller(), &RunController::finished);
        window.controller()->stop();
        QTRY_VERIFY_WITH_TIMEOUT(!finished.isEmpty(), 60000);
    }
};

int main(int argc, char** argv) {
    return ws::testing::runIsolatedGuiTest<LiveRunTest>(argc, argv);
}
#include "live_run_test.moc"
