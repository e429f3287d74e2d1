// SPDX-License-Identifier: GPL-3.0-or-later
// MpirunJob: see mpirun_job.h.
#include "ui/cluster/mpirun_job.h"

#include <signal.h>

#include <QCoreApplication>
#include <QDeadlineTimer>
#include <QTimer>

namespace ws::ui {

MpirunJob::MpirunJob(QObject* parent) : ClusterJob(parent), m_graceTimer(new QTimer(this)) {
    m_graceTimer->setSingleShot(true);
    connect(m_graceTimer, &QTimer::timeout, this, [this] {
        if (!isActive()) return;
        if (!m_interrupted) {
            interrupt();
        } else {
            m_process.kill();
        }
    });
    connect(&m_process, &QProcess::readyReadStandardError, this,
            [this] { readOutput(QProcess::StandardError); });
    connect(&m_process, &QProcess::readyReadStandardOutput, this,
            [this] { readOutput(QProcess::StandardOutput); });
    connect(&m_process, &QProcess::finished, this, &MpirunJob::onFinished);
}

MpirunJob::~MpirunJob() {
    // Its owner is going away: no signal may reach it from here on.
    disconnect(&m_process, nullptr, this, nullptr);
    if (isActive()) {
        m_process.kill();
        m_process.waitForFinished(5000);
    }
}

bool MpirunJob::launch(QString* error) {
    m_interrupted = false;
    const ClusterPlan& p = plan();
    m_process.setProgram(p.mpirun);
    m_process.setArguments(mpirunArguments(p));
    m_process.setProcessEnvironment(mpirunEnvironment(p));
    m_process.setProcessChannelMode(QProcess::SeparateChannels);
    m_process.start(QIODevice::ReadOnly);
    if (!m_process.waitForStarted(10000)) {
        *error = tr("mpirun (%1) could not start: %2").arg(p.mpirun, m_process.errorString());
        return false;
    }
    startLooking();
    return true;
}

QString MpirunJob::endSummary(int exitCode) const {
    return tr("mpirun ended (exit code %1)").arg(exitCode);
}

void MpirunJob::readOutput(QProcess::ProcessChannel channel) {
    m_process.setReadChannel(channel);
    consumeOutput(m_process.readAll(), channel == QProcess::StandardError ? 1 : 0);
}

void MpirunJob::onRunFound() {
    // Stop pressed before the run was there: ask it now, the clean way.
    if (isStopping() && !m_interrupted) stop();
}

void MpirunJob::stop() {
    if (!isActive()) return;
    setStopping();
    if (!m_interrupted && askRunToStop()) {
        m_graceTimer->start(m_timeouts.stopGraceMs);
        return;
    }
    // No run (yet) to ask: nothing to checkpoint either; mpirun stops the ranks.
    interrupt();
}

void MpirunJob::interrupt() {
    if (!isActive()) return;
    m_interrupted = true;
    ::kill(pid_t(m_process.processId()), SIGINT);
    m_graceTimer->start(m_timeouts.interruptGraceMs);
}

void MpirunJob::stopAndWait(int ms) {
    stop();
    QDeadlineTimer deadline(ms);
    while (isActive() && !deadline.hasExpired()) {
        QCoreApplication::processEvents(QEventLoop::AllEvents, 50);
        m_process.waitForFinished(50);
    }
    if (isActive()) {
        m_process.kill();
        m_process.waitForFinished(5000);
    }
}

void MpirunJob::onFinished(int exitCode, QProcess::ExitStatus status) {
    readOutput(QProcess::StandardOutput);
    readOutput(QProcess::StandardError);
    m_graceTimer->stop();
    lookOnceMore();  // a run that appeared in the last moments is still the job's
    emit ended(exitCode, status == QProcess::CrashExit, errorTail());
}

}  // namespace ws::ui
