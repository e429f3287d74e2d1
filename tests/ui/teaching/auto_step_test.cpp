// SPDX-License-Identifier: GPL-3.0-or-later
// Auto-step (issue 17): on a paused run of the teaching preset, Run → Auto-step steps one layer
// phase after another (the test drives the pace's beats itself, with the timer stopped: no
// timing in the checks), narrates each phase above the tabs, and stops at the step's last phase
// with the run still paused; switching it off or Continue stops it; the Lessons dock's pace
// choice follows the Run menu's. Screenshots: autostep.png (1400 x 900) and, in Presenter Mode,
// autostep-presenter.png (1920 x 1080) in $WAFER_TEST_ARTIFACTS.
#include <QAction>
#include <QApplication>
#include <QComboBox>
#include <QStatusBar>
#include <QTimer>
#include <QToolButton>

#include "support/gui_test.h"
#include "support/studio_window.h"
#include "ui/config/config_document.h"
#include "ui/lessons/lessons_panel.h"
#include "ui/shell/main_window.h"
#include "ui/teaching/auto_step.h"
#include "ui/teaching/presenter_mode.h"

using namespace ws::ui;
using ws::session::RunState;

namespace {
const QString kTeaching = QStringLiteral(WAFER_SOURCE_DIR "/presets/teaching-stream.yaml");
}  // namespace

class AutoStepTest : public QObject {
    Q_OBJECT
private slots:
    void init() {
        QVERIFY(m_window.open());
        QVERIFY(m_window->openConfig(kTeaching));
        QVERIFY(m_window->document()->setField("runconfig.max_steps", "3"));
    }
    void cleanup() {
        if (m_window->controller()->isActive()) QVERIFY(m_window.stopRun(60000));
        m_window->presenterMode()->setActive(false);
        m_window.close();
    }

    void stepsANarratedStepAndStopsAtItsEnd() {
        MainWindow* w = m_window.get();
        AutoStep* autoStep = w->autoStep();
        QAction* toggle = m_window.action("autoStepAction");
        QVERIFY(!toggle->isEnabled());  // nothing paused yet
        QVERIFY(m_window->showTab("wafer"));
        startPaused();
        QVERIFY(toggle->isEnabled());
        auto* line = m_window.find<NarrationLine>("narrationLine");
        QTRY_VERIFY(line->isVisible());
        QVERIFY2(line->fullText().contains("paused before the first layer"),
                 qPrintable(line->fullText()));

        m_window.action("autoStepPace500")->trigger();
        toggle->trigger();
        QVERIFY(autoStep->isRunning());
        QVERIFY(toggle->isChecked());
        QVERIFY(autoStep->timer()->isActive());
        QCOMPARE(autoStep->timer()->interval(), 500);
        autoStep->timer()->stop();  // the test beats the pace itself

        const QStringList lines = stepToTheEnd();
        // 2 blocks: embeddings, h.0, h.1, head forward, then back down: 8 phases, each said once.
        QCOMPARE(lines.size(), 8);
        QVERIFY2(lines.first().startsWith("Step 1 · embeddings forward: the 256 cores look up"),
                 qPrintable(lines.first()));
        QVERIFY2(lines[1].startsWith("Step 1 · h.0 forward: the 256 cores multiply the batch's "
                                     "activations by h.0's weights, streamed in from MemoryX"),
                 qPrintable(lines[1]));
        QVERIFY2(lines[4].startsWith("Step 1 · head backward: gradients for head computed"),
                 qPrintable(lines[4]));
        QVERIFY2(lines.last().startsWith("Step 1 · embeddings backward"), qPrintable(lines.last()));
        QVERIFY(!autoStep->isRunning());
        QVERIFY(!toggle->isChecked());
        QVERIFY2(autoStep->stopReason().contains("last layer phase"),
                 qPrintable(autoStep->stopReason()));
        // The window says why it stopped (the toggle just unchecks itself).
        QVERIFY2(w->statusBar()->currentMessage().contains("Auto-step stopped: "),
                 qPrintable(w->statusBar()->currentMessage()));
        QVERIFY(w->statusBar()->currentMessage().contains(autoStep->stopReason()));
        QCOMPARE(w->controller()->state(), RunState::Paused);  // still paused for the teacher
        QCOMPARE(line->fullText(), lines.last());
        QVERIFY(line->isVisible());
        QVERIFY(line->font().pointSizeF() > QApplication::font().pointSizeF() * 1.2);

        // The next step: auto-step again, then screenshots mid-step (window and presenter).
        toggle->trigger();
        autoStep->timer()->stop();
        for (int i = 0; i < 2; ++i) beat();
        QTRY_VERIFY(line->fullText().startsWith("Step 2 · h.0 forward"));
        QVERIFY(m_window->showTab("wafer"));
        // Two lines of narration fit: the window keeps a laptop's 1400 x 900.
        QTest::qWait(100);
        QCOMPARE(m_window->size(), QSize(1400, 900));
        QVERIFY(line->height() >= line->heightForWidth(line->width()));
        QVERIFY(m_window->saveScreenshot(ws::testing::artifactPath("autostep.png")));
        const double normal = line->font().pointSizeF();
        m_window->presenterMode()->setActive(true);
        m_window->setWindowState(Qt::WindowNoState);
        m_window->resize(1920, 1080);
        QTRY_COMPARE(m_window->size(), QSize(1920, 1080));
        QCOMPARE(line->font().pointSizeF(), normal * PresenterMode::kScale);
        QTest::qWait(200);  // the tool bar lays its larger buttons out
        QVERIFY(m_window->saveScreenshot(ws::testing::artifactPath("autostep-presenter.png")));
        m_window->presenterMode()->setActive(false);

        // Switching it off stops it at once; the run stays paused.
        toggle->trigger();
        QVERIFY(!autoStep->isRunning());
        QVERIFY(!autoStep->timer()->isActive());
        QCOMPARE(autoStep->stopReason(), QStringLiteral("switched off"));
        QCOMPARE(w->controller()->state(), RunState::Paused);
    }

    void continueStopsItAndClearsTheLine() {
        AutoStep* autoStep = m_window->autoStep();
        startPaused();
        m_window.action("autoStepAction")->trigger();
        autoStep->timer()->stop();
        beat();
        QVERIFY(autoStep->isRunning());
        m_window.action("continueAction")->trigger();
        QTRY_VERIFY(!autoStep->isRunning());
        QTRY_VERIFY(!m_window.find<NarrationLine>("narrationLine")->isVisible());
        QCOMPARE(autoStep->narration(), QString());
    }

    // Without a paused run it does not start (and says why).
    void needsAPausedRun() {
        AutoStep* autoStep = m_window->autoStep();
        autoStep->start();
        QVERIFY(!autoStep->isRunning());
        QVERIFY(autoStep->stopReason().contains("paused run"));
    }

    // The Lessons dock's pace choice and the Run menu's pace are one setting.
    void theLessonsDockHasTheControl() {
        m_window->showLessons();
        LessonsPanel* panel = m_window->lessonsPanel();
        auto* button = panel->findChild<QToolButton*>("autoStepButton");
        QVERIFY(button);
        QCOMPARE(button->defaultAction(), m_window.action("autoStepAction"));
        auto* pace = panel->findChild<QComboBox*>("autoStepPace");
        QVERIFY(pace);
        m_window.action("autoStepPace4000")->trigger();
        QCOMPARE(pace->currentData().toInt(), 4000);
        pace->setCurrentIndex(pace->findData(2000));
        emit pace->activated(pace->currentIndex());
        QCOMPARE(m_window->autoStep()->paceMs(), 2000);
        QVERIFY(m_window.action("autoStepPace2000")->isChecked());
        QVERIFY(!m_window.action("autoStepPace4000")->isChecked());
    }

private:
    // A run of the document's config, paused before its first layer, as a lesson's pause_at.
    void startPaused() {
        auto config = m_window->document()->loadedConfig();
        ws::session::SessionOptions options;
        options.finalCheckpoint = false;
        QVERIFY(m_window->startLessonRun(config, options, true));
        QTRY_VERIFY_WITH_TIMEOUT(m_window->controller()->state() == RunState::Paused &&
                                     m_window->controller()->session()->pauseStops() > 0,
                                 120000);
    }

    // One beat of the pace, then until the run has paused again after what it asked for.
    void beat() {
        ws::session::Session* session = m_window->controller()->session();
        QVERIFY(session);
        const int64_t stops = session->pauseStops();
        m_window->autoStep()->tick();
        if (!m_window->autoStep()->isRunning()) return;
        QTRY_VERIFY_WITH_TIMEOUT(session->pauseStops() > stops, 60000);
        m_window->controller()->drainNow();
    }

    QStringList stepToTheEnd() {
        QStringList lines;
        AutoStep* autoStep = m_window->autoStep();
        const auto record = [&] {
            if (autoStep->narration().startsWith("Step ") &&
                (lines.isEmpty() || lines.last() != autoStep->narration()))
                lines << autoStep->narration();
        };
        for (int i = 0; i < 100 && autoStep->isRunning(); ++i) {
            beat();
            record();
        }
        return lines;
    }

    ws::testing::StudioWindow m_window;
};

int main(int argc, char** argv) {
    return ws::testing::runIsolatedGuiTest<AutoStepTest>(argc, argv);
}
#include "auto_step_test.moc"
