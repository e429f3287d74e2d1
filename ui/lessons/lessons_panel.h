// LessonsPanel: the studio's Lessons dock (issue 17, README "Lessons"). It lists the shipped
// lessons (resources/lessons) and opens any lesson file; shows the current step's title, text,
// formula and figure; and performs the step in the studio itself: the step's config
// (lesson::configAtStep) goes into the window's config document, its action runs on the window's
// real run through the RunController (a new run, paused or stopped after N steps; Step Layer),
// driven by lesson::ActionDriver with every drained event batch; a coord_check runs on the Sweeps
// tab's coord check view and a sweep through the window's Run Sweep, their results summed up in
// the panel and kept for checks (lesson::StudyObservation); the step's view is brought
// forward and the named widget outlined (HighlightFrame). A step's "try it" is checked with
// lesson::evaluate against the document's config, the current run and the run before it; Next
// stays disabled until it passes (the hint is shown when it does not). Keys while the panel has
// focus: Space / Right for Next, Left for Back. A lesson file that does not load is reported in
// an error box with the engine's file:line:col messages. GUI thread only.
#pragma once

#include <QElapsedTimer>
#include <QPixmap>
#include <QWidget>
#include <chrono>
#include <memory>
#include <optional>

#include "engine/lesson/lesson.h"
#include "engine/lesson/lesson_runner.h"
#include "ui/lessons/lesson_run_selection.h"

class QComboBox;
class QDialog;
class QGroupBox;
class QLabel;
class QPushButton;
class QTextBrowser;
class QTimer;

namespace ws::ui {

class MainWindow;

// A thick pulsing outline drawn over one widget (in its top-level window), visible on a
// projector; follows the widget's geometry until deleted.
class HighlightFrame : public QWidget {
    Q_OBJECT
public:
    HighlightFrame(QWidget* target, QWidget* window);
    QWidget* target() const { return m_target; }

protected:
    void paintEvent(QPaintEvent* event) override;
    // The target and its ancestors moving, resizing, scrolling or showing: follow at once.
    bool eventFilter(QObject* watched, QEvent* event) override;

private:
    void follow();
    QWidget* m_target;  // null once destroyed
    QTimer* m_timer;
    int m_ticks = 0;
};

class LessonsPanel : public QWidget {
    Q_OBJECT
public:
    explicit LessonsPanel(MainWindow* window, QWidget* parent = nullptr);
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
    bool canGoNext() const;
    QString actionError() const { return m_actionError; }
    QString lastError() const { return m_lastError; }
    const lesson::RunObservation& currentRun() const { return m_current; }
    // The run before the current one (ended by a config change or a new run); null when none.
    const lesson::RunObservation* previousRun() const {
        return m_previous ? &*m_previous : nullptr;
    }
    // What the lesson's coord_check and sweep actions found (`coord.*`, `sweep.*` in checks).
    const lesson::StudyObservation& studies() const { return m_studies; }
    // The status line under the step text (what the action did, or why it could not).
    QString statusText() const;
    // The step's figure large, for the room ("lessonFigureDialog", frameless, most of the
    // screen; a click or Esc closes it); the figure's click opens it. Null without a figure.
    QDialog* showFigureLarge();
    // The widget the step's highlight names (null when none or not found).
    QWidget* highlighted() const;
    // The object names tried, in order, for a lesson highlight name (README "Lessons").
    static QStringList highlightObjectNames(const QString& highlight);

signals:
    void stepChanged(int index);
    void actionFinished(bool ok);

protected:
    void keyPressEvent(QKeyEvent* event) override;
    void resizeEvent(QResizeEvent* event) override;  // the figure follows the dock's width
    bool eventFilter(QObject* watched, QEvent* event) override;  // a click on the figure
    // The type changing (Presenter Mode): the step title keeps 1.4 x the panel's type.
    void changeEvent(QEvent* event) override;

private:
    void fillLessonList();
    void sizeStepTitle();
    void showStepText();
    void fitFigure();
    void performAction(const lesson::Action& action);
    void startPendingRun();
    // coord_check and sweep: on the Sweeps tab's coord check view and the window's sweep.
    void performStudy(const lesson::Action& action);
    void startStudy();
    void studyFinished(bool ok, const QString& error);
    QString studySummary(lesson::Action::Kind kind) const;
    void onEvents(const std::vector<session::Event>& events, int64_t pauseStopsBefore);
    void advance(int64_t pauseStops);
    void finishAction(bool ok, const QString& error);
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

    MainWindow* m_window;
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
    QLabel* m_figure;
    QPixmap m_figurePixmap;  // the step's figure as drawn (shown scaled to the dock's width)
    QLabel* m_status;
    QGroupBox* m_tryBox;
    QLabel* m_task;
    QPushButton* m_check;
    QPushButton* m_showMe;
    QLabel* m_checkResult;
    QPushButton* m_back;
    QPushButton* m_next;
    QTimer* m_poll;
    std::chrono::milliseconds m_actionTimeout = lesson::RunnerOptions{}.timeout;
    QElapsedTimer m_sinceProgress;  // since the action started or its run last sent an event
};

}  // namespace ws::ui
