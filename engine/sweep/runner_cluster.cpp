// SPDX-License-Identifier: GPL-3.0-or-later
// SweepRunner across processes, rank 0's side (see cluster.h): the workers' trials out, their
// steps, records and ends back, heartbeats both ways, and lost workers found.
#include <fmt/format.h>

#include <algorithm>

#include "engine/config/config_yaml.h"
#include "engine/sweep/cluster.h"
#include "engine/sweep/cluster_protocol.h"
#include "engine/sweep/runner.h"
#include "engine/sweep/runner_state.h"

namespace ws::sweep {

using nlohmann::json;
using namespace cluster;
using Clock = std::chrono::steady_clock;

namespace {

int64_t nowNs() {
    return Clock::now().time_since_epoch().count();
}

}  // namespace

void SweepRunner::startCluster() {
    Cluster& c = *m_cluster;
    c.comm = m_options.comm;
    const int ranks = c.comm->size();
    for (int r = 0; r < ranks; ++r) {
        c.workers.push_back(std::make_unique<Cluster::Worker>());
        c.workers.back()->heardNs = nowNs();
        ++c.ranksOnHost[c.comm->hostOf(r)];
    }
    c.receiver = std::thread([this] { receiveFromWorkers(); });
}

void SweepRunner::receiveFromWorkers() {
    Cluster& c = *m_cluster;
    while (!c.stopReceiver) {
        auto message = c.comm->receive(comm::Channel::Sweep, comm::kAnySource, comm::kAnyTag,
                                       std::chrono::milliseconds(100));
        if (message) handleWorkerMessage(*message);
    }
}

void SweepRunner::handleWorkerMessage(const comm::Message& message) {
    Cluster& c = *m_cluster;
    const int rank = message.source;
    if (rank <= 0 || size_t(rank) >= c.workers.size()) return;
    std::lock_guard lock(c.mutex);
    Cluster::Worker& w = *c.workers[size_t(rank)];
    if (w.lost) return;  // its trial runs elsewhere now; it is told to quit at the end
    w.heardNs = nowNs();
    const json body = parse(message);
    if (!body.is_object()) return;
    store::RunStore& store = *m_shared->store;
    switch (message.tag) {
        case kReady: {
            w.ready = true;
            const int cores = body.value("cores", 1);
            // Ranks on one host share its cores unless mpirun bound each to its own.
            const int sharing = c.ranksOnHost[c.comm->hostOf(rank)];
            w.cores = cores >= int(std::thread::hardware_concurrency()) && sharing > 1
                          ? std::max(1, cores / sharing)
                          : std::max(1, cores);
            std::lock_guard wake(m_mutex);
            m_trialEnded = true;  // a free slot: the scheduling loop looks again
            m_wake.notify_all();
            return;
        }
        case kRecord: {
            const std::string op = body.value("op", "");
            const int64_t run = body.value("run", int64_t(-1));
            if (op == "create") {
                store::NewRun r;
                r.name = body.value("name", "");
                r.configYaml = body.value("config", "");
                r.configHash = body.value("hash", "");
                r.kind = body.value("kind", "sweep-trial");
                r.modelDir = body.value("model_dir", "");
                if (body.contains("parent")) r.parentRun = body["parent"].get<int64_t>();
                if (body.contains("sweep")) r.sweepId = body["sweep"].get<int64_t>();
                auto id = store.createRun(r);
                if (id.ok() && w.trial) {
                    std::lock_guard trialLock(w.trial->mutex);
                    w.trial->remoteRunId = *id;
                }
                send(*c.comm, rank, kReply,
                     id.ok() ? json{{"id", *id}} : json{{"error", id.error().message}},
                     kSendTimeout);
            } else if (op == "status") {
                (void)store.setStatus(run, body.value("status", ""));
            } else if (op == "summary") {
                (void)store.setSummary(run, body.value("json", "{}"));
            } else if (op == "model_dir") {
                (void)store.setModelDir(run, body.value("dir", ""));
            } else if (op == "metric") {
                store.logMetric(run, body.value("step", int64_t(0)), body.value("key", ""),
                                fromBits(body["value"]), fromBits(body["wall"]));
            } else if (op == "event") {
                store.logEvent(run, body.value("level", "info"), body.value("message", ""));
            } else if (op == "checkpoint") {
                (void)store.recordCheckpoint(run, body.value("step", int64_t(0)),
                                             body.value("file", ""), body.value("sha256", ""));
            } else if (op == "forget_checkpoint") {
                (void)store.forgetCheckpoint(run, body.value("step", int64_t(0)));
            }
            return;
        }
        case kStep: {
            if (!w.trial) return;
            Active& a = *w.trial;
            bool stop = false;
            {
                std::lock_guard trialLock(a.mutex);
                stop = onTrialStep(a, body.value("step", int64_t(0)),
                                   body.value("max_steps", int64_t(0)), fromBits(body["loss"]));
            }
            if (body.value("decide", false)) send(*c.comm, rank, kReply, {{"stop", stop}});
            return;
        }
        case kEnd: {
            if (!w.trial) return;
            Active& a = *w.trial;
            session::RunSummary summary;
            if (!body.value("created", false)) {
                summary.state = session::RunState::Failed;
            } else {
                const int state = body.value("state", int(session::RunState::Failed));
                summary.state = state >= 0 && state <= int(session::RunState::Failed)
                                    ? session::RunState(state)
                                    : session::RunState::Failed;
                summary.steps = body.value("steps", int64_t(0));
                summary.runId = body.value("run", int64_t(-1));
                summary.elapsedSec = fromBits(body["elapsed"]);
            }
            summary.detail = body.value("detail", "");
            if (body.value("mismatch", false)) {
                // Results from another corpus would not be comparable: stop the whole sweep
                // (resumable), with the worker's message naming its rank, host and the corpus.
                m_events.push(SweepLog{true, summary.detail});
                m_stopRequested = true;
            }
            {
                std::lock_guard trialLock(a.mutex);
                a.remoteSummary = summary;
            }
            a.ended = true;
            std::lock_guard wake(m_mutex);
            m_trialEnded = true;
            m_wake.notify_all();
            return;
        }
        default:  // kHeartbeat: heard from, nothing else
            return;
    }
}

bool SweepRunner::sendTrial(Active& a, const config::LoadedConfig& trialConfig,
                            const std::string& runName) {
    Cluster& c = *m_cluster;
    const config::SweepConfig& sweep = m_plan.sweep;
    // Read and hashed once per data_dir, outside c.mutex (the receiver thread takes it).
    const auto& dataDir = trialConfig.config.trainInput.dataDir;
    std::string corpus;
    {
        std::lock_guard lock(c.mutex);
        if (auto known = c.corpora.find(dataDir); known != c.corpora.end()) corpus = known->second;
    }
    if (corpus.empty()) {
        corpus = corpusIdentity(trialConfig.config);
        std::lock_guard lock(c.mutex);
        c.corpora.emplace(dataDir, corpus);
    }
    json assignment = {
        {"trial", a.spec->index},
        {"config", config::saveConfigYaml(trialConfig.config, config::YamlStyle::Plain)},
        {"corpus", corpus},
        {"db", c.db},
        {"cache", c.cache},
        {"name", runName},
        {"sweep", m_shared->sweepRunId},
        {"rungs", sweep.earlyStopping.rungs},
        {"max_loss", bits(sweep.maxLoss)}};
    {
        std::lock_guard lock(c.mutex);
        c.workers[size_t(a.rank)]->trial = &a;
    }
    if (send(*c.comm, a.rank, kAssign, assignment, kSendTimeout)) return true;
    std::lock_guard lock(c.mutex);
    Cluster::Worker& w = *c.workers[size_t(a.rank)];
    w.trial = nullptr;
    w.lost = true;
    m_outcome.lostRanks.push_back(a.rank);
    m_events.push(SweepLog{true, fmt::format("rank {} on {} cannot be reached; the sweep goes on "
                                             "without it",
                                             a.rank, c.comm->hostOf(a.rank))});
    return false;
}

std::vector<int> SweepRunner::lostWorkers() {
    Cluster& c = *m_cluster;
    std::vector<int> lost;
    const int64_t limit = std::chrono::nanoseconds(m_options.workerTimeout).count();
    std::lock_guard lock(c.mutex);
    for (size_t r = 1; r < c.workers.size(); ++r) {
        Cluster::Worker& w = *c.workers[r];
        if (w.lost || nowNs() - w.heardNs.load() <= limit) continue;
        w.lost = true;
        w.trial = nullptr;
        m_outcome.lostRanks.push_back(int(r));
        lost.push_back(int(r));
    }
    return lost;
}

void SweepRunner::heartbeatWorkers() {
    Cluster& c = *m_cluster;
    if (Clock::now() - c.lastHeartbeat < kHeartbeatEvery) return;
    c.lastHeartbeat = Clock::now();
    std::vector<int> live;
    {
        std::lock_guard lock(c.mutex);
        for (size_t r = 1; r < c.workers.size(); ++r)
            if (!c.workers[r]->lost) live.push_back(int(r));
    }
    for (int r : live) send(*c.comm, r, kHeartbeat, json::object(), kSendTimeout);
}

void SweepRunner::stopCluster() {
    Cluster& c = *m_cluster;
    const bool lost = !m_outcome.lostRanks.empty();
    std::vector<int> live;
    {
        std::lock_guard lock(c.mutex);
        for (size_t r = 1; r < c.workers.size(); ++r)
            if (!c.workers[r]->lost) live.push_back(int(r));
    }
    for (int r : live) send(*c.comm, r, kQuit, {{"lost", lost}}, kSendTimeout);
    c.stopReceiver = true;
    if (c.receiver.joinable()) c.receiver.join();
}

}  // namespace ws::sweep
