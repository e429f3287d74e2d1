// MainWindow's Run on Cluster (see main_window.h): the dialog, the mpirun child (ClusterJob), the
// run it records followed through the store like any run another process writes, and the
// toolbar's commands sent to such runs as control requests (session/run_control.h). Failures end
// in a dialog that says what happened and what to fix, never in a hang. Kept apart from
// main_window.cpp so the shell stays a list of connections per concept.
#include <QAction>
#include <QFileInfo>
#include <QMessageBox>
#include <QPushButton>
#include <QRegularExpression>
#include <QSettings>
#include <QTabWidget>
#include <QThread>
#include <QTimer>

#include "engine/config/config_yaml.h"
#include "engine/config/validate.h"
#include "engine/session/events.h"
#include "engine/session/folder_lock.h"
#include "engine/session/run_control.h"
#include "engine/store/placement_records.h"
#include "engine/store/run_store.h"
#include "ui/common/status_panel.h"
#include "ui/common/store_follower.h"
#include "ui/config/config_document.h"
#include "ui/config/config_tab.h"
#include "ui/shell/cluster_dialog.h"
#include "ui/shell/cluster_job.h"
#include "ui/shell/log_dock.h"
#include "ui/shell/main_window.h"
#include "ui/shell/run_controller.h"
#include "ui/shell/runs_dock.h"
#include "ui/sweeps/sweep_controller.h"
#include "ui/training/training_tab.h"
#include "ui/wafer/wafer_tab.h"

namespace ws::ui {
namespace {

// The config stored with run `runId` (nullopt when it has none that parses).
std::optional<config::Config> storedConfig(const store::RunStore* store, int64_t runId) {
    if (!store) return std::nullopt;
    auto run = store->getRun(runId);
    if (!run.ok()) return std::nullopt;
    auto parsed = config::parseConfig(run->configYaml, "the run store", {}, {});
    if (!parsed.ok()) return std::nullopt;
    return parsed->config;
}

// What to check, from the words mpirun (or a rank) used.
QString hintFor(const QString& said) {
    static const QRegularExpression unreachable(
        QStringLiteral("\\bssh\\b|could not be found|unable to (start|reliably start|launch)|"
                       "no route to host|could not resolve|\\borted\\b"),
        QRegularExpression::CaseInsensitiveOption);
    static const QRegularExpression died(QStringLiteral("exited on signal|killed"),
                                         QRegularExpression::CaseInsensitiveOption);
    if (unreachable.match(said).hasMatch()) {
        return QObject::tr(
            "A host could not be reached or could not start the program: check that “ssh HOST” "
            "works from here without a password, and that Open MPI and this wafer program are "
            "installed at the same paths on every host.");
    }
    if (said.contains(QLatin1String("not enough slots"), Qt::CaseInsensitive)) {
        return QObject::tr(
            "Lower the processes per host, or give the hosts more slots in the "
            "hostfile.");
    }
    if (died.match(said).hasMatch()) {
        return QObject::tr(
            "A process of the job died (the line above names its rank and host: "
            "killed, or out of memory there); mpirun then ended the others.");
    }
    return {};
}

QString preformatted(const QString& text) {
    return QStringLiteral("<pre style='font-size:small'>%1</pre>")
        .arg(text.isEmpty() ? QObject::tr("(nothing)") : text.toHtmlEscaped());
}

}  // namespace

void MainWindow::wireCluster() {
    connect(m_cluster, &ClusterJob::outputLine, this, [this](const QString& line, bool fromStderr) {
        // Rank 0's progress line ("step 40/600 | loss …") is what the charts draw: not logged.
        static const QRegularExpression progress(QStringLiteral("^step +\\d+/\\d+ \\|"));
        if (!fromStderr && progress.match(line).hasMatch()) return;
        m_logDock->append(
            int(fromStderr && line.contains(QLatin1String("error"), Qt::CaseInsensitive)
                    ? session::LogLine::Level::Warning
                    : session::LogLine::Level::Info),
            tr("cluster: %1").arg(line));
    });
    connect(m_cluster, &ClusterJob::runAppeared, this, &MainWindow::onClusterRunAppeared);
    // The Wafer tab's real tokens/s of a run in other processes: the figure the store follower
    // brings the Training tab, not "not measured yet".
    connect(m_follower, &StoreFollower::metricsArrived, this,
            [this](const std::vector<StoreFollower::Tail>& tails) {
                const int64_t run = m_cluster->runId();
                if (run < 0) return;
                for (const auto& tail : tails)
                    if (tail.runId == run && tail.key == "tokens_per_s" && !tail.points.empty())
                        m_waferTab->setMeasuredTokensPerSec(tail.points.back().value);
            });
    connect(m_cluster, &ClusterJob::noRunYet, this, &MainWindow::onClusterNoRunYet);
    connect(m_cluster, &ClusterJob::ended, this, &MainWindow::onClusterEnded);
    // A run another process trains changes status (paused, stopped) in the store: the commands
    // follow, the Wafer tab shows its state and placement.
    connect(m_follower, &StoreFollower::runsChanged, this, [this] {
        const int64_t run = externalRun();
        if (run >= 0) {
            const std::string status = shownStatusOf(run);
            if (status == "paused") m_waferTab->setRunState(session::RunState::Paused);
            if (status == "running") m_waferTab->setRunState(session::RunState::Running);
            if (auto info = m_store->getRun(run);
                info.ok() && m_runsDock->selectedRunIds() == std::vector<int64_t>{run}) {
                m_statusPanel->showStoredRun(
                    tr("run %1 “%2”").arg(run).arg(QString::fromStdString(info->name)),
                    QString::fromStdString(status), info->summaryJson);
            }
        }
        if (m_cluster->runId() >= 0 && !m_clusterPlacementShown) showClusterPlacement();
        updateActions();
    });
}

std::string MainWindow::shownStatusOf(int64_t runId) const {
    if (!m_store) return {};
    auto run = m_store->getRun(runId);
    if (!run.ok()) return {};
    return session::shownRunStatus(run->status, run->modelDir);
}

int64_t MainWindow::externalRun() const {
    if (m_controller->isActive() || m_sweeps->isActive() || !m_store) return -1;
    if (m_cluster->isActive()) return m_cluster->runId();
    const auto selected = m_runsDock->selectedRunIds();
    if (selected.size() != 1) return -1;
    auto run = m_store->getRun(selected.front());
    // `wafer train` and `wafer finetune` follow control requests; sweep trials do not.
    if (!run.ok() || (run->kind != "train" && run->kind != "finetune")) return -1;
    const std::string status = session::shownRunStatus(run->status, run->modelDir);
    return status == "running" || status == "paused" ? run->id : -1;
}

void MainWindow::controlExternalRun(int command) {
    const int64_t runId = externalRun();
    if (runId < 0) return;
    const auto c = session::ControlCommand(command);
    auto run = m_store->getRun(runId);
    auto sent = run.ok() ? session::sendRunControl(run->modelDir, runId, c)
                         : Result<session::ControlRequest>(run.error());
    if (!sent.ok()) {
        m_logDock->append(int(session::LogLine::Level::Error),
                          QString::fromStdString(sent.error().message));
        return;
    }
    m_logDock->append(int(session::LogLine::Level::Info),
                      tr("asked run %1 to %2 (its process acts on it between layers; the Runs "
                         "dock shows the result)")
                          .arg(runId)
                          .arg(QLatin1String(session::controlCommandName(c))));
}

ClusterDialog* MainWindow::openClusterDialog(int64_t resumeRunId) {
    if (m_controller->isActive() || m_sweeps->isActive() || m_cluster->isActive()) {
        m_logDock->append(int(session::LogLine::Level::Error),
                          tr("a run, sweep or cluster job is in progress; stop it first"));
        return nullptr;
    }
    int systems = 1;
    if (resumeRunId < 0) {
        m_configTab->applyPendingYaml();
        if (!m_document->canRun()) {
            m_tabs->setCurrentWidget(m_configTab);
            return nullptr;
        }
        // Every process reads the config from a file: the one on disk must be what is shown.
        if (m_document->isModified() || m_document->isUntitled() ||
            isShippedPreset(m_document->filePath())) {
            const auto answer =
                ask(tr("Save the config first"),
                    tr("Every process of a cluster job reads the config from its file. Save “%1” "
                       "first?")
                        .arg(m_document->displayName()),
                    QMessageBox::Save | QMessageBox::Cancel, QMessageBox::Save);
            if (answer != QMessageBox::Save || !save()) return nullptr;
        }
        systems = m_document->config().runconfig.numCsx;
    } else if (auto cfg = storedConfig(m_store.get(), resumeRunId)) {
        systems = cfg->runconfig.numCsx;
    }
    QSettings settings;
    ClusterPlan plan;
    plan.hosts =
        settings.value(QStringLiteral("cluster/hosts"), QStringList{"localhost"}).toStringList();
    plan.hostfile = settings.value(QStringLiteral("cluster/hostfile")).toString();
    const int defaultProcesses = std::clamp(systems, 1, 2);
    plan.processesPerHost =
        settings.value(QStringLiteral("cluster/processesPerHost"), defaultProcesses).toInt();
    plan.threadsPerProcess =
        settings
            .value(QStringLiteral("cluster/threadsPerProcess"),
                   std::max(1, QThread::idealThreadCount() / std::max(1, plan.processesPerHost)))
            .toInt();
    plan.configPath = resumeRunId < 0 ? m_document->filePath() : QString();
    plan.resumeRunId = resumeRunId;
    plan.dbPath = QFileInfo(QString::fromStdString(m_storePath.string())).absoluteFilePath();
    plan.waferBinary = m_waferBinary;
    plan.mpirun = findMpirun();
    plan.runAsRoot = runningAsRoot();
    auto* dialog = new ClusterDialog(plan, systems, this);
    dialog->setAttribute(Qt::WA_DeleteOnClose);
    if (resumeRunId < 0) {
        // Another num_csx must suit the rest of the config (batch_size divisible by it, ...).
        dialog->setSystemsCheck([config = m_document->config()](int n) {
            config::Config changed = config;
            changed.runconfig.numCsx = n;
            QStringList problems;
            for (const std::string& p : config::validate(changed))
                problems << QString::fromStdString(p);
            return problems;
        });
    }
    connect(dialog, &QDialog::accepted, this, [this, dialog] {
        const ClusterPlan chosen = dialog->plan();
        if (dialog->saveSystemsInFile()) {
            // Asked for: the file gets the new num_csx too (the job has it either way).
            m_document->setField(QStringLiteral("runconfig.num_csx"),
                                 QString::number(dialog->systems()));
            if (!save()) return;
        }
        QSettings s;
        s.setValue(QStringLiteral("cluster/hosts"), chosen.hosts);
        s.setValue(QStringLiteral("cluster/hostfile"), chosen.hostfile);
        s.setValue(QStringLiteral("cluster/processesPerHost"), chosen.processesPerHost);
        s.setValue(QStringLiteral("cluster/threadsPerProcess"), chosen.threadsPerProcess);
        startClusterJob(chosen);
    });
    dialog->open();
    return dialog;
}

bool MainWindow::startClusterJob(const ClusterPlan& plan) {
    QString error;
    if (!m_cluster->start(plan, m_store.get(), &error)) {
        m_logDock->append(int(session::LogLine::Level::Error), error);
        auto* box = new QMessageBox(QMessageBox::Critical, tr("The cluster job did not start"),
                                    error, QMessageBox::Ok, this);
        box->setObjectName(QStringLiteral("clusterErrorBox"));
        box->setAttribute(Qt::WA_DeleteOnClose);
        box->open();
        return false;
    }
    m_clusterPlacementShown = false;
    m_logDock->append(int(session::LogLine::Level::Info),
                      tr("cluster job started: %1").arg(commandLine(plan)));
    m_statusPanel->showPreparing(0.0,
                                 tr("starting %1 processes with mpirun…").arg(processCount(plan)));
    updateActions();
    return true;
}

void MainWindow::onClusterRunAppeared(int64_t runId) {
    m_runsDock->refresh();
    m_runsDock->selectRuns({runId});  // the Training tab overlays and follows it
    if (auto cfg = storedConfig(m_store.get(), runId)) {
        // Only the emulated systems and their placement: a run in another process sends no
        // spans, so the tab says the emulator has nothing to show for it.
        config::Config shown = *cfg;
        shown.wafer.emulate = false;
        m_waferTab->beginRun(shown);
        m_waferTab->setRunState(session::RunState::Running);
        if (auto rate = m_store->lastPoint(runId, "tokens_per_s"); rate.ok() && rate->has_value())
            m_waferTab->setMeasuredTokensPerSec((*rate)->value);
        m_waferTab->setFollowedNote(
            tr("Run %1 trains in other processes (Run on Cluster): the studio follows it "
               "through the run store, so the charts and the Runs dock are live, and the "
               "diagram names the rank and host of each system. Utilization frames and "
               "spans stay in the processes; the emulated step of this config is in the Log "
               "(or `wafer predict CONFIG`).")
                .arg(runId));
    }
    showClusterPlacement();
    m_tabs->setCurrentWidget(m_trainingTab);
    m_logDock->append(int(session::LogLine::Level::Info),
                      tr("cluster job: run %1 is training; Pause, Checkpoint Now and Stop act on "
                         "it")
                          .arg(runId));
    updateActions();
}

void MainWindow::showClusterPlacement() {
    const int64_t runId = m_cluster->runId();
    if (runId < 0 || !m_store) return;
    auto ranks = store::placement(*m_store, runId);
    if (!ranks.ok() || ranks->empty()) return;  // recorded just after the run's row
    m_waferTab->setPlacement(*ranks);
    m_clusterPlacementShown = true;
}

void MainWindow::onClusterNoRunYet(const QString& said) {
    auto* box = new QMessageBox(
        QMessageBox::Warning, tr("The cluster job has not started a run"),
        tr("<p>No run has appeared in the run store yet. What mpirun said so far:</p>%1<p>%2</p>")
            .arg(preformatted(said),
                 tr("A host that cannot be reached keeps ssh waiting: check that “ssh HOST” "
                    "works from here without a password and that Open MPI and this wafer "
                    "program are installed on every host. A large corpus can also take a while "
                    "to prepare.")),
        QMessageBox::NoButton, this);
    box->setObjectName(QStringLiteral("clusterWaitBox"));
    box->setTextFormat(Qt::RichText);
    box->setAttribute(Qt::WA_DeleteOnClose);
    box->addButton(tr("Keep Waiting"), QMessageBox::RejectRole);
    QPushButton* stop = box->addButton(tr("Stop the Job"), QMessageBox::DestructiveRole);
    stop->setObjectName(QStringLiteral("stopJobButton"));
    connect(stop, &QPushButton::clicked, m_cluster, &ClusterJob::stop);
    // Gone once the run appears or the job ends.
    connect(m_cluster, &ClusterJob::runAppeared, box, &QWidget::close);
    connect(m_cluster, &ClusterJob::ended, box, &QWidget::close);
    box->open();
}

void MainWindow::onClusterEnded(int exitCode, bool crashed, const QString& said) {
    reportClusterEnd(exitCode, crashed, said, 0);
}

void MainWindow::reportClusterEnd(int exitCode, bool crashed, const QString& said, int attempt) {
    const int64_t runId =
        m_cluster->runId() >= 0 ? m_cluster->runId() : m_cluster->plan().resumeRunId;
    const std::string status = runId >= 0 ? shownStatusOf(runId) : std::string();
    // mpirun can end a moment before rank 0 (being killed, or writing its last checkpoint) lets
    // go of the run's folder: until then the run still looks live. Ask again for up to 5 s.
    if ((status == "running" || status == "paused") && attempt < 25) {
        QTimer::singleShot(200, this, [this, exitCode, crashed, said, attempt] {
            if (!m_cluster->isActive()) reportClusterEnd(exitCode, crashed, said, attempt + 1);
        });
        return;
    }
    m_runsDock->refresh();
    auto run =
        runId >= 0 && m_store ? m_store->getRun(runId) : Result<store::RunInfo>(Error{"no run"});
    if (run.ok()) {
        m_statusPanel->showStoredRun(
            tr("run %1 “%2”").arg(runId).arg(QString::fromStdString(run->name)),
            QString::fromStdString(status), run->summaryJson);
    } else {
        m_statusPanel->clear();
    }
    const bool clean = !crashed && exitCode == 0 && (status == "finished" || status == "stopped");
    const bool stoppedOnPurpose = m_cluster->isStopping() && status == "stopped";
    if (runId >= 0)
        m_waferTab->setRunState(status == "finished" ? session::RunState::Finished
                                                     : session::RunState::Stopped);
    updateActions();
    if (runId < 0 && m_cluster->isStopping()) {
        m_logDock->append(int(session::LogLine::Level::Info),
                          tr("cluster job stopped before it started a run"));
        return;
    }
    if (clean || stoppedOnPurpose) {
        m_logDock->append(
            int(session::LogLine::Level::Info),
            tr("cluster job ended: run %1 %2").arg(runId).arg(QString::fromStdString(status)));
        return;
    }
    QString text;
    if (runId < 0) {
        text =
            tr("<p>mpirun ended (exit code %1) before the job recorded a run.</p>").arg(exitCode);
    } else {
        text = tr("<p>mpirun ended (exit code %1); run %2 is shown <b>%3</b>.</p>")
                   .arg(exitCode)
                   .arg(runId)
                   .arg(QString::fromStdString(status).toHtmlEscaped());
    }
    text += tr("<p>What it said last:</p>") + preformatted(said);
    if (const QString hint = hintFor(said); !hint.isEmpty())
        text += QStringLiteral("<p>%1</p>").arg(hint.toHtmlEscaped());
    const bool resumable = runId >= 0 && m_runsDock->canResume(runId);
    if (resumable) {
        text +=
            tr("<p>Its newest checkpoint is kept: Resume on Cluster continues it exactly, on "
               "any number of processes.</p>");
    } else if (runId >= 0) {
        text +=
            tr("<p>It has no checkpoint to resume from: set runconfig.checkpoint_steps (or "
               "press Checkpoint Now while it trains) to be able to continue a job that "
               "dies.</p>");
    }
    auto* box = new QMessageBox(QMessageBox::Critical, tr("The cluster job failed"), text,
                                QMessageBox::Close, this);
    box->setObjectName(QStringLiteral("clusterErrorBox"));
    box->setTextFormat(Qt::RichText);
    box->setAttribute(Qt::WA_DeleteOnClose);
    if (resumable) {
        QPushButton* resume = box->addButton(tr("Resume on Cluster…"), QMessageBox::AcceptRole);
        resume->setObjectName(QStringLiteral("resumeOnClusterButton"));
        connect(resume, &QPushButton::clicked, this, [this, runId] {
            // After the box has gone: the cluster dialog is window-modal too.
            QMetaObject::invokeMethod(
                this, [this, runId] { openClusterDialog(runId); }, Qt::QueuedConnection);
        });
    }
    box->open();
}

}  // namespace ws::ui
