// wafer_sweep_bench: what the μTransfer preset (presets/mup-sweep.yaml) costs here. Runs one
// trial per width (sp, one learning rate, one seed, --steps steps) twice in the same run: with
// the preset's parallel_trials (the cores shared out, one thread each on 2 cores) and, as the
// reference, one trial at a time with every core. Prints wall time and trial count of both, the
// seconds per trial per width, and the full preset's projected wall time (192 trials of 250
// steps, or --trials-per-width x the widths). Not run by CTest; see --help.
#include <fmt/format.h>

#include <unistd.h>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <string>

#include "engine/sweep/runner.h"
#include "engine/sweep/space.h"

namespace {

namespace fs = std::filesystem;
namespace sweep = ws::sweep;

struct Options {
    int steps = 50;
    int parallel = 2;
    int trialsPerWidth = 48;  // 8 learning rates x 2 parametrizations x 3 seeds
    int fullSteps = 250;
};

struct Measured {
    double wallSec = 0;
    size_t trials = 0;
    std::map<double, double> secByWidth;
};

ws::Result<Measured> runOnce(const Options& o, int parallel, const fs::path& dir) {
    const fs::path preset = fs::path(WAFER_PRESETS_DIR) / "mup-sweep.yaml";
    auto loaded = sweep::loadSweepFile(
        preset,
        {"sweep.parametrization=[sp]", "sweep.seeds=1", fmt::format("sweep.max_steps={}", o.steps),
         fmt::format("sweep.parallel_trials={}", parallel),
         "sweep.parameters={model.hidden_size: {values: [32, 64, 128, 256], with: "
         "{model.num_heads: [2, 4, 8, 16], model.filter_size: [128, 256, 512, 1024]}}, "
         "optimizer.learning_rate: [0.0078125]}"});
    if (!loaded.ok()) return loaded.error();
    auto plan = sweep::planSweep(*loaded);
    if (!plan.ok()) return plan.error();
    sweep::RunnerOptions options;
    options.dbPath = dir / fmt::format("runs-{}.sqlite", parallel);
    options.cacheDir = dir / "cache";
    auto runner = sweep::SweepRunner::create(std::move(plan).value(), options);
    if (!runner.ok()) return runner.error();
    const auto start = std::chrono::steady_clock::now();
    (*runner)->run();
    Measured m;
    m.wallSec = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const auto& out = (*runner)->outcome();
    if (out.status != "finished") return ws::Error{"the sweep " + out.status + ": " + out.detail};
    m.trials = out.trials.size();
    for (const auto& t : out.trials)
        m.secByWidth[std::stod(t.param("model.hidden_size"))] = t.elapsedSec;
    return m;
}

}  // namespace

int main(int argc, char** argv) {
    Options o;
    for (int i = 1; i < argc; ++i) {
        auto next = [&] { return i + 1 < argc ? std::atoi(argv[++i]) : 0; };
        if (!std::strcmp(argv[i], "--steps"))
            o.steps = next();
        else if (!std::strcmp(argv[i], "--parallel"))
            o.parallel = next();
        else if (!std::strcmp(argv[i], "--trials-per-width"))
            o.trialsPerWidth = next();
        else {
            std::printf(
                "usage: wafer_sweep_bench [--steps N (50)] [--parallel P (2)] "
                "[--trials-per-width K (48)]\n");
            return std::strcmp(argv[i], "--help") ? 2 : 0;
        }
    }
    const fs::path dir =
        fs::temp_directory_path() / fmt::format("wafer-sweep-bench-{}", ::getpid());
    fs::create_directories(dir);
    auto shared = runOnce(o, o.parallel, dir);
    auto reference = shared.ok() ? runOnce(o, 1, dir) : shared;
    std::error_code ec;
    fs::remove_all(dir, ec);
    if (!shared.ok() || !reference.ok()) {
        std::fprintf(stderr, "error: %s\n",
                     (!shared.ok() ? shared : reference).error().message.c_str());
        return 1;
    }
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
    const double projected = double(o.trialsPerWidth) * sumShared / double(o.parallel) *
                             double(o.fullSteps) / double(o.steps);
    std::printf("projected full preset (%d trials of %d steps, %d at a time): %.0f s (%.1f min)\n",
                o.trialsPerWidth * int(shared->secByWidth.size()), o.fullSteps, o.parallel,
                projected, projected / 60);
    return 0;
}
