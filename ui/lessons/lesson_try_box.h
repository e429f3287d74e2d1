// SPDX-License-Identifier: GPL-3.0-or-later
// LessonTryBox: a lesson step's "Try it" in the Lessons dock ("lessonTry"): the task, the answer
// box of a question (TryIt::answer, "lessonAnswer"), Check and Show me, and what Check found
// ("lessonCheckResult": "✓ Well done." and where Next goes, or "Not yet:" with what each check
// found and the hint; a wrong answer is not corrected, only refused). It evaluates the checks it
// is given the context of; performing Show me is the panel's. GUI thread only.
#pragma once

#include <QGroupBox>

#include "engine/lesson/lesson.h"

class QLabel;
class QLineEdit;
class QPushButton;

namespace ws::ui {

class LessonTryBox : public QGroupBox {
    Q_OBJECT
public:
    explicit LessonTryBox(QWidget* parent = nullptr);

    // The step's try-it (null: none, the box hides); a new one clears the answer and result.
    void setTry(const lesson::TryIt* tryIt);
    // Every check and the question against `context` (null: the config has problems); shows
    // the result, `whatNext` after "Well done." True when all pass.
    bool check(const lesson::CheckContext* context, const QString& whatNext);
    void clearResult();
    // Show me's answer: what the screen shows for the question's subject.
    void setAnswer(const QString& answer);
    void setButtonsEnabled(bool enabled);

signals:
    void checkRequested();
    void showMeRequested();

private:
    const lesson::TryIt* m_try = nullptr;
    QLabel* m_task;
    QWidget* m_answerRow;
    QLineEdit* m_answer;
    QPushButton* m_check;
    QPushButton* m_showMe;
    QLabel* m_result;
};

}  // namespace ws::ui
