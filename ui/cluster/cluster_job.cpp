// ClusterJob: see cluster_job.h.
#include "ui/cluster/cluster_job.h"

#include <signal.h>

#include <QCoreApplication>
#include <QDeadlineTimer>
#include <QRegularExpression>
#include <QTimer>
#include <algorithm>

#include "engine/session/folder_lock.h"
#include "engine/session/run_control.h"
#include "engine/store/run_store.h"

namespace ws::ui {
namespace {
constexpr int kKeptErrorLines = 400;
}

ClusterJob::ClusterJob(QObject* parent)
    : QObject(parent),
      m_lookTimer(new QTimer(this)),
      m_appearTimer(new QTimer(this)),
      m_graceTimer(new QTimer(this)) {
    m_appearTimer->setSingleShot(true);
    m_graceTimer->setSingleShot(true);
    connect(m_lookTimer, &QTimer::timeout, this, &ClusterJob::lookForRun);
    connect(m_appearTimer, &QTimer::timeout, this, [this] {
        if (m_runId < 0 && isActive() && !m_stopping) emit noRunYet(errorTail());
    });
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
    connect(&m_process, &QProcess::finished, this, &ClusterJob::onFinished);
}

ClusterJob::~ClusterJob() {
    // Its owner is going away: no signal may reach it from here on.
    disconnect(&m_process, nullptr, this, nullptr);
    if (isActive()) {
        m_process.kill();
        m_process.waitForFinished(5000);
    }
}

bool ClusterJob::start(const ClusterPlan& plan, store::RunStore* store, QString* error) {
    if (isActive()) {
        *error = tr("a cluster job is already running");
        return false;
    }
    m_plan = plan;
    m_store = store;
    m_runId = -1;
    m_stopping = false;
    m_interrupted = false;
    m_errorLines.clear();
    m_partial[0].clear();
    m_partial[1].clear();
    m_newerThan = 0;
    if (m_store) {
        if (auto runs = m_store->listRuns(); runs.ok()) {
            for (const auto& run : *runs) m_newerThan = std::max(m_newerThan, run.id);
        }
    }
    m_process.setProgram(plan.mpirun);
    m_process.setArguments(mpirunArguments(plan));
    m_process.setProcessEnvironment(mpirunEnvironment(plan));
    m_process.setProcessChannelMode(QProcess::SeparateChannels);
    m_process.start(QIODevice::ReadOnly);
    if (!m_process.waitForStarted(10000)) {
        *error = tr("mpirun (%1) could not start: %2").arg(plan.mpirun, m_process.errorString());
        return false;
    }
    m_lookTimer->start(m_timeouts.pollMs);
    m_appearTimer->start(m_timeouts.runAppearsMs);
    return true;
}

void ClusterJob::readOutput(QProcess::ProcessChannel channel) {
    m_process.setReadChannel(channel);
    const int c = channel == QProcess::StandardError ? 1 : 0;
    m_partial[c] += m_process.readAll();
    // mpirun hands its local ranks a pseudo-terminal, so rank 0 draws its progress line as a
    // terminal run does: "\r\033[K" before each update. Both '\r' and '\n' end a line here, and
    // the terminal's escape sequences go.
    static const QRegularExpression escapes(QStringLiteral("\x1b\\[[0-9;?]*[A-Za-z]"));
    auto lineEnd = [](const QByteArray& bytes) {
        for (qsizetype i = 0; i < bytes.size(); ++i)
            if (bytes[i] == '\n' || bytes[i] == '\r') return i;
        return qsizetype(-1);
    };
    for (qsizetype end; (end = lineEnd(m_partial[c])) >= 0;) {
        QString line = QString::fromUtf8(m_partial[c].left(end)).remove(escapes).trimmed();
        m_partial[c].remove(0, end + 1);
        if (line.isEmpty()) continue;
        if (c == 1) {
            m_errorLines << line;
            if (m_errorLines.size() > kKeptErrorLines) m_errorLines.removeFirst();
        }
        emit outputLine(line, c == 1);
    }
}

QString ClusterJob::errorTail(int lines) const {
    QStringList tail = m_errorLines.mid(std::max<qsizetype>(0, m_errorLines.size() - lines));
    if (!m_partial[1].isEmpty()) tail << QString::fromUtf8(m_partial[1]).trimmed();
    return tail.join(QLatin1Char('\n'));
}

void ClusterJob::lookForRun() {
    if (m_runId >= 0 || !m_store) {
        m_lookTimer->stop();
        return;
    }
    if (m_plan.resumeRunId >= 0) {
        // The resumed run keeps its id; it is back once a session holds its folder again.
        auto run = m_store->getRun(m_plan.resumeRunId);
        if (!run.ok() || run->modelDir.empty() || !session::FolderLock::isHeld(run->modelDir))
            return;
        m_runId = m_plan.resumeRunId;
    } else {
        auto runs = m_store->listRuns();
        if (!runs.ok()) return;
        // Newest first: the oldest run above the ids known at start is the job's.
        for (const auto& run : *runs) {
            if (run.id > m_newerThan && run.kind == "train") m_runId = run.id;
        }
        if (m_runId < 0) return;
    }
    m_lookTimer->stop();
    m_appearTimer->stop();
    emit runAppeared(m_runId);
    // Stop pressed before the run was there: ask it now, the clean way.
    if (m_stopping && !m_interrupted) stop();
}

void ClusterJob::stop() {
    if (!isActive()) return;
    m_stopping = true;
    if (m_runId >= 0 && m_store && !m_interrupted) {
        auto run = m_store->getRun(m_runId);
        if (run.ok()) {
            auto sent =
                session::sendRunControl(run->modelDir, m_runId, session::ControlCommand::Stop);
            if (sent.ok()) {
                m_graceTimer->start(m_timeouts.stopGraceMs);
                return;
            }
        }
    }
    // No run (yet) to ask: nothing to checkpoint either; mpirun stops the ranks.
    interrupt();
}

void ClusterJob::interrupt() {
    if (!isActive()) return;
    m_interrupted = true;
    ::kill(pid_t(m_process.processId()), SIGINT);
    m_graceTimer->start(m_timeouts.interruptGraceMs);
}

void ClusterJob::stopAndWait(int ms) {
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

void ClusterJob::onFinished(int exitCode, QProcess::ExitStatus status) {
    readOutput(QProcess::StandardOutput);
    readOutput(QProcess::StandardError);
    m_lookTimer->stop();
    m_appearTimer->stop();
    m_graceTimer->stop();
    // A run that appeared in the last moments is still the job's.
    if (m_runId < 0) {
        lookForRun();
        m_lookTimer->stop();
    }
    emit ended(exitCode, status == QProcess::CrashExit, errorTail());
}

}  // namespace ws::ui
