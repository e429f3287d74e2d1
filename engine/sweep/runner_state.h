// SPDX-License-Identifier: GPL-3.0-or-later
// What SweepRunner's files share (private to engine/sweep): the sweep's store and ASHA state, one
// running trial, and, across processes, the workers as rank 0 sees them.
// Thread-safety: as each struct states.
#pragma once

#include <atomic>
#include <chrono>
#include <deque>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "engine/session/folder_lock.h"
#include "engine/session/session.h"
#include "engine/store/run_store.h"
#include "engine/sweep/asha.h"
#include "engine/sweep/runner.h"

namespace ws::sweep {

inline constexpr double kRunnerNaN = std::numeric_limits<double>::quiet_NaN();

// Owned by the controlling thread; `asha` is used under SweepRunner::m_mutex.
struct SweepRunner::Shared {
    std::unique_ptr<store::RunStore> store;
    std::optional<AshaScheduler> asha;
    int64_t sweepRunId = -1;
    // The sweep's folder (sweep-<id> in the store's runs folder), locked while this runner drives
    // it: a second process resuming the same sweep is refused instead of running its trials twice,
    // and a killed sweep shows as interrupted (session::shownRunStatus).
    std::optional<session::FolderLock> lock;
};

// One running trial, in this process (`session`) or on worker `rank`. A local session's events
// are handled on its threads (onTrialEvents), a remote trial's messages on the cluster's receive
// thread; both under `mutex`.
struct SweepRunner::Active {
    const TrialSpec* spec = nullptr;
    std::string group;
    std::mutex mutex;
    std::deque<double> window;  // the last final_loss_steps losses
    int64_t steps = 0;
    int64_t maxSteps = 0;
    std::map<int64_t, double> rungLosses;
    bool pruned = false;
    bool diverged = false;  // above sweep.max_loss, or not finite
    std::string reason;
    std::atomic<bool> ended{false};
    std::vector<session::Event> scratch;
    int rank = 0;                                      // 0: `session` runs it here
    int64_t remoteRunId = -1;                          // the run its worker created in the store
    std::optional<session::RunSummary> remoteSummary;  // how its worker's session ended
    // Last, so it is destroyed first: its threads call onTrialEvents, which uses the members above.
    std::unique_ptr<session::Session> session;

    double windowMean() const {
        if (window.empty()) return kRunnerNaN;
        double sum = 0;
        for (double l : window) sum += l;
        return sum / double(window.size());
    }
};

// Across processes: the workers as rank 0 sees them. `mutex` guards everything but the atomics;
// the receive thread holds it while it handles a message, so a trial it names is not taken
// away meanwhile (lock order: mutex, then Active::mutex, then SweepRunner::m_mutex).
struct SweepRunner::Cluster {
    struct Worker {
        bool ready = false;  // said kReady
        bool lost = false;
        int cores = 1;
        Active* trial = nullptr;  // the trial it runs
        std::atomic<int64_t> heardNs{0};
    };
    comm::Comm* comm = nullptr;
    std::mutex mutex;
    std::vector<std::unique_ptr<Worker>> workers;  // by rank; [0] unused
    std::thread receiver;
    std::atomic<bool> stopReceiver{false};
    std::chrono::steady_clock::time_point lastHeartbeat{};
    std::map<std::string, int> ranksOnHost;
    std::string db, cache;  // as the trials' sessions get them
    // Rank 0's corpus identity (cluster_protocol.h corpusIdentity) by train_input.data_dir, so
    // a corpus is read and hashed once, not once per trial.
    std::map<std::vector<std::string>, std::string> corpora;
};

}  // namespace ws::sweep
