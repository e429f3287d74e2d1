// SPDX-License-Identifier: GPL-3.0-or-later
// StoreFollower: keeps the studio in step with a run store that other processes write to (a
// `wafer train --db` beside the studio, sweeps, cluster runs), as TensorBoard and W&B follow
// their logs. Every second it asks the store whether anything was committed (RunStore::
// dataVersion, no table read); only then does it list the runs and read the metric rows that
// the shown runs gained since their last shown step. The reads run on a helper thread, one poll
// at a time, so a busy store never stalls the GUI; the results come back to the GUI thread as
// signals. The runs list is only reported when it differs from the last one (a new run, a status,
// name or summary change, a run whose process died). GUI thread only (the helper thread is
// internal); stop() or the destructor waits for a poll in flight.
#pragma once

#include <QObject>
#include <QString>
#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "engine/store/run_store.h"

class QTimer;

namespace ws::ui {

class StoreFollower : public QObject {
    Q_OBJECT
public:
    // The metric rows of one shown run and key above `afterStep` (what is already drawn).
    struct Tail {
        int64_t runId = 0;
        std::string key;
        int64_t afterStep = 0;
        std::vector<store::MetricPoint> points;  // filled by the poll
    };

    explicit StoreFollower(QObject* parent = nullptr);
    ~StoreFollower() override;  // waits for a poll in flight

    // Starts following `store` (not owned; call stop() before it goes away); nullptr stops.
    void setStore(store::RunStore* store);
    // What to read besides the runs list: asked on the GUI thread at the start of each poll.
    void setTailRequests(std::function<std::vector<Tail>()> requests) {
        m_requests = std::move(requests);
    }
    void setInterval(int ms);
    int interval() const;
    // Polls at once (unless a poll is in flight); the results arrive as signals later.
    void pollNow();
    // Stops the timer and waits for a poll in flight; its results are dropped.
    void stop();
    int pollsCompleted() const { return m_polls; }

signals:
    // The store's runs (newest first) whenever they differ from the last poll's.
    void runsChanged(const std::vector<ws::store::RunInfo>& runs);
    // New metric rows of shown runs (only tails that gained points).
    void metricsArrived(const std::vector<ws::ui::StoreFollower::Tail>& tails);
    void readFailed(const QString& message);

private:
    struct Result;
    void finishPoll(const std::shared_ptr<Result>& result);

    store::RunStore* m_store = nullptr;
    QTimer* m_timer;
    std::function<std::vector<Tail>()> m_requests;
    std::thread m_worker;
    bool m_inFlight = false;
    int64_t m_version = -1;     // the store's dataVersion at the last poll that read (-1: none yet)
    bool m_anyRunning = false;  // a listed run is running or paused: its process may die unseen
    std::vector<std::string> m_signatures;  // per listed run: what the dock shows of it
    std::atomic<uint64_t> m_generation{0};  // bumped by stop()/setStore(): stale polls dropped
    int m_polls = 0;
    QString m_lastError;
};

}  // namespace ws::ui
