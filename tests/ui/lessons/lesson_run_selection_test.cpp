// SPDX-License-Identifier: GPL-3.0-or-later
// Lesson steps that compare runs select them, and a lesson's runs stay out of the next lesson's
// charts (issue 31: in lesson 5 step 6, "compare the loss curves", the loss chart's legend
// listed all 13 curves of the runs trained before). A small lesson of three 2-step runs of the
// teaching preset and a step comparing the last two, then a second lesson, on the studio's own
// run; the Runs dock's selection, the Training tab's runs and the loss legend are checked.
// Screenshot: lesson-compare-legend.png in $WAFER_TEST_ARTIFACTS.
#include <QFile>
#include <QTemporaryDir>
#include <QTest>
#include <algorithm>

#include "engine/store/run_store.h"
#include "support/gui_test.h"
#include "ui/common/run_controller.h"
#include "ui/lessons/lessons_panel.h"
#include "ui/shell/main_window.h"
#include "ui/shell/runs_dock.h"
#include "ui/training/training_tab.h"

using namespace ws::ui;

namespace {

constexpr int kTimeoutMs = 120000;

QString writeLesson(const QTemporaryDir& dir, const QString& file, const QString& title,
                    const QString& steps) {
    const QString path = dir.filePath(file);
    QFile f(path);
    if (!f.open(QIODevice::WriteOnly)) return {};
    f.write(QStringLiteral("title: \"%1\"\nsummary: \"runs to compare\"\npreset: %2\nsteps:\n%3")
                .arg(title, QStringLiteral(WAFER_SOURCE_DIR "/presets/teaching-stream.yaml"), steps)
                .toUtf8());
    return path;
}

QString runStep(const QString& title, const QString& lr) {
    return QStringLiteral(
               "  - title: \"%1\"\n    text: \"Train two steps.\"\n"
               "    changes: {optimizer.learning_rate: %2}\n"
               "    action: {run_steps: 2}\n    view: training/loss\n")
        .arg(title, lr);
}

std::vector<int64_t> shownRuns(const TrainingTab* tab) {
    std::vector<int64_t> ids;
    for (const auto& [id, run] : tab->runs()) ids.push_back(id);
    return ids;
}

// The runs the loss chart's legend lists (not its "dashed: eval loss" key).
QStringList legendNames(TrainingTab* tab) {
    tab->redrawNow();
    QStringList names = tab->lossPanel()->legendEntries();
    names.removeAll(QStringLiteral("dashed: eval loss"));
    return names;
}

}  // namespace

class LessonRunSelectionTest : public QObject {
    Q_OBJECT
private slots:
    void comparingStepSelectsItsRunsAndTheNextLessonStartsClean() {
        QTemporaryDir dir;
        const QString first = writeLesson(
            dir, "01-three-runs.yaml", "Three runs",
            runStep("First", "0.003") + runStep("Second", "0.002") + runStep("Third", "0.001") +
                QStringLiteral("  - title: \"Compare\"\n    text: \"The last two runs.\"\n"
                               "    view: training/loss\n    highlight: loss_chart\n"
                               "    expect:\n      - loss.finite == true\n"
                               "      - previous.loss.finite == true\n"));
        const QString second =
            writeLesson(dir, "02-next.yaml", "Next lesson", runStep("Only", "0.003"));
        QVERIFY(!first.isEmpty() && !second.isEmpty());
        MainWindow window(dir.filePath("runs.sqlite"));
        window.resize(1366, 768);
        window.show();
        QVERIFY(QTest::qWaitForWindowExposed(&window));
        window.showLessons();
        LessonsPanel* panel = window.lessonsPanel();
        auto* runs = window.findChild<RunsDock*>(QStringLiteral("RunsDock"));
        auto* training = window.findChild<TrainingTab*>(QStringLiteral("trainingTab"));
        QVERIFY(runs && training);

        QVERIFY2(panel->openLesson(first), qPrintable(panel->lastError()));
        for (size_t k = 0; k < 3; ++k) {
            QTRY_VERIFY_WITH_TIMEOUT(!panel->isBusy(), kTimeoutMs);
            QVERIFY2(panel->actionError().isEmpty(), qPrintable(panel->actionError()));
            QVERIFY(panel->next());
        }
        QTRY_VERIFY_WITH_TIMEOUT(!panel->isBusy(), kTimeoutMs);
        QVERIFY2(panel->actionError().isEmpty(), qPrintable(panel->actionError()));
        QTRY_VERIFY_WITH_TIMEOUT(!window.controller()->isActive(), kTimeoutMs);
        QCoreApplication::processEvents();

        // The comparing step selected the lesson's last two runs; the first run is off the
        // charts, and the legend names the two.
        auto listed = window.runStore()->listRuns();
        QVERIFY(listed.ok());
        QCOMPARE(listed->size(), size_t(3));
        std::vector<int64_t> ids;
        for (const auto& run : *listed) ids.push_back(run.id);
        std::sort(ids.begin(), ids.end());
        std::vector<int64_t> selected = runs->selectedRunIds();
        std::sort(selected.begin(), selected.end());
        QCOMPARE(selected, (std::vector<int64_t>{ids[1], ids[2]}));
        QCOMPARE(shownRuns(training), (std::vector<int64_t>{ids[1], ids[2]}));
        const QStringList legend = legendNames(training);
        QCOMPARE(legend.size(), 2);
        QVERIFY2(legend[0].contains("step 2") && legend[1].contains("step 3"),
                 qPrintable(legend.join(", ")));
        // The legend is below the plot area, not over the curves.
        ChartPanel* loss = training->lossPanel();
        QVERIFY(!loss->legend->outerRect().intersects(loss->axisRect()->rect()));
        loss->replot(QCustomPlot::rpImmediateRefresh);
        QVERIFY(window.grab().save(ws::testing::artifactPath("lesson-compare-legend.png")));

        // The next lesson starts with nothing of this one selected or drawn.
        QVERIFY2(panel->openLesson(second), qPrintable(panel->lastError()));
        QVERIFY(runs->selectedRunIds().empty());
        QTRY_VERIFY_WITH_TIMEOUT(!panel->isBusy(), kTimeoutMs);
        QTRY_VERIFY_WITH_TIMEOUT(!window.controller()->isActive(), kTimeoutMs);
        QCoreApplication::processEvents();
        const std::vector<int64_t> after = shownRuns(training);
        QCOMPARE(after.size(), size_t(1));
        QVERIFY(std::find(ids.begin(), ids.end(), after.front()) == ids.end());
        QVERIFY(legendNames(training).contains(QStringLiteral("train")));  // one run
    }
};

int main(int argc, char** argv) {
    return ws::testing::runIsolatedGuiTest<LessonRunSelectionTest>(argc, argv);
}
#include "lesson_run_selection_test.moc"
