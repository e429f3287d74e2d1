// SPDX-License-Identifier: GPL-3.0-or-later
// wafer_small_model_bench: where a small model's training step goes, on 1 thread and on 2. Small
// models are what sweeps and lessons train, so the fixed costs of a step (hand-offs between the
// engine's threads, spans and events, the run store, control polling, kernel calls) weigh there.
// It trains presets/gpt-nano.yaml through the whole Session as `wafer train` does (run store on,
// events drained and run control polled on another thread, like the CLI's loop), --threads 1 and 2
// alternating round by round so machine noise hits both alike, and prints per step, side by side:
//   - the step's wall time and tokens/s, and the process's CPU time per step;
//   - the phases, from the step's own spans: forward + backward compute, the optimizer update,
//     the rest of the executor's step (waiting for weights, the gradient reduce, the norm), and
//     the session around it (the batch, metrics, events, the store);
//   - the compute pool's regions per step, how many chunks the caller ran itself, and how long it
//     waited for the other thread (tensor::poolStats);
// then each fixed cost measured alone in the same run, times how often a step pays it: a span's
// and an event's trip through the event queue, a metric into the run store, a control poll, the
// same kernel calls on a 1-token batch (call and dispatch overhead), and a pool region's wake-up.
// Not run by CTest. Usage: wafer_small_model_bench [--steps N=60] [--rounds R=3] [--warmup W=5]
#include <fmt/format.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "bench_machine.h"
#include "engine/config/config_yaml.h"
#include "engine/model/gpt.h"
#include "engine/session/run_control.h"
#include "engine/session/session.h"
#include "engine/store/run_store.h"
#include "engine/tensor/simd.h"
#include "engine/tensor/threads.h"

namespace {
using namespace ws;
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

double now() {
    return std::chrono::duration<double>(Clock::now().time_since_epoch()).count();
}

double cpuSeconds() {
    rusage u{};
    getrusage(RUSAGE_SELF, &u);
    return double(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
           1e-6 * double(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
}

double median(std::vector<double> v) {
    if (v.empty()) return NAN;
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

// One run's figures per measured step (the steps after the warm-up).
struct Figures {
    double stepSec = 0, cpuSec = 0, tokensPerSec = 0;
    double computeSec = 0;   // Forward + Backward spans
    double updateSec = 0;    // Update spans (the optimizer in MemoryX)
    double executorSec = 0;  // the step's spans, first start to last end
    double betweenSec = 0;   // gaps between consecutive Forward/Backward spans (the next layer's
                             // weights arriving, MemoryX hand-offs)
    double spans = 0, events = 0, metrics = 0, polls = 0;
    double regions = 0, inlineRegions = 0, callerChunks = 0, workerChunks = 0, poolWaitSec = 0;
};

struct Run {
    Figures f;
    std::string error;
};

Run trainOnce(const fs::path& dir, int threads, int steps, int warmup, int index) {
    Run run;
    auto cfg = config::loadConfigFile(
        WAFER_PRESETS_DIR "/gpt-nano.yaml",
        {fmt::format("runconfig.max_steps={}", steps),
         fmt::format("runconfig.num_threads={}", threads), "runconfig.eval_frequency=0",
         "runconfig.eval_steps=0",
         fmt::format("runconfig.model_dir={}", (dir / fmt::format("run-{}", index)).string())});
    if (!cfg.ok()) return {{}, cfg.error().message};
    session::SessionOptions options;
    options.dbPath = dir / "runs.sqlite";
    options.cacheDir = dir / "cache";
    options.finalCheckpoint = false;
    auto created = session::Session::create(std::move(cfg).value(), options);
    if (!created.ok()) return {{}, created.error().message};
    session::Session& s = **created;

    struct StepMark {
        double wall = 0, cpu = 0;
        tensor::PoolStats pool;
    };
    std::map<int64_t, StepMark> marks;  // by step count, as the drainer saw StepMetrics
    std::map<int64_t, std::pair<double, double>> window;  // step -> first span start, last end
    std::map<int64_t, std::vector<std::pair<double, double>>> computeSpans;  // step -> spans
    double compute = 0, update = 0;
    int64_t spans = 0, events = 0, polls = 0, metrics = 0;
    std::atomic<bool> done{false};
    std::thread drainer([&] {  // the CLI's loop (app/cli/train.cpp): poll control, drain, print
        session::RunControlFollower control(s);
        std::vector<session::Event> batch;
        while (!done) {
            control.poll();
            ++polls;
            batch.clear();
            s.events().waitAndDrain(batch, std::chrono::milliseconds(100));
            for (const auto& e : batch) {
                if (const auto* m = std::get_if<session::StepMetrics>(&e)) {
                    marks[m->step] = {now(), cpuSeconds(), tensor::poolStats()};
                    metrics += 3 + (m->logStep ? 1 : 0);  // loss, lr, grad_norm (+ tokens/s)
                } else if (const auto* sp = std::get_if<streaming::Span>(&e)) {
                    if (sp->step < warmup) continue;  // 0-based: steps warmup+1 .. are measured
                    ++spans;
                    auto [it, fresh] = window.try_emplace(sp->step, sp->start, sp->end);
                    it->second.first = std::min(it->second.first, sp->start);
                    it->second.second = std::max(it->second.second, sp->end);
                    const double d = sp->end - sp->start;
                    if (sp->kind == streaming::SpanKind::Forward ||
                        sp->kind == streaming::SpanKind::Backward) {
                        compute += d;
                        computeSpans[sp->step].emplace_back(sp->start, sp->end);
                    }
                    if (sp->kind == streaming::SpanKind::Update) update += d;
                }
                ++events;
            }
        }
    });
    s.run();
    done = true;
    drainer.join();
    const auto& summary = s.summary();
    if (summary.state != session::RunState::Finished) return {{}, "run ended: " + summary.detail};
    if (!marks.count(warmup) || !marks.count(steps)) return {{}, "steps missing from the events"};
    const StepMark& a = marks[warmup];
    const StepMark& b = marks[steps];
    const double n = double(steps - warmup);
    Figures& f = run.f;
    f.stepSec = (b.wall - a.wall) / n;
    f.cpuSec = (b.cpu - a.cpu) / n;
    f.tokensPerSec = 16.0 * 128.0 / f.stepSec;  // gpt-nano: batch 16 x 128 tokens
    f.computeSec = compute / n;
    f.updateSec = update / n;
    for (const auto& [step, w] : window) f.executorSec += w.second - w.first;
    f.executorSec /= n;
    for (auto& [step, v] : computeSpans) {
        std::sort(v.begin(), v.end());
        for (size_t i = 1; i < v.size(); ++i)
            f.betweenSec += std::max(0.0, v[i].first - v[i - 1].second);
    }
    f.betweenSec /= n;
    f.spans = double(spans) / n;
    f.events = double(events) / double(steps);
    f.metrics = double(metrics) / double(steps);
    f.polls = double(polls) / double(steps);
    f.regions = double(b.pool.regions - a.pool.regions) / n;
    f.inlineRegions = double(b.pool.busyInlineRegions - a.pool.busyInlineRegions) / n;
    f.callerChunks = double(b.pool.callerChunks - a.pool.callerChunks) / n;
    f.workerChunks = double(b.pool.workerChunks - a.pool.workerChunks) / n;
    f.poolWaitSec = (b.pool.waitSec - a.pool.waitSec) / n;
    return run;
}

// Seconds per call of fn, over `reps` calls after one untimed call.
template <typename F>
double perCall(int reps, F&& fn) {
    fn();
    const double t0 = now();
    for (int i = 0; i < reps; ++i) fn();
    return (now() - t0) / reps;
}

struct FixedCosts {
    double spanPush = 0, metric = 0, poll = 0, tinyStep = 0, wakeSpinning = 0, wakeSleeping = 0;
};

FixedCosts measureFixedCosts(const fs::path& dir) {
    FixedCosts c;
    {  // a span through the session's event queue, drained on another thread
        session::EventQueue queue;
        std::atomic<bool> stop{false};
        std::thread consumer([&] {
            std::vector<session::Event> batch;
            while (!stop) {
                batch.clear();
                queue.waitAndDrain(batch, std::chrono::milliseconds(10));
            }
        });
        streaming::Span span{1, 0, 0, 3, streaming::SpanKind::Forward, 0, 0.1, 0.2};
        c.spanPush = perCall(200000, [&] { queue.push(span); });
        stop = true;
        consumer.join();
    }
    {  // a metric row into the run store (queued; the writer thread batches the transaction)
        auto store = store::RunStore::open(dir / "fixed-costs.sqlite");
        if (store.ok()) {
            store::NewRun r;
            r.name = "fixed costs";
            auto id = (*store)->createRun(r);
            int64_t step = 0;
            if (id.ok())
                c.metric =
                    perCall(100000, [&] { (*store)->logMetric(*id, ++step, "loss", 1.0, 0.0); });
            (*store)->flush();
        }
    }
    {  // the kernel calls of a gpt-nano step on a 1-token batch: their call and dispatch costs
        auto cfg = config::loadConfigFile(WAFER_PRESETS_DIR "/gpt-nano.yaml", {});
        if (cfg.ok()) {
            const model::GptShape shape = model::GptShape::fromConfig(cfg->config.model);
            model::Gpt<float> gpt(shape, 1, 1);
            std::vector<float> params(gpt.table().totalSize(), 0.01f), grads(params.size(), 0.0f);
            const int32_t token = 65, target = 66;
            c.tinyStep = perCall(2000, [&] {
                gpt.forward(params.data(), &token, &target, true, 0);
                gpt.backward(params.data(), grads.data());
            });
        }
    }
    {  // a pool region's round trip: the other thread still spinning, or asleep
        tensor::setComputeThreads(2);
        c.wakeSpinning = perCall(20000, [] { tensor::parallelRun(2, [](int, int) {}); });
        std::vector<double> alone;
        for (int i = 0; i < 200; ++i) {
            std::this_thread::sleep_for(std::chrono::milliseconds(2));
            const double t0 = now();
            tensor::parallelRun(2, [](int index, int) {
                if (index == 1) std::this_thread::yield();  // the sleeper's chunk, once it runs
            });
            alone.push_back(now() - t0);
        }
        c.wakeSleeping = median(alone);
    }
    return c;
}

std::string ms(double seconds) {
    return fmt::format("{:8.2f} ms", 1e3 * seconds);
}

std::string us(double seconds) {
    return fmt::format("{:8.1f} µs", 1e6 * seconds);
}

}  // namespace

int main(int argc, char** argv) {
    int steps = 60, rounds = 3, warmup = 5;
    for (int i = 1; i + 1 < argc; i += 2) {
        const std::string arg = argv[i];
        const int value = std::atoi(argv[i + 1]);
        if (arg == "--steps")
            steps = value;
        else if (arg == "--rounds")
            rounds = value;
        else if (arg == "--warmup")
            warmup = value;
        else {
            std::fprintf(stderr, "usage: %s [--steps N] [--rounds R] [--warmup W]\n", argv[0]);
            return 2;
        }
    }
    if (steps <= warmup || rounds < 1 || warmup < 1) {
        std::fprintf(stderr, "need --steps > --warmup >= 1 and --rounds >= 1\n");
        return 2;
    }
    ws::bench::printMachine();
    fmt::print("element kernels: {}\n", ws::tensor::simdTargetName());
    const fs::path dir = fs::temp_directory_path() / fmt::format("wafer-small-bench-{}", getpid());
    fs::create_directories(dir);

    // The token cache is built on the first run (untimed) and reused by the measured ones.
    if (Run r = trainOnce(dir, 1, warmup + 1, warmup, 0); !r.error.empty()) {
        std::fprintf(stderr, "%s\n", r.error.c_str());
        return 1;
    }
    std::map<int, std::vector<Figures>> byThreads;
    int index = 1;
    for (int r = 0; r < rounds; ++r) {
        for (int threads : {r % 2 == 0 ? 1 : 2, r % 2 == 0 ? 2 : 1}) {  // alternate the order
            Run run = trainOnce(dir, threads, steps, warmup, index++);
            if (!run.error.empty()) {
                std::fprintf(stderr, "%s\n", run.error.c_str());
                return 1;
            }
            byThreads[threads].push_back(run.f);
            fmt::print("round {} {} thread(s): {:8.0f} tokens/s, {} per step\n", r + 1, threads,
                       run.f.tokensPerSec, ms(run.f.stepSec));
        }
    }
    // Medians over the rounds, field by field.
    auto med = [&](int threads, double Figures::*field) {
        std::vector<double> v;
        for (const auto& f : byThreads[threads]) v.push_back(f.*field);
        return median(v);
    };
    const FixedCosts fixed = measureFixedCosts(dir);
    fs::remove_all(dir);

    fmt::print(
        "\ngpt-nano (4 x 128, batch 16 x 128 tokens), steps {}..{} of {}, medians of {} "
        "rounds\n",
        warmup + 1, steps, steps, rounds);
    fmt::print("{:58}{:>14}{:>14}\n", "per step", "1 thread", "2 threads");
    auto row = [&](const std::string& label, double Figures::*field, bool time = true) {
        const double a = med(1, field), b = med(2, field);
        if (time)
            fmt::print("{:58}{:>14}{:>14}\n", label, ms(a), ms(b));
        else
            fmt::print("{:58}{:14.1f}{:14.1f}\n", label, a, b);
    };
    row("wall time of a step", &Figures::stepSec);
    fmt::print("{:58}{:14.0f}{:14.0f}\n", "  tokens/s", med(1, &Figures::tokensPerSec),
               med(2, &Figures::tokensPerSec));
    row("  CPU time of the process", &Figures::cpuSec);
    row("  the executor's step (its spans, first to last)", &Figures::executorSec);
    row("    forward + backward compute (Forward/Backward spans)", &Figures::computeSec);
    row("    optimizer update in MemoryX (Update spans)", &Figures::updateSec);
    row("    between layers: next weights arriving, hand-offs", &Figures::betweenSec);
    fmt::print("{:58}{:>14}{:>14}\n", "    rest: the above, grads zeroed, reduce, norm, clip",
               ms(med(1, &Figures::executorSec) - med(1, &Figures::computeSec) -
                  med(1, &Figures::updateSec)),
               ms(med(2, &Figures::executorSec) - med(2, &Figures::computeSec) -
                  med(2, &Figures::updateSec)));
    fmt::print("{:58}{:>14}{:>14}\n", "  the session around it: batch, metrics, events, store",
               ms(med(1, &Figures::stepSec) - med(1, &Figures::executorSec)),
               ms(med(2, &Figures::stepSec) - med(2, &Figures::executorSec)));
    row("compute pool regions", &Figures::regions, false);
    row("  regions run on their caller alone (pool busy)", &Figures::inlineRegions, false);
    row("  chunks the calling thread ran", &Figures::callerChunks, false);
    row("  chunks the pool's other thread ran", &Figures::workerChunks, false);
    row("  time the caller waited for the other thread", &Figures::poolWaitSec);
    row("spans", &Figures::spans, false);
    row("events drained", &Figures::events, false);
    row("metric rows into the run store", &Figures::metrics, false);
    row("control polls (CLI loop; the file is read every 200 ms)", &Figures::polls, false);

    const double spans = med(2, &Figures::spans), metrics = med(2, &Figures::metrics);
    const double regions = med(2, &Figures::regions), step2 = med(2, &Figures::stepSec);
    fmt::print("\nfixed costs, each measured alone in this run, x what a 2-thread step pays\n");
    fmt::print("  span/event through the event queue  {} each x {:5.1f} = {}\n", us(fixed.spanPush),
               spans, ms(fixed.spanPush * spans));
    fmt::print("  metric row into the run store       {} each x {:5.1f} = {}\n", us(fixed.metric),
               metrics, ms(fixed.metric * metrics));
    fmt::print("  kernel calls and dispatch (the step's calls on a 1-token batch)  = {}\n",
               ms(fixed.tinyStep));
    fmt::print("  pool region, other thread spinning  {} each x {:5.1f} = {}\n",
               us(fixed.wakeSpinning), regions, ms(fixed.wakeSpinning * regions));
    fmt::print("  pool region after a 2 ms pause      {} each (the other thread asleep)\n",
               us(fixed.wakeSleeping));
    fmt::print("  control poll: on the CLI's thread, not the step's (at most 5 file reads/s)\n");
    const double t1 = med(1, &Figures::tokensPerSec), t2 = med(2, &Figures::tokensPerSec);
    fmt::print("\n2 threads / 1 thread: {:.2f}x tokens/s ({:.0f} vs {:.0f}); a step {} vs {}\n",
               t2 / t1, t2, t1, ms(step2), ms(med(1, &Figures::stepSec)));
    return 0;
}
