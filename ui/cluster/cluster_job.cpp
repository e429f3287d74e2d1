// SPDX-License-Identifier: GPL-3.0-or-later
// ClusterJob: see cluster_job.h.
#include "ui/cluster/cluster_job.h"

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
    : QObject(parent), m_lookTimer(new QTimer(this)), m_appearTimer(new QTimer(this)) {
    m_appearTimer->setSingleShot(true);
    connect(m_lookTimer, &QTimer::timeout, this, &ClusterJob::lookForRun);
    connect(m_appearTimer, &QTimer::timeout, this, [this] {
        if (m_runId < 0 && isActive() && !m_stopping) emit noRunYet(errorTail());
    });
}

ClusterJob::~ClusterJob() = default;

bool ClusterJob::start(const ClusterPlan& plan, store::RunStore* store, QString* error) {
    if (isActive()) {
        *error = tr("a cluster job is already running");
        return false;
    }
    m_plan = plan;
    m_store = store;
    m_runId = -1;
    m_stopping = false;
    m_errorLines.clear();
    m_partial[0].clear();
    m_partial[1].clear();
    m_newerThan = 0;
    if (m_store) {
        if (auto runs = m_store->listRuns(); runs.ok()) {
            for (const auto& run : *runs) m_newerThan = std::max(m_newerThan, run.id);
        }
    }
    return launch(error);
}

void ClusterJob::consumeOutput(const QByteArray& bytes, int c) {
    m_partial[c] += bytes;
    // mpirun hands its local ranks a pseudo-terminal, so rank 0 draws its progress line as a
    // terminal run does: "\r\033[K" before each update. Both '\r' and '\n' end a line here, and
    // the terminal's escape sequences go.
    static const QRegularExpression escapes(QStringLiteral("\x1b\\[[0-9;?]*[A-Za-z]"));
    auto lineEnd = [](const QByteArray& text) {
        for (qsizetype i = 0; i < text.size(); ++i)
            if (text[i] == '\n' || text[i] == '\r') return i;
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

void ClusterJob::startLooking() {
    m_lookTimer->start(m_timeouts.pollMs);
    m_appearTimer->start(m_timeouts.runAppearsMs);
}

void ClusterJob::stopLooking() {
    m_lookTimer->stop();
    m_appearTimer->stop();
}

void ClusterJob::lookOnceMore() {
    stopLooking();
    if (m_runId < 0) {
        lookForRun();
        m_lookTimer->stop();
    }
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
    stopLooking();
    emit runAppeared(m_runId);
    onRunFound();
}

bool ClusterJob::askRunToStop() {
    if (m_runId < 0 || !m_store) return false;
    auto run = m_store->getRun(m_runId);
    if (!run.ok()) return false;
    return session::sendRunControl(run->modelDir, m_runId, session::ControlCommand::Stop).ok();
}

}  // namespace ws::ui
