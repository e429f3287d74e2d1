// SPDX-License-Identifier: GPL-3.0-or-later
// wafer_sweep_bench: what the μTransfer preset (presets/mup-sweep.yaml) costs here.
//
// Always: runs one trial per width (sp, one seed, lr 2^-7, --steps steps) twice — with the
// preset's parallel_trials (the cores shared out, one thread each on 2 cores) and, as the
// reference, one trial at a time with every core — and projects the full preset's wall time from
// the shared run (trials x seconds per trial, perfectly packed).
//
// With --full it then runs the whole preset (192 trials of 250 steps) and prints its measured
// wall time and trial count beside that projection and the 10-minute target, when the first
// seed's pass over the grid was complete (the chart's first readable picture) with the drift and
// regret it already showed, and the final μTransfer report. Not run by CTest; see --help.
#include <fmt/format.h>

#include <unistd.h>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <string>
#include <thread>
#include <variant>

#include "bench_machine.h"
#include "engine/sweep/runner.h"
#include "engine/sweep/space.h"

namespace {

namespace fs = std::filesystem;
namespace sweep = ws::sweep;
using Clock = std::chrono::steady_clock;

const fs::path kPreset = fs::path(WAFER_PRESETS_DIR) / "mup-sweep.yaml";

struct Options {
    int steps = 50;
    int parallel = 2;
    bool full = false;
};

struct Measured {
    double wallSec = 0;
    size_t trials = 0;
    std::map<double, double> secByWidth;
};

double secondsSince(Clock::time_point start) {
    return std::chrono::duration<double>(Clock::now() - start).count();
}

ws::Result<std::unique_ptr<sweep::SweepRunner>> makeRunner(const std::vector<std::string>& sets,
                                                           const fs::path& db,
                                                           const fs::path& dir) {
    auto loaded = sweep::loadSweepFile(kPreset, sets);
    if (!loaded.ok()) return loaded.error();
    auto plan = sweep::planSweep(*loaded);
    if (!plan.ok()) return plan.error();
    sweep::RunnerOptions options;
    options.dbPath = db;
    options.cacheDir = dir / "cache";
    options.confirmed = true;
    return sweep::SweepRunner::create(std::move(plan).value(), options);
}

// One trial per width of the preset (its width axis, with what moves along), lr 2^-7.
ws::Result<Measured> runProxy(const Options& o, int parallel, const fs::path& dir) {
    auto runner = makeRunner(
        {"sweep.parametrization=[sp]", "sweep.seeds=1", fmt::format("sweep.max_steps={}", o.steps),
         fmt::format("sweep.parallel_trials={}", parallel),
         "sweep.parameters={model.hidden_size: {values: [16, 32, 64, 128], with: "
         "{model.num_heads: [1, 2, 4, 8], model.filter_size: [64, 128, 256, 512]}}, "
         "optimizer.learning_rate: [0.0078125]}"},
        dir / fmt::format("proxy-{}.sqlite", parallel), dir);
    if (!runner.ok()) return runner.error();
    const auto start = Clock::now();
    (*runner)->run();
    Measured m;
    m.wallSec = secondsSince(start);
    const auto& out = (*runner)->outcome();
    if (out.status != "finished") return ws::Error{"the sweep " + out.status + ": " + out.detail};
    m.trials = out.trials.size();
    for (const auto& t : out.trials)
        m.secByWidth[std::stod(t.param("model.hidden_size"))] = t.elapsedSec;
    return m;
}

void printTransfer(const std::vector<sweep::ParametrizationTransfer>& transfer,
                   const char* indent) {
    for (const auto& t : transfer) {
        std::printf("%s%-4s best log2 lr per width:", indent, t.parametrization.c_str());
        for (const auto& w : t.widths) std::printf("  %g: %g", w.width, w.bestLog2Lr);
        std::printf("   drift %g grid steps, transfer regret %.3f nats%s%s\n", t.driftSteps,
                    t.regret, t.note.empty() ? "" : " — ", t.note.c_str());
    }
}

struct Full {
    double wallSec = 0;
    size_t trials = 0;
    std::string summary;
    double firstPassSec = -1;  // every trial of the first seed settled
    std::vector<sweep::ParametrizationTransfer> firstPass, final;
};

ws::Result<Full> runFullPreset(const Options& o, const fs::path& dir) {
    auto made =
        makeRunner({fmt::format("sweep.parallel_trials={}", o.parallel)}, dir / "full.sqlite", dir);
    if (!made.ok()) return made.error();
    sweep::SweepRunner& runner = **made;
    const int64_t firstSeed = runner.plan().trials.front().seed;
    size_t firstSeedTrials = 0;
    for (const auto& t : runner.plan().trials) firstSeedTrials += t.seed == firstSeed;

    Full f;
    std::vector<sweep::TrialResult> settled;
    size_t firstSeedSettled = 0;
    const auto start = Clock::now();
    runner.start();
    bool done = false;
    std::vector<sweep::SweepEvent> batch;
    while (!done) {
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        batch.clear();
        runner.events().drain(batch);
        for (const auto& e : batch) {
            if (const auto* fin = std::get_if<sweep::TrialFinished>(&e)) {
                settled.push_back(fin->result);
                firstSeedSettled += fin->result.seed == firstSeed;
                if (firstSeedSettled == firstSeedTrials && f.firstPassSec < 0) {
                    f.firstPassSec = secondsSince(start);
                    f.firstPass = sweep::analyzeTransfer(settled);
                }
                std::fprintf(stderr, "\r%zu/%zu trials, %.0f s", settled.size(),
                             runner.plan().trials.size(), secondsSince(start));
            } else if (std::holds_alternative<sweep::SweepDone>(e)) {
                done = true;
            }
        }
    }
    runner.wait();
    f.wallSec = secondsSince(start);
    std::fprintf(stderr, "\n");
    const auto& out = runner.outcome();
    if (out.status != "finished") return ws::Error{"the sweep " + out.status + ": " + out.detail};
    f.trials = out.trials.size();
    std::map<std::string, int> byStatus;
    for (const auto& t : out.trials) ++byStatus[sweep::trialStatusName(t.status)];
    for (const auto& [status, n] : byStatus)
        f.summary += fmt::format("{}{} {}", f.summary.empty() ? "" : ", ", n, status);
    f.final = out.transfer;
    return f;
}

}  // namespace

int main(int argc, char** argv) {
    ws::bench::printMachine();
    Options o;
    for (int i = 1; i < argc; ++i) {
        auto next = [&] { return i + 1 < argc ? std::atoi(argv[++i]) : 0; };
        if (!std::strcmp(argv[i], "--steps"))
            o.steps = next();
        else if (!std::strcmp(argv[i], "--parallel"))
            o.parallel = next();
        else if (!std::strcmp(argv[i], "--full"))
            o.full = true;
        else {
            std::printf("usage: wafer_sweep_bench [--steps N (50)] [--parallel P (2)] [--full]\n");
            return std::strcmp(argv[i], "--help") ? 2 : 0;
        }
    }
    const fs::path dir =
        fs::temp_directory_path() / fmt::format("wafer-sweep-bench-{}", ::getpid());
    fs::create_directories(dir);
    auto cleanUp = [&] {
        std::error_code ec;
        fs::remove_all(dir, ec);
    };
    auto shared = runProxy(o, o.parallel, dir);
    auto reference = shared.ok() ? runProxy(o, 1, dir) : shared;
    if (!shared.ok() || !reference.ok()) {
        std::fprintf(stderr, "error: %s\n",
                     (!shared.ok() ? shared : reference).error().message.c_str());
        cleanUp();
        return 1;
    }
    // The full preset's size, from its own plan.
    auto loaded = sweep::loadSweepFile(kPreset, {});
    auto plan =
        loaded.ok() ? sweep::planSweep(*loaded) : ws::Result<sweep::SweepPlan>(loaded.error());
    if (!plan.ok()) {
        std::fprintf(stderr, "error: %s\n", plan.error().message.c_str());
        cleanUp();
        return 1;
    }
    const size_t fullTrials = plan->trials.size();
    const int fullSteps = int(plan->trials.front().config.config.runconfig.maxSteps);
    const double trialsPerWidth = double(fullTrials) / double(shared->secByWidth.size());

    std::printf("μTransfer preset proxy: sp, 1 seed, lr 2^-7, %d steps per trial\n", o.steps);
    std::printf("%-28s %6s %10s\n", "run", "trials", "wall s");
    std::printf("%-28s %6zu %10.1f\n", fmt::format("{} trials at a time", o.parallel).c_str(),
                shared->trials, shared->wallSec);
    std::printf("%-28s %6zu %10.1f\n", "reference: one at a time", reference->trials,
                reference->wallSec);
    std::printf("seconds per trial by width (shared cores | all cores):\n");
    double sumShared = 0;
    for (const auto& [width, sec] : shared->secByWidth) {
        std::printf("  width %4.0f: %8.2f | %8.2f\n", width, sec, reference->secByWidth[width]);
        sumShared += sec;
    }
    const double projected =
        trialsPerWidth * sumShared / double(o.parallel) * double(fullSteps) / double(o.steps);
    std::printf("projected full preset (%zu trials of %d steps, %d at a time): %.0f s (%.1f min)\n",
                fullTrials, fullSteps, o.parallel, projected, projected / 60);
    if (!o.full) {
        cleanUp();
        return 0;
    }

    auto full = runFullPreset(o, dir);
    cleanUp();
    if (!full.ok()) {
        std::fprintf(stderr, "error: %s\n", full.error().message.c_str());
        return 1;
    }
    std::printf("\nfull preset %s: %zu trials (%s)\n", kPreset.filename().c_str(), full->trials,
                full->summary.c_str());
    std::printf(
        "  wall time %.0f s (%.1f min)   projected %.0f s   target 600 s   ratio to "
        "projection %.2f\n",
        full->wallSec, full->wallSec / 60, projected, full->wallSec / projected);
    if (full->firstPassSec >= 0) {
        std::printf("  first seed's pass complete after %.0f s (%.1f min), showing:\n",
                    full->firstPassSec, full->firstPassSec / 60);
        printTransfer(full->firstPass, "    ");
    }
    std::printf("  all seeds:\n");
    printTransfer(full->final, "    ");
    return 0;
}
