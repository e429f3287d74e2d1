// SPDX-License-Identifier: GPL-3.0-or-later
// Teaching: see teaching.h.
#include "ui/teaching/teaching.h"

#include <QAction>
#include <QDockWidget>
#include <QMainWindow>
#include <QMenu>

#include "ui/lessons/lessons_panel.h"
#include "ui/teaching/auto_step.h"
#include "ui/teaching/presenter_mode.h"

namespace ws::ui {

Teaching::Teaching(QMainWindow* window, RunController* controller)
    : QObject(window),
      m_window(window),
      m_autoStep(new AutoStep(controller, window)),
      m_presenter(new PresenterMode(window)) {
    // Auto-step switches itself off at the step's end or when the run moves on: say why.
    connect(m_autoStep, &AutoStep::runningChanged, this, [this](bool running) {
        if (!running && !m_autoStep->stopReason().isEmpty())
            emit statusMessage(tr("Auto-step stopped: %1").arg(m_autoStep->stopReason()), 15000);
    });
}

NarrationLine* Teaching::createNarrationLine(QWidget* parent) {
    m_narration = new NarrationLine(parent);
    connect(m_autoStep, &AutoStep::narrationChanged, m_narration, &NarrationLine::setLine);
    return m_narration;
}

void Teaching::createLessonsDock(LessonHost* host) {
    m_lessonsDock = new QDockWidget(tr("Lessons"), m_window);
    m_lessonsDock->setObjectName(QStringLiteral("LessonsDock"));
    m_lessons = new LessonsPanel(host, m_lessonsDock);
    m_lessonsDock->setWidget(m_lessons);
    m_window->addDockWidget(Qt::RightDockWidgetArea, m_lessonsDock);
    m_lessonsDock->hide();  // Help → Lessons
}

void Teaching::showLessons() {
    m_lessonsDock->show();
    m_lessonsDock->raise();
    m_lessons->setFocus();
}

void Teaching::addRunMenuItems(QMenu* run) {
    run->addAction(m_autoStep->action());
    QMenu* pace = run->addMenu(tr("Auto-step Pa&ce"));
    pace->addActions(m_autoStep->paceActions());
}

void Teaching::addViewMenuItems(QMenu* view) {
    QAction* lessons = m_lessonsDock->toggleViewAction();
    lessons->setObjectName(QStringLiteral("lessonsDockAction"));
    view->addAction(lessons);
    view->addAction(m_presenter->action());
}

}  // namespace ws::ui
