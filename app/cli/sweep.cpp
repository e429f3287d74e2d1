// SPDX-License-Identifier: GPL-3.0-or-later
// `wafer sweep SWEEP.yaml`: runs a hyperparameter sweep (engine/sweep/) with a live table of
// trials, or with --json one object per finished trial; ends with the μTransfer summary (best
// log2 learning rate per width, drift, transfer regret). Ctrl-C stops the running trials between
// layers; `wafer sweep --resume ID` continues without rerunning finished trials. Under
// `mpirun -np P` rank 0 does all of the above and the other ranks run its trials
// (engine/sweep/cluster.h).
#include <fmt/format.h>
#include <unistd.h>

#include <atomic>
#include <cmath>
#include <csignal>
#include <cstdlib>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>

#include "app/cli/commands.h"
#include "app/cli/output.h"
#include "engine/config/text_format.h"
#include "engine/core/units.h"
#include "engine/sweep/cluster.h"
#include "engine/sweep/eta.h"
#include "engine/sweep/runner.h"

namespace ws::cli {
namespace {

struct SweepOptions {
    std::string sweepPath;
    std::vector<std::string> overrides;
    bool yes = false;
    int64_t resume = -1;
    std::string name;
    double workerTimeout = 10.0;
};

// A swept value as JSON: numbers as numbers, true/false as booleans, the rest as text.
nlohmann::json valueJson(const std::string& text) {
    bool isNumber = false;
    if (auto i = config::parseInteger(text, &isNumber);
        i && text.find_first_of(".eE") == std::string::npos)
        return *i;  // 32, not 32.0
    if (auto v = config::parseDouble(text); v && std::isfinite(*v)) return *v;
    if (auto b = config::parseBool(text)) return *b;
    return text;
}

nlohmann::json trialJson(const sweep::TrialResult& t) {
    nlohmann::json j = {{"event", "trial"}, {"trial", t.trial}};
    for (const auto& p : t.params) j[p.key] = valueJson(p.value);
    j["seed"] = t.seed;
    j["status"] = sweep::trialStatusName(t.status);
    j["final_loss"] = number(t.finalLoss);
    j["steps"] = t.steps;
    j["run_id"] = t.runId;
    j["elapsed_s"] = number(t.elapsedSec);
    if (!t.reason.empty()) j["reason"] = t.reason;
    return j;
}

std::string shortValue(const std::string& key, const std::string& value) {
    const double l2 = sweep::log2Value(value);
    // Learning rates read best as powers of two when they are ones.
    if (key.find("learning_rate") != std::string::npos && std::isfinite(l2) &&
        std::abs(l2 - std::round(l2)) < 1e-9)
        return fmt::format("2^{}", std::lround(l2));
    return value;
}

std::string columnName(const std::string& key) {
    const size_t dot = key.rfind('.');
    return dot == std::string::npos ? key : key.substr(dot + 1);
}

class Table {
public:
    explicit Table(const sweep::SweepPlan& plan) {
        if (plan.trials.empty()) return;
        for (const auto& p : plan.trials.front().params) {
            size_t width = columnName(p.key).size();
            for (const auto& t : plan.trials)
                width = std::max(width, shortValue(p.key, t.param(p.key)).size());
            m_columns.push_back({p.key, width});
        }
    }
    std::string header() const {
        std::string line = fmt::format("{:>5}", "trial");
        for (const auto& c : m_columns) line += fmt::format("  {:>{}}", columnName(c.key), c.width);
        return line + fmt::format("  {:>4}  {:<8}  {:>5}  {:>8}", "seed", "status", "step", "loss");
    }
    std::string row(const sweep::TrialResult& t) const {
        std::string line = fmt::format("{:>5}", t.trial);
        for (const auto& c : m_columns)
            line += fmt::format("  {:>{}}", shortValue(c.key, t.param(c.key)), c.width);
        line += fmt::format(
            "  {:>4}  {:<8}  {:>5}  {:>8}", t.seed, sweep::trialStatusName(t.status), t.steps,
            std::isfinite(t.finalLoss) ? fmt::format("{:.4f}", t.finalLoss) : std::string("-"));
        if (t.status != sweep::TrialStatus::Finished && !t.reason.empty()) line += "  " + t.reason;
        return line;
    }

private:
    struct Column {
        std::string key;
        size_t width;
    };
    std::vector<Column> m_columns;
};

void printTransfer(const std::vector<sweep::ParametrizationTransfer>& transfer) {
    if (transfer.empty()) {
        std::cout << "no transfer summary: the sweep does not vary both optimizer.learning_rate "
                     "and model.hidden_size\n";
        return;
    }
    std::cout << "\nμTransfer (seed-mean final loss; best log2 learning rate per width):\n";
    for (const auto& p : transfer) {
        std::cout << fmt::format("  {}:\n",
                                 p.parametrization.empty() ? "(as configured)" : p.parametrization);
        for (const auto& w : p.widths) {
            std::cout << fmt::format(
                "    width {:>5g}: best log2 lr {:>6}  loss {}\n", w.width,
                std::isnan(w.bestLog2Lr) ? std::string("-") : fmt::format("{:g}", w.bestLog2Lr),
                std::isfinite(w.bestLoss) ? fmt::format("{:.4f}", w.bestLoss)
                                          : std::string("- (diverged or no result)"));
        }
        std::cout << fmt::format(
            "    drift {} grid steps (grid step {} in log2 lr); transfer regret {}{}\n",
            std::isnan(p.driftSteps) ? std::string("-") : fmt::format("{:g}", p.driftSteps),
            std::isnan(p.gridStep) ? std::string("-") : fmt::format("{:g}", p.gridStep),
            std::isnan(p.regret)   ? std::string("-")
            : std::isinf(p.regret) ? std::string("inf (the widest model diverged there)")
                                   : fmt::format("{:.4f} nats", p.regret),
            p.note.empty() ? std::string() : " (" + p.note + ")");
    }
}

nlohmann::json transferJson(const std::vector<sweep::ParametrizationTransfer>& transfer) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& p : transfer) {
        nlohmann::json widths = nlohmann::json::array();
        for (const auto& w : p.widths)
            widths.push_back({{"width", w.width},
                              {"best_log2_lr", number(w.bestLog2Lr)},
                              {"best_loss", number(w.bestLoss)}});
        out.push_back({{"parametrization", p.parametrization},
                       {"widths", widths},
                       {"grid_step", number(p.gridStep)},
                       {"drift_steps", number(p.driftSteps)},
                       {"regret", std::isinf(p.regret) ? nlohmann::json("inf") : number(p.regret)},
                       {"note", p.note}});
    }
    return out;
}

int runSweep(const SweepOptions& opt, CommonOptions& common) {
    sweep::RunnerOptions runnerOptions;
    runnerOptions.dbPath = common.dbPath;
    runnerOptions.name = opt.name;
    runnerOptions.confirmed = opt.yes;
    const bool acrossProcesses = common.comm && common.comm->size() > 1;
    if (acrossProcesses) runnerOptions.comm = common.comm;
    runnerOptions.workerTimeout =
        std::chrono::milliseconds(static_cast<int64_t>(opt.workerTimeout * 1000));
    Result<std::unique_ptr<sweep::SweepRunner>> created = Error{""};
    if (opt.resume >= 0) {
        if (!opt.sweepPath.empty() || !opt.overrides.empty())
            return fail(
                "--resume continues a stored sweep as it was defined; leave out the "
                "sweep file and --set");
        created = sweep::SweepRunner::resume(opt.resume, runnerOptions);
    } else {
        if (opt.sweepPath.empty())
            return fail("give a sweep file (e.g. presets/mup-sweep.yaml) or --resume ID");
        auto loaded = sweep::loadSweepFile(opt.sweepPath, opt.overrides);
        if (!loaded.ok()) return fail(loaded.error().message);
        auto plan = sweep::planSweep(*loaded);
        if (!plan.ok()) return fail(plan.error().message);
        created = sweep::SweepRunner::create(std::move(plan).value(), runnerOptions);
    }
    if (!created.ok()) return fail(created.error().message);
    sweep::SweepRunner& runner = **created;
    const sweep::SweepPlan& plan = runner.plan();
    const Table table(plan);
    const bool tty = !common.json && isatty(STDOUT_FILENO);

    if (!common.json) {
        std::cout << fmt::format("{} trials ({} points x {} seeds), {} at a time\n",
                                 plan.trials.size(), plan.points, plan.sweep.seeds,
                                 plan.sweep.parallelTrials)
                  << table.header() << "\n";
    }
    std::atomic<bool>& interrupted = catchCtrlC();
    if (acrossProcesses) {
        alsoStopOnSigterm();           // mpirun turns Ctrl-C into SIGTERM to every rank
        common.workersStarted = true;  // the runner releases them when the sweep ends
    }
    runner.start();
    // The time left, estimated as the studio does (engine/sweep/eta.h): per-shape step times,
    // steps left, the trials that run at once (one per rank across processes).
    const auto started = std::chrono::steady_clock::now();
    const auto secondsIn = [&] {
        return std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    };
    sweep::SweepEta eta(sweep::trialCosts(plan),
                        acrossProcesses ? common.comm->size() : plan.sweep.parallelTrials);
    std::map<int, sweep::TrialProgress> running;
    bool footerOpen = false;
    auto clearFooter = [&] {
        if (footerOpen) std::cout << "\r\033[K";
        footerOpen = false;
    };
    bool done = false;
    auto lastFooter = std::chrono::steady_clock::now();
    while (!done) {
        if (interrupted.exchange(false)) {
            runner.requestStop();
            std::cerr << "\nstopping the sweep (Ctrl-C again to quit at once)\n";
        }
        std::vector<sweep::SweepEvent> events;
        runner.events().waitAndDrain(events, std::chrono::milliseconds(100));
        for (const auto& event : events) {
            if (const auto* s = std::get_if<sweep::TrialStarted>(&event)) {
                running[s->trial] = {s->trial, 0, s->maxSteps, NAN};
                eta.started(s->trial, secondsIn());
            } else if (const auto* p = std::get_if<sweep::TrialProgress>(&event)) {
                running[p->trial] = *p;
                eta.progress(p->trial, p->step, secondsIn());
            } else if (const auto* f = std::get_if<sweep::TrialFinished>(&event)) {
                running.erase(f->result.trial);
                eta.finished(f->result.trial, f->result.steps, secondsIn());
                if (common.json) {
                    nlohmann::json j = trialJson(f->result);
                    j["eta_s"] = number(eta.remainingSeconds(secondsIn()));  // null: not timed yet
                    std::cout << j.dump() << std::endl;
                } else {
                    clearFooter();
                    std::cout << table.row(f->result) << std::endl;
                }
            } else if (const auto* l = std::get_if<sweep::SweepLog>(&event)) {
                clearFooter();
                std::cerr << (l->warning ? "warning: " : "") << l->message;
                if (l->resumableSweepRunId >= 0)
                    std::cerr << "; resume it with: wafer sweep --resume " << l->resumableSweepRunId
                              << (common.dbPath.empty() ? "" : " --db " + common.dbPath);
                std::cerr << "\n";
            } else if (std::holds_alternative<sweep::SweepDone>(event)) {
                done = true;
            }
        }
        const auto now = std::chrono::steady_clock::now();
        if (tty && !running.empty() && now - lastFooter > std::chrono::milliseconds(200)) {
            std::string line =
                fmt::format("{}/{} done, ETA {} | running:", eta.endedTrials(), eta.totalTrials(),
                            formatClock(eta.remainingSeconds(secondsIn())));
            for (const auto& [trial, p] : running)
                line += fmt::format(
                    " | #{} step {}/{} loss {}", trial, p.step, p.maxSteps,
                    std::isfinite(p.loss) ? fmt::format("{:.3f}", p.loss) : std::string("-"));
            std::cout << "\r\033[K" << line.substr(0, 160) << std::flush;
            footerOpen = true;
            lastFooter = now;
        }
    }
    runner.wait();
    restoreCtrlC();
    clearFooter();
    const sweep::SweepOutcome& out = runner.outcome();
    if (common.json) {
        std::cout << nlohmann::json{{"event", "summary"},
                                    {"sweep_id", out.sweepRunId},
                                    {"status", out.status},
                                    {"trials", out.trials.size()},
                                    {"elapsed_s", out.elapsedSec},
                                    {"transfer", transferJson(out.transfer)},
                                    {"detail", out.detail}}
                         .dump()
                  << std::endl;
    } else if (out.status != "failed") {
        std::map<std::string, int> counts;
        for (const auto& t : out.trials) ++counts[sweep::trialStatusName(t.status)];
        std::string tally;
        for (const auto& [status, n] : counts)
            tally += (tally.empty() ? "" : ", ") + fmt::format("{} {}", n, status);
        std::cout << fmt::format("\nsweep {} {} in {:.1f} s: {}\n", out.sweepRunId, out.status,
                                 out.elapsedSec, tally.empty() ? "no trials" : tally);
        if (out.status == "stopped")
            std::cout << fmt::format("resume it with: wafer sweep --resume {}{}\n", out.sweepRunId,
                                     common.dbPath.empty() ? "" : " --db " + common.dbPath);
        printTransfer(out.transfer);
    }
    const int code = out.status == "failed" ? fail(out.detail) : 0;
    if (!out.lostRanks.empty()) {
        // MPI_Finalize would wait for the lost ranks forever: end here, the store closed first.
        (*created).reset();
        std::cout << std::flush;
        std::cerr << std::flush;
        std::_Exit(code);
    }
    return code;
}

}  // namespace

int runSweepWorker(comm::Comm& comm) {
    // mpirun's SIGTERM (Ctrl-C) goes to every rank: rank 0 stops the sweep and tells the others.
    std::signal(SIGINT, SIG_IGN);
    std::signal(SIGTERM, SIG_IGN);
    std::cerr << fmt::format("rank {} of {} on {}: sweep trials\n", comm.rank(), comm.size(),
                             comm.host())
              << std::flush;
    const sweep::SweepWorkerResult result = sweep::runSweepWorker(comm);
    if (result.rankLost) {
        std::cerr << std::flush;
        std::_Exit(result.rootLost ? 1 : 0);  // MPI_Finalize would wait for the lost rank
    }
    return 0;
}

void releaseIdleSweepWorkers(comm::Comm& comm) {
    sweep::releaseSweepWorkers(comm);
}

void addSweepCommand(CLI::App& app, CommonOptions& common, int& exitCode) {
    auto opt = std::make_shared<SweepOptions>();
    CLI::App* cmd = app.add_subcommand(
        "sweep", "Run a hyperparameter sweep (a config with a sweep: section, or a sweep file)");
    cmd->footer(
        "Across processes and machines (Open MPI): mpirun -np P --mca orte_enable_recovery 1 "
        "wafer sweep SWEEP.yaml\n"
        "  Every rank runs one trial at a time; rank 0 schedules (grid, random, ASHA), keeps the "
        "run store and records every trial. With orte_enable_recovery a worker that dies loses "
        "only its trial, which runs again on another rank (without it mpirun ends the job; "
        "`wafer sweep --resume ID` then reruns only the unfinished trials). Add --oversubscribe "
        "for more ranks than cores, --allow-run-as-root as root, --host/--hostfile for other "
        "machines (each needs the same wafer build and the corpus at the same path).");
    cmd->add_option("sweep", opt->sweepPath, "Sweep YAML (see presets/mup-sweep.yaml)")
        ->check(CLI::ExistingFile);
    cmd->add_option("--set", opt->overrides,
                    "Override a value of the base config or the sweep, e.g. --set "
                    "sweep.parametrization=[sp] (repeatable)");
    cmd->add_flag("--yes", opt->yes, "Run a sweep larger than sweep.max_trials without asking");
    cmd->add_option("--resume", opt->resume,
                    "Continue the stopped sweep with this run id (finished trials are kept)")
        ->check(CLI::NonNegativeNumber);
    cmd->add_option("--name", opt->name, "Name of the sweep in the run store");
    cmd->add_option("--db", common.dbPath, "Run store (SQLite file)");
    cmd->add_flag("--json", common.json, "One JSON object per finished trial, then a summary");
    cmd->add_option("--worker-timeout", opt->workerTimeout,
                    "Under mpirun: seconds without a word from a worker rank before its trial "
                    "runs again on another rank")
        ->check(CLI::PositiveNumber);
    cmd->callback([opt, &common, &exitCode] { exitCode = runSweep(*opt, common); });
}

}  // namespace ws::cli
