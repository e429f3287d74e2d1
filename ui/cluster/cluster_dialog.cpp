// ClusterDialog: see cluster_dialog.h.
#include "ui/cluster/cluster_dialog.h"

#include <QApplication>
#include <QButtonGroup>
#include <QCheckBox>
#include <QClipboard>
#include <QDialogButtonBox>
#include <QFileDialog>
#include <QFileInfo>
#include <QFontDatabase>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QMessageBox>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QRadioButton>
#include <QSpinBox>
#include <QVBoxLayout>

namespace ws::ui {

ClusterDialog::ClusterDialog(const ClusterPlan& initial, int systems, QWidget* parent)
    : QDialog(parent), m_base(initial), m_configSystems(std::max(1, systems)) {
    setObjectName(QStringLiteral("ClusterDialog"));
    setWindowTitle(m_base.resumeRunId >= 0 ? tr("Resume on Cluster") : tr("Run on Cluster"));
    auto* layout = new QVBoxLayout(this);
    auto* intro = new QLabel(
        m_base.resumeRunId >= 0
            ? tr("Continue run %1 from its newest checkpoint with Open MPI, on any number of "
                 "processes; the result is the same as an uninterrupted run.")
                  .arg(m_base.resumeRunId)
            : tr("Train <b>%1</b> with Open MPI: its emulated systems "
                 "(runconfig.num_csx) spread over the processes below, each process computing "
                 "whole systems. The result does not depend on how they are placed.")
                  .arg(QFileInfo(m_base.configPath).fileName().toHtmlEscaped()),
        this);
    intro->setWordWrap(true);
    layout->addWidget(intro);

    auto* form = new QFormLayout;
    m_hostsMode = new QRadioButton(tr("Hosts:"), this);
    m_hostsMode->setObjectName(QStringLiteral("hostsMode"));
    m_hosts = new QLineEdit(m_base.hosts.join(QStringLiteral(", ")), this);
    m_hosts->setObjectName(QStringLiteral("hostsEdit"));
    m_hosts->setPlaceholderText(tr("localhost, node2, node3"));
    m_hosts->setToolTip(
        tr("Host names separated by commas; localhost is this machine. Rank 0 "
           "(the run store, checkpoints) runs on the first."));
    form->addRow(m_hostsMode, m_hosts);
    m_hostfileMode = new QRadioButton(tr("Hostfile:"), this);
    m_hostfileMode->setObjectName(QStringLiteral("hostfileMode"));
    auto* fileRow = new QHBoxLayout;
    m_hostfile = new QLineEdit(m_base.hostfile, this);
    m_hostfile->setObjectName(QStringLiteral("hostfileEdit"));
    m_hostfile->setPlaceholderText(tr("an Open MPI hostfile: one “host slots=N” per line"));
    m_browse = new QPushButton(tr("Browse…"), this);
    m_browse->setObjectName(QStringLiteral("browseHostfile"));
    fileRow->addWidget(m_hostfile, 1);
    fileRow->addWidget(m_browse);
    form->addRow(m_hostfileMode, fileRow);
    auto* modes = new QButtonGroup(this);
    modes->addButton(m_hostsMode);
    modes->addButton(m_hostfileMode);
    (m_base.hostfile.isEmpty() ? m_hostsMode : m_hostfileMode)->setChecked(true);

    m_processes = new QSpinBox(this);
    m_processes->setObjectName(QStringLiteral("processesPerHost"));
    m_processes->setRange(1, 1024);
    m_processes->setValue(std::max(1, m_base.processesPerHost));
    form->addRow(tr("Processes per host:"), m_processes);
    m_threads = new QSpinBox(this);
    m_threads->setObjectName(QStringLiteral("threadsPerProcess"));
    m_threads->setRange(0, 1024);
    m_threads->setSpecialValueText(tr("all cores"));
    m_threads->setValue(std::max(0, m_base.threadsPerProcess));
    m_threads->setToolTip(
        tr("CPU threads each process computes with (--threads; 0: all cores "
           "of its host)"));
    form->addRow(tr("Threads per process:"), m_threads);
    m_systemsSpin = new QSpinBox(this);
    m_systemsSpin->setObjectName(QStringLiteral("systemsSpin"));
    m_systemsSpin->setRange(1, 1024);
    m_systemsSpin->setValue(m_configSystems);
    const bool resuming = m_base.resumeRunId >= 0;
    m_systemsSpin->setEnabled(!resuming);
    m_systemsSpin->setToolTip(
        resuming ? tr("A resumed run keeps the systems of its checkpoint's config")
                 : tr("Emulated systems of this job (runconfig.num_csx); each process computes "
                      "whole systems, so at least as many as processes"));
    auto* systemsRow = new QHBoxLayout;
    systemsRow->addWidget(m_systemsSpin);
    m_systemsNote = new QLabel(this);
    m_systemsNote->setObjectName(QStringLiteral("systemsNote"));
    m_systemsNote->setWordWrap(true);
    systemsRow->addWidget(m_systemsNote, 1);
    form->addRow(tr("Systems (num_csx):"), systemsRow);
    m_saveSystems = new QCheckBox(this);
    m_saveSystems->setObjectName(QStringLiteral("saveSystemsBox"));
    m_saveSystems->setText(tr("Also save it in %1").arg(QFileInfo(m_base.configPath).fileName()));
    m_saveSystems->setVisible(false);
    form->addRow(QString(), m_saveSystems);
    auto* config = new QLabel(
        m_base.resumeRunId >= 0 ? tr("run %1 (its checkpoint's own config)").arg(m_base.resumeRunId)
                                : m_base.configPath,
        this);
    config->setObjectName(QStringLiteral("configLabel"));
    config->setTextInteractionFlags(Qt::TextSelectableByMouse);
    form->addRow(tr("Config:"), config);
    m_summary = new QLabel(this);
    m_summary->setObjectName(QStringLiteral("processSummary"));
    m_summary->setWordWrap(true);
    form->addRow(QString(), m_summary);
    layout->addLayout(form);

    layout->addWidget(
        new QLabel(tr("The command it runs (copy it to run the same from a shell):"), this));
    auto* commandRow = new QHBoxLayout;
    m_command = new QPlainTextEdit(this);
    m_command->setObjectName(QStringLiteral("commandLine"));
    m_command->setReadOnly(true);
    m_command->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
    m_command->setFixedHeight(m_command->fontMetrics().lineSpacing() * 5 + 12);
    commandRow->addWidget(m_command, 1);
    auto* copy = new QPushButton(tr("Copy"), this);
    copy->setObjectName(QStringLiteral("copyCommand"));
    commandRow->addWidget(copy, 0, Qt::AlignTop);
    layout->addLayout(commandRow);
    auto* note = new QLabel(
        tr("Every host needs Open MPI, password-less ssh from here, and this wafer program at the "
           "same path. Rank 0 runs on the first host and writes the run store; the studio follows "
           "the run there, so make the first host this machine (or share the store's folder)."),
        this);
    note->setWordWrap(true);
    layout->addWidget(note);

    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Cancel, this);
    QPushButton* start = buttons->addButton(m_base.resumeRunId >= 0 ? tr("Resume") : tr("Start"),
                                            QDialogButtonBox::AcceptRole);
    start->setObjectName(QStringLiteral("startButton"));
    start->setDefault(true);
    layout->addWidget(buttons);
    connect(buttons, &QDialogButtonBox::accepted, this, &ClusterDialog::accept);
    connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
    connect(copy, &QPushButton::clicked, this,
            [this] { QApplication::clipboard()->setText(shownCommandLine()); });
    connect(m_browse, &QPushButton::clicked, this, &ClusterDialog::chooseHostfile);
    for (QLineEdit* edit : {m_hosts, m_hostfile})
        connect(edit, &QLineEdit::textChanged, this, &ClusterDialog::update);
    for (QSpinBox* box : {m_processes, m_threads, m_systemsSpin})
        connect(box, &QSpinBox::valueChanged, this, &ClusterDialog::update);
    connect(m_hostsMode, &QRadioButton::toggled, this, &ClusterDialog::update);
    resize(720, sizeHint().height());
    update();
}

ClusterPlan ClusterDialog::plan() const {
    ClusterPlan p = m_base;
    p.hosts = m_hostsMode->isChecked() ? parseHostList(m_hosts->text()) : QStringList{};
    p.hostfile = m_hostfileMode->isChecked() ? m_hostfile->text().trimmed() : QString();
    p.processesPerHost = m_processes->value();
    p.threadsPerProcess = m_threads->value();
    p.numCsx = p.resumeRunId < 0 && systems() != m_configSystems ? systems() : 0;
    return p;
}

int ClusterDialog::systems() const {
    return m_systemsSpin->value();
}

bool ClusterDialog::saveSystemsInFile() const {
    return m_saveSystems->isVisible() && m_saveSystems->isChecked();
}

QStringList ClusterDialog::problems() const {
    QStringList found = planProblems(plan(), systems());
    if (systems() != m_configSystems && m_systemsCheck) found << m_systemsCheck(systems());
    return found;
}

QString ClusterDialog::shownCommandLine() const {
    return m_command->toPlainText();
}

void ClusterDialog::update() {
    const bool byFile = m_hostfileMode->isChecked();
    m_hosts->setEnabled(!byFile);
    m_hostfile->setEnabled(byFile);
    m_browse->setEnabled(byFile);
    const ClusterPlan p = plan();
    m_command->setPlainText(commandLine(p));
    const int hosts = hostCount(p);
    const int processes = processCount(p);
    auto count = [](int n, const QString& one, const QString& many) {
        return QStringLiteral("%1 %2").arg(n).arg(n == 1 ? one : many);
    };
    const int systemsNow = systems();
    QString summary = tr("%1 on %2 for %3 (runconfig.num_csx)")
                          .arg(count(processes, tr("process"), tr("processes")),
                               count(hosts, tr("host"), tr("hosts")),
                               count(systemsNow, tr("system"), tr("systems")));
    if (processes > systemsNow) {
        summary += QStringLiteral(" — <span style='color:#e53935'>%1</span>")
                       .arg(m_systemsSpin->isEnabled()
                                ? tr("too many: each process needs a system of its own; raise "
                                     "Systems to %1 or run fewer processes")
                                      .arg(processes)
                                : tr("too many: each process needs a system of its own"));
    } else if (processes > 0 && systemsNow % processes != 0) {
        summary += tr(" (uneven: some processes compute one system more)");
    }
    m_summary->setText(summary);
    const bool changed = systemsNow != m_configSystems;
    const QString file = QFileInfo(m_base.configPath).fileName();
    QString note =
        changed ? tr("this job only; %1 keeps %2").arg(file.toHtmlEscaped()).arg(m_configSystems)
                : tr("as in %1").arg(file.toHtmlEscaped());
    if (m_base.resumeRunId >= 0) note = tr("as the run was started");
    if (changed && m_systemsCheck) {
        for (const QString& problem : m_systemsCheck(systemsNow))
            note += QStringLiteral("<br><span style='color:#e53935'>%1</span>")
                        .arg(problem.toHtmlEscaped());
    }
    m_systemsNote->setText(note);
    m_saveSystems->setVisible(changed);
}

void ClusterDialog::chooseHostfile() {
    const QString path =
        QFileDialog::getOpenFileName(this, tr("Choose an Open MPI hostfile"), m_hostfile->text());
    if (path.isEmpty()) return;
    m_hostfile->setText(path);
    m_hostfileMode->setChecked(true);
}

void ClusterDialog::accept() {
    const QStringList found = problems();
    if (found.isEmpty()) {
        QDialog::accept();
        return;
    }
    if (m_problemBox) m_problemBox->close();
    QString text = QStringLiteral("<p>%1</p><ul>").arg(tr("Fix this before the job can start:"));
    for (const QString& problem : found)
        text += QStringLiteral("<li>%1</li>").arg(problem.toHtmlEscaped());
    text += QStringLiteral("</ul>");
    m_problemBox = new QMessageBox(QMessageBox::Warning, tr("Cannot start the cluster job"), text,
                                   QMessageBox::Ok, this);
    m_problemBox->setObjectName(QStringLiteral("clusterProblemBox"));
    m_problemBox->setTextFormat(Qt::RichText);
    m_problemBox->setAttribute(Qt::WA_DeleteOnClose);
    connect(m_problemBox, &QObject::destroyed, this, [this] { m_problemBox = nullptr; });
    m_problemBox->open();
}

}  // namespace ws::ui
