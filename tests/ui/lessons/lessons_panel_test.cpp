// SPDX-License-Identifier: GPL-3.0-or-later
// The Lessons dock in the studio (issue 17): lesson 01 walked end to end on the studio's real run
// (every action performed through the RunController, every step's `expect` holds on what the run
// showed, a try-it's Next opens only once its Check passes, Right/Space/Left navigate, the last
// step offers the next lesson), the first steps of lesson 02 (a paused run, then a run per
// buffer size), a failing try that keeps Next shut and shows the hint, every shipped lesson
// walked step by step, and a bad lesson file's error box naming file and line. Screenshots of
// the steps go to $WAFER_TEST_ARTIFACTS (lesson01-step1.png, ...).
#include <QAction>
#include <QComboBox>
#include <QDir>
#include <QFile>
#include <QLabel>
#include <QLineEdit>
#include <QMessageBox>
#include <QPushButton>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>
#include <QTextBrowser>

#include "engine/lesson/lesson.h"
#include "support/gui_test.h"
#include "support/lesson_test_support.h"
#include "ui/answers/answers_tab.h"
#include "ui/chat/chat_tab.h"
#include "ui/common/run_controller.h"
#include "ui/config/config_document.h"
#include "ui/lessons/lessons_panel.h"
#include "ui/shell/main_window.h"
#include "ui/sweeps/coord_check_view.h"
#include "ui/sweeps/sweeps_tab.h"
#include "ui/training/training_tab.h"
#include "ui/wafer/wafer_tab.h"

using namespace ws::ui;
namespace lesson = ws::lesson;
using ws::testing::kActionTimeoutMs;
using ws::testing::lessonFile;
using ws::testing::stopRun;

namespace {

// Every `expect` of the current step on the document's config and the panel's observed runs.
QStringList failedExpectations(MainWindow& window, LessonsPanel& panel) {
    QStringList failed;
    const lesson::Lesson* shown = panel.lesson();
    if (shown == nullptr) return {QStringLiteral("no lesson open")};
    const auto& step = shown->steps.at(panel.stepIndex());
    const ws::config::LoadedConfig config = window.document()->loadedConfig();
    const lesson::CheckContext context{&config.config, &panel.currentRun(), panel.previousRun(),
                                       &panel.studies()};
    for (const lesson::Condition& c : step.expect) {
        const lesson::CheckResult r = lesson::evaluate(c, context);
        if (!r.passed) failed << QString::fromStdString(c.text + ": " + r.detail);
    }
    return failed;
}

void screenshot(MainWindow& window, const QString& name) {
    QCoreApplication::processEvents();
    window.findChild<WaferTab*>(QStringLiteral("waferTab"))->redrawNow();  // not its 40 ms timer
    QVERIFY(window.grab().save(ws::testing::artifactPath(name)));
}

}  // namespace

class LessonsPanelTest : public QObject {
    Q_OBJECT
private slots:
    // Every test starts in a fresh studio (lesson_test_support.h): its own run store, the
    // Lessons dock open, Run Sweep answered Yes.
    void init() { QVERIFY(ws::testing::openLessonStudio(m_studio)); }
    void cleanup() {
        if (m_studio.get()) stopRun(*m_studio.get());
        m_studio.close();
    }
    void lessonOneEndToEnd();
    void lessonTwoFirstSteps();
    void learnerStepsAheadBeforeNext();
    void lessonFiveSparsity();
    void lessonSixMup();
    void lessonEightAnswers();
    void everyShippedLessonWalks();
    void failingTryKeepsNextDisabled();
    void badLessonFileShowsTheError();
    void unsavedConfigIsNotReplacedSilently();
    void aStuckActionTimesOutAndGivesTheButtonsBack();
    void aLessonRunEndsWithACheckpoint();

private:
    ws::testing::StudioWindow m_studio;
    // Waits for the step's action, checks its `expect`, does its try-it (Show me, then Check)
    // and takes a screenshot.
    void performStep(MainWindow& window, LessonsPanel& panel, const QString& shot);
};

void LessonsPanelTest::performStep(MainWindow& window, LessonsPanel& panel, const QString& shot) {
    QTRY_VERIFY_WITH_TIMEOUT(!panel.isBusy(), kActionTimeoutMs);
    QVERIFY2(panel.actionError().isEmpty(), qPrintable(panel.actionError()));
    const lesson::Lesson* shown = panel.lesson();
    QVERIFY(shown != nullptr);
    const auto& step = shown->steps.at(panel.stepIndex());
    const QStringList failed = failedExpectations(window, panel);
    const QString status = panel.findChild<QLabel*>(QStringLiteral("lessonStatus"))->text();
    QVERIFY2(!status.contains(QStringLiteral("expected")), qPrintable(status));
    QVERIFY2(failed.isEmpty(), qPrintable(QStringLiteral("step %1: %2")
                                              .arg(panel.stepIndex() + 1)
                                              .arg(failed.join(QStringLiteral("; ")))));
    if (!step.highlight.empty()) {
        QWidget* target = panel.highlighted();
        QVERIFY2(target, step.highlight.c_str());
        QVERIFY(target->isVisible());
        QCoreApplication::processEvents();
        auto* frame = window.findChild<QWidget*>(QStringLiteral("lessonHighlight"));
        QVERIFY(frame->isVisible());
        // The outline is on the widget where it is drawn now, never beside it (issue 31).
        const QRect shownAt(target->mapTo(&window, QPoint(0, 0)), target->size());
        QVERIFY(shownAt.contains(frame->geometry()));
    }
    auto* next = panel.findChild<QPushButton*>(QStringLiteral("lessonNext"));
    if (step.tryIt) {
        QVERIFY(!next->isEnabled());
        QTest::mouseClick(panel.findChild<QPushButton*>(QStringLiteral("lessonShowMe")),
                          Qt::LeftButton);
        QTRY_VERIFY_WITH_TIMEOUT(!panel.isBusy(), kActionTimeoutMs);
        QVERIFY2(panel.actionError().isEmpty(), qPrintable(panel.actionError()));
        QVERIFY(!next->isEnabled());  // not before Check
        QTest::mouseClick(panel.findChild<QPushButton*>(QStringLiteral("lessonCheck")),
                          Qt::LeftButton);
        QVERIFY2(panel.check(), qPrintable(panel.findChild<QLabel*>("lessonCheckResult")->text()));
    }
    if (panel.stepIndex() + 1 < shown->steps.size()) QVERIFY(next->isEnabled());
    screenshot(window, shot);
}

void LessonsPanelTest::lessonOneEndToEnd() {
    MainWindow& window = *m_studio.get();
    LessonsPanel* panel = window.lessonsPanel();
    QVERIFY(panel->isVisible());
    QVERIFY(panel->openLesson(lessonFile("01-weight-streaming.yaml")));
    const lesson::Lesson* shown = panel->lesson();
    QVERIFY(shown != nullptr);
    const size_t steps = shown->steps.size();
    QCOMPARE(steps, size_t(6));
    // Nothing trains yet: the Wafer tab shows the step the lesson's preset plans (not whatever
    // ran last), saying so.
    auto* wafer = window.findChild<WaferTab*>(QStringLiteral("waferTab"));
    QVERIFY(wafer->showsPlannedRun());
    QVERIFY2(wafer->noticeText().contains("The lesson's preset"), qPrintable(wafer->noticeText()));
    QVERIFY(panel->findChild<QTextBrowser*>("lessonText")->toPlainText().contains("MemoryX"));
    // The shipped lessons are listed, the open one selected.
    auto* list = panel->findChild<QComboBox*>("lessonList");
    QVERIFY(list->count() >= 6);  // "Choose a lesson…" and the lessons
    QVERIFY2(list->currentText().contains("One step of weight streaming"),
             qPrintable(list->currentText()));
    for (size_t k = 0; k < steps; ++k) {
        QCOMPARE(panel->stepIndex(), k);
        performStep(window, *panel, QStringLiteral("lesson01-step%1.png").arg(k + 1));
        if (QTest::currentTestFailed()) return;
        // Steps 2-5 act on one paused run: the studio's own, through its controller.
        if (k >= 1 && k <= 4) {
            QVERIFY(window.controller()->session() != nullptr);
            QCOMPARE(window.controller()->session()->state(), ws::session::RunState::Paused);
        }
        if (k + 1 < steps) QTest::keyClick(panel, Qt::Key_Right);
    }
    QCOMPARE(panel->currentRun().steps(), int64_t(30));
    // The last step's Next opens the next lesson.
    QVERIFY(panel->canGoNext());
    QCOMPARE(panel->findChild<QPushButton*>("lessonNext")->text(), QStringLiteral("Next lesson ▶"));
    // Back re-enters the step before (and Left is its key).
    QTest::keyClick(panel, Qt::Key_Left);
    QCOMPARE(panel->stepIndex(), steps - 2);
    QTRY_VERIFY_WITH_TIMEOUT(!panel->isBusy(), kActionTimeoutMs);
    stopRun(window);
}

void LessonsPanelTest::lessonTwoFirstSteps() {
    MainWindow& window = *m_studio.get();
    LessonsPanel* panel = window.lessonsPanel();
    QVERIFY(panel->openLesson(lessonFile("02-wafer-buffer.yaml")));
    for (size_t k = 0; k < 4; ++k) {
        performStep(window, *panel, QStringLiteral("lesson02-step%1.png").arg(k + 1));
        if (QTest::currentTestFailed()) return;
        if (k < 3) QTest::keyClick(panel, Qt::Key_Space);
    }
    // Step 4 changed the buffer to one slot: a new config, so the 2-slot run is `previous`.
    QCOMPARE(window.document()->fieldValue("wafer.weight_buffer_layers"), QStringLiteral("1"));
    QCOMPARE(panel->currentRun().maxResidentLayers, 1);
    QCOMPARE(panel->currentRun().steps(), int64_t(3));
    // The loss chart names the run after the lesson step that made it, not the preset's model
    // name that every run of the lesson shares.
    auto* training = window.findChild<TrainingTab*>(QStringLiteral("trainingTab"));
    QVERIFY(training != nullptr);
    QStringList names;
    for (const auto& [id, run] : training->runs()) names << QString::fromStdString(run.name);
    QVERIFY2(names.filter(QStringLiteral("step 4")).size() == 1, qPrintable(names.join(", ")));
    // The lesson's number leads the name, the step ends it: the Runs dock elides the middle.
    QVERIFY2(names.contains(QStringLiteral("lesson 2: The wafer buffer and prefetching, step 4")),
             qPrintable(names.join(", ")));
}

// A learner who presses Step Layer on their own (or Auto-step) before Next: the next step still
// lands where the lesson says (lesson 1 moves by pause_at, not by a count of phases from
// wherever the run stands), so its checks hold.
void LessonsPanelTest::learnerStepsAheadBeforeNext() {
    MainWindow& window = *m_studio.get();
    LessonsPanel* panel = window.lessonsPanel();
    QVERIFY(panel->openLesson(lessonFile("01-weight-streaming.yaml")));
    QVERIFY(panel->next());  // step 2: paused after the embeddings' forward pass
    QTRY_VERIFY_WITH_TIMEOUT(!panel->isBusy(), kActionTimeoutMs);
    QVERIFY2(panel->actionError().isEmpty(), qPrintable(panel->actionError()));
    QCOMPARE(panel->currentRun().layer, 0);
    ws::session::Session* session = window.controller()->session();
    QVERIFY(session != nullptr);
    auto* stepLayer = window.findChild<QAction*>(QStringLiteral("stepLayerAction"));
    for (int press = 0; press < 3; ++press) {  // embeddings -> h.0 -> h.1 -> head forward
        const int64_t stops = session->pauseStops();
        QTRY_VERIFY(stepLayer->isEnabled());
        stepLayer->trigger();
        QTRY_VERIFY_WITH_TIMEOUT(session->pauseStops() > stops, kActionTimeoutMs);
        window.controller()->drainNow();
    }
    QTRY_COMPARE(panel->currentRun().layer, 3);
    QVERIFY(panel->next());  // step 3: "forward, one layer at a time" lands on layer 1 again
    performStep(window, *panel, QStringLiteral("lesson01-ahead-step3.png"));
    if (QTest::currentTestFailed()) return;
    QVERIFY(panel->next());  // step 4: the head's backward pass
    performStep(window, *panel, QStringLiteral("lesson01-ahead-step4.png"));
    if (QTest::currentTestFailed()) return;
    stopRun(window);
}

// Lessons 5 and 6 at the README's screenshot size (1400 x 900, the Lessons dock open), every step
// performed as the learner sees it; screenshots lesson05-stepK.png / lesson06-stepK.png.
void LessonsPanelTest::lessonFiveSparsity() {
    m_studio.close();
    QVERIFY(ws::testing::openLessonStudio(m_studio, QSize(1400, 900)));
    MainWindow& window = *m_studio.get();
    LessonsPanel* panel = window.lessonsPanel();
    QVERIFY2(panel->openLesson(lessonFile("05-sparsity.yaml")), qPrintable(panel->lastError()));
    const lesson::Lesson* shown = panel->lesson();
    QVERIFY(shown != nullptr);
    const size_t steps = shown->steps.size();
    for (size_t k = 0; k < steps; ++k) {
        performStep(window, *panel, QStringLiteral("lesson05-step%1.png").arg(k + 1));
        if (QTest::currentTestFailed()) return;
        if (k + 1 < steps) QVERIFY(panel->next());
    }
    // The last run is the try-it's at 50%, after the 90% one: fewer zeros, more compute on the
    // emulated wafer, and the same weight stream.
    QCOMPARE(window.document()->fieldValue("model.sparsity.level"), QStringLiteral("0.5"));
    const lesson::RunObservation* ninety = panel->previousRun();
    QVERIFY(ninety != nullptr);
    const auto half = panel->currentRun().prediction;
    const auto before = ninety->prediction;
    QVERIFY(half && before);
    QVERIFY(half.get()->split.compute > before.get()->split.compute);
    stopRun(window);
}

// The coord check runs on the Sweeps tab's coord check view and the sweep through Run Sweep: the
// Sweeps tab fills with the lesson's trials, and the panel says what they found.
void LessonsPanelTest::lessonSixMup() {
    m_studio.close();
    QVERIFY(ws::testing::openLessonStudio(m_studio, QSize(1400, 900)));
    MainWindow& window = *m_studio.get();
    LessonsPanel* panel = window.lessonsPanel();
    QVERIFY2(panel->openLesson(lessonFile("06-mup.yaml")), qPrintable(panel->lastError()));
    auto* sweeps = window.findChild<SweepsTab*>(QStringLiteral("SweepsTab"));
    QVERIFY(sweeps);
    const lesson::Lesson* shown = panel->lesson();
    QVERIFY(shown != nullptr);
    const size_t steps = shown->steps.size();
    bool sawCoordCheck = false, sawSweep = false;
    for (size_t k = 0; k < steps; ++k) {
        const auto kind = shown->steps[k].action.kind;
        performStep(window, *panel, QStringLiteral("lesson06-step%1.png").arg(k + 1));
        if (QTest::currentTestFailed()) return;
        if (kind == lesson::Action::Kind::CoordCheck) {
            sawCoordCheck = true;
            QVERIFY(panel->studies().coordCheck);
            QVERIFY(sweeps->coordCheck()->panelCount() > 0);  // the chart is drawn
            QVERIFY2(panel->statusText().contains("Coord check"), qPrintable(panel->statusText()));
        }
        if (kind == lesson::Action::Kind::Sweep) {
            sawSweep = true;
            QVERIFY(panel->studies().sweepTransfer);
            QCOMPARE(sweeps->results().size(), size_t(panel->studies().sweepTrials));
            QVERIFY(sweeps->results().size() >= 8);
            QVERIFY2(panel->statusText().contains("Best learning rate per width"),
                     qPrintable(panel->statusText()));
        }
        if (k + 1 < steps) QVERIFY(panel->next());
    }
    QVERIFY(sawCoordCheck);
    QVERIFY(sawSweep);
}

// Lesson 8 fine-tunes twice and checks the held-out answers on the Answers tab: the tab asks the
// run's model beside the run before it, what it shows is the lesson's `answers.*`, and the Chat
// tab is given the model checked.
void LessonsPanelTest::lessonEightAnswers() {
    m_studio.close();
    QVERIFY(ws::testing::openLessonStudio(m_studio, QSize(1400, 900)));
    MainWindow& window = *m_studio.get();
    LessonsPanel* panel = window.lessonsPanel();
    QVERIFY2(panel->openLesson(lessonFile("08-training-on-the-answers.yaml")),
             qPrintable(panel->lastError()));
    auto* answers = window.findChild<AnswersTab*>(QStringLiteral("answersTab"));
    auto* chat = window.findChild<ChatTab*>(QStringLiteral("chatTab"));
    QVERIFY(answers && chat);
    const lesson::Lesson* shown = panel->lesson();
    QVERIFY(shown != nullptr);
    int checks = 0;
    for (size_t k = 0; k < shown->steps.size(); ++k) {
        performStep(window, *panel, QStringLiteral("lesson08-step%1.png").arg(k + 1));
        if (QTest::currentTestFailed()) return;
        if (shown->steps[k].action.kind == lesson::Action::Kind::CheckAnswers) {
            ++checks;
            const lesson::RunObservation& run = panel->currentRun();
            QVERIFY(run.answers.has_value());
            const QString model = QString::fromStdString(run.modelDir.string());
            QCOMPARE(answers->modelPath(0), model);
            QCOMPARE(chat->modelPath(), model);
            QCOMPARE(int(answers->outcomes(0).size()), run.answers->cases);
            QVERIFY2(
                answers->summary(0).startsWith(
                    QStringLiteral("%1/%2 exact").arg(run.answers->exact).arg(run.answers->cases)),
                qPrintable(answers->summary(0)));
            QVERIFY2(panel->statusText().contains(QStringLiteral("Answers: %1 of %2")
                                                      .arg(run.answers->exact)
                                                      .arg(run.answers->cases)),
                     qPrintable(panel->statusText()));
            if (checks == 2) {  // beside the fine-tune on the answers
                const lesson::RunObservation* before = panel->previousRun();
                QVERIFY(before && before->answers);
                QCOMPARE(answers->modelPath(1), QString::fromStdString(before->modelDir.string()));
                QVERIFY2(answers->summary(1).startsWith(
                             QStringLiteral("%1/").arg(before->answers->exact)),
                         qPrintable(answers->summary(1)));
                QVERIFY2(panel->statusText().contains(QStringLiteral("the run before")),
                         qPrintable(panel->statusText()));
            }
        }
        if (k + 1 < shown->steps.size()) QVERIFY(panel->next());
    }
    QCOMPARE(checks, 2);
}

// Every lesson in resources/lessons, every step, in the studio (the headless runner does the
// same in lesson.*); screenshots lessonNN-all-stepK.png. Lessons 5, 6 and 8 are walked by their
// own tests above (a sweep is a minute of CPU, two fine-tunes two: once is enough).
void LessonsPanelTest::everyShippedLessonWalks() {
    const QStringList files = QDir(QStringLiteral(WAFER_SOURCE_DIR "/resources/lessons"))
                                  .entryList({QStringLiteral("*.yaml")}, QDir::Files, QDir::Name);
    QVERIFY(files.size() >= 5);
    for (const QString& file : files) {
        if (file.startsWith(QLatin1String("05-")) || file.startsWith(QLatin1String("06-")) ||
            file.startsWith(QLatin1String("08-")))
            continue;
        // A fresh studio per lesson, as a learner opening it would have.
        m_studio.close();
        QVERIFY(ws::testing::openLessonStudio(m_studio));
        MainWindow& window = *m_studio.get();
        LessonsPanel* panel = window.lessonsPanel();
        QVERIFY2(panel->openLesson(lessonFile(qPrintable(file))), qPrintable(panel->lastError()));
        const lesson::Lesson* shown = panel->lesson();
        QVERIFY(shown != nullptr);
        const size_t steps = shown->steps.size();
        for (size_t k = 0; k < steps; ++k) {
            performStep(window, *panel,
                        QStringLiteral("lesson%1-all-step%2.png").arg(file.left(2)).arg(k + 1));
            if (QTest::currentTestFailed()) {
                qWarning("%s, step %zu", qPrintable(file), k + 1);
                return;
            }
            if (k + 1 < steps) QVERIFY(panel->next());
        }
        stopRun(window);
    }
}

void LessonsPanelTest::failingTryKeepsNextDisabled() {
    MainWindow& window = *m_studio.get();
    LessonsPanel* panel = window.lessonsPanel();
    QVERIFY(panel->openLesson(lessonFile("02-wafer-buffer.yaml")));
    QTRY_VERIFY(!panel->isBusy());
    // Step 5: "give the wider model a double buffer" - config only, no run needed.
    panel->enterStep(4);
    QTRY_VERIFY(!panel->isBusy());
    const lesson::Lesson* shown = panel->lesson();
    QVERIFY(shown != nullptr);
    const auto& step = shown->steps.at(4);
    QVERIFY(step.tryIt);
    auto* next = panel->findChild<QPushButton*>("lessonNext");
    auto* result = panel->findChild<QLabel*>("lessonCheckResult");
    QVERIFY(!next->isEnabled());
    QTest::mouseClick(panel->findChild<QPushButton*>("lessonCheck"), Qt::LeftButton);
    QVERIFY(!next->isEnabled());
    QVERIFY2(result->text().contains("Not yet"), qPrintable(result->text()));
    QVERIFY2(result->text().contains(QString::fromStdString(step.tryIt->hint).toHtmlEscaped()),
             qPrintable(result->text()));
    QTest::keyClick(panel, Qt::Key_Right);  // Next's key does nothing either
    QCOMPARE(panel->stepIndex(), size_t(4));
    screenshot(window, QStringLiteral("lesson02-try-failed.png"));
    // Show me does the task: the "Not yet" of the check before it no longer stands beside it
    // (it stayed, red, until Check was pressed again).
    QTest::mouseClick(panel->findChild<QPushButton*>("lessonShowMe"), Qt::LeftButton);
    QTRY_VERIFY(!panel->isBusy());
    QVERIFY2(!result->text().contains("Not yet"), qPrintable(result->text()));
    QVERIFY(!next->isEnabled());  // not before Check
    // The learner sets the field on the form and types the answer; now the check passes.
    QVERIFY(window.document()->setField("wafer.weight_buffer_layers", "2"));
    panel->findChild<QLineEdit*>("lessonAnswer")->setText(QStringLiteral("4"));
    QTest::mouseClick(panel->findChild<QPushButton*>("lessonCheck"), Qt::LeftButton);
    QVERIFY2(result->text().contains("Well done"), qPrintable(result->text()));
    QVERIFY(next->isEnabled());
    QTest::keyClick(panel, Qt::Key_Right);
    QCOMPARE(panel->stepIndex(), size_t(5));
}

void LessonsPanelTest::badLessonFileShowsTheError() {
    QTemporaryDir dir;
    const QString path = dir.filePath("bad-lesson.yaml");
    {
        QFile f(path);
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write(
            "title: \"Bad\"\n"
            "summary: \"a lesson with a mistake\"\n"
            "preset: " WAFER_SOURCE_DIR
            "/presets/teaching-stream.yaml\n"
            "steps:\n"
            "  - title: \"One\"\n"
            "    text: \"hello\"\n"
            "    action: {pause_at: {phase: sideways, layer: 0}}\n");
    }
    MainWindow& window = *m_studio.get();
    LessonsPanel* panel = window.lessonsPanel();
    QVERIFY(!panel->openLesson(path));
    QVERIFY(panel->lesson() == nullptr);
    auto* box = panel->findChild<QMessageBox*>("lessonErrorBox");
    QVERIFY(box);
    QVERIFY(box->isVisible());
    QVERIFY2(box->text().contains("bad-lesson.yaml:7:"), qPrintable(box->text()));
    QVERIFY2(box->text().contains("sideways"), qPrintable(box->text()));
    QVERIFY(!panel->findChild<QPushButton*>("lessonNext")->isEnabled());
    box->close();
}

// A learner's own config with unsaved edits: opening a lesson asks "Save them first?"; Cancel
// keeps the edits (and starts nothing), Discard lets the lesson load its config.
void LessonsPanelTest::unsavedConfigIsNotReplacedSilently() {
    QTemporaryDir dir;
    const QString mine = dir.filePath("mine.yaml");
    QVERIFY(QFile::copy(QStringLiteral(WAFER_SOURCE_DIR "/presets/teaching-stream.yaml"), mine));
    MainWindow& window = *m_studio.get();
    QVERIFY(window.openConfig(mine));
    QVERIFY(window.document()->setField("runconfig.max_steps", "77"));
    QVERIFY(window.document()->isModified());
    QStringList asked;
    QMessageBox::StandardButton answer = QMessageBox::Cancel;
    window.setAsker([&](const QString&, const QString& text, QMessageBox::StandardButtons,
                        QMessageBox::StandardButton) {
        asked << text;
        return answer;
    });
    window.showLessons();
    LessonsPanel* panel = window.lessonsPanel();
    panel->openLesson(lessonFile("01-weight-streaming.yaml"));
    QCOMPARE(asked.size(), 1);
    QVERIFY2(asked.front().contains("Save them first?"), qPrintable(asked.front()));
    QVERIFY(window.document()->isModified());
    QVERIFY(window.document()->yaml().contains("max_steps: 77"));
    QVERIFY(!window.controller()->isActive());

    answer = QMessageBox::Discard;
    panel->openLesson(lessonFile("01-weight-streaming.yaml"));
    QCOMPARE(asked.size(), 2);
    QVERIFY2(window.document()->displayName().startsWith("lesson: "),
             qPrintable(window.document()->displayName()));
    stopRun(window);
}

// A lesson file in `dir` on the teaching preset with the given steps.
QString writeLesson(const QTemporaryDir& dir, const char* steps) {
    const QString path = dir.filePath("lesson.yaml");
    QFile f(path);
    if (!f.open(QIODevice::WriteOnly)) return {};
    f.write(
        "title: \"Robustness\"\n"
        "preset: " WAFER_SOURCE_DIR
        "/presets/teaching-stream.yaml\n"
        "steps:\n");
    f.write(steps);
    return path;
}

// An action that cannot finish within the timeout (200 steps in no time; not a measurement of
// speed) fails with a message naming the step and what it waited for; the run is stopped and
// the buttons come back.
void LessonsPanelTest::aStuckActionTimesOutAndGivesTheButtonsBack() {
    QTemporaryDir dir;
    const QString path = writeLesson(dir,
                                     "  - title: \"Train a while\"\n"
                                     "    text: \"two hundred steps\"\n"
                                     "    action: {run_steps: 200}\n"
                                     "  - title: \"Two\"\n"
                                     "    text: \"next\"\n");
    MainWindow& window = *m_studio.get();
    LessonsPanel* panel = window.lessonsPanel();
    panel->setActionTimeout(std::chrono::milliseconds(0));
    QVERIFY(panel->openLesson(path));
    QTRY_VERIFY_WITH_TIMEOUT(!panel->isBusy(), kActionTimeoutMs);
    const QString error = panel->actionError();
    QVERIFY2(error.startsWith("step 1 (\"Train a while\"), train 200 steps: no progress for 0 ms "
                              "while waiting for the run to train 200 steps, "),
             qPrintable(error));
    QVERIFY2(error.endsWith("; the run was stopped"), qPrintable(error));
    auto* status = panel->findChild<QLabel*>("lessonStatus");
    QVERIFY2(status->text().contains("Could not do this step"), qPrintable(status->text()));
    QVERIFY(panel->findChild<QPushButton*>("lessonNext")->isEnabled());
    QTRY_VERIFY_WITH_TIMEOUT(!window.controller()->isActive(), 60000);
    QVERIFY(panel->next());  // the lesson goes on
    QCOMPARE(panel->stepIndex(), size_t(1));
}

// A lesson's run ends with a checkpoint, as Run's do: Runs can resume it.
void LessonsPanelTest::aLessonRunEndsWithACheckpoint() {
    QTemporaryDir dir;
    const QString path = writeLesson(dir,
                                     "  - title: \"Three steps\"\n"
                                     "    text: \"train\"\n"
                                     "    action: {run_steps: 3}\n");
    MainWindow& window = *m_studio.get();
    QSignalSpy finished(window.controller(), &RunController::finished);
    LessonsPanel* panel = window.lessonsPanel();
    QVERIFY(panel->openLesson(path));
    QTRY_VERIFY_WITH_TIMEOUT(!panel->isBusy(), kActionTimeoutMs);
    QVERIFY2(panel->actionError().isEmpty(), qPrintable(panel->actionError()));
    QTRY_VERIFY_WITH_TIMEOUT(!finished.isEmpty(), 60000);
    const auto summary = finished.front().front().value<ws::session::RunSummary>();
    QVERIFY(summary.runId >= 0);
    const auto checkpoints = window.runStore()->checkpoints(summary.runId);
    QVERIFY(checkpoints.ok());
    QVERIFY(!checkpoints->empty());
    QCOMPARE(checkpoints->back().step, int64_t(3));
    QVERIFY(window.openStoredRun(summary.runId));
    QTRY_VERIFY(window.findChild<QAction*>("resumeRunAction")->isEnabled());
}

int main(int argc, char** argv) {
    return ws::testing::runIsolatedGuiTest<LessonsPanelTest>(argc, argv);
}
#include "lessons_panel_test.moc"
