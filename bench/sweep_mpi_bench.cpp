// SPDX-License-Identifier: GPL-3.0-or-later
// wafer_sweep_mpi_bench: the μTransfer sweep (presets/mup-sweep.yaml) across processes beside the
// same sweep in threads, on this machine. Runs the real `wafer sweep` twice, back to back in one
// session: the reference, 1 process x 2 threads (sweep.parallel_trials 2, one compute thread per
// trial), and `mpirun -np 2` x 1 thread (each rank runs one trial at a time with one thread).
// Prints both wall times (the sweep's own elapsed_s and the command's, which includes mpirun's
// start), the trials each ran, and whether every trial's final loss is the same bit for bit.
// Default: the preset with one seed (--set sweep.seeds=1: 64 trials); --full runs all 192.
// Usage: wafer_sweep_mpi_bench [--full] [--repeats R] [--set key=value ...]
#include <fmt/format.h>
#include <stdio.h>
#include <stdlib.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "bench_machine.h"

namespace {

struct Sweep {
    double sweepSec = 0.0;                 // the sweep's elapsed_s (rank 0's runner)
    double commandSec = 0.0;               // the whole command, mpirun's start and end included
    std::map<int, std::string> finalLoss;  // by trial, as printed (shortest exact form)
    std::string status;
    bool ok = false;
};

Sweep runSweep(const std::string& command) {
    Sweep sweep;
    const auto start = std::chrono::steady_clock::now();
    FILE* pipe = popen((command + " 2>/dev/null").c_str(), "r");
    if (!pipe) return sweep;
    char line[65536];
    while (fgets(line, sizeof line, pipe)) {
        auto j = nlohmann::json::parse(line, nullptr, false);
        if (j.is_discarded() || !j.is_object()) continue;
        if (j.value("event", "") == "trial")
            sweep.finalLoss[j["trial"].get<int>()] = j["final_loss"].dump();
        if (j.value("event", "") == "summary") {
            sweep.sweepSec = j.value("elapsed_s", 0.0);
            sweep.status = j.value("status", "");
        }
    }
    sweep.ok = pclose(pipe) == 0 && sweep.status == "finished";
    sweep.commandSec =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return sweep;
}

}  // namespace

int main(int argc, char** argv) {
    bool full = false;
    int repeats = 1;
    std::string sets;
    for (int i = 1; i < argc; ++i) {
        if (!std::strcmp(argv[i], "--full")) full = true;
        if (!std::strcmp(argv[i], "--repeats") && i + 1 < argc) repeats = std::atoi(argv[++i]);
        if (!std::strcmp(argv[i], "--set") && i + 1 < argc)
            sets += fmt::format(" --set '{}'", argv[++i]);
    }
    ws::bench::printMachine();
    setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 1);
    setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 1);
    char dirTemplate[] = "/tmp/wafer-sweep-mpi-bench-XXXXXX";
    const std::filesystem::path dir = mkdtemp(dirTemplate);
    const std::string preset = std::string(WAFER_SOURCE_DIR) + "/presets/mup-sweep.yaml";
    const std::string common =
        fmt::format("sweep {} --json --yes --set runconfig.num_threads=1{}{}", preset,
                    full ? "" : " --set sweep.seeds=1", sets);
    std::printf("μTransfer sweep %s: `wafer %s`\n",
                full ? "(the whole preset)" : "(the preset with one seed)", common.c_str());
    std::printf("%-34s %10s %10s %7s\n", "", "sweep s", "command s", "trials");
    std::vector<double> threads, processes;
    bool same = true;
    for (int r = 0; r < repeats; ++r) {
        const Sweep one =
            runSweep(fmt::format("{} {} --db {}/one{}.sqlite --set "
                                 "sweep.parallel_trials=2",
                                 WAFER_CLI, common, dir.string(), r));
        const Sweep two =
            runSweep(fmt::format("{} --oversubscribe -np 2 {} {} --db {}/two{}.sqlite",
                                 WAFER_MPIEXEC, WAFER_CLI, common, dir.string(), r));
        if (!one.ok || !two.ok) {
            std::printf("a sweep failed (1 process: %s, 2 processes: %s); kept in %s\n",
                        one.ok ? "ok" : "failed", two.ok ? "ok" : "failed", dir.c_str());
            return 1;
        }
        std::printf("%-34s %10.1f %10.1f %7zu\n", "1 process x 2 threads (reference)", one.sweepSec,
                    one.commandSec, one.finalLoss.size());
        std::printf("%-34s %10.1f %10.1f %7zu\n", "mpirun -np 2 x 1 thread", two.sweepSec,
                    two.commandSec, two.finalLoss.size());
        threads.push_back(one.sweepSec);
        processes.push_back(two.sweepSec);
        same = same && one.finalLoss == two.finalLoss;
    }
    double a = 0, b = 0;
    for (size_t i = 0; i < threads.size(); ++i) a += threads[i], b += processes[i];
    std::printf("2 processes take %.2fx the wall time of 2 threads (sweep time, mean of %d)\n",
                b / a, repeats);
    std::printf("every trial's final loss the same in both: %s\n", same ? "yes" : "NO");
    std::filesystem::remove_all(dir);
    return same ? 0 : 1;
}
