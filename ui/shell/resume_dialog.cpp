// SPDX-License-Identifier: GPL-3.0-or-later
// ResumeDialog and checkResume: see resume_dialog.h.
#include "ui/shell/resume_dialog.h"

#include <QDialogButtonBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QPushButton>
#include <QStyle>
#include <QVBoxLayout>
#include <algorithm>

#include "engine/session/resume.h"
#include "engine/store/run_store.h"

namespace ws::ui {
namespace {

bool isModelKey(const std::string& line) {
    return line.rfind("model.", 0) == 0;
}

QStringList toList(const std::vector<std::string>& lines) {
    QStringList list;
    for (const auto& line : lines) list << QString::fromStdString(line);
    return list;
}

QString bulletList(const QStringList& lines) {
    QString html = QStringLiteral("<ul style='margin-left:-20px'>");
    for (const QString& line : lines)
        html += QStringLiteral("<li><tt>%1</tt></li>").arg(line.toHtmlEscaped());
    return html + QStringLiteral("</ul>");
}

}  // namespace

ResumeCheck checkResume(store::RunStore* store, int64_t runId,
                        const std::optional<config::LoadedConfig>& editorConfig) {
    ResumeCheck c;
    c.runId = runId;
    if (!store) {
        c.error = QObject::tr("There is no run store open to look the run up in.");
        return c;
    }
    auto run = store->getRun(runId);
    if (!run.ok()) {
        c.error = QString::fromStdString(run.error().message);
        return c;
    }
    c.runName = QString::fromStdString(run->name);
    auto folder = session::resolveResumeTarget(std::to_string(runId), store->path());
    if (!folder.ok()) {
        c.error = QString::fromStdString(folder.error().message);
        return c;
    }
    c.folder = *folder;
    auto own = session::resumeConfig(c.folder);
    if (!own.ok()) {
        c.error = QString::fromStdString(own.error().message);
        return c;
    }
    c.checkpointConfig = std::move(own).value();
    // The Config tab's settings apply when they describe the same model (someone raised
    // max_steps or changed the learning rate to continue); another model could never load
    // these weights, so then the checkpoint's own config is the only sensible one.
    c.usesEditorConfig = false;
    if (editorConfig) {
        const auto differences =
            modelio::configDifferences(c.checkpointConfig->config, editorConfig->config);
        c.usesEditorConfig = std::none_of(differences.begin(), differences.end(), isModelKey);
    }
    c.config = c.usesEditorConfig ? *editorConfig : *c.checkpointConfig;
    // allowConfigChange: the differences come back as warnings, listed instead of refused.
    auto plan = session::planResume(c.folder, c.config->config, /*allowConfigChange=*/true);
    if (!plan.ok()) {
        c.error = QString::fromStdString(plan.error().message);
        return c;
    }
    c.step = plan->checkpoint.state.globalStep;
    c.notes = toList(plan->notes);
    c.changes = toList(plan->warnings);
    c.canForce = !c.changes.isEmpty();
    auto placement = session::placeResumedRun(store, *plan, c.config->config);
    if (!placement.ok()) {
        c.error = QString::fromStdString(placement.error().message);
        return c;
    }
    c.atLastStep = c.step >= c.config->config.runconfig.maxSteps;
    return c;
}

ResumeDialog::ResumeDialog(const ResumeCheck& check, QWidget* parent) : QDialog(parent) {
    setObjectName(QStringLiteral("ResumeDialog"));
    setWindowTitle(tr("Resume run %1").arg(check.runId));
    auto* layout = new QVBoxLayout(this);
    auto* icon = new QLabel(this);
    const QString runText = tr("run %1 “%2”").arg(check.runId).arg(check.runName.toHtmlEscaped());
    const QString runTextAtStart =
        tr("Run %1 “%2”").arg(check.runId).arg(check.runName.toHtmlEscaped());
    const QString checkpointText =
        check.folder.empty() ? QString() : QString::fromStdString(check.folder.filename().string());
    QString html;
    QStyle::StandardPixmap pixmap = QStyle::SP_MessageBoxQuestion;
    auto* buttons = new QDialogButtonBox(this);
    if (!check.error.isEmpty()) {
        pixmap = QStyle::SP_MessageBoxCritical;
        html = tr("<p><b>%1 cannot be resumed.</b></p><p style='white-space:pre-wrap'>%2</p>")
                   .arg(runTextAtStart, check.error.toHtmlEscaped());
        buttons->addButton(QDialogButtonBox::Close);
    } else if (!check.changes.isEmpty()) {
        pixmap = QStyle::SP_MessageBoxWarning;
        html = tr("<p><b>The Config tab's settings differ from the ones %1 was trained with</b> "
                  "(%2, step %3), in settings that change training (checkpoint → now):</p>%4"
                  "<p>With them the run continues, but no longer exactly as it would have "
                  "gone. With the checkpoint's own config it continues exactly.</p>")
                   .arg(runText, checkpointText)
                   .arg(check.step)
                   .arg(bulletList(check.changes));
        if (check.canForce) {
            m_anyway = buttons->addButton(tr("Resume anyway"), QDialogButtonBox::AcceptRole);
            connect(m_anyway, &QPushButton::clicked, this, [this] { m_choice = ResumeAnyway; });
        }
        if (check.checkpointConfig &&
            check.step < check.checkpointConfig->config.runconfig.maxSteps) {
            m_ownConfig = buttons->addButton(tr("Resume with the checkpoint's config"),
                                             QDialogButtonBox::AcceptRole);
            connect(m_ownConfig, &QPushButton::clicked, this,
                    [this] { m_choice = ResumeWithCheckpointConfig; });
            m_ownConfig->setDefault(true);
        }
        buttons->addButton(QDialogButtonBox::Cancel);
    } else if (check.atLastStep) {
        pixmap = QStyle::SP_MessageBoxInformation;
        html = tr("<p><b>%1 already reached its last step</b> (%2 is at step %3 = "
                  "<tt>runconfig.max_steps</tt>).</p><p>To train it further, open its config "
                  "(Runs ▸ Open config in editor), raise <tt>runconfig.max_steps</tt> in the "
                  "Config tab and choose Resume Run again.</p>")
                   .arg(runTextAtStart, checkpointText)
                   .arg(check.step);
        buttons->addButton(QDialogButtonBox::Close);
    } else {
        html = tr("<p><b>Continue %1</b> from %2 (step %3 of %4), in the same run and folder: "
                  "its curves carry on where they stopped.</p>")
                   .arg(runText, checkpointText)
                   .arg(check.step)
                   .arg(check.config->config.runconfig.maxSteps);
        html += check.usesEditorConfig ? tr("<p>Settings: the Config tab's (the same as the "
                                            "checkpoint's in everything that shapes training).</p>")
                                       : tr("<p>Settings: the checkpoint's own config.</p>");
        if (!check.notes.isEmpty()) {
            html += tr("<p>Changes that keep the run exact:</p>") + bulletList(check.notes);
        }
        m_resume = buttons->addButton(tr("Resume run"), QDialogButtonBox::AcceptRole);
        connect(m_resume, &QPushButton::clicked, this, [this] { m_choice = ResumeExact; });
        m_resume->setDefault(true);
        buttons->addButton(QDialogButtonBox::Cancel);
    }
    const int size = style()->pixelMetric(QStyle::PM_MessageBoxIconSize, nullptr, this);
    icon->setPixmap(style()->standardIcon(pixmap).pixmap(size, size));
    m_text = new QLabel(html, this);
    m_text->setObjectName(QStringLiteral("resumeMessage"));
    m_text->setWordWrap(true);
    m_text->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_text->setMinimumWidth(520);
    auto* row = new QHBoxLayout;
    row->addWidget(icon, 0, Qt::AlignTop);
    row->addWidget(m_text, 1);
    layout->addLayout(row);
    layout->addWidget(buttons);
    connect(buttons, &QDialogButtonBox::accepted, this, &QDialog::accept);
    connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
}

QString ResumeDialog::message() const {
    return m_text->text();
}

}  // namespace ws::ui
