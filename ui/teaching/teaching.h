// SPDX-License-Identifier: GPL-3.0-or-later
// Teaching: the studio's teaching aids put together (README "Teaching"): Run → Auto-step and its
// pace, whose narration line ("narrationLine") sits above the tabs where the room sees it;
// View → Presenter Mode (F11); and the Lessons dock ("LessonsDock", Help → Lessons, hidden at
// first), whose panel drives the studio through a LessonHost (ui/lessons/lesson_host.h). The
// shell places the pieces; the wiring between them is here. GUI thread only.
#pragma once

#include <QObject>
#include <QString>

class QDockWidget;
class QMainWindow;
class QMenu;
class QWidget;

namespace ws::ui {

class AutoStep;
class LessonHost;
class LessonsPanel;
class NarrationLine;
class PresenterMode;
class RunController;

class Teaching : public QObject {
    Q_OBJECT
public:
    // Auto-step steps `controller`'s paused run; presenter mode acts on `window`.
    Teaching(QMainWindow* window, RunController* controller);

    AutoStep* autoStep() const { return m_autoStep; }
    PresenterMode* presenterMode() const { return m_presenter; }
    LessonsPanel* lessons() const { return m_lessons; }
    QDockWidget* lessonsDock() const { return m_lessonsDock; }

    // The narration line, for the shell to place above the tabs.
    NarrationLine* createNarrationLine(QWidget* parent);
    // The Lessons dock on the window's right, hidden; its panel drives `host`.
    void createLessonsDock(LessonHost* host);
    void showLessons();
    // Auto-step and its pace (the Run menu); the Lessons dock and Presenter Mode (the View menu).
    void addRunMenuItems(QMenu* run);
    void addViewMenuItems(QMenu* view);

signals:
    // A line for the status bar (Auto-step stopped, and why).
    void statusMessage(const QString& text, int timeoutMs);

private:
    QMainWindow* m_window;
    AutoStep* m_autoStep;
    PresenterMode* m_presenter;
    NarrationLine* m_narration = nullptr;
    LessonsPanel* m_lessons = nullptr;
    QDockWidget* m_lessonsDock = nullptr;
};

}  // namespace ws::ui
