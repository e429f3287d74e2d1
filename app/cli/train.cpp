// SPDX-License-Identifier: GPL-3.0-or-later
// `wafer train CONFIG`: trains a config with a live progress line (or JSON lines), Ctrl-C stops
// cleanly between layers (never leaving half a step applied) and still writes the final weights
// and a final checkpoint. `wafer train --resume RUN_ID_OR_FOLDER [CONFIG]` continues a run from a
// checkpoint exactly (engine/session/resume.h); without CONFIG the checkpoint's own config is used.
// Under `mpirun -np P` rank 0 does all of the above and sends the config it runs to the other
// ranks, which compute their share of runconfig.num_csx (engine/session/cluster_worker.h) and
// print only the line that says where they run. While it trains, rank 0 (or the one process)
// follows the run control requests other processes leave in the model folder (the studio's
// Pause / Checkpoint Now / Stop on a run it did not start, `wafer runs control`;
// engine/session/run_control.h).
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <unistd.h>

#include <atomic>
#include <cmath>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

#include "app/cli/commands.h"
#include "app/cli/output.h"
#include "engine/comm/peer_watch.h"
#include "engine/core/units.h"
#include "engine/session/chat_run_data.h"
#include "engine/session/cluster_worker.h"
#include "engine/session/resume.h"
#include "engine/session/run_control.h"
#include "engine/session/run_eta.h"
#include "engine/session/session.h"

namespace ws::cli {
namespace {

struct TrainOptions {
    std::string configPath;
    std::vector<std::string> overrides;
    int64_t maxSteps = -1;
    int threads = -1;
    std::string name;
    std::string resume;  // run id or folder
    bool allowConfigChange = false;
};

// " (x before training; unigram baseline y)" of the summary line, each part only when known (no
// unigram baseline for ModelZoo's HDF5 samples, which are never counted as a stream).
std::string baselines(const session::RunSummary& summary) {
    std::vector<std::string> parts;
    if (!std::isnan(summary.initialEvalLoss))
        parts.push_back(fmt::format("{:.4f} before training", summary.initialEvalLoss));
    if (!std::isnan(summary.unigramEntropyNats))
        parts.push_back(fmt::format("unigram baseline {:.3f}", summary.unigramEntropyNats));
    return parts.empty() ? std::string() : " (" + fmt::format("{}", fmt::join(parts, "; ")) + ")";
}

// The line each process prints as a job across processes starts.
void printRankLine(const comm::Comm& comm, int systems) {
    const auto mine = comm::systemsOfRank(systems, comm.size(), comm.rank());
    std::cerr << fmt::format("rank {} of {} on {}: {}\n", comm.rank(), comm.size(), comm.host(),
                             mine.count <= 0   ? std::string("no systems")
                             : mine.count == 1 ? fmt::format("system {} of {}", mine.first, systems)
                                               : fmt::format("systems {}-{} of {}", mine.first,
                                                             mine.first + mine.count - 1, systems))
              << std::flush;
}

// Across processes: a rank that stops answering (its host down, the network to it cut) is named
// in one message, where the others would wait in a collective without a word for as long as TCP
// retries (comm/peer_watch.h). Every rank starts it once the config is shared, with rank 0's
// WAFER_PEER_TIMEOUT (mpirun passes a variable to other hosts only with -x).
std::unique_ptr<comm::PeerWatch> watchPeers(comm::Comm& comm) {
    int64_t ms = 0;
    if (comm.rank() == 0) {
        auto timeout = comm::peerTimeoutFromEnvironment();
        if (!timeout.ok()) comm.abort(2, timeout.error().message);
        ms = timeout->count();
    }
    comm.broadcast(comm::Channel::Control, &ms, sizeof ms, 0);
    return std::make_unique<comm::PeerWatch>(comm, std::chrono::milliseconds(ms));
}

int runTrain(const TrainOptions& opt, CommonOptions& common) {
    std::vector<std::string> overrides = opt.overrides;
    if (opt.maxSteps >= 0) overrides.push_back(fmt::format("runconfig.max_steps={}", opt.maxSteps));
    if (opt.threads >= 0) overrides.push_back(fmt::format("runconfig.num_threads={}", opt.threads));
    if (opt.configPath.empty() && opt.resume.empty()) {
        std::cerr << "wafer train: give a CONFIG file, or --resume RUN_ID_OR_FOLDER\n";
        return 2;
    }
    std::filesystem::path resumeFolder;
    if (!opt.resume.empty()) {
        auto folder = session::resolveResumeTarget(opt.resume, common.dbPath);
        if (!folder.ok()) return fail(folder.error().message);
        resumeFolder = *folder;
    }
    auto loaded = !opt.configPath.empty() ? config::loadConfigFile(opt.configPath, overrides)
                                          : session::resumeConfig(resumeFolder, overrides);
    if (!loaded.ok()) return fail(loaded.error().message);
    session::SessionOptions sessionOptions;
    sessionOptions.resumeFrom = resumeFolder;
    sessionOptions.allowConfigChange = opt.allowConfigChange;
    sessionOptions.dbPath = common.dbPath;
    sessionOptions.runName = opt.name;
    sessionOptions.comm = common.comm;
    auto created = session::Session::create(std::move(loaded).value(), sessionOptions);
    if (!created.ok()) return fail(created.error().message);
    std::unique_ptr<comm::PeerWatch> watch;
    if (common.comm && common.comm->size() > 1) {
        // Rank 0 of several: the other ranks run the config this session runs.
        std::string yaml = config::saveConfigYaml((*created)->config(), config::YamlStyle::Plain);
        comm::broadcastString(*common.comm, comm::Channel::Control, yaml, 0);
        common.workersStarted = true;
        printRankLine(*common.comm, (*created)->config().runconfig.numCsx);
        watch = watchPeers(*common.comm);
    }
    return driveSession(**created, common);
}

}  // namespace

int runTrainWorker(comm::Comm& comm) {
    // mpirun's SIGTERM (Ctrl-C) goes to every rank: the others go on until rank 0, which stops
    // after the step in flight, releases them.
    std::signal(SIGINT, SIG_IGN);
    std::signal(SIGTERM, SIG_IGN);
    std::string yaml;
    comm::broadcastString(comm, comm::Channel::Control, yaml, 0);
    if (yaml.empty()) return 1;  // rank 0 could not start a run and says why
    auto loaded = config::parseConfig(yaml, "the config from rank 0", {});
    if (!loaded.ok()) comm.abort(1, loaded.error().message);
    printRankLine(comm, loaded->config.runconfig.numCsx);
    const auto watch = watchPeers(comm);
    if (Status st = session::runClusterWorker(comm, loaded->config); !st.ok()) {
        comm.abort(1, st.error().message);
    }
    return 0;
}

void releaseIdleWorkers(CommonOptions& common) {
    if (!common.comm || common.comm->size() == 1 || common.comm->rank() != 0) return;
    if (common.workersStarted) return;
    common.workersStarted = true;
    if (common.sweepJob) return releaseIdleSweepWorkers(*common.comm);
    std::string none;
    comm::broadcastString(*common.comm, comm::Channel::Control, none, 0);
    common.workersStarted = true;
}

// Who ends a job across processes after its SIGTERM, and how many seconds it leaves before
// SIGKILL. mpirun (also inside a Slurm batch job): its odls_base_sigkill_timeout, which it passes
// to every process in the environment when it is set (--mca or OMPI_MCA_...); 1 s by default.
// Ranks started by `srun --mpi=pmix` are ended by Slurm (scancel, the time limit) after
// slurm.conf's KillWait, which a job cannot read: 30 s unless the cluster sets another.
struct KillGrace {
    double seconds = 1.0;
    bool slurm = false;
};
KillGrace killGrace() {
    if (startedBySrun()) return {30.0, true};
    const char* value = std::getenv("OMPI_MCA_odls_base_sigkill_timeout");
    const double seconds = value ? std::atof(value) : 0.0;
    return {seconds > 0.0 ? seconds : 1.0, false};
}

// What Ctrl-C (SIGTERM across processes) prints: how the run stops, and who ends the job when.
std::string stoppingLine(bool acrossProcesses, const KillGrace& grace) {
    if (!acrossProcesses) return "\nstopping (between layers; Ctrl-C again to quit at once)\n";
    if (grace.slurm) {
        return "\nstopping after the step in flight, with a checkpoint (Slurm ends the job after "
               "its KillWait, 30 s unless slurm.conf says otherwise)\n";
    }
    return fmt::format(
        "\nstopping after the step in flight, with a checkpoint (mpirun ends the job {:g} s from "
        "now)\n",
        grace.seconds);
}

// Said once when a step cannot finish (and checkpoint) inside the grace: the stop would be a
// kill, losing the steps since the last checkpoint; names the setting that makes it clean.
std::string graceNote(double stepSec, const KillGrace& grace) {
    const double enough = std::ceil(4.0 * stepSec + 5.0);
    if (grace.slurm) {
        return fmt::format(
            "note: a step takes {:.2g} s, but after scancel Slurm gives the job only its KillWait "
            "(30 s unless slurm.conf says otherwise) to stop, so scancel would lose the steps "
            "since the last checkpoint; for a clean stop ask for KillWait={:.0f} in slurm.conf\n",
            stepSec, enough);
    }
    return fmt::format(
        "note: a step takes {:.2g} s, but after Ctrl-C mpirun gives the job only {:g} s to stop "
        "(Open MPI's odls_base_sigkill_timeout), so Ctrl-C would lose the steps since the last "
        "checkpoint; for a clean stop start mpirun with --mca odls_base_sigkill_timeout {:.0f}\n",
        stepSec, grace.seconds, enough);
}

int driveSession(session::Session& session, const CommonOptions& common) {
    std::atomic<bool>& interrupted = catchCtrlC();
    // Under mpirun, Ctrl-C reaches rank 0 as SIGTERM (then SIGKILL after mpirun's grace period,
    // odls_base_sigkill_timeout): stop after the step in flight, with the final checkpoint.
    const bool acrossProcesses = common.comm && common.comm->size() > 1;
    if (acrossProcesses) alsoStopOnSigterm();
    const KillGrace grace = killGrace();
    bool graceChecked = !acrossProcesses;
    const bool tty = !common.json && isatty(STDOUT_FILENO);
    bool progressLineOpen = false;
    session::RunControlFollower control(session);
    session.start();
    std::vector<session::Event> events;
    bool done = false;
    bool paused = false;
    while (!done) {
        if (interrupted.exchange(false)) {
            session.requestStop();
            std::cerr << stoppingLine(acrossProcesses, grace);
        }
        for (const std::string& line : control.poll()) {
            if (progressLineOpen) std::cout << "\n";
            progressLineOpen = false;
            std::cerr << "control: " << line << "\n";
        }
        events.clear();
        session.events().waitAndDrain(events, std::chrono::milliseconds(100));
        for (const auto& event : events) {
            if (const auto* m = std::get_if<session::StepMetrics>(&event)) {
                const bool evaluated = !std::isnan(m->evalLoss);
                if (!graceChecked && m->logStep && m->tokensPerSec > 0 && m->step > 0) {
                    // A step that cannot finish (and checkpoint) inside mpirun's grace makes
                    // Ctrl-C a kill: say so once, with the fix, before the user needs it.
                    graceChecked = true;
                    const double stepSec =
                        double(m->tokensSeen) / double(m->step) / m->tokensPerSec;
                    if (2.0 * stepSec > grace.seconds) std::cerr << graceNote(stepSec, grace);
                }
                if (common.json) {
                    if (m->logStep || evaluated) std::cout << stepJson(*m).dump() << std::endl;
                    continue;
                }
                if (!m->logStep && !evaluated) continue;
                const std::string line = fmt::format(
                    "step {:>{}}/{} | loss {:.4f} | eval {} | lr {:.3g} | {:.0f} tok/s | ETA {}",
                    m->step, std::to_string(m->maxSteps).size(), m->maxSteps, m->loss,
                    evaluated
                        ? fmt::format("{:.4f} ({:.3f} bits/byte)", m->evalLoss, m->evalBitsPerByte)
                        : std::string("  -   "),
                    m->learningRate, m->tokensPerSec, formatClock(session::etaSeconds(*m)));
                if (tty) {
                    std::cout << "\r\033[K" << line << (evaluated ? "\n" : "") << std::flush;
                    progressLineOpen = !evaluated;
                } else {
                    std::cout << line << std::endl;
                }
            } else if (const auto* l = std::get_if<session::LogLine>(&event)) {
                if (progressLineOpen) std::cout << "\n";
                progressLineOpen = false;
                if (common.json) {
                    std::cout << nlohmann::json{{"event", "log"},
                                                {"level", levelName(l->level)},
                                                {"message", l->message}}
                                     .dump()
                              << std::endl;
                } else {
                    std::cerr << levelPrefix(l->level) << l->message << "\n";
                }
            } else if (const auto* p = std::get_if<session::PrepareProgress>(&event)) {
                if (tty) {
                    std::cout << fmt::format("\r\033[K{} {:.0f}%", p->what, 100 * p->fraction)
                              << std::flush;
                    progressLineOpen = true;
                }
            } else if (const auto* s = std::get_if<session::StateChange>(&event)) {
                if (s->state == session::RunState::Paused) {
                    if (progressLineOpen) std::cout << "\n";
                    progressLineOpen = false;
                    std::cerr << "paused between layers\n";
                } else if (s->state == session::RunState::Running && paused) {
                    std::cerr << "continuing\n";
                }
                paused = s->state == session::RunState::Paused;
                done = s->state == session::RunState::Finished ||
                       s->state == session::RunState::Stopped ||
                       s->state == session::RunState::Diverged ||
                       s->state == session::RunState::Failed;
            }
        }
    }
    session.wait();
    restoreCtrlC();
    if (progressLineOpen) std::cout << "\n";
    const auto& summary = session.summary();
    if (common.json) {
        std::cout << summaryJson(summary).dump() << std::endl;
    } else if (summary.state != session::RunState::Failed) {
        // A chat run's eval loss counts its answers only: " (answer tokens)".
        const std::string counts = session::lossCountsLabel(session.config().trainInput);
        const std::string lossCounts = counts.empty() ? counts : " (" + counts + ")";
        std::cout << fmt::format(
            "{} after {} steps in {}: loss {:.4f}, eval loss {}{}{}, "
            "{:.0f} tokens/s, {} parameters{}\n"
            "run {} | model: {}\n",
            session::runStateName(summary.state), summary.steps, formatClock(summary.elapsedSec),
            summary.finalLoss,
            std::isnan(summary.finalEvalLoss)
                ? std::string("-")
                : fmt::format("{:.4f}{}", summary.finalEvalLoss, lossCounts),
            std::isnan(summary.finalEvalBitsPerByte)
                ? std::string()
                : fmt::format(" = {:.4f} bits/byte", summary.finalEvalBitsPerByte),
            baselines(summary), summary.tokensPerSec, summary.parameterCount,
            summary.emulatedSec > 0
                ? fmt::format("; emulated wafer time {:.4g} s", summary.emulatedSec)
                : std::string(),
            summary.runId, (summary.modelDir / "model.safetensors").string());
    }
    switch (summary.state) {
        case session::RunState::Failed:
            return 1;
        case session::RunState::Diverged:
            return 3;
        default:
            return 0;
    }
}

void addTrainCommand(CLI::App& app, CommonOptions& common, int& exitCode) {
    auto opt = std::make_shared<TrainOptions>();
    CLI::App* cmd = app.add_subcommand("train", "Train a model from a YAML config");
    cmd->add_option("config", opt->configPath,
                    "YAML config (ModelZoo layout); with --resume, optional (default: the "
                    "checkpoint's own config)")
        ->check(CLI::ExistingFile);
    cmd->add_option("--resume", opt->resume,
                    "Continue exactly from a checkpoint: a run id (its newest checkpoint), a "
                    "model folder, or a checkpoint-<step> folder");
    cmd->add_flag("--allow-config-change", opt->allowConfigChange,
                  "With --resume: accept config changes that alter training (the continuation "
                  "is then no longer exact)");
    cmd->add_option("--set", opt->overrides,
                    "Override a config value, e.g. --set model.hidden_size=128 (repeatable)");
    cmd->add_option("--max-steps", opt->maxSteps, "Train this many steps (runconfig.max_steps)")
        ->check(CLI::NonNegativeNumber);
    cmd->add_option("--threads", opt->threads, "CPU threads (runconfig.num_threads; 0 = all)")
        ->check(CLI::NonNegativeNumber);
    cmd->add_option("--name", opt->name, "Name of the run in the run store");
    cmd->add_option("--db", common.dbPath, "Run store (SQLite file)");
    cmd->add_flag("--json", common.json, "One JSON object per log step on stdout");
    cmd->callback([opt, &common, &exitCode] { exitCode = runTrain(*opt, common); });
}

}  // namespace ws::cli
