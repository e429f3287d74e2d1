// SPDX-License-Identifier: GPL-3.0-or-later
// ClusterDialog: see cluster_dialog.h.
#include "ui/cluster/cluster_dialog.h"

#include <QApplication>
#include <QButtonGroup>
#include <QCheckBox>
#include <QClipboard>
#include <QComboBox>
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
#include <QProcess>
#include <QPushButton>
#include <QRadioButton>
#include <QSpinBox>
#include <QTabWidget>
#include <QVBoxLayout>

#include "ui/cluster/slurm_script.h"

namespace ws::ui {

ClusterDialog::ClusterDialog(const ClusterPlan& initial, int systems, QWidget* parent)
    : QDialog(parent), m_base(initial), m_configSystems(std::max(1, systems)) {
    setObjectName(QStringLiteral("ClusterDialog"));
    setWindowTitle(m_base.resumeRunId >= 0 ? tr("Resume on Cluster") : tr("Run on Cluster"));
    auto* layout = new QVBoxLayout(this);
    auto* intro = new QLabel(
        m_base.resumeRunId >= 0
            ? tr("Continue run %1 from its newest checkpoint on any number of processes; the "
                 "result is the same as an uninterrupted run.")
                  .arg(m_base.resumeRunId)
            : tr("Train <b>%1</b> on several processes: its emulated systems "
                 "(runconfig.num_csx) spread over them, each process computing whole systems. "
                 "The result does not depend on how they are placed.")
                  .arg(QFileInfo(m_base.configPath).fileName().toHtmlEscaped()),
        this);
    intro->setWordWrap(true);
    layout->addWidget(intro);

    m_launchers = new QTabWidget(this);
    m_launchers->setObjectName(QStringLiteral("launcherTabs"));
    m_launchers->addTab(makeMpirunPage(), tr("Open MPI"));
    m_launchers->addTab(makeSlurmPage(), tr("Slurm"));
    m_launchers->setCurrentIndex(m_base.launcher == Launcher::Slurm ? 1 : 0);
    layout->addWidget(m_launchers);

    auto* form = new QFormLayout;
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

    m_commandCaption = new QLabel(this);
    m_commandCaption->setObjectName(QStringLiteral("commandCaption"));
    m_commandCaption->setWordWrap(true);
    m_commandCaption->setTextInteractionFlags(Qt::TextSelectableByMouse);
    layout->addWidget(m_commandCaption);
    auto* commandRow = new QHBoxLayout;
    m_command = new QPlainTextEdit(this);
    m_command->setObjectName(QStringLiteral("commandLine"));
    m_command->setReadOnly(true);
    m_command->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
    commandRow->addWidget(m_command, 1);
    auto* copy = new QPushButton(tr("Copy"), this);
    copy->setObjectName(QStringLiteral("copyCommand"));
    commandRow->addWidget(copy, 0, Qt::AlignTop);
    layout->addLayout(commandRow, 1);
    m_launcherNote = new QLabel(this);
    m_launcherNote->setWordWrap(true);
    layout->addWidget(m_launcherNote);

    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Cancel, this);
    m_start = buttons->addButton(QString(), QDialogButtonBox::AcceptRole);
    m_start->setObjectName(QStringLiteral("startButton"));
    m_start->setDefault(true);
    layout->addWidget(buttons);
    connect(buttons, &QDialogButtonBox::accepted, this, &ClusterDialog::accept);
    connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
    connect(copy, &QPushButton::clicked, this,
            [this] { QApplication::clipboard()->setText(shownCommandLine()); });
    connect(m_browse, &QPushButton::clicked, this, &ClusterDialog::chooseHostfile);
    for (QLineEdit* edit : {m_hosts, m_hostfile, m_timeLimit})
        connect(edit, &QLineEdit::textChanged, this, &ClusterDialog::update);
    connect(m_partition, &QComboBox::currentTextChanged, this, &ClusterDialog::update);
    for (QSpinBox* box :
         {m_processes, m_threads, m_systemsSpin, m_nodes, m_tasksPerNode, m_cpusPerTask})
        connect(box, &QSpinBox::valueChanged, this, &ClusterDialog::update);
    connect(m_hostsMode, &QRadioButton::toggled, this, &ClusterDialog::update);
    connect(m_launchers, &QTabWidget::currentChanged, this, [this] {
        update();
        // The script needs more room than the command line: grow to show it whole.
        if (height() < sizeHint().height()) resize(width(), sizeHint().height());
    });
    update();
    resize(760, std::max(560, sizeHint().height()));
}

ClusterDialog::~ClusterDialog() {
    // sinfo can wait a long while for a controller that does not answer: no answer may reach a
    // dialog being destroyed.
    if (m_sinfo) {
        m_sinfo->disconnect(this);
        m_sinfo->kill();
        m_sinfo->waitForFinished(2000);
    }
}

QWidget* ClusterDialog::makeMpirunPage() {
    auto* page = new QWidget(this);
    auto* form = new QFormLayout(page);
    m_hostsMode = new QRadioButton(tr("Hosts:"), page);
    m_hostsMode->setObjectName(QStringLiteral("hostsMode"));
    m_hosts = new QLineEdit(m_base.hosts.join(QStringLiteral(", ")), page);
    m_hosts->setObjectName(QStringLiteral("hostsEdit"));
    m_hosts->setPlaceholderText(tr("localhost, node2, node3"));
    m_hosts->setToolTip(
        tr("Host names separated by commas; localhost is this machine. Rank 0 "
           "(the run store, checkpoints) runs on the first."));
    form->addRow(m_hostsMode, m_hosts);
    m_hostfileMode = new QRadioButton(tr("Hostfile:"), page);
    m_hostfileMode->setObjectName(QStringLiteral("hostfileMode"));
    auto* fileRow = new QHBoxLayout;
    m_hostfile = new QLineEdit(m_base.hostfile, page);
    m_hostfile->setObjectName(QStringLiteral("hostfileEdit"));
    m_hostfile->setPlaceholderText(tr("an Open MPI hostfile: one “host slots=N” per line"));
    m_browse = new QPushButton(tr("Browse…"), page);
    m_browse->setObjectName(QStringLiteral("browseHostfile"));
    fileRow->addWidget(m_hostfile, 1);
    fileRow->addWidget(m_browse);
    form->addRow(m_hostfileMode, fileRow);
    auto* modes = new QButtonGroup(page);
    modes->addButton(m_hostsMode);
    modes->addButton(m_hostfileMode);
    (m_base.hostfile.isEmpty() ? m_hostsMode : m_hostfileMode)->setChecked(true);

    m_processes = new QSpinBox(page);
    m_processes->setObjectName(QStringLiteral("processesPerHost"));
    m_processes->setRange(1, 1024);
    m_processes->setValue(std::max(1, m_base.processesPerHost));
    form->addRow(tr("Processes per host:"), m_processes);
    m_threads = new QSpinBox(page);
    m_threads->setObjectName(QStringLiteral("threadsPerProcess"));
    m_threads->setRange(0, 1024);
    m_threads->setSpecialValueText(tr("all cores"));
    m_threads->setValue(std::max(0, m_base.threadsPerProcess));
    m_threads->setToolTip(
        tr("CPU threads each process computes with (--threads; 0: all cores "
           "of its host)"));
    form->addRow(tr("Threads per process:"), m_threads);
    return page;
}

QWidget* ClusterDialog::makeSlurmPage() {
    const SlurmOptions& o = m_base.slurm;
    auto* page = new QWidget(this);
    auto* form = new QFormLayout(page);
    m_partition = new QComboBox(page);
    m_partition->setObjectName(QStringLiteral("slurmPartition"));
    m_partition->setEditable(true);
    m_partition->setInsertPolicy(QComboBox::NoInsert);
    m_partition->lineEdit()->setPlaceholderText(tr("the cluster's default partition"));
    m_partition->setEditText(o.partition);
    m_partition->setToolTip(tr("sbatch --partition; empty: the cluster's default"));
    form->addRow(tr("Partition:"), m_partition);
    auto spin = [page](const char* name, int value, int low, const QString& tip) {
        auto* box = new QSpinBox(page);
        box->setObjectName(QLatin1String(name));
        box->setRange(low, 100000);
        box->setValue(std::max(low, value));
        box->setToolTip(tip);
        return box;
    };
    m_nodes = spin("slurmNodes", o.nodes, 1, tr("sbatch --nodes: the machines the job gets"));
    form->addRow(tr("Nodes:"), m_nodes);
    m_tasksPerNode = spin("slurmTasksPerNode", o.tasksPerNode, 1,
                          tr("sbatch --ntasks-per-node: processes (ranks) on each node"));
    form->addRow(tr("Tasks per node:"), m_tasksPerNode);
    m_cpusPerTask = spin("slurmCpusPerTask", o.cpusPerTask, 1,
                         tr("sbatch --cpus-per-task: each process's CPUs, and its --threads"));
    form->addRow(tr("CPUs per task:"), m_cpusPerTask);
    m_timeLimit = new QLineEdit(o.timeLimit, page);
    m_timeLimit->setObjectName(QStringLiteral("slurmTimeLimit"));
    m_timeLimit->setPlaceholderText(tr("minutes, H:MM:SS or D-HH:MM:SS"));
    m_timeLimit->setToolTip(
        tr("sbatch --time. At the limit Slurm sends SIGTERM: the run stops after the step in "
           "flight with a checkpoint, and Resume on Cluster continues it."));
    form->addRow(tr("Time limit:"), m_timeLimit);
    m_slurmNote = new QLabel(page);
    m_slurmNote->setObjectName(QStringLiteral("slurmClusterNote"));
    m_slurmNote->setWordWrap(true);
    m_slurmNote->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_slurmNote->setText(o.sbatch.isEmpty() ? sbatchMissingMessage()
                                            : tr("Asking sinfo for the partitions…"));
    form->addRow(QString(), m_slurmNote);
    return page;
}

void ClusterDialog::listPartitions() {
    if (m_sinfo || m_partitionsAsked || m_base.slurm.sbatch.isEmpty()) return;
    m_partitionsAsked = true;
    const QString sinfo = slurmTool(m_base, QStringLiteral("sinfo"));
    if (sinfo.isEmpty()) {
        m_slurmNote->setText(tr("sinfo is not installed beside sbatch: partitions not listed."));
        return;
    }
    auto* process = new QProcess(this);
    m_sinfo = process;
    connect(process, &QProcess::finished, this, [this, process](int code) {
        m_sinfo = nullptr;
        process->deleteLater();
        const QString out = QString::fromUtf8(process->readAllStandardOutput());
        if (code != 0) {
            m_slurmNote->setText(
                tr("sinfo could not reach the cluster's controller (exit code %1): %2")
                    .arg(code)
                    .arg(QString::fromUtf8(process->readAllStandardError()).trimmed()));
            return;
        }
        m_partitions = parsePartitions(out);
        QStringList lines;
        const QString typed = m_partition->currentText();
        m_partition->blockSignals(true);
        m_partition->clear();
        for (const SlurmPartition& p : m_partitions) {
            m_partition->addItem(p.name);
            lines << describePartition(p);
        }
        m_partition->setEditText(typed);
        m_partition->blockSignals(false);
        m_slurmNote->setText(lines.isEmpty()
                                 ? tr("sinfo lists no partition.")
                                 : tr("Partitions: %1").arg(lines.join(QStringLiteral("; "))));
        update();
    });
    process->start(sinfo,
                   {QStringLiteral("-h"), QStringLiteral("-o"), QStringLiteral("%P|%a|%D|%l|%t")},
                   QIODevice::ReadOnly);
}

ClusterPlan ClusterDialog::plan() const {
    ClusterPlan p = m_base;
    p.hosts = m_hostsMode->isChecked() ? parseHostList(m_hosts->text()) : QStringList{};
    p.hostfile = m_hostfileMode->isChecked() ? m_hostfile->text().trimmed() : QString();
    p.processesPerHost = m_processes->value();
    p.threadsPerProcess = m_threads->value();
    p.launcher = m_launchers->currentIndex() == 1 ? Launcher::Slurm : Launcher::Mpirun;
    p.slurm.partition = m_partition->currentText().trimmed();
    p.slurm.nodes = m_nodes->value();
    p.slurm.tasksPerNode = m_tasksPerNode->value();
    p.slurm.cpusPerTask = m_cpusPerTask->value();
    p.slurm.timeLimit = m_timeLimit->text().trimmed();
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

QMessageBox* ClusterDialog::problemBox() const {
    return m_problemBox.data();
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
    const bool slurm = p.launcher == Launcher::Slurm;
    if (slurm) listPartitions();  // once, when the Slurm tab is first shown
    const bool resuming = m_base.resumeRunId >= 0;
    m_command->setPlainText(slurm ? slurmBatchScript(p) : commandLine(p));
    // The script reads line by line; the command line is one long line, wrapped.
    m_command->setLineWrapMode(slurm ? QPlainTextEdit::NoWrap : QPlainTextEdit::WidgetWidth);
    const int lines = slurm ? 12 : 5;
    m_command->setMinimumHeight(m_command->fontMetrics().lineSpacing() * lines + 12);
    m_commandCaption->setText(
        slurm ? tr("The batch script it submits, saved as %1 and beside the run once it "
                   "starts (copy it to submit the same with sbatch):")
                    .arg(p.slurm.scriptPath)
              : tr("The command it runs (copy it to run the same from a shell):"));
    m_launcherNote->setText(
        slurm ? tr("Every node needs this wafer program at the same path and the run store's "
                   "folder (%1) shared: rank 0 writes the run there, the job its output, and "
                   "the studio follows both. Slurm's state and reason show in the Log while the "
                   "job waits.")
                    .arg(QFileInfo(p.dbPath).absolutePath())
              : tr("Every host needs Open MPI, password-less ssh from here, and this wafer "
                   "program at the same path. Rank 0 runs on the first host and writes the run "
                   "store; the studio follows the run there, so make the first host this "
                   "machine (or share the store's folder)."));
    m_start->setText(slurm ? tr("Submit") : resuming ? tr("Resume") : tr("Start"));
    const int hosts = hostCount(p);
    const int processes = processCount(p);
    auto count = [](int n, const QString& one, const QString& many) {
        return QStringLiteral("%1 %2").arg(n).arg(n == 1 ? one : many);
    };
    const int systemsNow = systems();
    QString summary = tr("%1 on %2 for %3 (runconfig.num_csx)")
                          .arg(count(processes, tr("process"), tr("processes")),
                               slurm ? count(hosts, tr("node"), tr("nodes"))
                                     : count(hosts, tr("host"), tr("hosts")),
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
    if (slurm) {
        for (const QString& warning : partitionWarnings(p.slurm, m_partitions))
            summary += QStringLiteral("<br><span style='color:#e53935'>%1</span>")
                           .arg(warning.toHtmlEscaped());
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
    m_problemBox->open();
}

}  // namespace ws::ui
