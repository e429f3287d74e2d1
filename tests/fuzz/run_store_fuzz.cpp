// SPDX-License-Identifier: GPL-3.0-or-later
// libFuzzer target for the run store opened on a damaged file (engine/store): the input is
// written as runs.sqlite in a scratch folder and opened as `wafer` and the studio open it; what
// opens is listed (runs, metrics, checkpoints, events, sweep trials, placement) and written to (a
// run created, metrics logged, its status set), as a training run would. A damaged file that is
// refused is checked (checkStore) and recovered (recoverStore), as `wafer store recover` does.
// Every step must give a result or a clean Error, never crash, hang or hit undefined behaviour
// (ASan + UBSan).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "engine/store/placement_records.h"
#include "engine/store/run_store.h"
#include "engine/store/store_recovery.h"
#include "engine/store/sweep_records.h"
#include "fuzz_support.h"

namespace {

const ws::fuzz::ScratchDir& scratch() {
    static const ws::fuzz::ScratchDir dir("store");
    return dir;
}

void readEverything(const ws::store::RunStore& store) {
    auto runs = store.listRuns();
    if (!runs.ok()) return;
    int listed = 0;
    for (const auto& run : *runs) {
        if (++listed > 16) break;
        (void)store.getRun(run.id);
        if (auto last = store.lastMetrics(run.id); last.ok()) {
            for (const auto& [key, value] : *last) (void)store.metrics(run.id, key);
        }
        (void)store.checkpoints(run.id);
        (void)store.events(run.id);
        (void)ws::store::memoryxShards(store, run.id);
        (void)ws::store::placement(store, run.id);
        if (run.kind == "sweep") (void)ws::store::sweepTrials(store, run.id);
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    scratch().clear();
    const auto db = scratch().path() / "runs.sqlite";
    if (!ws::fuzz::writeFile(db, ws::fuzz::asText(data, size))) std::abort();
    std::string refusal;
    {
        auto store = ws::store::RunStore::open(db);
        if (store.ok()) {
            ws::fuzz::note("opened");
            readEverything(**store);
            ws::store::NewRun fresh;
            fresh.name = "fuzz";
            fresh.configYaml = "model: {}\n";
            if (auto run = (*store)->createRun(fresh); run.ok()) {
                (*store)->logMetric(*run, 1, "loss", 2.5, 0.1);
                (*store)->logEvent(*run, "info", "fuzz");
                (void)(*store)->setStatus(*run, "finished");
            }
            (*store)->flush();
            (void)(*store)->asyncWriteStatus();
            readEverything(**store);
            return 0;
        }
        refusal = store.error().message;
    }
    ws::fuzz::note("refused: " + refusal);
    const auto health = ws::store::checkStore(db);
    if (health.state != ws::store::StoreHealth::State::Damaged) return 0;
    (void)ws::store::damagedStoreAdvice(db, health);
    auto recovered = ws::store::recoverStore(db, ws::store::RecoveryMethod::Salvage);
    if (!recovered.ok()) return 0;
    auto reopened = ws::store::RunStore::open(db);
    // A store from a newer Wafer Studio stays one after salvage (and this build refuses it).
    if (!reopened.ok() && reopened.error().message.find("newer version") == std::string::npos) {
        std::fprintf(stderr, "run_store_fuzz: the recovered store does not open: %s\n",
                     reopened.error().message.c_str());
        std::abort();
    }
    if (reopened.ok()) readEverything(**reopened);
    return 0;
}
