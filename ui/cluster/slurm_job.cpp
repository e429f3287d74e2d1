// SPDX-License-Identifier: GPL-3.0-or-later
// SlurmJob: see slurm_job.h.
#include "ui/cluster/slurm_job.h"

#include <QDir>
#include <QEventLoop>
#include <QFile>
#include <QFileInfo>
#include <QSaveFile>
#include <QTimer>

#include "engine/store/run_store.h"

namespace ws::ui {
namespace {
// Polls in a row where neither squeue, scontrol nor sacct knows the job before it is taken as
// ended: a moment's gap between leaving the queue and scontrol's record does not end it.
constexpr int kUnknownPollsToEnd = 5;
}  // namespace

SlurmJob::SlurmJob(QObject* parent)
    : ClusterJob(parent), m_pollTimer(new QTimer(this)), m_graceTimer(new QTimer(this)) {
    m_graceTimer->setSingleShot(true);
    connect(m_pollTimer, &QTimer::timeout, this, &SlurmJob::poll);
    connect(m_graceTimer, &QTimer::timeout, this, [this] {
        if (!m_active) return;
        // The run did not stop in time (or scancel's SIGTERM was not enough): harder.
        cancel(m_cancels == 0 ? QString() : QStringLiteral("KILL"));
    });
}

SlurmJob::~SlurmJob() {
    for (QProcess* process : {m_submit, m_question}) {
        if (!process) continue;
        process->disconnect(this);
        if (process->state() != QProcess::NotRunning) {
            process->kill();
            process->waitForFinished(2000);
        }
    }
}

QString SlurmJob::outputPath() const {
    return slurmOutputPath(plan(), m_jobId);
}

bool SlurmJob::launch(QString* error) {
    m_jobId.clear();
    m_state = {};
    m_outputRead = 0;
    m_unknownPolls = 0;
    m_cancels = 0;
    const SlurmOptions& o = plan().slurm;
    const QFileInfo script(o.scriptPath);
    if (!QDir().mkpath(script.absolutePath())) {
        *error = tr("The folder for the batch script, %1, cannot be made. Check that the run "
                    "store's folder is writable.")
                     .arg(script.absolutePath());
        return false;
    }
    QSaveFile file(o.scriptPath);
    if (!file.open(QIODevice::WriteOnly) || file.write(slurmBatchScript(plan()).toUtf8()) < 0 ||
        !file.commit()) {
        *error =
            tr("The batch script %1 cannot be written: %2").arg(o.scriptPath, file.errorString());
        return false;
    }
    QFile::setPermissions(o.scriptPath, QFile::permissions(o.scriptPath) | QFile::ExeOwner);
    m_submit = new QProcess(this);
    m_submit->setWorkingDirectory(script.absolutePath());
    connect(m_submit, &QProcess::finished, this, &SlurmJob::onSubmitted);
    m_submit->start(o.sbatch, {QStringLiteral("--parsable"), o.scriptPath}, QIODevice::ReadOnly);
    if (!m_submit->waitForStarted(10000)) {
        *error = tr("sbatch (%1) could not start: %2").arg(o.sbatch, m_submit->errorString());
        m_submit->deleteLater();
        m_submit = nullptr;
        return false;
    }
    m_active = true;
    return true;
}

void SlurmJob::onSubmitted(int exitCode, QProcess::ExitStatus status) {
    QProcess* submit = m_submit;
    m_submit = nullptr;
    submit->deleteLater();
    const QString out = QString::fromUtf8(submit->readAllStandardOutput());
    consumeOutput(submit->readAllStandardError() + '\n', 1);
    m_jobId = sbatchJobId(out);
    if (status != QProcess::NormalExit || exitCode != 0 || m_jobId.isEmpty()) {
        m_active = false;
        if (exitCode == 0) consumeOutput(out.toUtf8() + '\n', 1);
        emit ended(exitCode != 0 ? exitCode : 1, true, errorTail());
        return;
    }
    emit submitted(m_jobId);
    if (isStopping()) {
        cancel();  // stop was pressed while sbatch answered
    }
    m_pollTimer->start(m_timeouts.queueMs);
    poll();
}

void SlurmJob::ask(const QString& tool, const QStringList& args,
                   std::function<void(bool, const QString&)> done) {
    const QString program = slurmTool(plan(), tool);
    if (program.isEmpty()) {
        done(false, {});
        return;
    }
    m_question = new QProcess(this);
    QProcess* question = m_question;
    connect(question, &QProcess::finished, this,
            [this, question, done = std::move(done)](int code, QProcess::ExitStatus status) {
                m_question = nullptr;
                question->deleteLater();
                if (!m_active) return;  // ended or detached meanwhile
                done(status == QProcess::NormalExit && code == 0,
                     QString::fromUtf8(question->readAllStandardOutput()));
            });
    connect(question, &QProcess::errorOccurred, this, [this, question](QProcess::ProcessError e) {
        if (e != QProcess::FailedToStart) return;
        m_question = nullptr;
        question->deleteLater();
    });
    question->start(program, args, QIODevice::ReadOnly);
}

void SlurmJob::poll() {
    readJobOutput();
    if (!m_active || m_question || m_jobId.isEmpty()) return;
    ask(QStringLiteral("squeue"),
        {QStringLiteral("-h"), QStringLiteral("-j"), m_jobId, QStringLiteral("-o"),
         QStringLiteral("%T|%r|%N")},
        [this](bool ok, const QString& out) {
            const SlurmJobState state = ok ? parseSqueue(out) : SlurmJobState{};
            // Out of the queue (or squeue cannot say): how did it end?
            if (!state.known() || isFinalSlurmState(state.state)) {
                askAfterQueue();
                return;
            }
            m_unknownPolls = 0;
            applyState(state);
        });
}

void SlurmJob::askAfterQueue() {
    ask(QStringLiteral("scontrol"), {QStringLiteral("show"), QStringLiteral("job"), m_jobId},
        [this](bool ok, const QString& out) {
            if (const SlurmJobState state = ok ? parseScontrolJob(out) : SlurmJobState{};
                state.known()) {
                m_unknownPolls = 0;
                applyState(state);
                return;
            }
            ask(QStringLiteral("sacct"),
                {QStringLiteral("-j"), m_jobId, QStringLiteral("-X"), QStringLiteral("-n"),
                 QStringLiteral("-P"), QStringLiteral("-o"),
                 QStringLiteral("State,ExitCode,Reason")},
                [this](bool ok2, const QString& out2) {
                    if (const SlurmJobState state = ok2 ? parseSacct(out2) : SlurmJobState{};
                        state.known()) {
                        m_unknownPolls = 0;
                        applyState(state);
                        return;
                    }
                    if (++m_unknownPolls < kUnknownPollsToEnd) return;
                    // Forgotten (MinJobAge passed, no accounting): it ended, how is not known.
                    SlurmJobState gone;
                    gone.state = QStringLiteral("UNKNOWN");
                    gone.reason =
                        tr("Slurm no longer knows job %1 (its accounting is off)").arg(m_jobId);
                    finish(gone);
                });
        });
}

void SlurmJob::applyState(const SlurmJobState& state) {
    const bool changed = state.state != m_state.state || state.reason != m_state.reason ||
                         state.nodes != m_state.nodes;
    const bool started = state.state == QLatin1String("RUNNING") && runId() < 0 &&
                         m_state.state != QLatin1String("RUNNING");
    m_state = state;
    if (changed) emit queueStateChanged(state.state, describeSlurmState(state));
    // The run is looked for (and missed after a while) from when the job runs, not while queued.
    if (started) startLooking();
    if (isFinalSlurmState(state.state)) finish(state);
}

void SlurmJob::finish(const SlurmJobState& state) {
    m_pollTimer->stop();
    m_graceTimer->stop();
    readJobOutput();
    consumeOutput("\n", 1);  // an unfinished last line
    lookOnceMore();          // a run that appeared in the last moments is still the job's
    m_active = false;
    emit ended(state.exitCode, isSlurmFailure(state.state) || state.state == "UNKNOWN",
               errorTail());
}

void SlurmJob::readJobOutput() {
    if (m_jobId.isEmpty()) return;
    QFile file(outputPath());
    if (!file.open(QIODevice::ReadOnly) || !file.seek(m_outputRead)) return;
    const QByteArray bytes = file.readAll();
    m_outputRead += bytes.size();
    // One file holds the tasks' stdout and stderr, as Slurm writes them.
    if (!bytes.isEmpty()) consumeOutput(bytes, 1);
}

void SlurmJob::onRunFound() {
    // The script beside the run: what started it stays with it.
    if (m_store) {
        if (auto run = m_store->getRun(runId()); run.ok() && !run->modelDir.empty()) {
            const QString copy = QDir(QString::fromStdString(run->modelDir))
                                     .filePath(QStringLiteral("slurm-job-%1.sbatch").arg(m_jobId));
            QFile::remove(copy);
            if (QFile::copy(plan().slurm.scriptPath, copy)) emit scriptSaved(copy);
        }
    }
    if (isStopping()) stop();  // stop was pressed before the run was there
}

void SlurmJob::stop() {
    if (!m_active) return;
    setStopping();
    if (m_jobId.isEmpty()) return;  // sbatch still answering: cancelled once it has
    if (runId() >= 0 && m_cancels == 0 && askRunToStop()) {
        m_graceTimer->start(m_timeouts.stopGraceMs);
        return;
    }
    // No run to ask: nothing to checkpoint either.
    if (m_cancels == 0) cancel();
}

void SlurmJob::cancel(const QString& signal) {
    const QString scancel = slurmTool(plan(), QStringLiteral("scancel"));
    if (scancel.isEmpty() || m_jobId.isEmpty()) return;
    QStringList args;
    if (!signal.isEmpty())
        args << QStringLiteral("--signal=%1").arg(signal) << QStringLiteral("--full");
    args << m_jobId;
    auto* process = new QProcess(this);
    connect(process, &QProcess::finished, process, &QObject::deleteLater);
    process->start(scancel, args, QIODevice::ReadOnly);
    ++m_cancels;
    if (m_cancels < 2) m_graceTimer->start(m_timeouts.interruptGraceMs);
}

void SlurmJob::stopAndWait(int ms) {
    stop();
    if (m_active) {
        QEventLoop loop;
        QTimer::singleShot(ms, &loop, &QEventLoop::quit);
        connect(this, &ClusterJob::ended, &loop, &QEventLoop::quit);
        loop.exec();
    }
    if (m_active) detach();  // Slurm ends it (scancel was sent); the studio stops following
}

void SlurmJob::detach() {
    m_pollTimer->stop();
    m_graceTimer->stop();
    stopLooking();
    m_active = false;
}

QString SlurmJob::endSummary(int exitCode) const {
    if (m_jobId.isEmpty()) return tr("sbatch did not submit the job (exit code %1)").arg(exitCode);
    return tr("Slurm job %1 ended %2").arg(m_jobId, describeSlurmState(m_state));
}

}  // namespace ws::ui
