// SPDX-License-Identifier: GPL-3.0-or-later
// Lessons whose words agree with the picture (issue 31): every try-it asks only about what a
// named widget shows; a question's Check depends on the answer typed, which the "On the wafer"
// line shows; the last step offers the next lesson (and the window title follows the lesson);
// the status line follows the learner's own Step Layer and Run; after Auto-step the Wafer tab
// shows the step the narration names; a learner's Run on a lesson's
// config is named after the lesson step and trains the steps the lesson says; the weight buffer
// row shows two layers on the wafer where lesson 2 says so; the figure fills the dock and opens
// large. Screenshots: lesson-text-*.png in $WAFER_TEST_ARTIFACTS.
#include <QComboBox>
#include <QDialog>
#include <QDir>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QPointer>
#include <QPushButton>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>

#include "engine/lesson/lesson.h"
#include "support/gui_test.h"
#include "support/lesson_test_support.h"
#include "support/wafer_tab_views.h"
#include "ui/common/run_controller.h"
#include "ui/config/config_document.h"
#include "ui/config/config_form.h"
#include "ui/config/config_tab.h"
#include "ui/lessons/lesson_figure.h"
#include "ui/lessons/lesson_subjects.h"
#include "ui/lessons/lessons_panel.h"
#include "ui/shell/main_window.h"
#include "ui/teaching/auto_step.h"
#include "ui/training/training_tab.h"
#include "ui/wafer/buffer_slots_view.h"
#include "ui/wafer/core_heatmap.h"
#include "ui/wafer/wafer_tab.h"

using ws::testing::WaferTabViews;

using namespace ws::ui;
namespace lesson = ws::lesson;
using ws::testing::kActionTimeoutMs;
using ws::testing::lessonFile;
using ws::testing::stopRun;

namespace {

// Every subject a check names (both sides), and a question's.
QStringList subjectsOf(const lesson::TryIt& t) {
    QStringList out;
    for (const lesson::Condition& c : t.check)
        for (const lesson::Operand* side : {&c.left, &c.right})
            if (side->isSubject) out << QString::fromStdString(side->text);
    if (!t.answer.empty()) out << QString::fromStdString(t.answer);
    return out;
}

// The open lesson (the test fails first when none is open).
const lesson::Lesson& shownLesson(const LessonsPanel& panel) {
    static const lesson::Lesson none;
    return panel.lesson() ? *panel.lesson() : none;
}

void screenshot(MainWindow& window, const QString& name) {
    QVERIFY(window.saveScreenshot(ws::testing::artifactPath(name)));
}

}  // namespace

class LessonTextTest : public QObject {
    Q_OBJECT
private slots:
    // Every try-it of every shipped lesson asks about subjects a named widget of the studio
    // shows (a check on something nothing shows is the learner guessing).
    void everyTryItsSubjectIsShownOnScreen() {
        QTemporaryDir dir;
        MainWindow window(dir.filePath("runs.sqlite"));
        const QStringList files =
            QDir(QStringLiteral(WAFER_SOURCE_DIR "/resources/lessons"))
                .entryList({QStringLiteral("*.yaml")}, QDir::Files, QDir::Name);
        QVERIFY(files.size() >= 7);
        int tries = 0;
        for (const QString& file : files) {
            auto loaded = lesson::loadLesson(lessonFile(qPrintable(file)).toStdString());
            QVERIFY2(loaded.ok(), loaded.ok() ? "" : loaded.error().message.c_str());
            for (size_t k = 0; k < loaded->steps.size(); ++k) {
                if (!loaded->steps[k].tryIt) continue;
                ++tries;
                for (const QString& subject : subjectsOf(*loaded->steps[k].tryIt)) {
                    const QString where =
                        QStringLiteral("%1 step %2: %3").arg(file).arg(k + 1).arg(subject);
                    QVERIFY2(!subjectWidgetNames(subject).isEmpty(), qPrintable(where));
                    QVERIFY2(subjectWidget(&window, subject) != nullptr, qPrintable(where));
                }
            }
        }
        QVERIFY(tries >= 7);
        // The micro-batch count lesson 2 asks for has a widget of its own.
        QCOMPARE(subjectWidget(&window, QStringLiteral("fit.micro_batches"))->objectName(),
                 QStringLiteral("configFit"));
    }

    // Lesson 2's question: Check passes on the number the "On the wafer" line shows, not on a
    // wrong one nor on none; Show me types it in.
    void aQuestionIsCheckedAgainstWhatTheScreenShows() {
        QTemporaryDir dir;
        MainWindow window(dir.filePath("runs.sqlite"));
        window.resize(1366, 768);
        window.show();
        window.showLessons();
        LessonsPanel* panel = window.lessonsPanel();
        QVERIFY(panel->openLesson(lessonFile("02-wafer-buffer.yaml")));
        QTRY_VERIFY(!panel->isBusy());
        size_t question = 0;
        for (size_t k = 0; k < shownLesson(*panel).steps.size(); ++k)
            if (shownLesson(*panel).steps[k].tryIt &&
                !shownLesson(*panel).steps[k].tryIt->answer.empty())
                question = k;
        QVERIFY(question > 0);
        panel->enterStep(question);
        QTRY_VERIFY(!panel->isBusy());
        auto* answer = panel->findChild<QLineEdit*>("lessonAnswer");
        auto* result = panel->findChild<QLabel*>("lessonCheckResult");
        auto* next = panel->findChild<QPushButton*>("lessonNext");
        auto* fit = window.findChild<ConfigTab*>("configTab")->fitLabel();
        QVERIFY(answer->isVisible());
        QVERIFY2(fit->text().contains("2 micro-batches"), qPrintable(fit->text()));
        QCOMPARE(panel->highlighted(), static_cast<QWidget*>(fit));
        // The learner sets the field: the task is done, the question is not answered yet.
        QVERIFY(window.document()->setField("wafer.weight_buffer_layers", "2"));
        QVERIFY2(fit->text().contains("4 micro-batches"), qPrintable(fit->text()));
        QVERIFY(!panel->check());
        QVERIFY2(result->text().contains("type your answer"), qPrintable(result->text()));
        answer->setText(QStringLiteral("2"));
        QVERIFY(!panel->check());
        QVERIFY(!next->isEnabled());
        QVERIFY2(!result->text().contains('4'), qPrintable(result->text()));  // not given away
        answer->setText(QStringLiteral("4"));
        QVERIFY(panel->check());
        QVERIFY2(result->text().contains("Well done"), qPrintable(result->text()));
        QVERIFY(next->isEnabled());
        screenshot(window, QStringLiteral("lesson-text-question.png"));
        // Show me does the task and types the answer the screen shows.
        panel->enterStep(question);
        QTRY_VERIFY(!panel->isBusy());
        QVERIFY(answer->text().isEmpty());
        panel->showMe();
        QTRY_VERIFY(!panel->isBusy());
        QCOMPARE(answer->text(), QStringLiteral("4"));
        QVERIFY(panel->check());
        // The step after it: 4 slots do not fit. The fit line says so, the reason is listed once
        // below the form, in MiB as the text says, with a number of slots that would fit.
        QVERIFY(panel->next());
        QTRY_VERIFY(!panel->isBusy());
        QVERIFY2(fit->text().contains("does not fit"), qPrintable(fit->text()));
        QCOMPARE(panel->highlighted(), static_cast<QWidget*>(fit));
        int listed = 0;
        for (const ConfigProblem& p : window.document()->problems()) {
            if (!p.message.contains("weight buffer alone")) continue;
            ++listed;
            QVERIFY2(p.message.contains("12.1 MiB") && p.message.contains("12.0 MiB"),
                     qPrintable(p.message));
            QVERIFY2(p.message.contains("wafer.weight_buffer_layers 3 or fewer"),
                     qPrintable(p.message));
            QVERIFY2(!p.message.contains("max_sequence_length"), qPrintable(p.message));
        }
        QCOMPARE(listed, 1);
        // On the form, in full once: under the spec it is located at; the buffer's slots, which
        // it names too, point there.
        auto* form = window.findChild<ConfigTab*>("configTab")->form();
        const QString atBuffer =
            form->errorLabelFor("wafer.weight_buffer_layers")->property("fullText").toString();
        const QString atSpec = form->errorLabelFor("wafer.spec")->property("fullText").toString();
        QVERIFY2(atSpec.contains("weight buffer alone"), qPrintable(atSpec));
        QVERIFY2(!atBuffer.contains("weight buffer alone") && atBuffer.contains("Spec"),
                 qPrintable(atBuffer));
        QVERIFY2(fit->text().contains("under “Spec”"), qPrintable(fit->text()));
        // The list below the form shows the whole message: as tall as its wrapped text.
        auto* problems = window.findChild<QListWidget*>("configProblems");
        QVERIFY(problems->isVisible());
        QTRY_VERIFY2(
            problems->viewport()->height() >= problems->visualItemRect(problems->item(0)).bottom(),
            qPrintable(QStringLiteral("%1 < %2")
                           .arg(problems->viewport()->height())
                           .arg(problems->visualItemRect(problems->item(0)).bottom())));
        screenshot(window, QStringLiteral("lesson-text-bound.png"));
    }

    // The last step's Next opens the next lesson; the window title names the lesson open now,
    // though lessons 2 and 3 share a preset. The last lesson's last step has nowhere to go.
    void theLastStepOpensTheNextLesson() {
        QTemporaryDir dir;
        MainWindow window(dir.filePath("runs.sqlite"));
        window.resize(1366, 768);
        window.show();
        window.showLessons();
        LessonsPanel* panel = window.lessonsPanel();
        // Lesson 1's first step and lesson 2's have the same config (the preset): the title
        // names the lesson open all the same.
        QVERIFY(panel->openLesson(lessonFile("01-weight-streaming.yaml")));
        QTRY_VERIFY(!panel->isBusy());
        QVERIFY2(window.windowTitle().contains("One step of weight streaming"),
                 qPrintable(window.windowTitle()));
        QVERIFY(panel->openLesson(lessonFile("02-wafer-buffer.yaml")));
        QTRY_VERIFY(!panel->isBusy());
        QVERIFY2(window.windowTitle().contains("The wafer buffer"),
                 qPrintable(window.windowTitle()));
        const size_t last = shownLesson(*panel).steps.size() - 1;
        panel->enterStep(last);
        QTRY_VERIFY(!panel->isBusy());
        auto* next = panel->findChild<QPushButton*>("lessonNext");
        QCOMPARE(next->text(), QStringLiteral("Next lesson ▶"));
        QVERIFY(next->isEnabled());
        screenshot(window, QStringLiteral("lesson-text-next-lesson.png"));
        QTest::mouseClick(next, Qt::LeftButton);
        QVERIFY(panel->lesson() != nullptr);
        QCOMPARE(shownLesson(*panel).sourceFile.filename().string(),
                 std::string("03-micro-batches.yaml"));
        QCOMPARE(panel->stepIndex(), size_t(0));
        QCOMPARE(next->text(), QStringLiteral("Next ▶"));
        QVERIFY2(window.windowTitle().contains("Micro-batches"), qPrintable(window.windowTitle()));
        QTRY_VERIFY(!panel->isBusy());

        // The last lesson's last step (a try-it): Next has nowhere to go.
        QVERIFY(panel->openLesson(lessonFile("08-training-on-the-answers.yaml")));
        QTRY_VERIFY(!panel->isBusy());
        stopRun(window);
        panel->enterStep(shownLesson(*panel).steps.size() - 1);
        QTRY_VERIFY(!panel->isBusy());
        QVERIFY(panel->nextLessonPath().isEmpty());
        QVERIFY(!next->isEnabled());
    }

    // The status line follows the run when the learner steps on their own (it said "layer 0"
    // after three Step Layers), and names the layer as the Wafer tab does.
    void theStatusLineFollowsTheLearnersSteps() {
        QTemporaryDir dir;
        MainWindow window(dir.filePath("runs.sqlite"));
        window.resize(1366, 768);
        window.show();
        window.showLessons();
        LessonsPanel* panel = window.lessonsPanel();
        QVERIFY(panel->openLesson(lessonFile("01-weight-streaming.yaml")));
        QVERIFY(panel->next());  // paused after the embeddings' forward pass
        QTRY_VERIFY_WITH_TIMEOUT(!panel->isBusy(), kActionTimeoutMs);
        QVERIFY2(panel->statusText().contains("forward pass of layer 0 (the embeddings)"),
                 qPrintable(panel->statusText()));
        ws::session::Session* session = window.controller()->session();
        QVERIFY(session);
        for (int press = 0; press < 3; ++press) {  // to the head's forward pass
            const int64_t stops = session->pauseStops();
            window.controller()->stepLayer();
            QTRY_VERIFY_WITH_TIMEOUT(session->pauseStops() > stops, kActionTimeoutMs);
            window.controller()->drainNow();
        }
        QTRY_VERIFY2(panel->statusText().contains("forward pass of layer 3 (the head)"),
                     qPrintable(panel->statusText()));
        QVERIFY2(panel->statusText().contains("paused"), qPrintable(panel->statusText()));
        stopRun(window);
    }

    // Auto-step through lesson 1's paused step to its end: the narration line's step is the
    // Wafer tab's (the tab moved on to the next step, whose first weights were already
    // streaming in), and the heatmap shows the phase narrated.
    void autoStepEndsOnTheStepItNarrates() {
        QTemporaryDir dir;
        MainWindow window(dir.filePath("runs.sqlite"));
        window.resize(1366, 768);
        window.show();
        window.showLessons();
        LessonsPanel* panel = window.lessonsPanel();
        QVERIFY(panel->openLesson(lessonFile("01-weight-streaming.yaml")));
        QVERIFY(panel->next());  // paused after the embeddings' forward pass
        QTRY_VERIFY_WITH_TIMEOUT(!panel->isBusy(), kActionTimeoutMs);
        ws::session::Session* session = window.controller()->session();
        QVERIFY(session);
        AutoStep* autoStep = window.autoStep();
        autoStep->start();
        QVERIFY(autoStep->isRunning());
        autoStep->timer()->stop();  // the test beats the pace itself
        for (int i = 0; i < 40 && autoStep->isRunning(); ++i) {
            const int64_t stops = session->pauseStops();
            autoStep->tick();
            if (!autoStep->isRunning()) break;
            QTRY_VERIFY_WITH_TIMEOUT(session->pauseStops() > stops, kActionTimeoutMs);
            window.controller()->drainNow();
        }
        QVERIFY(!autoStep->isRunning());
        QVERIFY2(autoStep->narration().startsWith("Step 1 · embeddings backward"),
                 qPrintable(autoStep->narration()));
        auto* wafer = window.findChild<WaferTab*>(QStringLiteral("waferTab"));
        window.showTab(QStringLiteral("wafer"));
        QTest::qWait(300);  // whatever the next step streams in meanwhile
        window.controller()->drainNow();
        wafer->redrawNow();
        QCOMPARE(wafer->shownStep(), int64_t(0));
        QVERIFY2(WaferTabViews(*wafer).heatmap->titleText().contains("embeddings backward"),
                 qPrintable(WaferTabViews(*wafer).heatmap->titleText()));
        screenshot(window, QStringLiteral("lesson-text-auto-step-end.png"));
        stopRun(window);
    }

    // Lesson 7's last step: the learner sets a learning rate and presses Run. The run trains the
    // 30 steps the lesson says (not the preset's 200), is named after the lesson step, and the
    // status line counts its steps.
    void aLearnersRunIsTheLessonsRun() {
        QTemporaryDir dir;
        MainWindow window(dir.filePath("runs.sqlite"));
        window.resize(1366, 768);
        window.show();
        window.showLessons();
        LessonsPanel* panel = window.lessonsPanel();
        QVERIFY(panel->openLesson(lessonFile("07-learning-rate-too-high.yaml")));
        QTRY_VERIFY(!panel->isBusy());
        stopRun(window);
        const size_t last = shownLesson(*panel).steps.size() - 1;
        panel->enterStep(last);
        QTRY_VERIFY(!panel->isBusy());
        QVERIFY(window.document()->setField("optimizer.learning_rate", "0.005"));
        QCOMPARE(window.document()->config().runconfig.maxSteps, int64_t(30));
        QSignalSpy finished(window.controller(), &RunController::finished);
        QVERIFY(window.startRun());
        QTRY_VERIFY_WITH_TIMEOUT(!finished.isEmpty(), kActionTimeoutMs);
        auto* training = window.findChild<TrainingTab*>(QStringLiteral("trainingTab"));
        QStringList names;
        for (const auto& [id, run] : training->runs()) names << QString::fromStdString(run.name);
        QVERIFY2(names.contains(
                     QStringLiteral("lesson 7: A learning rate too high, step %1").arg(last + 1)),
                 qPrintable(names.join(", ")));
        QTRY_VERIFY2(panel->statusText().startsWith("Run: 30 steps trained"),
                     qPrintable(panel->statusText()));
        QVERIFY(panel->check());
        auto* result = panel->findChild<QLabel*>("lessonCheckResult");
        // Check says where Next goes: lesson 8.
        QVERIFY2(result->text().contains("“Next lesson” is open"), qPrintable(result->text()));
        screenshot(window, QStringLiteral("lesson-text-lesson7-run.png"));
    }

    // Lesson 2, step 2 says two layers' weights are on the wafer at once: the buffer row shows
    // them, h.0 computing and h.1 in the other slot (the run's real spans).
    void theBufferRowShowsTwoLayersWhereTheLessonSaysSo() {
        QTemporaryDir dir;
        MainWindow window(dir.filePath("runs.sqlite"));
        window.resize(1366, 768);
        window.show();
        window.showLessons();
        LessonsPanel* panel = window.lessonsPanel();
        QVERIFY(panel->openLesson(lessonFile("02-wafer-buffer.yaml")));
        QTRY_VERIFY(!panel->isBusy());
        QVERIFY(panel->next());
        QTRY_VERIFY_WITH_TIMEOUT(!panel->isBusy(), kActionTimeoutMs);
        QVERIFY2(panel->actionError().isEmpty(), qPrintable(panel->actionError()));
        QVERIFY2(QString::fromStdString(shownLesson(*panel).steps[1].text)
                     .simplified()
                     .contains("two, one computing and one arriving"),
                 "lesson 2's step 2 no longer says so");
        auto* wafer = window.findChild<WaferTab*>(QStringLiteral("waferTab"));
        wafer->redrawNow();
        const QString held = WaferTabViews(*wafer).bufferSlots->text();
        QVERIFY2(held.contains("h.0 forward, computing"), qPrintable(held));
        QVERIFY2(held.contains("h.1 forward, in") || held.contains("h.1 forward, streaming"),
                 qPrintable(held));
        QVERIFY2(!held.contains("empty"), qPrintable(held));
        QCOMPARE(panel->highlighted(), static_cast<QWidget*>(WaferTabViews(*wafer).bufferSlots));
        screenshot(window, QStringLiteral("lesson-text-two-slots.png"));
        stopRun(window);
    }

    // A figure fills the dock's width and opens large on a click.
    void aFigureFillsTheDockAndOpensLarge() {
        QTemporaryDir dir;
        MainWindow window(dir.filePath("runs.sqlite"));
        window.resize(1366, 768);
        window.show();
        window.showLessons();
        LessonsPanel* panel = window.lessonsPanel();
        QVERIFY(panel->openLesson(lessonFile("01-weight-streaming.yaml")));
        auto* figure = window.findChild<LessonFigure*>(QStringLiteral("lessonFigure"));
        QTRY_VERIFY(figure->isVisible());
        QVERIFY(figure->pixmap().width() >=
                    std::min(panel->width() - 40, 2 * figure->image().width()) ||
                figure->pixmap().height() >= int(panel->height() * 0.45) - 1);
        screenshot(window, QStringLiteral("lesson-text-figure.png"));
        QTest::mouseClick(figure, Qt::LeftButton);
        auto* dialog = window.findChild<QDialog*>(QStringLiteral("lessonFigureDialog"));
        QVERIFY(dialog);
        QTRY_VERIFY(dialog->isVisible());
        auto* large = dialog->findChild<QLabel*>(QStringLiteral("lessonFigureLarge"));
        QVERIFY(large->pixmap().width() > figure->pixmap().width());
        QPointer<QDialog> closing(dialog);
        QTest::mouseClick(large, Qt::LeftButton);
        QTRY_VERIFY(!closing);
        stopRun(window);
    }
};

int main(int argc, char** argv) {
    return ws::testing::runIsolatedGuiTest<LessonTextTest>(argc, argv);
}
#include "lesson_text_test.moc"
