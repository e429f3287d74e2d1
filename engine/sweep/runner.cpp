// SPDX-License-Identifier: GPL-3.0-or-later
// SweepRunner (see runner.h).
#include "engine/sweep/runner.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <ctime>
#include <deque>
#include <limits>

#include "engine/config/text_format.h"
#include "engine/core/paths.h"
#include "engine/session/folder_lock.h"
#include "engine/session/session.h"
#include "engine/store/run_store.h"
#include "engine/store/sweep_records.h"
#include "engine/sweep/asha.h"
#include "engine/sweep/cluster.h"
#include "engine/sweep/cluster_protocol.h"
#include "engine/sweep/runner_state.h"

namespace ws::sweep {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

std::string jsonString(const std::string& text) {
    std::string out = "\"";
    for (char c : text) {
        const auto u = static_cast<unsigned char>(c);
        if (c == '"' || c == '\\') {
            out += '\\';
            out += c;
        } else if (u < 0x20) {
            out += fmt::format("\\u{:04x}", u);
        } else {
            out += c;
        }
    }
    return out + "\"";
}

// A swept value as JSON: finite numbers and booleans as such, anything else as a string.
std::string jsonValue(const std::string& text) {
    if (auto v = config::parseDouble(text); v && std::isfinite(*v)) return fmt::format("{}", *v);
    if (auto b = config::parseBool(text)) return *b ? "true" : "false";
    return jsonString(text);
}

std::string paramsJson(const std::vector<TrialParam>& params) {
    std::string out = "{";
    for (size_t i = 0; i < params.size(); ++i)
        out += (i ? ", " : "") + jsonString(params[i].key) + ": " + jsonValue(params[i].value);
    return out + "}";
}

std::string rungJson(const std::map<int64_t, double>& rungs) {
    std::string out = "{";
    for (const auto& [step, loss] : rungs) {
        out += (out.size() > 1 ? ", " : "") + fmt::format("\"{}\": ", step) +
               (std::isfinite(loss) ? fmt::format("{}", loss) : std::string("null"));
    }
    return out + "}";
}

// The inverse of rungJson ({"25": 2.5, "75": null}).
std::map<int64_t, double> parseRungJson(const std::string& text) {
    std::map<int64_t, double> out;
    size_t pos = 0;
    while ((pos = text.find('"', pos)) != std::string::npos) {
        const size_t end = text.find('"', pos + 1);
        const size_t colon = text.find(':', end);
        if (end == std::string::npos || colon == std::string::npos) break;
        size_t stop = text.find_first_of(",}", colon);
        if (stop == std::string::npos) stop = text.size();
        const auto step = config::parseInteger(text.substr(pos + 1, end - pos - 1));
        const auto loss = config::parseDouble(text.substr(colon + 1, stop - colon - 1));
        if (step) out[*step] = loss ? *loss : kNaN;
        pos = stop;
    }
    return out;
}

// "hidden_size=64 learning_rate=0.0078125 parametrization=mup seed=2": short keys, so a trial's run
// name stays readable in a narrow runs list (the full keys are in its config).
std::string describeValues(const TrialSpec& spec) {
    std::string out;
    for (const auto& p : spec.params) {
        const size_t dot = p.key.rfind('.');
        out += (dot == std::string::npos ? p.key : p.key.substr(dot + 1)) + "=" + p.value + " ";
    }
    return out + "seed=" + std::to_string(spec.seed);
}

// The ASHA competition a trial belongs to: its values of the group_by keys.
std::string groupOf(const TrialSpec& trial, const std::vector<std::string>& groupBy) {
    std::string group;
    for (const auto& key : groupBy)
        group += (group.empty() ? "" : ",") + key + "=" + trial.param(key);
    return group;
}

std::string defaultSweepName() {
    const std::time_t now = std::time(nullptr);
    std::tm local{};
    localtime_r(&now, &local);
    char stamp[32];
    std::strftime(stamp, sizeof stamp, "%Y-%m-%d %H:%M", &local);
    return std::string("sweep ") + stamp;
}

}  // namespace

// ---- SweepRunner ----

namespace {

Result<session::FolderLock> lockSweepFolder(store::RunStore& store, int64_t sweepRunId,
                                            const fs::path& db) {
    auto run = store.getRun(sweepRunId);
    if (!run.ok()) return run.error();
    fs::path folder = run->modelDir;
    if (folder.empty()) {
        folder = store::RunStore::runsFolderFor(db) / fmt::format("sweep-{}", sweepRunId);
        if (Status st = store.setModelDir(sweepRunId, folder); !st.ok()) return st.error();
    }
    std::error_code ec;
    fs::create_directories(folder, ec);
    if (ec)
        return Error{
            fmt::format("cannot create the sweep's folder {}: {}", folder.string(), ec.message())};
    if (session::FolderLock::isHeld(folder))
        return Error{fmt::format(
            "sweep {} is running in another process (its folder {} is locked); stop it there "
            "first, or wait for it to end",
            sweepRunId, folder.string())};
    return session::FolderLock::acquire(folder);
}

}  // namespace

SweepRunner::SweepRunner(SweepPlan plan, RunnerOptions options)
    : m_plan(std::move(plan)),
      m_options(std::move(options)),
      m_shared(std::make_unique<Shared>()) {}

SweepRunner::~SweepRunner() {
    m_stopRequested = true;
    if (m_thread.joinable()) m_thread.join();
}

Result<std::unique_ptr<SweepRunner>> SweepRunner::create(SweepPlan plan, RunnerOptions options) {
    if (plan.needsConfirmation && !options.confirmed) return Error{plan.confirmationMessage};
    return std::unique_ptr<SweepRunner>(new SweepRunner(std::move(plan), std::move(options)));
}

Result<std::unique_ptr<SweepRunner>> SweepRunner::resume(int64_t sweepRunId,
                                                         RunnerOptions options) {
    const fs::path db = options.dbPath.empty() ? userDataDir() / "runs.sqlite" : options.dbPath;
    auto opened = store::RunStore::open(db);
    if (!opened.ok()) return opened.error();
    auto run = (*opened)->getRun(sweepRunId);
    if (!run.ok()) return run.error();
    if (run->kind != "sweep")
        return Error{fmt::format("run {} is a {} run, not a sweep (see `wafer runs list`)",
                                 sweepRunId, run->kind)};
    auto definition =
        config::parseConfig(run->configYaml, fmt::format("sweep run {}", sweepRunId), {});
    if (!definition.ok())
        return Error{fmt::format("the stored definition of sweep {} no longer loads: {}",
                                 sweepRunId, definition.error().message)};
    auto plan = planSweep(*definition);
    if (!plan.ok()) return plan.error();
    options.confirmed = true;  // confirmed when it first ran
    if (options.name.empty()) options.name = run->name;
    auto runner = create(std::move(plan).value(), std::move(options));
    if (runner.ok()) (*runner)->m_resumeId = sweepRunId;
    return runner;
}

void SweepRunner::start() {
    m_thread = std::thread([this] { run(); });
}

void SweepRunner::wait() {
    if (m_thread.joinable()) m_thread.join();
}

void SweepRunner::run() {
    const auto started = Clock::now();
    Status status = runSweep();
    m_outcome.elapsedSec = std::chrono::duration<double>(Clock::now() - started).count();
    if (!status.ok()) {
        m_outcome.status = "failed";
        m_outcome.detail = status.error().message;
    }
    // A resume refused because another process drives the sweep leaves its record alone.
    const bool ownsRecord = m_shared->lock.has_value() || !m_resumeId;
    if (m_shared->store && m_shared->sweepRunId >= 0 && ownsRecord) {
        size_t counts[6] = {};
        for (const auto& t : m_outcome.trials) ++counts[size_t(t.status)];
        (void)m_shared->store->setStatus(m_shared->sweepRunId, m_outcome.status);
        (void)m_shared->store->setSummary(
            m_shared->sweepRunId,
            fmt::format(
                R"({{"trials": {}, "finished": {}, "pruned": {}, "diverged": {}, "stopped": {}, "failed": {}, "elapsed_s": {}}})",
                m_plan.trials.size(), counts[size_t(TrialStatus::Finished)],
                counts[size_t(TrialStatus::Pruned)], counts[size_t(TrialStatus::Diverged)],
                counts[size_t(TrialStatus::Stopped)], counts[size_t(TrialStatus::Failed)],
                m_outcome.elapsedSec));
        m_shared->store->flush();
    }
    m_shared->lock.reset();  // the sweep's record is final: it may be resumed from now on
    m_events.push(SweepDone{m_outcome.status, m_outcome.detail});
}

// What runSweep's phases share while the trials run (the controlling thread's only).
struct SweepRunner::Schedule {
    fs::path db;
    std::deque<const TrialSpec*> pending;  // by index, not yet started (or taken back)
    std::vector<std::unique_ptr<Active>> active;
    int parallel = 1;         // trials at once in this process
    int threadsPerTrial = 1;  // a local trial's compute threads (unless num_threads says)
    std::string runName;      // the sweep run's name, the prefix of its trials' names
    bool stopping = false;    // a stop was requested: no more trials start

    int localTrials() const {
        return int(std::count_if(active.begin(), active.end(),
                                 [](const auto& a) { return a->rank == 0; }));
    }
};

namespace {

// A trial's result before it ran: which trial, with which values.
TrialResult resultOf(const TrialSpec& spec) {
    TrialResult r;
    r.trial = spec.index;
    r.params = spec.params;
    r.parametrization = spec.parametrization;
    r.seed = spec.seed;
    return r;
}

// A trial's row in the store before its outcome is known.
store::SweepTrialRecord recordOf(int64_t sweepRunId, const TrialSpec& spec) {
    store::SweepTrialRecord record;
    record.sweepRun = sweepRunId;
    record.trial = spec.index;
    record.pointKey = spec.pointKey();
    record.paramsJson = paramsJson(spec.params);
    record.seed = spec.seed;
    return record;
}

}  // namespace

// Plan → launch → collect, until every trial has a result or a stop has ended the running ones:
// the sweep's record (new, or resumed with its settled trials), the schedule, then a loop that
// starts trials on free slots, waits for an event, takes back lost workers' trials and records
// the trials that ended.
Status SweepRunner::runSweep() {
    const fs::path db = m_options.dbPath.empty() ? userDataDir() / "runs.sqlite" : m_options.dbPath;
    auto settled = openSweepRecord(db);
    if (!settled.ok()) return settled.error();
    Schedule sched = planSchedule(db, *settled);
    while (!sched.active.empty() || (!sched.pending.empty() && !sched.stopping)) {
        if (m_stopRequested && !sched.stopping) stopRunningTrials(sched);
        if (Status st = launchTrials(sched); !st.ok()) return st;
        waitForTrialEvent(sched.stopping);
        if (m_cluster) takeBackLostTrials(sched);
        collectEndedTrials(sched);
    }
    if (m_cluster) stopCluster();
    return concludeSweep(sched.stopping);
}

Result<std::vector<bool>> SweepRunner::openSweepRecord(const fs::path& db) {
    Shared& sh = *m_shared;
    const config::SweepConfig& sweep = m_plan.sweep;
    auto opened = store::RunStore::open(db);
    if (!opened.ok()) return opened.error();
    sh.store = std::move(opened).value();
    if (!sweep.earlyStopping.rungs.empty())
        sh.asha.emplace(sweep.earlyStopping.rungs, sweep.earlyStopping.reductionFactor);
    for (const auto& w : m_plan.definition.warnings) m_events.push(SweepLog{true, w});

    std::vector<bool> settled(m_plan.trials.size(), false);
    if (m_resumeId) {
        sh.sweepRunId = *m_resumeId;
        // Ours before its records are read: another process may still be adding to them.
        auto lock = lockSweepFolder(*sh.store, sh.sweepRunId, db);
        if (!lock.ok()) return lock.error();
        sh.lock.emplace(std::move(lock).value());
        if (Status st = restoreSettledTrials(settled); !st.ok()) return st.error();
        (void)sh.store->setStatus(sh.sweepRunId, "running");
        m_events.push(SweepLog{
            false, fmt::format("resuming sweep {}: {} of {} trials already done", sh.sweepRunId,
                               m_outcome.trials.size(), m_plan.trials.size())});
    } else {
        store::NewRun run;
        run.name = m_options.name.empty() ? defaultSweepName() : m_options.name;
        run.configYaml = config::saveConfigYaml(m_plan.definition.config);
        run.kind = "sweep";
        auto id = sh.store->createRun(run);
        if (!id.ok()) return id.error();
        sh.sweepRunId = *id;
        auto lock = lockSweepFolder(*sh.store, sh.sweepRunId, db);
        if (!lock.ok()) return lock.error();
        sh.lock.emplace(std::move(lock).value());
        (void)sh.store->setStatus(sh.sweepRunId, "running");
    }
    m_outcome.sweepRunId = sh.sweepRunId;
    return settled;
}

// Resume: the stored trials with a settled result become results again (and ASHA's rungs), by
// trial index in `settled`; a stored trial the plan does not have refuses the resume.
Status SweepRunner::restoreSettledTrials(std::vector<bool>& settled) {
    Shared& sh = *m_shared;
    const config::SweepConfig& sweep = m_plan.sweep;
    auto records = store::sweepTrials(*sh.store, sh.sweepRunId);
    if (!records.ok()) return records.error();
    for (const auto& r : *records) {
        if (r.trial < 0 || size_t(r.trial) >= m_plan.trials.size() ||
            r.pointKey != m_plan.trials[size_t(r.trial)].pointKey())
            return Error{
                fmt::format("sweep {}: stored trial {} ({}) does not match the sweep's plan; its "
                            "definition changed, so it cannot be resumed: start a new sweep",
                            sh.sweepRunId, r.trial, r.pointKey)};
        const auto status = parseTrialStatus(r.status);
        if (!status || !isSettled(*status)) continue;
        const TrialSpec& spec = m_plan.trials[size_t(r.trial)];
        TrialResult result = resultOf(spec);
        result.status = *status;
        result.steps = r.steps;
        result.finalLoss = r.finalLoss;
        result.reason = r.reason;
        result.runId = r.run.value_or(-1);
        result.rungLosses = parseRungJson(r.rungLossesJson);
        if (sh.asha)
            for (const auto& [step, loss] : result.rungLosses)
                sh.asha->restore(groupOf(spec, sweep.earlyStopping.groupBy), r.trial, step, loss);
        settled[size_t(r.trial)] = true;
        m_outcome.trials.push_back(result);
        m_events.push(TrialFinished{std::move(result), true});
    }
    return Status::success();
}

// The trials still to run, how many at once and with how many threads each; across processes
// the cluster starts here.
SweepRunner::Schedule SweepRunner::planSchedule(const fs::path& db,
                                                const std::vector<bool>& settled) {
    Schedule sched;
    sched.db = db;
    for (const auto& t : m_plan.trials)
        if (!settled[size_t(t.index)]) sched.pending.push_back(&t);
    // Across processes every rank runs one trial at a time; rank 0's share is its local slot.
    const bool acrossProcesses = m_options.comm && m_options.comm->size() > 1;
    sched.parallel =
        acrossProcesses
            ? 1
            : std::max(1, std::min<int>(m_plan.sweep.parallelTrials, int(sched.pending.size())));
    int cores = m_options.cores > 0 ? m_options.cores : availableCores();
    if (acrossProcesses) {
        m_cluster = std::make_unique<Cluster>();
        m_cluster->db = db.string();
        m_cluster->cache = m_options.cacheDir.string();
        startCluster();
        const int sharing = m_cluster->ranksOnHost[m_options.comm->host()];
        if (m_options.cores <= 0 && cores == int(std::thread::hardware_concurrency()))
            cores = std::max(1, cores / std::max(1, sharing));
        m_events.push(SweepLog{
            false, fmt::format("across {} processes: one trial at a time on each rank; rank 0 "
                               "on {} schedules and records",
                               m_options.comm->size(), m_options.comm->host())});
    }
    sched.threadsPerTrial = std::max(1, cores / sched.parallel);
    sched.runName = m_options.name;
    if (sched.runName.empty()) {
        auto info = m_shared->store->getRun(m_shared->sweepRunId);
        sched.runName = info.ok() ? info->name : "sweep";
    }
    return sched;
}

void SweepRunner::stopRunningTrials(Schedule& sched) {
    sched.stopping = true;
    for (auto& a : sched.active) {
        if (a->session)
            a->session->requestStop();
        else
            cluster::send(*m_options.comm, a->rank, cluster::kStop, nlohmann::json::object(),
                          cluster::kSendTimeout);
    }
    m_events.push(SweepLog{false, "stopping the sweep: running trials stop between layers",
                           m_shared->sweepRunId});
}

// A free worker rank (lowest first), or 0 when none is.
int SweepRunner::freeWorker() {
    if (!m_cluster) return 0;
    std::lock_guard lock(m_cluster->mutex);
    for (size_t r = 1; r < m_cluster->workers.size(); ++r) {
        const auto& w = *m_cluster->workers[r];
        if (w.ready && !w.lost && !w.trial) return int(r);
    }
    return 0;
}

// Pending trials onto free slots: this process's first, then free worker ranks.
Status SweepRunner::launchTrials(Schedule& sched) {
    while (!sched.stopping && !sched.pending.empty()) {
        int rank = 0;
        if (sched.localTrials() >= sched.parallel) {
            rank = freeWorker();
            if (rank == 0) break;
        }
        const TrialSpec& spec = *sched.pending.front();
        sched.pending.pop_front();
        if (Status st = launchTrial(sched, spec, rank); !st.ok()) return st;
    }
    return Status::success();
}

// One trial started on `rank` (0: here), recorded as running; a config its session refuses is
// recorded failed, and a worker gone before it took the trial gives it back to `pending`.
Status SweepRunner::launchTrial(Schedule& sched, const TrialSpec& spec, int rank) {
    Shared& sh = *m_shared;
    config::LoadedConfig trialConfig = spec.config;
    auto& rc = trialConfig.config.runconfig;
    int threads = sched.threadsPerTrial;
    if (rank > 0) {
        std::lock_guard lock(m_cluster->mutex);
        threads = std::max(1, m_cluster->workers[size_t(rank)]->cores);
    }
    threads = rc.numThreads > 0 ? rc.numThreads : threads;
    rc.numThreads = threads;
    if (!rc.modelDir.empty())
        rc.modelDir = (fs::path(rc.modelDir) / fmt::format("trial-{}", spec.index)).string();
    session::SessionOptions so;
    so.dbPath = sched.db;
    so.cacheDir = m_options.cacheDir;
    so.runName = fmt::format("{} #{}: {}", sched.runName, spec.index, describeValues(spec));
    so.kind = "sweep-trial";
    so.finalCheckpoint = false;  // a stopped trial reruns; keep a sweep's disk use small
    so.sweepId = sh.sweepRunId;
    auto a = std::make_unique<Active>();
    a->spec = &spec;
    a->group = groupOf(spec, m_plan.sweep.earlyStopping.groupBy);
    a->maxSteps = rc.maxSteps;
    a->rank = rank;
    store::SweepTrialRecord record = recordOf(sh.sweepRunId, spec);
    record.status = "running";
    record.finalLoss = kNaN;
    if (Status st = store::saveSweepTrial(*sh.store, record); !st.ok()) return st;
    m_events.push(TrialStarted{spec.index, spec.params, spec.parametrization, spec.seed,
                               rc.maxSteps, threads});
    // Created here for every trial: a config a session refuses fails alike on any rank.
    auto created = session::Session::create(trialConfig, so);
    if (!created.ok()) {
        TrialResult failed = resultOf(spec);
        failed.status = TrialStatus::Failed;
        failed.reason = created.error().message;
        record.status = "failed";
        record.reason = failed.reason;
        (void)store::saveSweepTrial(*sh.store, record);
        m_outcome.trials.push_back(failed);
        m_events.push(TrialFinished{std::move(failed), false});
        return Status::success();
    }
    if (rank > 0) {
        if (!sendTrial(*a, trialConfig, so.runName))
            sched.pending.push_front(&spec);  // the worker is gone: another rank runs it
        else
            sched.active.push_back(std::move(a));
        return Status::success();
    }
    a->session = std::move(created).value();
    Active* raw = a.get();
    a->session->events().setNotify([this, raw] { onTrialEvents(*raw); });
    a->session->start();
    sched.active.push_back(std::move(a));
    return Status::success();
}

// Until a trial ends, a worker frees up, a stop is requested, or 100 ms pass (heartbeats).
void SweepRunner::waitForTrialEvent(bool stopping) {
    std::unique_lock lock(m_mutex);
    m_wake.wait_for(lock, std::chrono::milliseconds(100),
                    [&] { return m_trialEnded || (m_stopRequested && !stopping); });
    m_trialEnded = false;
}

// Across processes: a lost worker's trial goes back to the front of the queue; its run stays as
// a failed one.
void SweepRunner::takeBackLostTrials(Schedule& sched) {
    heartbeatWorkers();
    for (int rank : lostWorkers()) {
        auto it = std::find_if(sched.active.begin(), sched.active.end(),
                               [&](const auto& a) { return a->rank == rank; });
        const std::string host = m_options.comm->hostOf(rank);
        if (it == sched.active.end()) {
            m_events.push(SweepLog{
                true, fmt::format("rank {} on {} stopped answering; the sweep goes on without it",
                                  rank, host)});
            continue;
        }
        Active& lost = **it;
        const std::string message = fmt::format(
            "rank {} on {} stopped answering during trial {}; the trial runs again on another "
            "rank",
            rank, host, lost.spec->index);
        if (lost.remoteRunId >= 0) {
            (void)m_shared->store->setStatus(lost.remoteRunId, "failed");
            m_shared->store->logEvent(lost.remoteRunId, "error", "sweep: " + message);
        }
        m_events.push(SweepLog{true, message});
        if (!sched.stopping) sched.pending.push_front(lost.spec);
        sched.active.erase(it);
    }
}

void SweepRunner::collectEndedTrials(Schedule& sched) {
    for (auto it = sched.active.begin(); it != sched.active.end();) {
        if (!(*it)->ended) {
            ++it;
            continue;
        }
        TrialResult result = finishTrial(**it);
        if (m_cluster && (*it)->rank > 0) {
            std::lock_guard lock(m_cluster->mutex);
            m_cluster->workers[size_t((*it)->rank)]->trial = nullptr;
        }
        m_outcome.trials.push_back(result);
        m_events.push(TrialFinished{std::move(result), false});
        it = sched.active.erase(it);
    }
}

// The outcome in trial order with its transfer analysis; finished, stopped, or an error when
// every trial failed.
Status SweepRunner::concludeSweep(bool stopping) {
    std::sort(m_outcome.trials.begin(), m_outcome.trials.end(),
              [](const TrialResult& a, const TrialResult& b) { return a.trial < b.trial; });
    m_outcome.transfer = analyzeTransfer(m_outcome.trials);
    m_outcome.status = stopping ? "stopped" : "finished";
    // A sweep none of whose trials could train has no result: it failed, for its trials' reason
    // (a missing data folder fails every trial alike), not "finished" with a green check.
    const bool allFailed =
        !m_outcome.trials.empty() &&
        std::all_of(m_outcome.trials.begin(), m_outcome.trials.end(),
                    [](const TrialResult& t) { return t.status == TrialStatus::Failed; });
    if (!stopping && allFailed)
        return Error{fmt::format("every trial failed; trial {}: {}", m_outcome.trials[0].trial,
                                 m_outcome.trials[0].reason)};
    return Status::success();
}

void SweepRunner::onTrialEvents(Active& a) {
    std::lock_guard lock(a.mutex);
    a.scratch.clear();
    a.session->events().drain(a.scratch);
    for (const auto& event : a.scratch) {
        if (const auto* m = std::get_if<session::StepMetrics>(&event)) {
            if (onTrialStep(a, m->step, m->maxSteps, m->loss)) a.session->requestStop();
        } else if (const auto* s = std::get_if<session::StateChange>(&event)) {
            const bool terminal =
                s->state == session::RunState::Finished || s->state == session::RunState::Stopped ||
                s->state == session::RunState::Diverged || s->state == session::RunState::Failed;
            if (terminal) {
                a.ended = true;
                std::lock_guard sharedLock(m_mutex);
                m_trialEnded = true;
                m_wake.notify_all();
            }
        }
    }
}

bool SweepRunner::onTrialStep(Active& a, int64_t step, int64_t maxSteps, double loss) {
    const config::SweepConfig& sweep = m_plan.sweep;
    a.steps = step;
    a.window.push_back(loss);
    while (a.window.size() > size_t(sweep.finalLossSteps)) a.window.pop_front();
    m_events.push(TrialProgress{a.spec->index, step, maxSteps, loss});
    if (a.pruned || a.diverged) return false;
    if (!std::isfinite(loss) || (sweep.maxLoss > 0 && loss > sweep.maxLoss)) {
        a.diverged = true;
        a.reason = std::isfinite(loss)
                       ? fmt::format("loss {:.4f} above sweep.max_loss {} at step {}", loss,
                                     config::formatNumberShort(sweep.maxLoss), step)
                       : fmt::format("loss became {} at step {}", loss, step);
        return true;
    }
    if (m_shared->asha && m_shared->asha->isRung(step)) {
        const double rungLoss = a.windowMean();
        a.rungLosses[step] = rungLoss;
        RungDecision decision;
        {
            std::lock_guard sharedLock(m_mutex);
            decision = m_shared->asha->atRung(a.group, a.spec->index, step, rungLoss);
        }
        if (decision.stop) {
            a.pruned = true;
            a.reason = decision.reason;
            return true;
        }
    }
    return false;
}

TrialResult SweepRunner::finishTrial(Active& a) {
    if (a.session) a.session->wait();
    const session::RunSummary& summary = a.session ? a.session->summary() : *a.remoteSummary;
    std::lock_guard lock(a.mutex);  // late span events may still be handled
    TrialResult r = resultOf(*a.spec);
    r.steps = summary.steps;
    r.runId = summary.runId;
    r.rungLosses = a.rungLosses;
    r.elapsedSec = summary.elapsedSec;
    const double mean = a.windowMean();
    r.finalLoss = std::isfinite(mean) ? mean : kNaN;
    switch (summary.state) {
        case session::RunState::Finished:
            r.status = TrialStatus::Finished;
            break;
        case session::RunState::Diverged:
            r.status = TrialStatus::Diverged;
            r.reason = a.reason.empty() ? summary.detail : a.reason;
            break;
        case session::RunState::Failed:
            r.status = TrialStatus::Failed;
            r.reason = summary.detail;
            break;
        default:  // stopped: by ASHA, by the divergence bound, or by the user
            r.status = a.pruned     ? TrialStatus::Pruned
                       : a.diverged ? TrialStatus::Diverged
                                    : TrialStatus::Stopped;
            r.reason = a.reason.empty() ? summary.detail : a.reason;
            break;
    }
    if (r.status == TrialStatus::Diverged) r.finalLoss = kNaN;
    Shared& sh = *m_shared;
    if (r.runId >= 0 && r.status == TrialStatus::Diverged)
        (void)sh.store->setStatus(r.runId, "diverged");
    if (r.runId >= 0 && !r.reason.empty())
        sh.store->logEvent(r.runId, r.status == TrialStatus::Failed ? "error" : "info",
                           "sweep: " + std::string(trialStatusName(r.status)) + ": " + r.reason);
    store::SweepTrialRecord record = recordOf(sh.sweepRunId, *a.spec);
    if (r.runId >= 0) record.run = r.runId;
    record.status = trialStatusName(r.status);
    record.steps = r.steps;
    record.finalLoss = r.finalLoss;
    record.rungLossesJson = rungJson(r.rungLosses);
    record.reason = r.reason;
    if (Status st = store::saveSweepTrial(*sh.store, record); !st.ok())
        m_events.push(SweepLog{
            true, "cannot record trial " + std::to_string(r.trial) + ": " + st.error().message});
    return r;
}

}  // namespace ws::sweep
