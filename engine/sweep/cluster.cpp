// SPDX-License-Identifier: GPL-3.0-or-later
// The worker side of a sweep across processes (see cluster.h) and the record it forwards.
#include "engine/sweep/cluster.h"

#include <fmt/format.h>
#include <sched.h>

#include <atomic>
#include <cmath>
#include <iostream>
#include <map>
#include <mutex>
#include <thread>

#include "engine/config/config_yaml.h"
#include "engine/session/session.h"
#include "engine/store/run_recorder.h"
#include "engine/sweep/cluster_protocol.h"

namespace ws::sweep {

using Clock = std::chrono::steady_clock;
using nlohmann::json;
using namespace cluster;

int availableCores() {
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0) return CPU_COUNT(&set);
    const unsigned hw = std::thread::hardware_concurrency();
    return hw > 0 ? int(hw) : 1;
}

namespace {

// What the worker's threads share: the Comm, the time rank 0 was last heard from, and whether
// the trial is being abandoned (rank 0 quit or went silent).
struct WorkerState {
    comm::Comm& comm;
    std::atomic<bool> abandon{false};
    std::atomic<int64_t> rootHeardNs{0};
    std::chrono::milliseconds rootTimeout;
    WorkerState(comm::Comm& c, std::chrono::milliseconds timeout) : comm(c), rootTimeout(timeout) {
        heardFromRoot();
    }
    // This rank's corpus identity by train_input.data_dir: read and hashed once, not per trial.
    std::map<std::vector<std::string>, std::string> corpora;
    const std::string& corpusOf(const config::Config& config) {
        auto [at, added] = corpora.try_emplace(config.trainInput.dataDir);
        if (added) at->second = corpusIdentity(config);
        return at->second;
    }
    void heardFromRoot() { rootHeardNs = Clock::now().time_since_epoch().count(); }
    bool rootSilent() const {
        return Clock::now().time_since_epoch().count() - rootHeardNs.load() >
               std::chrono::nanoseconds(rootTimeout).count();
    }
    // rank 0's reply to the request just sent; nullopt when the trial is abandoned meanwhile.
    std::optional<json> awaitReply() {
        while (!abandon) {
            if (auto m =
                    comm.receive(comm::Channel::Sweep, 0, kReply, std::chrono::milliseconds(200))) {
                heardFromRoot();
                return parse(*m);
            }
            if (rootSilent()) abandon = true;
        }
        return std::nullopt;
    }
};

// The trial's run record, forwarded to rank 0's run store as it is written.
class ForwardingRecorder final : public store::RunRecorder {
public:
    explicit ForwardingRecorder(WorkerState& state) : m_state(state) {}

    Result<int64_t> createRun(const store::NewRun& run) override {
        json body = {{"op", "create"},         {"name", run.name}, {"config", run.configYaml},
                     {"hash", run.configHash}, {"kind", run.kind}, {"model_dir", run.modelDir}};
        if (run.parentRun) body["parent"] = *run.parentRun;
        if (run.sweepId) body["sweep"] = *run.sweepId;
        if (Status st = record(body); !st.ok()) return st.error();
        auto reply = m_state.awaitReply();
        if (!reply) return Error{"rank 0 stopped answering"};
        if (reply->contains("error")) return Error{(*reply)["error"].get<std::string>()};
        return (*reply)["id"].get<int64_t>();
    }
    Status setStatus(int64_t run, std::string_view status) override {
        return record({{"op", "status"}, {"run", run}, {"status", status}});
    }
    Status setSummary(int64_t run, std::string_view summary) override {
        return record({{"op", "summary"}, {"run", run}, {"json", summary}});
    }
    Status setModelDir(int64_t run, const std::filesystem::path& dir) override {
        return record({{"op", "model_dir"}, {"run", run}, {"dir", dir.string()}});
    }
    void logMetric(int64_t run, int64_t step, std::string_view key, double value,
                   double wallTime) override {
        (void)record({{"op", "metric"},
                      {"run", run},
                      {"step", step},
                      {"key", key},
                      {"value", bits(value)},
                      {"wall", bits(wallTime)}});
    }
    void logEvent(int64_t run, std::string_view level, std::string_view message) override {
        (void)record({{"op", "event"}, {"run", run}, {"level", level}, {"message", message}});
    }
    Status recordCheckpoint(int64_t run, int64_t step, const std::filesystem::path& file,
                            std::string_view sha256) override {
        return record({{"op", "checkpoint"},
                       {"run", run},
                       {"step", step},
                       {"file", file.string()},
                       {"sha256", sha256}});
    }
    Status forgetCheckpoint(int64_t run, int64_t step) override {
        return record({{"op", "forget_checkpoint"}, {"run", run}, {"step", step}});
    }
    void flush() override {}  // every record is sent before the call returns

private:
    Status record(const json& body) {
        std::lock_guard lock(m_mutex);  // one record at a time, in the order they are written
        if (!send(m_state.comm, 0, kRecord, body)) return Error{"cannot reach rank 0"};
        return Status::success();
    }
    WorkerState& m_state;
    std::mutex m_mutex;
};

// True when the step's loss ends the trial by the divergence bound, which rank 0 decides on the
// same bits (runner.cpp, exceedsLossBound).
bool pastLossBound(double loss, double maxLoss) {
    return !std::isfinite(loss) || (maxLoss > 0 && loss > maxLoss);
}

// Runs one assigned trial to its end and tells rank 0 how it ended.
void runTrial(WorkerState& state, const json& assignment) {
    comm::Comm& comm = state.comm;
    const int trial = assignment["trial"].get<int>();
    json end = {{"trial", trial}};
    auto loaded = config::parseConfig(assignment["config"].get<std::string>(),
                                      fmt::format("trial {} from rank 0", trial), {});
    if (!loaded.ok()) {
        end["created"] = false;
        end["detail"] = loaded.error().message;
        send(comm, 0, kEnd, end);
        return;
    }
    if (const std::string& mine = state.corpusOf(loaded->config),
        theirs = assignment.value("corpus", std::string());
        mine != theirs) {
        end["created"] = false;
        end["mismatch"] = true;
        end["detail"] = fmt::format(
            "rank {} on {} reads a different corpus than rank 0 on {} for train_input.data_dir "
            "(sha256 {} here, {} on rank 0): every host needs the same corpus files at the same "
            "path",
            comm.rank(), comm.host(), comm.hostOf(0), mine, theirs);
        send(comm, 0, kEnd, end);
        return;
    }
    std::vector<int64_t> rungs = assignment["rungs"].get<std::vector<int64_t>>();
    const double maxLoss = fromBits(assignment["max_loss"]);
    ForwardingRecorder recorder(state);
    session::SessionOptions so;
    so.dbPath = assignment["db"].get<std::string>();
    so.cacheDir = assignment["cache"].get<std::string>();
    so.runName = assignment["name"].get<std::string>();
    so.kind = "sweep-trial";
    so.finalCheckpoint = false;
    so.sweepId = assignment["sweep"].get<int64_t>();
    so.recorder = &recorder;
    auto created = session::Session::create(std::move(loaded).value(), so);
    if (!created.ok()) {
        end["created"] = false;
        end["detail"] = created.error().message;
        send(comm, 0, kEnd, end);
        return;
    }
    session::Session& s = **created;
    std::mutex mutex;
    std::vector<session::Event> scratch;
    std::atomic<bool> ended{false};
    bool stopping = false;
    // On the session's threads as events are pushed (as runner.cpp's onTrialEvents), so a stop
    // decided after step s takes effect before step s + 1.
    s.events().setNotify([&] {
        std::lock_guard lock(mutex);
        scratch.clear();
        s.events().drain(scratch);
        for (const auto& event : scratch) {
            if (const auto* m = std::get_if<session::StepMetrics>(&event)) {
                const bool decide =
                    !stopping && (pastLossBound(m->loss, maxLoss) ||
                                  std::find(rungs.begin(), rungs.end(), m->step) != rungs.end());
                send(comm, 0, kStep,
                     {{"trial", trial},
                      {"step", m->step},
                      {"max_steps", m->maxSteps},
                      {"loss", bits(m->loss)},
                      {"decide", decide}});
                if (!decide) continue;
                auto reply = state.awaitReply();
                if (!reply || reply->value("stop", false)) {
                    stopping = true;
                    s.requestStop();
                }
            } else if (const auto* c = std::get_if<session::StateChange>(&event)) {
                if (c->state == session::RunState::Finished ||
                    c->state == session::RunState::Stopped ||
                    c->state == session::RunState::Diverged ||
                    c->state == session::RunState::Failed)
                    ended = true;
            }
        }
    });
    s.start();
    while (!ended) {
        if (comm.tryReceive(comm::Channel::Sweep, 0, kStop)) {
            state.heardFromRoot();
            s.requestStop();
        }
        if (comm.tryReceive(comm::Channel::Sweep, 0, kHeartbeat)) state.heardFromRoot();
        if (state.rootSilent()) state.abandon = true;
        if (state.abandon) s.requestStop();
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    s.wait();
    const session::RunSummary& summary = s.summary();
    end["created"] = true;
    end["state"] = int(summary.state);
    end["steps"] = summary.steps;
    end["run"] = summary.runId;
    end["elapsed"] = bits(summary.elapsedSec);
    end["detail"] = summary.detail;
    send(comm, 0, kEnd, end);
}

}  // namespace

void releaseSweepWorkers(comm::Comm& comm) {
    for (int r = 1; r < comm.size(); ++r) send(comm, r, kQuit, {{"lost", false}}, kSendTimeout);
}

SweepWorkerResult runSweepWorker(comm::Comm& comm, std::chrono::milliseconds rootTimeout) {
    WorkerState state(comm, rootTimeout);
    SweepWorkerResult result;
    send(comm, 0, kReady, {{"cores", availableCores()}});
    std::atomic<bool> done{false};
    std::thread heartbeat([&] {
        while (!done) {
            send(comm, 0, kHeartbeat, json::object());
            for (int i = 0; i < 10 && !done; ++i) std::this_thread::sleep_for(kHeartbeatEvery / 10);
        }
    });
    while (true) {
        if (auto quit = comm.tryReceive(comm::Channel::Sweep, 0, kQuit)) {
            result.rankLost = parse(*quit).value("lost", false);
            break;
        }
        if (auto assign = comm.tryReceive(comm::Channel::Sweep, 0, kAssign)) {
            state.heardFromRoot();
            runTrial(state, parse(*assign));
            if (state.abandon) {
                result.rootLost = true;
                break;
            }
            continue;
        }
        while (comm.tryReceive(comm::Channel::Sweep, 0, kHeartbeat)) state.heardFromRoot();
        (void)comm.tryReceive(comm::Channel::Sweep, 0, kStop);  // came after its trial ended
        if (state.rootSilent()) {
            result.rootLost = true;
            break;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    done = true;
    heartbeat.join();
    if (result.rootLost) {
        std::cerr << fmt::format(
            "wafer: rank {} on {}: rank 0 ({}) has not answered for {} s; this worker stops\n",
            comm.rank(), comm.host(), comm.hostOf(0),
            std::chrono::duration_cast<std::chrono::seconds>(rootTimeout).count());
        result.rankLost = true;
    }
    return result;
}

}  // namespace ws::sweep
