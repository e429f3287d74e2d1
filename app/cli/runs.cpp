// SPDX-License-Identifier: GPL-3.0-or-later
// `wafer runs list|show ID|delete ID|control ID ACTION`: the run store from the command line,
// and the run control requests (engine/session/run_control.h) that pause, continue, checkpoint or
// stop a run another process trains.
#include <fmt/format.h>

#include <filesystem>

#include <cmath>
#include <iostream>

#include "app/cli/commands.h"
#include "app/cli/output.h"
#include "engine/core/paths.h"
#include "engine/core/units.h"
#include "engine/session/folder_lock.h"
#include "engine/session/run_control.h"
#include "engine/store/placement_records.h"
#include "engine/store/run_store.h"
#include "engine/store/store_recovery.h"

namespace ws::cli {
namespace {

std::filesystem::path storePath(const CommonOptions& common) {
    return common.dbPath.empty() ? userDataDir() / "runs.sqlite"
                                 : std::filesystem::path(common.dbPath);
}

Result<std::unique_ptr<store::RunStore>> openStore(const CommonOptions& common) {
    return store::RunStore::open(storePath(common));
}

// Listing and showing also work on a store this user may not write (read-only, said once).
Result<std::unique_ptr<store::RunStore>> openStoreToRead(const CommonOptions& common) {
    const auto path = storePath(common);
    auto store = store::RunStore::openForReading(path);
    if (std::string why = store::notWritableAdvice(path); store.ok() && !why.empty())
        std::cerr << fmt::format("note: {}; it is read without a change\n",
                                 why.substr(0, why.find(": the store must be writable")));
    return store;
}

nlohmann::json runJson(const store::RunInfo& r) {
    nlohmann::json j = {{"id", r.id},
                        {"name", r.name},
                        {"status", session::shownRunStatus(r.status, r.modelDir)},
                        {"created", r.created},
                        {"kind", r.kind},
                        {"model_dir", r.modelDir},
                        {"config_hash", r.configHash}};
    j["parent_run"] = r.parentRun ? nlohmann::json(*r.parentRun) : nlohmann::json(nullptr);
    if (!r.summaryJson.empty()) {
        j["summary"] = nlohmann::json::parse(r.summaryJson, nullptr, false);
    }
    return j;
}

std::string summaryField(const store::RunInfo& r, const char* key) {
    if (r.summaryJson.empty()) return "-";
    const auto s = nlohmann::json::parse(r.summaryJson, nullptr, false);
    if (!s.is_object() || !s.contains(key) || !s[key].is_number()) return "-";
    return fmt::format("{:.4g}", s[key].get<double>());
}

// Steps, loss and eval loss as `runs list` shows them: the summary's, written when a run ends;
// for a run without one (paused, interrupted, killed, still running) the last recorded step
// and its loss, and the last eval loss.
struct ListedFigures {
    std::string steps = "-", loss = "-", eval = "-";
};

ListedFigures listedFigures(const store::RunStore& store, const store::RunInfo& r) {
    ListedFigures f{summaryField(r, "steps"), summaryField(r, "final_loss"),
                    summaryField(r, "final_eval_loss")};
    if (f.steps != "-") return f;
    if (auto loss = store.lastPoint(r.id, "loss"); loss.ok() && loss->has_value()) {
        f.steps = fmt::format("{}", (*loss)->step);
        f.loss = fmt::format("{:.4g}", (*loss)->value);
    }
    if (auto eval = store.lastPoint(r.id, "eval_loss");
        f.eval == "-" && eval.ok() && eval->has_value())
        f.eval = fmt::format("{:.4g}", (*eval)->value);
    return f;
}

int listRuns(const CommonOptions& common) {
    auto store = openStoreToRead(common);
    if (!store.ok()) return fail(store.error().message);
    auto runs = (*store)->listRuns();
    if (!runs.ok()) return fail(runs.error().message);
    if (common.json) {
        for (const auto& r : *runs) {
            nlohmann::json j = runJson(r);
            if (r.summaryJson.empty() || summaryField(r, "steps") == "-") {
                // No summary yet: the last recorded step and loss.
                if (auto loss = (*store)->lastPoint(r.id, "loss"); loss.ok() && loss->has_value())
                    j["last_recorded"] = {{"step", (*loss)->step},
                                          {"loss", number((*loss)->value)}};
            }
            std::cout << j.dump() << "\n";
        }
        return 0;
    }
    if (runs->empty()) {
        std::cout << "no runs yet: train one with `wafer train presets/gpt-nano.yaml`\n";
        return 0;
    }
    std::cout << fmt::format("{:>5}  {:<30}  {:<11}  {:<20}  {:>6}  {:>9}  {:>9}\n", "id", "name",
                             "status", "created", "steps", "loss", "eval");
    for (const auto& r : *runs) {
        const ListedFigures f = listedFigures(**store, r);
        std::cout << fmt::format("{:>5}  {:<30.30}  {:<11}  {:<20.20}  {:>6}  {:>9}  {:>9}\n", r.id,
                                 r.name, session::shownRunStatus(r.status, r.modelDir), r.created,
                                 f.steps, f.loss, f.eval);
    }
    return 0;
}

int showRun(const CommonOptions& common, int64_t id) {
    auto store = openStoreToRead(common);
    if (!store.ok()) return fail(store.error().message);
    auto run = (*store)->getRun(id);
    if (!run.ok()) return fail(run.error().message);
    auto last = (*store)->lastMetrics(id);
    if (!last.ok()) return fail(last.error().message);
    auto checkpoints = (*store)->checkpoints(id);
    if (!checkpoints.ok()) return fail(checkpoints.error().message);
    auto placement = store::placement(**store, id);
    if (!placement.ok()) return fail(placement.error().message);
    auto shards = store::memoryxShards(**store, id);
    if (!shards.ok()) return fail(shards.error().message);
    // One entry per checkpoint folder (the store has a row per file), oldest first.
    std::vector<std::pair<int64_t, std::string>> folders;
    for (const auto& c : *checkpoints) {
        const std::string folder = std::filesystem::path(c.path).parent_path().string();
        if (folders.empty() || folders.back().second != folder)
            folders.emplace_back(c.step, folder);
    }
    if (common.json) {
        nlohmann::json j = runJson(*run);
        j["config_yaml"] = run->configYaml;
        nlohmann::json list = nlohmann::json::array();
        for (const auto& [step, folder] : folders)
            list.push_back({{"step", step}, {"path", folder}});
        j["checkpoints"] = list;
        nlohmann::json metrics = nlohmann::json::object();
        for (const auto& [key, value] : *last) metrics[key] = number(value);
        j["final_metrics"] = metrics;
        if (!placement->empty()) {
            nlohmann::json ranks = nlohmann::json::array();
            for (const auto& r : *placement) {
                ranks.push_back({{"rank", r.rank},
                                 {"host", r.host},
                                 {"first_system", r.firstSystem},
                                 {"systems", r.systems}});
            }
            j["placement"] = ranks;
        }
        if (!shards->empty()) {
            nlohmann::json shardList = nlohmann::json::array();
            for (const auto& s : *shards)
                shardList.push_back({{"rank", s.rank}, {"layers", s.layers}, {"bytes", s.bytes}});
            j["memoryx_shards"] = shardList;
        }
        std::cout << j.dump() << "\n";
        return 0;
    }
    std::cout << fmt::format("run {}: {}\nstatus   {}\ncreated  {}\nkind     {}\nfolder   {}\n",
                             run->id, run->name,
                             session::shownRunStatus(run->status, run->modelDir), run->created,
                             run->kind, run->modelDir);
    if (run->parentRun) std::cout << fmt::format("parent   run {}\n", *run->parentRun);
    if (!placement->empty()) {
        std::cout << fmt::format(
            "placement ({} processes, {}):\n", placement->size(),
            shards->empty()
                ? std::string("MemoryX and SwarmX on rank 0")
                : fmt::format("MemoryX in {} shards, SwarmX on rank 0", shards->size()));
        for (const auto& r : *placement) {
            std::cout << fmt::format("  rank {:<3} on {:<20} {}\n", r.rank, r.host,
                                     r.systems == 1 ? fmt::format("system {}", r.firstSystem)
                                                    : fmt::format("systems {}-{}", r.firstSystem,
                                                                  r.firstSystem + r.systems - 1));
        }
        for (const auto& s : *shards) {
            std::cout << fmt::format("  MemoryX shard on rank {}: {} ({})\n", s.rank, s.layers,
                                     formatBytes(double(s.bytes)));
        }
    }
    std::cout << "final metrics:\n";
    for (const auto& [key, value] : *last)
        std::cout << fmt::format("  {:<14} {:.6g}\n", key, value);
    if (!folders.empty()) {
        // A job across processes resumes with any number of processes, one included.
        std::cout << (placement->empty()
                          ? fmt::format("checkpoints (wafer train --resume {} takes the newest):\n",
                                        id)
                          : fmt::format("checkpoints (mpirun -np {} wafer train --resume {} takes "
                                        "the newest; any -np, or none, continues exactly):\n",
                                        placement->size(), id));
        for (const auto& [step, folder] : folders) {
            std::cout << fmt::format("  step {:<8} {}\n", step, folder);
        }
    }
    std::cout << "config:\n" << run->configYaml;
    return 0;
}

int deleteRun(const CommonOptions& common, int64_t id) {
    auto store = openStore(common);
    if (!store.ok()) return fail(store.error().message);
    auto run = (*store)->getRun(id);
    if (!run.ok()) return fail(run.error().message);
    if (Status s = (*store)->deleteRun(id); !s.ok()) return fail(s.error().message);
    if (common.json) {
        std::cout << nlohmann::json{{"event", "deleted"}, {"id", id}}.dump() << "\n";
    } else {
        std::cout << fmt::format("deleted run {} ({}) from the run store", id, run->name);
        if (!run->modelDir.empty()) std::cout << "; its files stay in " << run->modelDir;
        std::cout << "\n";
    }
    return 0;
}

// Asks a run that another process trains to pause, continue, step a layer, checkpoint or stop.
// The answer shows in the store (`wafer runs show`: status paused, a checkpoint, stopped).
int controlRun(const CommonOptions& common, int64_t id, const std::string& action) {
    const auto command = session::parseControlCommand(action);
    if (!command) {
        return fail(
            fmt::format("unknown action '{}': use pause, continue, step-layer, checkpoint "
                        "or stop",
                        action));
    }
    auto store = openStore(common);
    if (!store.ok()) return fail(store.error().message);
    auto run = (*store)->getRun(id);
    if (!run.ok()) return fail(run.error().message);
    auto sent = session::sendRunControl(run->modelDir, id, *command);
    if (!sent.ok()) return fail(sent.error().message);
    if (common.json) {
        std::cout << nlohmann::json{{"event", "control"},
                                    {"id", id},
                                    {"action", action},
                                    {"sequence", sent->sequence}}
                         .dump()
                  << "\n";
    } else {
        std::cout << fmt::format(
            "asked run {} to {} (request {}); its process acts on it within a second, between "
            "layers; `wafer runs show {}` shows the result\n",
            id, action, sent->sequence, id);
    }
    return 0;
}

}  // namespace

void addRunsCommand(CLI::App& app, CommonOptions& common, int& exitCode) {
    CLI::App* runs = app.add_subcommand(
        "runs", "List, show and delete recorded runs; control a run another process trains");
    runs->require_subcommand(1);
    runs->add_option("--db", common.dbPath, "Run store (SQLite file)");
    runs->add_flag("--json", common.json, "One JSON object per line");
    auto id = std::make_shared<int64_t>(0);

    CLI::App* list = runs->add_subcommand("list", "Every run, newest first");
    list->callback([&common, &exitCode] { exitCode = listRuns(common); });

    CLI::App* show = runs->add_subcommand("show", "A run's config and final metrics");
    show->add_option("id", *id, "Run id (see `wafer runs list`)")->required();
    show->callback([id, &common, &exitCode] { exitCode = showRun(common, *id); });

    CLI::App* del = runs->add_subcommand("delete", "Remove a run and its metrics from the store");
    del->add_option("id", *id, "Run id")->required();
    del->callback([id, &common, &exitCode] { exitCode = deleteRun(common, *id); });
    auto action = std::make_shared<std::string>();
    CLI::App* control = runs->add_subcommand(
        "control",
        "Pause, continue, step a layer, checkpoint or stop a run another process trains");
    control->add_option("id", *id, "Run id")->required();
    control->add_option("action", *action, "pause | continue | step-layer | checkpoint | stop")
        ->required();
    control->callback(
        [id, action, &common, &exitCode] { exitCode = controlRun(common, *id, *action); });
    for (CLI::App* sub : {list, show, del, control}) {
        sub->add_option("--db", common.dbPath, "Run store (SQLite file)");
        sub->add_flag("--json", common.json, "One JSON object per line");
    }
}

}  // namespace ws::cli
