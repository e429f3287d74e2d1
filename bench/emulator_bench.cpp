// SPDX-License-Identifier: GPL-3.0-or-later
// wafer_emulator_bench: what the wafer emulator costs a training run. Trains the gpt-nano
// preset on the teaching wafer through the whole Session (data, streamed executor, events
// drained on another thread as the studio does) with wafer.emulate on and off, interleaved
// round by round so machine noise hits both alike, and prints tokens/s of each and their ratio
// (target: on >= 95% of off). With the emulator on, every step also publishes its emulated view
// and every span gets its emulated time. Not run by CTest.
//   wafer_emulator_bench [STEPS=60] [ROUNDS=3]
#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <thread>
#include <vector>

#include "bench_machine.h"
#include "engine/config/config_yaml.h"
#include "engine/session/session.h"

namespace {
using namespace ws;

struct Measured {
    double tokensPerSec = 0;
    size_t events = 0;
    size_t timedSpans = 0;
};

Result<Measured> trainOnce(bool emulate, int steps) {
    auto cfg = config::loadConfigFile(
        WAFER_PRESETS_DIR "/gpt-nano.yaml",
        {"wafer.spec=teaching-16x16", fmt::format("wafer.emulate={}", emulate),
         fmt::format("runconfig.max_steps={}", steps), "runconfig.eval_frequency=0",
         "runconfig.eval_steps=0"});
    if (!cfg.ok()) return cfg.error();
    session::SessionOptions options;
    options.recordInStore = false;
    auto session = session::Session::create(std::move(cfg).value(), options);
    if (!session.ok()) return session.error();
    Measured m;
    std::atomic<bool> done{false};
    std::thread drainer([&] {  // the studio's side: drain whole batches, look at every event
        std::vector<session::Event> batch;
        while (!done) {
            batch.clear();
            (*session)->events().waitAndDrain(batch, std::chrono::milliseconds(33));
            m.events += batch.size();
            for (const auto& e : batch)
                if (const auto* s = std::get_if<streaming::Span>(&e))
                    m.timedSpans += s->emuStart >= 0;
        }
    });
    (*session)->run();
    done = true;
    drainer.join();
    const auto& summary = (*session)->summary();
    if (summary.state != session::RunState::Finished) return Error{"run ended: " + summary.detail};
    m.tokensPerSec = summary.tokensPerSec;
    return m;
}

}  // namespace

int main(int argc, char** argv) {
    ws::bench::printMachine();
    const int steps = argc > 1 ? std::atoi(argv[1]) : 60;
    const int rounds = argc > 2 ? std::atoi(argv[2]) : 3;
    std::vector<double> on, off;
    Measured last;
    for (int r = 0; r < rounds; ++r) {
        for (bool emulate : {r % 2 == 0, r % 2 != 0}) {  // alternate which goes first
            auto m = trainOnce(emulate, steps);
            if (!m.ok()) {
                std::fprintf(stderr, "%s\n", m.error().message.c_str());
                return 1;
            }
            (emulate ? on : off).push_back(m->tokensPerSec);
            if (emulate) last = *m;
            fmt::print("round {} emulator {:3}: {:8.0f} tokens/s\n", r + 1, emulate ? "on" : "off",
                       m->tokensPerSec);
        }
    }
    auto median = [](std::vector<double> v) {
        std::sort(v.begin(), v.end());
        return v[v.size() / 2];
    };
    fmt::print("\ngpt-nano on teaching-16x16, {} steps x {} rounds (medians)\n", steps, rounds);
    fmt::print("  emulator off (reference) {:8.0f} tokens/s\n", median(off));
    fmt::print("  emulator on              {:8.0f} tokens/s  = {:.1f}% of off (target >= 95%)\n",
               median(on), 100.0 * median(on) / median(off));
    fmt::print("  last run with it on: {} events, {} spans with emulated time\n", last.events,
               last.timedSpans);
    return 0;
}
