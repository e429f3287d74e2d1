// SPDX-License-Identifier: GPL-3.0-or-later
// wafer_cluster_bench: training across processes beside training in threads, on this machine.
// Runs the real `wafer train` on presets/gpt-nano.yaml with runconfig.num_csx = 2: one process x 2
// threads (the reference), `mpirun -np 2` x 1 thread each, and one process x 1 thread (the same
// number of busy threads as the two processes), alternating, --repeats times;
// prints the tokens/s of each (log windows after the first), and per step the bytes that cross
// between the processes (each layer visit's weights broadcast to rank 1, rank 1's gradient
// slices sent to rank 0) beside the step time, with what those bytes would take on 10 and
// 100 Gbit/s links. Usage: wafer_cluster_bench [--steps N] [--repeats R] [--systems N]
// (N systems over 2 processes).
#include <fmt/format.h>
#include <stdio.h>
#include <stdlib.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <regex>
#include <string>
#include <vector>

#include "bench_machine.h"

namespace {

struct Run {
    double tokensPerSec = 0.0;  // mean of the log windows after the first
    double mibIn = 0.0;         // weights streamed to all systems over the run
    double mibOut = 0.0;        // gradients out of all systems over the run
    int64_t tokensPerStep = 0;
    bool ok = false;
};

Run runWafer(const std::string& command) {
    Run run;
    FILE* pipe = popen((command + " 2>/dev/null").c_str(), "r");
    if (!pipe) return run;
    std::vector<double> windows;
    char line[8192];
    const std::regex streaming(R"(([0-9.]+) MiB of \w+ weights streamed in, ([0-9.]+) MiB)");
    while (fgets(line, sizeof line, pipe)) {
        auto j = nlohmann::json::parse(line, nullptr, false);
        if (j.is_discarded() || !j.is_object()) continue;
        if (j.contains("step") && j.contains("tokens_per_s")) {
            windows.push_back(j["tokens_per_s"].get<double>());
            if (j.contains("tokens_seen") && j["step"].get<int64_t>() > 0)
                run.tokensPerStep = j["tokens_seen"].get<int64_t>() / j["step"].get<int64_t>();
        }
        if (j.value("event", "") == "log") {
            std::smatch m;
            const std::string message = j.value("message", "");
            if (std::regex_search(message, m, streaming)) {
                run.mibIn = std::stod(m[1]);
                run.mibOut = std::stod(m[2]);
            }
        }
        if (j.value("event", "") == "summary") run.ok = true;
    }
    run.ok = pclose(pipe) == 0 && run.ok && windows.size() > 1;
    double sum = 0.0;
    for (size_t i = 1; i < windows.size(); ++i) sum += windows[i];
    if (windows.size() > 1) run.tokensPerSec = sum / double(windows.size() - 1);
    return run;
}

}  // namespace

int main(int argc, char** argv) {
    int steps = 60, repeats = 3, systems = 2;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!std::strcmp(argv[i], "--steps")) steps = std::atoi(argv[i + 1]);
        if (!std::strcmp(argv[i], "--repeats")) repeats = std::atoi(argv[i + 1]);
        if (!std::strcmp(argv[i], "--systems")) systems = std::atoi(argv[i + 1]);
    }
    ws::bench::printMachine();
    setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 1);
    setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 1);
    char dirTemplate[] = "/tmp/wafer-cluster-bench-XXXXXX";
    const std::filesystem::path dir = mkdtemp(dirTemplate);
    const std::string common = fmt::format(
        "{} train {}/presets/gpt-nano.yaml --json --max-steps {} --set runconfig.num_csx={} "
        "--set runconfig.eval_frequency=0 --set runconfig.log_steps=10 --db {}/runs.sqlite",
        WAFER_CLI, WAFER_SOURCE_DIR, steps, systems, dir.string());
    fmt::print("gpt-nano, {} systems, {} steps per run, {} runs each, alternating\n", systems,
               steps, repeats);
    std::vector<Run> threads, processes, single;
    for (int r = 0; r < repeats; ++r) {
        threads.push_back(runWafer(common + " --threads 2"));
        processes.push_back(runWafer(
            fmt::format("{} --oversubscribe -np 2 {} --threads 1", WAFER_MPIEXEC, common)));
        single.push_back(runWafer(common + " --threads 1"));
        fmt::print(
            "  run {}: 1 process x 2 threads {:8.0f} tok/s | 2 processes x 1 thread "
            "{:8.0f} tok/s | 1 process x 1 thread {:8.0f} tok/s{}\n",
            r + 1, threads.back().tokensPerSec, processes.back().tokensPerSec,
            single.back().tokensPerSec,
            threads.back().ok && processes.back().ok && single.back().ok ? "" : "  (a run failed)");
    }
    auto mean = [](const std::vector<Run>& runs) {
        double sum = 0.0;
        for (const Run& run : runs) sum += run.tokensPerSec;
        return sum / double(runs.size());
    };
    const double reference = mean(threads), measured = mean(processes);
    fmt::print("reference: 1 process x 2 threads    {:8.0f} tok/s\n", reference);
    fmt::print("measured:  2 processes x 1 thread   {:8.0f} tok/s ({:.2f}x the reference)\n",
               measured, measured / reference);
    fmt::print("also:      1 process x 1 thread     {:8.0f} tok/s\n", mean(single));
    const Run& p = processes.back();
    if (p.ok && p.tokensPerStep > 0 && measured > 0) {
        // Rank 1 computes systems [N/2, N): it receives one copy of every visit's weights and
        // sends its systems' gradients.
        // With more than four systems, rank 1 sends each group of four it holds whole as one
        // summed slice (executor.h).
        int remote = 0;
        for (int s = systems / 2; s < systems;) {
            const int end = std::min(systems, (s / 4 + 1) * 4);
            const bool whole = systems > 4 && s % 4 == 0 && end - s > 1;
            ++remote;  // one slice: a system's, or a whole group's sum
            s = whole ? end : s + 1;
        }
        const double inPerStep = p.mibIn / systems / steps;             // one system's weights
        const double outPerStep = p.mibOut / systems / steps * remote;  // rank 1's slices
        const double stepMs = 1e3 * double(p.tokensPerStep) / measured;
        const double bits = (inPerStep + outPerStep) * 8.0 * 1024 * 1024;
        fmt::print(
            "per step between the processes: {:.2f} MiB of weights broadcast + {:.2f} MiB "
            "of gradients to rank 0, beside a step of {:.1f} ms; on a 10 Gbit/s link "
            "{:.1f} ms, on 100 Gbit/s {:.2f} ms\n",
            inPerStep, outPerStep, stepMs, bits / 10e9 * 1e3, bits / 100e9 * 1e3);
    }
    std::filesystem::remove_all(dir);
    return 0;
}
