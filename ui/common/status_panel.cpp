// SPDX-License-Identifier: GPL-3.0-or-later
// StatusPanel: see status_panel.h.
#include "ui/common/status_panel.h"

#include <QHBoxLayout>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLabel>
#include <QProgressBar>
#include <cmath>

#include "engine/core/units.h"
#include "engine/session/run_eta.h"

namespace ws::ui {

StatusPanel::StatusPanel(QWidget* parent) : QWidget(parent) {
    m_state = new QLabel(tr("Ready"), this);
    m_state->setObjectName(QStringLiteral("statusState"));
    m_step = new QLabel(this);
    m_step->setObjectName(QStringLiteral("statusStep"));
    m_loss = new QLabel(this);
    m_speed = new QLabel(this);
    m_eta = new QLabel(this);
    m_progress = new QProgressBar(this);
    m_progress->setObjectName(QStringLiteral("statusProgress"));
    m_progress->setFixedWidth(180);
    m_progress->setMaximumHeight(16);
    m_progress->setTextVisible(false);
    m_progress->setRange(0, 1);
    m_progress->setValue(0);
    auto* layout = new QHBoxLayout(this);
    layout->setContentsMargins(0, 0, 4, 0);
    layout->setSpacing(14);
    layout->addWidget(m_state);
    layout->addStretch(1);
    for (QLabel* l : {m_step, m_loss, m_speed, m_eta}) layout->addWidget(l);
    layout->addWidget(m_progress);
}

void StatusPanel::showMetrics(const session::StepMetrics& m) {
    m_step->setText(tr("step %1 / %2").arg(m.step).arg(m.maxSteps));
    m_loss->setText(tr("loss %1").arg(m.loss, 0, 'f', 4));
    if (m.logStep) m_speed->setText(tr("%1 tok/s").arg(m.tokensPerSec, 0, 'f', 0));
    m_eta->setText(tr("ETA %1").arg(QString::fromStdString(formatClock(session::etaSeconds(m)))));
    m_progress->setRange(0, int(std::max<int64_t>(m.maxSteps, 1)));
    m_progress->setValue(int(m.step));
}

void StatusPanel::showState(session::RunState state, const QString& detail) {
    QString text = QString::fromLatin1(session::runStateName(state));
    if (!text.isEmpty()) text[0] = text[0].toUpper();
    m_state->setText(QStringLiteral("<b>%1</b>").arg(text));
    m_state->setToolTip(detail);
    if (state == session::RunState::Preparing) {
        // A new run: the figures shown so far belong to another one.
        for (QLabel* l : {m_step, m_loss, m_speed, m_eta}) l->clear();
        m_progress->setRange(0, 0);  // busy indicator until the first step
    } else if (state != session::RunState::Running && state != session::RunState::Paused) {
        m_eta->clear();  // the run is over: nothing left to estimate
        if (m_progress->maximum() == 0) m_progress->setRange(0, 1);
    }
}

void StatusPanel::showPreparing(double fraction, const QString& what) {
    m_state->setText(tr("<b>Preparing</b> %1").arg(what.toHtmlEscaped()));
    m_progress->setRange(0, 1000);
    m_progress->setValue(int(fraction * 1000));
}

void StatusPanel::showWaiting(const QString& what) {
    m_state->setText(tr("<b>Waiting</b> %1").arg(what.toHtmlEscaped()));
    m_state->setToolTip(what);
    m_progress->setRange(0, 0);
}

void StatusPanel::clear() {
    m_state->setText(tr("Ready"));
    m_state->setToolTip(QString());
    for (QLabel* l : {m_step, m_loss, m_speed, m_eta}) l->clear();
    m_progress->setRange(0, 1);
    m_progress->setValue(0);
}

void StatusPanel::showStoredRun(const QString& name, const QString& status,
                                const std::string& summaryJson) {
    clear();
    QString shown = status;
    if (!shown.isEmpty()) shown[0] = shown[0].toUpper();
    m_state->setText(
        QStringLiteral("<b>%1</b> %2").arg(shown.toHtmlEscaped(), name.toHtmlEscaped()));
    const QJsonObject summary =
        QJsonDocument::fromJson(QByteArray::fromStdString(summaryJson)).object();
    if (summary.contains(QLatin1String("steps")))
        m_step->setText(tr("step %1").arg(summary.value(QLatin1String("steps")).toInteger()));
    const QJsonValue loss = summary.value(QLatin1String("final_loss"));
    if (loss.isDouble()) m_loss->setText(tr("loss %1").arg(loss.toDouble(), 0, 'f', 4));
    const QJsonValue speed = summary.value(QLatin1String("tokens_per_s"));
    if (speed.isDouble()) m_speed->setText(tr("%1 tok/s").arg(speed.toDouble(), 0, 'f', 0));
    const QJsonValue took = summary.value(QLatin1String("elapsed_s"));
    if (took.isDouble())
        m_eta->setText(tr("took %1").arg(QString::fromStdString(formatClock(took.toDouble()))));
    if (status == QLatin1String("finished")) m_progress->setValue(1);
}

void StatusPanel::showSweep(const QString& state, size_t done, size_t planned, double etaSeconds) {
    m_state->setText(QStringLiteral("<b>%1</b>").arg(state.toHtmlEscaped()));
    m_state->setToolTip(QString());
    m_step->setText(tr("trials %1 / %2").arg(done).arg(planned));
    m_loss->clear();
    m_speed->clear();
    m_eta->setText(std::isnan(etaSeconds)
                       ? QString()
                       : tr("ETA %1").arg(QString::fromStdString(formatClock(etaSeconds))));
    m_progress->setRange(0, int(std::max<size_t>(planned, 1)));
    m_progress->setValue(int(done));
}

QString StatusPanel::stepText() const {
    return m_step->text();
}

QString StatusPanel::stateText() const {
    return m_state->text();
}

QString StatusPanel::lossText() const {
    return m_loss->text();
}

QString StatusPanel::etaText() const {
    return m_eta->text();
}

}  // namespace ws::ui
