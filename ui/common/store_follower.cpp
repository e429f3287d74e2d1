// SPDX-License-Identifier: GPL-3.0-or-later
// StoreFollower: see store_follower.h.
#include "ui/common/store_follower.h"

#include <fmt/format.h>
#include <QTimer>

#include "engine/session/folder_lock.h"

namespace ws::ui {
namespace {

// What the Runs dock shows of a run: a change here is worth a refresh, anything else is not.
// The shown status reads the run folder's lock, so a training process that died shows too.
std::string signatureOf(const store::RunInfo& run) {
    return fmt::format("{}\x1f{}\x1f{}\x1f{}\x1f{}\x1f{}\x1f{}\x1f{}", run.id, run.name, run.kind,
                       session::shownRunStatus(run.status, run.modelDir), run.summaryJson,
                       run.modelDir, run.sweepId.value_or(-1), run.created);
}

}  // namespace

struct StoreFollower::Result {
    uint64_t generation = 0;
    int64_t version = -1;
    bool listed = false;
    std::vector<store::RunInfo> runs;
    std::vector<std::string> signatures;
    std::vector<Tail> tails;
    std::string error;
};

StoreFollower::StoreFollower(QObject* parent) : QObject(parent) {
    m_timer = new QTimer(this);
    m_timer->setInterval(1000);
    connect(m_timer, &QTimer::timeout, this, &StoreFollower::pollNow);
}

StoreFollower::~StoreFollower() {
    stop();
}

void StoreFollower::setStore(store::RunStore* store) {
    stop();
    m_store = store;
    m_version = -1;
    m_signatures.clear();
    m_anyRunning = false;
    if (m_store) m_timer->start();
}

void StoreFollower::setInterval(int ms) {
    m_timer->setInterval(ms);
}

int StoreFollower::interval() const {
    return m_timer->interval();
}

void StoreFollower::stop() {
    m_timer->stop();
    ++m_generation;
    if (m_worker.joinable()) m_worker.join();
    m_inFlight = false;
}

void StoreFollower::pollNow() {
    if (!m_store || m_inFlight) return;
    if (m_worker.joinable()) m_worker.join();  // finished: it posted its result already
    m_inFlight = true;
    auto result = std::make_shared<Result>();
    result->generation = m_generation.load();
    std::vector<Tail> requests = m_requests ? m_requests() : std::vector<Tail>{};
    const int64_t known = m_version;
    const bool relist = m_anyRunning;
    store::RunStore* store = m_store;
    m_worker =
        std::thread([this, store, result, known, relist, requests = std::move(requests)]() mutable {
            // The version first: whatever is committed after it is seen by the next poll.
            auto version = store->dataVersion();
            if (!version.ok()) {
                result->error = version.error().message;
            } else {
                result->version = *version;
                const bool changed = *version != known;
                if (changed || relist) {
                    auto runs = store->listRuns();
                    if (runs.ok()) {
                        result->listed = true;
                        result->runs = std::move(runs).value();
                        for (const auto& run : result->runs)
                            result->signatures.push_back(signatureOf(run));
                    } else {
                        result->error = runs.error().message;
                    }
                }
                if (changed) {
                    for (Tail& tail : requests) {
                        auto points = store->metricsAfter(tail.runId, tail.key, tail.afterStep);
                        // A run deleted meanwhile has no tail; the runs list says it is gone.
                        if (!points.ok() || points->empty()) continue;
                        tail.points = std::move(points).value();
                        result->tails.push_back(std::move(tail));
                    }
                }
            }
            QMetaObject::invokeMethod(
                this, [this, result] { finishPoll(result); }, Qt::QueuedConnection);
        });
}

void StoreFollower::finishPoll(const std::shared_ptr<Result>& result) {
    if (result->generation != m_generation.load()) return;  // stopped or another store since
    m_inFlight = false;
    ++m_polls;
    if (!result->error.empty()) {
        // Reported once, not every second; the version stays, so the next poll reads again.
        const QString message = QString::fromStdString(result->error);
        if (message != m_lastError) emit readFailed(message);
        m_lastError = message;
        return;
    }
    m_lastError.clear();
    m_version = result->version;
    if (result->listed) {
        m_anyRunning = false;
        for (const auto& run : result->runs)
            m_anyRunning = m_anyRunning || run.status == "running" || run.status == "paused";
        if (result->signatures != m_signatures) {
            m_signatures = std::move(result->signatures);
            emit runsChanged(result->runs);
        }
    }
    if (!result->tails.empty()) emit metricsArrived(result->tails);
}

}  // namespace ws::ui
