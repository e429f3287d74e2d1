// SPDX-License-Identifier: GPL-3.0-or-later
// LessonsPanel: the studio's Lessons dock (issue 17, README "Lessons"). It lists the shipped
// lessons (resources/lessons) and opens any lesson file; shows the current step's title, text,
// formula and figure (LessonFigure); and performs the step in the studio itself: the step's
// config (lesson::configAtStep) goes into the window's config document, its action runs on the
// window's real run through the RunController (a new run, paused or stopped after N steps; Step
// Layer), driven by lesson::ActionDriver with every drained event batch; a coord_check runs on
// the Sweeps tab's coord check view and a sweep through the window's Run Sweep, their results
// summed up in the panel and kept for checks (lesson::StudyObservation); a check_answers asks the
// run's model its held-out records on the Answers tab, beside the run before it (the run's
// `answers.*` in checks), and gives the Chat tab the model; the step's view is
// brought forward and the named widget outlined (HighlightFrame). A step's "try it"
// (LessonTryBox) is checked with lesson::evaluate against the document's config, the current run
// and the run before it (and a question against what the screen shows); Next stays disabled
// until it passes. The status line follows the run as the learner steps or runs on their own;
// the last step's Next opens the next lesson in the list. Keys while the panel has focus: Space
// / Right for Next, Left for Back. A lesson file that does not load is reported in an error box
// with the engine's file:line:col messages. GUI thread only.
#pragma once

#include <QElapsedTimer>
#include <QPixmap>
#include <QRect>
#include <QWidget>
#include <chrono>
#include <memory>
#include <optional>

#include "engine/lesson/lesson.h"
#include "engine/lesson/lesson_runner.h"
#include "ui/lessons/lesson_run_selection.h"

class QComboBox;
class QDialog;
class QLabel;
class QPushButton;
class QTextBrowser;
class QTimer;

namespace ws::ui {

class LessonFigure;
class LessonTryBox;
class LessonHost;

// The part of `w` that shows, in `in`'s coordinates (`in` an ancestor of `w`): its rectangle
// clipped by every ancestor's up to `in` (scroll areas' viewports, splitter panes, docks).
// Empty when `w` is hidden.
QRect visibleRectOf(const QWidget* w, const QWidget* in);

// A thick pulsing outline drawn on one widget (by its top-level window), visible on a
// projector; follows the widget's geometry until deleted. It covers only the part of the widget
// that shows, never the docks or views beside it, and hides while `owner` (the Lessons panel)
// is hidden: its dock closed.
class HighlightFrame : public QWidget {
    Q_OBJECT
public:
    HighlightFrame(QWidget* target, QWidget* window, QWidget* owner = nullptr);
    QWidget* target() const { return m_target; }

protected:
    void paintEvent(QPaintEvent* event) override;
    // The target and its ancestors moving, resizing, scrolling or showing: follow at once.
    bool eventFilter(QObject* watched, QEvent* event) override;

private:
    void follow();
    QWidget* m_target;  // null once destroyed
    QWidget* m_owner;   // null once destroyed
    QTimer* m_timer;
    int m_ticks = 0;
    bool m_keepInView = true;  // until the learner scrolls
    bool m_scrolling = false;
};

class LessonsPanel : public QWidget {
    Q_OBJECT
public:
    // `host`: the studio the lessons drive (lesson_host.h).
    explicit LessonsPanel(LessonHost* host, QWidget* parent = nullptr);
    ~LessonsPanel() override;

    // Loads a lesson file and enters its first step; false (and an error box "lessonErrorBox"
    // with the engine's messages) when it does not load.
    bool openLesson(const QString& path);
    // Step navigation (the Back / Next buttons and keys).
    bool next();
    bool back();
    void enterStep(size_t index);
    // Evaluates the try-it's checks (the Check button); true when all pass.
    bool check();
    // Performs the try-it's solution (the "Show me" button).
    void showMe();

    const lesson::Lesson* lesson() const { return m_lesson ? &*m_lesson : nullptr; }
    size_t stepIndex() const { return m_step; }
    // Longest time a step's action may go without progress (no event from its run) before it
    // fails with a message naming the step and what it waited for, the run is stopped and the
    // buttons come back (lesson::RunnerOptions::timeout, the same default).
    void setActionTimeout(std::chrono::milliseconds timeout) { m_actionTimeout = timeout; }
    // Whether the step's action is still being performed.
    bool isBusy() const {
        return m_driver != nullptr || m_waitingToStart || m_study != lesson::Action::Kind::None;
    }
    // Next: the next step, or on the last step the next lesson in the list ("Next lesson ▶").
    bool canGoNext() const;
    QString nextLessonPath() const;  // empty: no lesson after this one
    // The name the current step gives a run: "lesson 2: The wafer buffer and prefetching, step 3";
    // runNameForDocument() is that while the window's config is the lesson's own (so Run,
    // pressed by the learner, names its run after the step too), else empty.
    QString stepRunName() const;
    QString runNameForDocument() const;
    QString actionError() const { return m_actionError; }
    QString lastError() const { return m_lastError; }
    const lesson::RunObservation& currentRun() const { return m_current; }
    // The run before the current one (ended by a config change or a new run); null when none.
    const lesson::RunObservation* previousRun() const {
        return m_previous ? &*m_previous : nullptr;
    }
    // What the lesson's coord_check and sweep actions found (`coord.*`, `sweep.*` in checks).
    const lesson::StudyObservation& studies() const { return m_studies; }
    // The status line under the step text: where the run stands (steps trained, the phase a
    // paused run shows; it follows the run as the learner steps or runs on), what the step's
    // study found, the step's unmet expectations, or why the action could not be done.
    QString statusText() const;
    // The step's figure large, for the room (LessonFigure::showLarge; the figure's click opens
    // it). Null without a figure.
    QDialog* showFigureLarge();
    // The widget the step's highlight names (null when none or not found).
    QWidget* highlighted() const;

signals:
    void stepChanged(int index);
    void actionFinished(bool ok);

protected:
    void keyPressEvent(QKeyEvent* event) override;
    void resizeEvent(QResizeEvent* event) override;  // the figure follows the dock's width
    // The type changing (Presenter Mode): the step title keeps 1.4 x the panel's type.
    void changeEvent(QEvent* event) override;

private:
    void fillLessonList();
    void sizeStepTitle();
    void showStepText();
    void fitFigure();
    void performAction(const lesson::Action& action);
    void startPendingRun();
    // coord_check, sweep and check_answers: on the Sweeps tab's coord check view, the window's
    // sweep and the Answers tab.
    void performStudy(const lesson::Action& action);
    void startStudy();
    void studyFinished(bool ok, const QString& error);
    QString studySummary(lesson::Action::Kind kind) const;
    void onEvents(const std::vector<session::Event>& events, int64_t pauseStopsBefore);
    void advance(int64_t pauseStops);
    void finishAction(bool ok, const QString& error);
    QString runLine() const;  // "Run: 3 steps trained, paused. The wafer shows ..."
    void refreshStatus();
    // "step 2 ("Pause"), pause after the forward pass of layer 1: <what>"
    QString stepFailure(const QString& what) const;
    void timeOut();
    // The document's config changed (a step's changes, a solution): the run in flight ends and
    // becomes `previous` in checks.
    void configChanged();
    bool applyConfig(const config::LoadedConfig& config);
    void showView(const lesson::LessonStep& step);
    void setHighlight(const QString& name);
    void showError(const QString& title, const QString& message);
    void updateButtons();
    std::optional<config::LoadedConfig> documentConfig() const;

    LessonHost* m_host;
    LessonRunSelection m_runSelection;  // the runs a comparing step selects (issue 31)
    std::optional<lesson::Lesson> m_lesson;
    size_t m_step = 0;
    bool m_tryPassed = false;
    // The action in progress.
    std::unique_ptr<lesson::ActionDriver> m_driver;
    bool m_waitingToStart = false;  // a new run waits for the previous one to end
    bool m_solving = false;         // the action is the try-it's solution, not the step's own
    lesson::ActionDriver::Start m_start;
    QString m_actionError;
    QString m_lastError;
    int64_t m_seenSerial = 0;
    lesson::RunObservation m_current;
    std::optional<lesson::RunObservation> m_previous;
    // The study in progress (None: none), its action, and whether it has been started (it waits
    // for the run in flight to stop first).
    lesson::Action::Kind m_study = lesson::Action::Kind::None;
    lesson::Action m_studyAction;
    bool m_studyStarted = false;
    lesson::Action::Kind m_finishedStudy = lesson::Action::Kind::None;
    lesson::StudyObservation m_studies;
    HighlightFrame* m_frame = nullptr;  // owned by the target's window

    QComboBox* m_lessons;
    QPushButton* m_openFile;
    QLabel* m_lessonTitle;
    QLabel* m_counter;
    QLabel* m_stepTitle;
    QTextBrowser* m_text;
    QLabel* m_formula;
    LessonFigure* m_figure;
    QLabel* m_status;
    QString m_statusNote;  // a study's summary, unmet expectations (after the run line)
    LessonTryBox* m_tryBox;
    QPushButton* m_back;
    QPushButton* m_next;
    QTimer* m_poll;
    std::chrono::milliseconds m_actionTimeout = lesson::RunnerOptions{}.timeout;
    QElapsedTimer m_sinceProgress;  // since the action started or its run last sent an event
};

}  // namespace ws::ui
