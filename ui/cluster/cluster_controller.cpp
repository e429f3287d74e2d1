// SPDX-License-Identifier: GPL-3.0-or-later
// ClusterController: see cluster_controller.h.
#include "ui/cluster/cluster_controller.h"

#include <QDateTime>
#include <QDir>
#include <QFileInfo>
#include <QMessageBox>
#include <QPushButton>
#include <QRegularExpression>
#include <QSettings>
#include <QThread>
#include <QTimer>
#include <algorithm>

#include "engine/config/config_yaml.h"
#include "engine/config/validate.h"
#include "engine/session/events.h"
#include "engine/session/folder_lock.h"
#include "engine/store/placement_records.h"
#include "engine/store/run_store.h"
#include "ui/cluster/cluster_dialog.h"
#include "ui/cluster/cluster_job.h"
#include "ui/cluster/mpirun_job.h"
#include "ui/cluster/slurm_job.h"
#include "ui/common/status_panel.h"
#include "ui/common/store_follower.h"
#include "ui/config/config_document.h"
#include "ui/config/config_tab.h"
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

ClusterController::ClusterController(Studio studio, QObject* parent)
    : QObject(parent),
      m_studio(std::move(studio)),
      m_mpirun(new MpirunJob(this)),
      m_slurm(new SlurmJob(this)),
      m_job(m_mpirun),
      m_waferBinary(defaultWaferBinary()) {
    wireJob(m_mpirun);
    wireJob(m_slurm);
    wireSlurm();
    // The Wafer tab's real tokens/s of a run in other processes: the figure the store follower
    // brings the Training tab, not "not measured yet".
    connect(m_studio.follower, &StoreFollower::metricsArrived, this,
            [this](const std::vector<StoreFollower::Tail>& tails) {
                const int64_t run = m_job->runId();
                if (run < 0) return;
                for (const auto& tail : tails)
                    if (tail.runId == run && tail.key == "tokens_per_s" && !tail.points.empty())
                        m_studio.waferTab->setMeasuredTokensPerSec(tail.points.back().value);
            });
    connect(m_studio.follower, &StoreFollower::runsChanged, this,
            &ClusterController::onFollowedRunsChanged);
}

bool ClusterController::isActive() const {
    return m_job->isActive();
}

void ClusterController::stopJob() {
    m_job->stop();
    if (m_job == m_slurm && m_slurm->runId() < 0) {
        log(int(session::LogLine::Level::Info),
            tr("cancelling Slurm job %1 with scancel (it has not started a run)")
                .arg(m_slurm->jobId()));
    } else {
        log(int(session::LogLine::Level::Info),
            tr("cluster job: stopping after the step in flight (with a checkpoint)"));
    }
    emit stateChanged();
}

void ClusterController::wireJob(ClusterJob* job) {
    connect(job, &ClusterJob::outputLine, this, [this](const QString& line, bool fromStderr) {
        // Rank 0's progress line ("step 40/600 | loss …") is what the charts draw: not logged.
        static const QRegularExpression progress(QStringLiteral("^step +\\d+/\\d+ \\|"));
        if (progress.match(line).hasMatch()) return;
        log(int(fromStderr && line.contains(QLatin1String("error"), Qt::CaseInsensitive)
                    ? session::LogLine::Level::Warning
                    : session::LogLine::Level::Info),
            tr("cluster: %1").arg(line));
    });
    connect(job, &ClusterJob::runAppeared, this, &ClusterController::onRunAppeared);
    connect(job, &ClusterJob::noRunYet, this, &ClusterController::onNoRunYet);
    connect(job, &ClusterJob::ended, this, [this](int exitCode, bool crashed, const QString& said) {
        reportEnd(exitCode, crashed, said, 0);
    });
}

void ClusterController::wireSlurm() {
    connect(m_slurm, &SlurmJob::submitted, this, [this](const QString& id) {
        log(int(session::LogLine::Level::Info),
            tr("Slurm job %1 submitted (%2); its output goes to %3")
                .arg(id, m_slurm->plan().slurm.scriptPath, m_slurm->outputPath()));
        m_studio.statusPanel->showWaiting(tr("Slurm job %1 submitted").arg(id));
        emit stateChanged();
    });
    connect(m_slurm, &SlurmJob::queueStateChanged, this,
            [this](const QString& state, const QString& described) {
                const bool failed = isSlurmFailure(state);
                log(int(failed ? session::LogLine::Level::Warning : session::LogLine::Level::Info),
                    tr("Slurm job %1: %2").arg(m_slurm->jobId(), described));
                // Until the run appears, the status says where the job is in Slurm's queue.
                if (m_slurm->runId() < 0 && !isFinalSlurmState(state))
                    m_studio.statusPanel->showWaiting(
                        tr("Slurm job %1 %2").arg(m_slurm->jobId(), described));
            });
    connect(m_slurm, &SlurmJob::scriptSaved, this, [this](const QString& path) {
        log(int(session::LogLine::Level::Info),
            tr("the batch script is kept beside run %1: %2").arg(m_slurm->runId()).arg(path));
    });
}

void ClusterController::onFollowedRunsChanged() {
    // A run another process trains changes status (paused, stopped) in the store: the commands
    // follow, the Wafer tab shows its state and placement.
    const int64_t run = externalRun();
    if (run >= 0) {
        const std::string status = shownStatusOf(run);
        if (status == "paused") m_studio.waferTab->setRunState(session::RunState::Paused);
        if (status == "running") m_studio.waferTab->setRunState(session::RunState::Running);
        if (auto info = m_studio.store()->getRun(run);
            info.ok() && m_studio.selectedRuns() == std::vector<int64_t>{run}) {
            m_studio.statusPanel->showStoredRun(
                tr("run %1 “%2”").arg(run).arg(QString::fromStdString(info->name)),
                QString::fromStdString(status), info->summaryJson);
        }
    }
    if (m_job->runId() >= 0 && !m_placementShown) showPlacement();
    emit stateChanged();
}

std::string ClusterController::shownStatusOf(int64_t runId) const {
    if (!m_studio.store()) return {};
    auto run = m_studio.store()->getRun(runId);
    if (!run.ok()) return {};
    return session::shownRunStatus(run->status, run->modelDir);
}

int64_t ClusterController::externalRun() const {
    if (m_studio.windowBusy() || !m_studio.store()) return -1;
    if (m_job->isActive()) return m_job->runId();
    const auto selected = m_studio.selectedRuns();
    if (selected.size() != 1) return -1;
    auto run = m_studio.store()->getRun(selected.front());
    // `wafer train` and `wafer finetune` follow control requests; sweep trials do not.
    if (!run.ok() || (run->kind != "train" && run->kind != "finetune")) return -1;
    const std::string status = session::shownRunStatus(run->status, run->modelDir);
    return status == "running" || status == "paused" ? run->id : -1;
}

void ClusterController::controlExternalRun(session::ControlCommand c) {
    const int64_t runId = externalRun();
    if (runId < 0) return;
    auto run = m_studio.store()->getRun(runId);
    auto sent = run.ok() ? session::sendRunControl(run->modelDir, runId, c)
                         : Result<session::ControlRequest>(run.error());
    if (!sent.ok()) {
        log(int(session::LogLine::Level::Error), QString::fromStdString(sent.error().message));
        return;
    }
    log(int(session::LogLine::Level::Info),
        tr("asked run %1 to %2 (its process acts on it between layers; the Runs "
           "dock shows the result)")
            .arg(runId)
            .arg(QLatin1String(session::controlCommandName(c))));
}

ClusterPlan ClusterController::defaultPlan(int64_t resumeRunId, int systems) const {
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
    plan.configPath = resumeRunId < 0 ? m_studio.document->filePath() : QString();
    plan.resumeRunId = resumeRunId;
    plan.dbPath =
        QFileInfo(QString::fromStdString(m_studio.storePath().string())).absoluteFilePath();
    plan.waferBinary = m_waferBinary;
    plan.mpirun = findMpirun();
    plan.runAsRoot = runningAsRoot();
    plan.launcher =
        settings.value(QStringLiteral("cluster/launcher")).toString() == QLatin1String("slurm")
            ? Launcher::Slurm
            : Launcher::Mpirun;
    SlurmOptions& slurm = plan.slurm;
    slurm.partition = settings.value(QStringLiteral("cluster/slurm/partition")).toString();
    slurm.nodes = settings.value(QStringLiteral("cluster/slurm/nodes"), 1).toInt();
    slurm.tasksPerNode =
        settings.value(QStringLiteral("cluster/slurm/tasksPerNode"), defaultProcesses).toInt();
    slurm.cpusPerTask = settings.value(QStringLiteral("cluster/slurm/cpusPerTask"), 1).toInt();
    slurm.timeLimit =
        settings.value(QStringLiteral("cluster/slurm/timeLimit"), slurm.timeLimit).toString();
    // The script and the job's output go beside the run store, which every node must reach.
    const QString stem = resumeRunId >= 0 ? QStringLiteral("run%1").arg(resumeRunId)
                                          : QFileInfo(plan.configPath).completeBaseName();
    slurm.jobName = QStringLiteral("wafer-%1").arg(stem);
    slurm.scriptPath =
        QDir(QFileInfo(plan.dbPath).absolutePath())
            .filePath(QStringLiteral("slurm-jobs/%1-%2.sbatch")
                          .arg(slurm.jobName, QDateTime::currentDateTime().toString(
                                                  QStringLiteral("yyyyMMdd-HHmmss"))));
    slurm.sbatch = findSbatch();
    return plan;
}

ClusterDialog* ClusterController::openDialog(int64_t resumeRunId) {
    if (m_studio.windowBusy() || m_job->isActive()) {
        log(int(session::LogLine::Level::Error),
            tr("a run, sweep or cluster job is in progress; stop it first"));
        return nullptr;
    }
    int systems = 1;
    if (resumeRunId < 0) {
        m_studio.configTab->applyPendingYaml();
        if (!m_studio.document->canRun()) {
            m_studio.showTab(QStringLiteral("config"));
            return nullptr;
        }
        // Every process reads the config from a file: the one on disk must be what is shown.
        if (m_studio.document->isModified() || m_studio.document->isUntitled() ||
            m_studio.isShippedPreset(m_studio.document->filePath())) {
            const auto answer = askQuestion(
                m_studio.window, m_studio.ask, tr("Save the config first"),
                tr("Every process of a cluster job reads the config from its file. Save “%1” "
                   "first?")
                    .arg(m_studio.document->displayName()),
                QMessageBox::Save | QMessageBox::Cancel, QMessageBox::Save);
            if (answer != QMessageBox::Save || !m_studio.save()) return nullptr;
        }
        systems = m_studio.document->config().runconfig.numCsx;
    } else if (auto cfg = storedConfig(m_studio.store(), resumeRunId)) {
        systems = cfg->runconfig.numCsx;
    }
    const ClusterPlan plan = defaultPlan(resumeRunId, systems);
    auto* dialog = new ClusterDialog(plan, systems, m_studio.window);
    dialog->setAttribute(Qt::WA_DeleteOnClose);
    if (resumeRunId < 0) {
        // Another num_csx must suit the rest of the config (batch_size divisible by it, ...).
        dialog->setSystemsCheck([config = m_studio.document->config()](int n) {
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
            m_studio.document->setField(QStringLiteral("runconfig.num_csx"),
                                        QString::number(dialog->systems()));
            if (!m_studio.save()) return;
        }
        QSettings s;
        s.setValue(QStringLiteral("cluster/hosts"), chosen.hosts);
        s.setValue(QStringLiteral("cluster/hostfile"), chosen.hostfile);
        s.setValue(QStringLiteral("cluster/processesPerHost"), chosen.processesPerHost);
        s.setValue(QStringLiteral("cluster/threadsPerProcess"), chosen.threadsPerProcess);
        const bool slurm = chosen.launcher == Launcher::Slurm;
        s.setValue(QStringLiteral("cluster/launcher"),
                   slurm ? QStringLiteral("slurm") : QStringLiteral("mpirun"));
        if (slurm) {
            s.setValue(QStringLiteral("cluster/slurm/partition"), chosen.slurm.partition);
            s.setValue(QStringLiteral("cluster/slurm/nodes"), chosen.slurm.nodes);
            s.setValue(QStringLiteral("cluster/slurm/tasksPerNode"), chosen.slurm.tasksPerNode);
            s.setValue(QStringLiteral("cluster/slurm/cpusPerTask"), chosen.slurm.cpusPerTask);
            s.setValue(QStringLiteral("cluster/slurm/timeLimit"), chosen.slurm.timeLimit);
        }
        startJob(chosen);
    });
    dialog->open();
    return dialog;
}

bool ClusterController::startJob(const ClusterPlan& plan) {
    QString error;
    const bool slurm = plan.launcher == Launcher::Slurm;
    m_job = slurm ? static_cast<ClusterJob*>(m_slurm) : m_mpirun;
    if (!m_job->start(plan, m_studio.store(), &error)) {
        log(int(session::LogLine::Level::Error), error);
        auto* box = new QMessageBox(QMessageBox::Critical, tr("The cluster job did not start"),
                                    error, QMessageBox::Ok, m_studio.window);
        box->setObjectName(QStringLiteral("clusterErrorBox"));
        box->setAttribute(Qt::WA_DeleteOnClose);
        box->open();
        return false;
    }
    m_placementShown = false;
    if (slurm) {
        log(int(session::LogLine::Level::Info),
            tr("cluster job: submitting %1 with sbatch (%2 tasks on %3 nodes)")
                .arg(plan.slurm.scriptPath)
                .arg(processCount(plan))
                .arg(plan.slurm.nodes));
        m_studio.statusPanel->showPreparing(0.0, tr("submitting the job to Slurm…"));
    } else {
        log(int(session::LogLine::Level::Info),
            tr("cluster job started: %1").arg(commandLine(plan)));
        m_studio.statusPanel->showPreparing(
            0.0, tr("starting %1 processes with mpirun…").arg(processCount(plan)));
    }
    emit stateChanged();
    return true;
}

void ClusterController::onRunAppeared(int64_t runId) {
    m_studio.refreshRuns();
    m_studio.selectRuns({runId});  // the Training tab overlays and follows it
    if (auto cfg = storedConfig(m_studio.store(), runId)) {
        // Only the emulated systems and their placement: a run in another process sends no
        // spans, so the tab says the emulator has nothing to show for it.
        config::Config shown = *cfg;
        shown.wafer.emulate = false;
        m_studio.waferTab->beginRun(shown);
        m_studio.waferTab->setRunState(session::RunState::Running);
        if (auto rate = m_studio.store()->lastPoint(runId, "tokens_per_s");
            rate.ok() && rate->has_value())
            m_studio.waferTab->setMeasuredTokensPerSec((*rate)->value);
        m_studio.waferTab->setFollowedNote(
            tr("Run %1 trains in other processes (Run on Cluster): the studio follows it "
               "through the run store, so the charts and the Runs dock are live, and the "
               "diagram names the rank and host of each system. Utilization frames and "
               "spans stay in the processes; the emulated step of this config is in the Log "
               "(or `wafer predict CONFIG`).")
                .arg(runId));
    }
    showPlacement();
    m_studio.showTab(QStringLiteral("training"));
    log(int(session::LogLine::Level::Info),
        tr("cluster job: run %1 is training; Pause, Checkpoint Now and Stop act on "
           "it")
            .arg(runId));
    emit stateChanged();
}

void ClusterController::showPlacement() {
    const int64_t runId = m_job->runId();
    if (runId < 0 || !m_studio.store()) return;
    auto ranks = store::placement(*m_studio.store(), runId);
    if (!ranks.ok() || ranks->empty()) return;  // recorded just after the run's row
    m_studio.waferTab->setPlacement(*ranks);
    m_placementShown = true;
}

void ClusterController::onNoRunYet(const QString& said) {
    auto* box = new QMessageBox(
        QMessageBox::Warning, tr("The cluster job has not started a run"),
        tr("<p>No run has appeared in the run store yet. What the job said so far:</p>%1<p>%2</p>")
            .arg(preformatted(said),
                 tr("A host that cannot be reached keeps ssh waiting: check that “ssh HOST” "
                    "works from here without a password and that Open MPI and this wafer "
                    "program are installed on every host. A large corpus can also take a while "
                    "to prepare.")),
        QMessageBox::NoButton, m_studio.window);
    box->setObjectName(QStringLiteral("clusterWaitBox"));
    box->setTextFormat(Qt::RichText);
    box->setAttribute(Qt::WA_DeleteOnClose);
    box->addButton(tr("Keep Waiting"), QMessageBox::RejectRole);
    QPushButton* stop = box->addButton(tr("Stop the Job"), QMessageBox::DestructiveRole);
    stop->setObjectName(QStringLiteral("stopJobButton"));
    connect(stop, &QPushButton::clicked, m_job, &ClusterJob::stop);
    // Gone once the run appears or the job ends.
    connect(m_job, &ClusterJob::runAppeared, box, &QWidget::close);
    connect(m_job, &ClusterJob::ended, box, &QWidget::close);
    box->open();
}

void ClusterController::reportEnd(int exitCode, bool crashed, const QString& said, int attempt) {
    const int64_t runId = m_job->runId() >= 0 ? m_job->runId() : m_job->plan().resumeRunId;
    const std::string status = runId >= 0 ? shownStatusOf(runId) : std::string();
    // mpirun can end a moment before rank 0 (being killed, or writing its last checkpoint) lets
    // go of the run's folder: until then the run still looks live. Ask again for up to 5 s.
    if ((status == "running" || status == "paused") && attempt < 25) {
        QTimer::singleShot(200, this, [this, exitCode, crashed, said, attempt] {
            if (!m_job->isActive()) reportEnd(exitCode, crashed, said, attempt + 1);
        });
        return;
    }
    m_studio.refreshRuns();
    auto run = runId >= 0 && m_studio.store() ? m_studio.store()->getRun(runId)
                                              : Result<store::RunInfo>(Error{"no run"});
    if (run.ok()) {
        m_studio.statusPanel->showStoredRun(
            tr("run %1 “%2”").arg(runId).arg(QString::fromStdString(run->name)),
            QString::fromStdString(status), run->summaryJson);
    } else {
        m_studio.statusPanel->clear();
    }
    const bool clean = !crashed && exitCode == 0 && (status == "finished" || status == "stopped");
    const bool stoppedOnPurpose = m_job->isStopping() && status == "stopped";
    if (runId >= 0)
        m_studio.waferTab->setRunState(status == "finished" ? session::RunState::Finished
                                                            : session::RunState::Stopped);
    emit stateChanged();
    if (runId < 0 && m_job->isStopping()) {
        log(int(session::LogLine::Level::Info), tr("cluster job stopped before it started a run"));
        emit endReported(false);
        return;
    }
    if (clean || stoppedOnPurpose) {
        log(int(session::LogLine::Level::Info),
            tr("cluster job ended: run %1 %2").arg(runId).arg(QString::fromStdString(status)));
        emit endReported(false);
        return;
    }
    showFailure(runId, exitCode, status, said);
    emit endReported(true);
}

void ClusterController::showFailure(int64_t runId, int exitCode, const std::string& status,
                                    const QString& said) {
    QString text;
    const QString ended = m_job->endSummary(exitCode).toHtmlEscaped();
    if (runId < 0) {
        text = tr("<p>%1 before the job recorded a run.</p>").arg(ended);
    } else {
        text = tr("<p>%1; run %2 is shown <b>%3</b>.</p>")
                   .arg(ended)
                   .arg(runId)
                   .arg(QString::fromStdString(status).toHtmlEscaped());
    }
    text += tr("<p>What it said last:</p>") + preformatted(said);
    if (const QString hint = hintFor(said); !hint.isEmpty())
        text += QStringLiteral("<p>%1</p>").arg(hint.toHtmlEscaped());
    const bool resumable = runId >= 0 && m_studio.canResume(runId);
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
                                QMessageBox::Close, m_studio.window);
    box->setObjectName(QStringLiteral("clusterErrorBox"));
    box->setTextFormat(Qt::RichText);
    box->setAttribute(Qt::WA_DeleteOnClose);
    if (resumable) {
        QPushButton* resume = box->addButton(tr("Resume on Cluster…"), QMessageBox::AcceptRole);
        resume->setObjectName(QStringLiteral("resumeOnClusterButton"));
        connect(resume, &QPushButton::clicked, this, [this, runId] {
            // After the box has gone: the cluster dialog is window-modal too.
            QMetaObject::invokeMethod(
                this, [this, runId] { openDialog(runId); }, Qt::QueuedConnection);
        });
    }
    box->open();
}

}  // namespace ws::ui
