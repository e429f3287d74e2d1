// SPDX-License-Identifier: GPL-3.0-or-later
// LessonTryBox: see lesson_try_box.h.
#include "ui/lessons/lesson_try_box.h"

#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QVBoxLayout>

namespace ws::ui {

LessonTryBox::LessonTryBox(QWidget* parent) : QGroupBox(tr("Try it"), parent) {
    setObjectName(QStringLiteral("lessonTry"));
    auto* layout = new QVBoxLayout(this);
    m_task = new QLabel(this);
    m_task->setObjectName(QStringLiteral("lessonTask"));
    m_task->setWordWrap(true);
    m_task->setMinimumHeight(m_task->fontMetrics().lineSpacing() * 3);
    // A question's answer, typed in: Check compares it with what the screen shows.
    m_answerRow = new QWidget(this);
    auto* answerLayout = new QHBoxLayout(m_answerRow);
    answerLayout->setContentsMargins(0, 0, 0, 0);
    answerLayout->addWidget(new QLabel(tr("Your answer:"), m_answerRow));
    m_answer = new QLineEdit(m_answerRow);
    m_answer->setObjectName(QStringLiteral("lessonAnswer"));
    m_answer->setPlaceholderText(tr("read it off the screen"));
    answerLayout->addWidget(m_answer, 1);
    auto* buttons = new QHBoxLayout;
    m_check = new QPushButton(tr("Check"), this);
    m_check->setObjectName(QStringLiteral("lessonCheck"));
    m_showMe = new QPushButton(tr("Show me"), this);
    m_showMe->setObjectName(QStringLiteral("lessonShowMe"));
    m_showMe->setToolTip(tr("Do what the task asks, as the learner would"));
    buttons->addWidget(m_check);
    buttons->addWidget(m_showMe);
    buttons->addStretch(1);
    m_result = new QLabel(this);
    m_result->setObjectName(QStringLiteral("lessonCheckResult"));
    m_result->setWordWrap(true);
    layout->addWidget(m_task);
    layout->addWidget(m_answerRow);
    layout->addLayout(buttons);
    layout->addWidget(m_result);
    connect(m_check, &QPushButton::clicked, this, &LessonTryBox::checkRequested);
    connect(m_answer, &QLineEdit::returnPressed, this, &LessonTryBox::checkRequested);
    connect(m_showMe, &QPushButton::clicked, this, &LessonTryBox::showMeRequested);
    hide();
}

void LessonTryBox::setTry(const lesson::TryIt* tryIt) {
    m_try = tryIt;
    m_result->clear();
    m_answer->clear();
    setVisible(tryIt != nullptr);
    if (!tryIt) return;
    m_task->setText(QString::fromStdString(tryIt->task));
    m_answerRow->setVisible(!tryIt->answer.empty());
}

bool LessonTryBox::check(const lesson::CheckContext* context, const QString& whatNext) {
    if (!m_try) return true;
    QStringList failures;
    if (!context) {
        failures << tr("the config has problems: fix them on the Config tab");
    } else {
        for (const lesson::Condition& c : m_try->check) {
            const lesson::CheckResult r = lesson::evaluate(c, *context);
            if (!r.passed) failures << QString::fromStdString(r.detail);
        }
        if (!m_try->answer.empty()) {
            const lesson::CheckResult r =
                lesson::evaluateAnswer(m_try->answer, m_answer->text().toStdString(), *context);
            if (!r.passed) failures << QString::fromStdString(r.detail);
        }
    }
    if (failures.isEmpty()) {
        m_result->setText(
            tr("<span style='color:#2e7d32'><b>✓ Well done.</b> %1</span>").arg(whatNext));
        return true;
    }
    QString text = tr("<span style='color:#c62828'><b>Not yet:</b> %1</span>")
                       .arg(failures.join(QStringLiteral("; ")).toHtmlEscaped());
    if (!m_try->hint.empty())
        text += tr("<br><b>Hint:</b> %1").arg(QString::fromStdString(m_try->hint).toHtmlEscaped());
    m_result->setText(text);
    return false;
}

void LessonTryBox::clearResult() {
    m_result->clear();
}

void LessonTryBox::setAnswer(const QString& answer) {
    m_answer->setText(answer);
}

void LessonTryBox::setButtonsEnabled(bool enabled) {
    m_check->setEnabled(enabled);
    m_showMe->setEnabled(enabled);
}

}  // namespace ws::ui
