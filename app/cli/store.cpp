// SPDX-License-Identifier: GPL-3.0-or-later
// `wafer store check|backup|recover`: the run store file's health, its verified backup, and the
// ways back from a damaged store (salvage the readable rows, the last good backup, or a fresh
// store that keeps the damaged file).
#include <fmt/format.h>

#include <filesystem>
#include <iostream>

#include "app/cli/commands.h"
#include "app/cli/output.h"
#include "engine/store/run_store.h"
#include "engine/store/store_recovery.h"

namespace ws::cli {
namespace {

std::filesystem::path storePath(const CommonOptions& common) {
    return common.dbPath.empty() ? store::RunStore::defaultPath()
                                 : std::filesystem::path(common.dbPath);
}

nlohmann::json backupJson(const std::optional<store::BackupInfo>& backup) {
    if (!backup) return nullptr;
    return {{"path", backup->path.string()}, {"taken", backup->taken}, {"runs", backup->runs}};
}

int checkCommand(const CommonOptions& common) {
    const auto path = storePath(common);
    const store::StoreHealth health = store::checkStore(path);
    const char* state = health.state == store::StoreHealth::State::Missing   ? "missing"
                        : health.state == store::StoreHealth::State::Healthy ? "healthy"
                        : health.state == store::StoreHealth::State::Busy    ? "busy"
                                                                             : "damaged";
    if (common.json) {
        std::cout << nlohmann::json{{"event", "store_check"},
                                    {"path", path.string()},
                                    {"state", state},
                                    {"problem", health.problem},
                                    {"backup", backupJson(health.backup)}}
                         .dump()
                  << "\n";
    } else if (health.state == store::StoreHealth::State::Damaged) {
        std::cout << store::damagedStoreAdvice(path, health) << "\n";
    } else if (health.state == store::StoreHealth::State::Busy &&
               !store::notWritableAdvice(path).empty()) {
        std::cout << fmt::format("not checked: {}\n", health.problem);
    } else if (health.state == store::StoreHealth::State::Busy) {
        std::cout << fmt::format(
            "run store {}: busy, not checked: another program held it locked for {} s ({}); try "
            "again when its runs have started\n",
            path.string(), store::kBusyWait.count() / 1000, health.problem);
    } else {
        std::cout << fmt::format("run store {}: {}\n", path.string(), state);
        if (health.backup) {
            std::cout << fmt::format("backup {}: taken {}, {} runs\n", health.backup->path.string(),
                                     health.backup->taken, health.backup->runs);
        }
    }
    // Busy is not a verdict: the check did not run.
    return health.state == store::StoreHealth::State::Healthy ||
                   health.state == store::StoreHealth::State::Missing
               ? 0
               : 1;
}

int backupCommand(const CommonOptions& common) {
    const auto path = storePath(common);
    if (std::error_code ec; !std::filesystem::exists(path, ec)) {
        return fail(fmt::format("there is no run store at {} to back up", path.string()));
    }
    if (Status s = store::backupStore(path); !s) return fail(s.error().message);
    const auto backup = store::checkStore(path).backup;
    if (common.json) {
        std::cout
            << nlohmann::json{{"event", "store_backup"}, {"backup", backupJson(backup)}}.dump()
            << "\n";
    } else {
        const int64_t runs = backup ? backup->runs : 0;
        std::cout << fmt::format("backed up {} to {} ({} run{})\n", path.string(),
                                 store::backupPathFor(path).string(), runs, runs == 1 ? "" : "s");
    }
    return 0;
}

int recoverCommand(const CommonOptions& common, store::RecoveryMethod method) {
    const auto path = storePath(common);
    auto report = store::recoverStore(path, method);
    if (!report.ok()) return fail(report.error().message);
    const char* name = method == store::RecoveryMethod::Backup  ? "backup"
                       : method == store::RecoveryMethod::Fresh ? "fresh"
                                                                : "salvage";
    if (common.json) {
        std::cout << nlohmann::json{{"event", "store_recovered"},
                                    {"path", path.string()},
                                    {"method", name},
                                    {"damaged_kept_at", report->damagedKeptAt.string()},
                                    {"runs", report->runs},
                                    {"metrics", report->metrics}}
                         .dump()
                  << "\n";
    } else if (method == store::RecoveryMethod::Fresh) {
        std::cout << fmt::format(
            "moved the damaged store {} aside: it is kept at {}\nthe next run or command starts "
            "a fresh, empty store there\n",
            path.string(), report->damagedKeptAt.string());
    } else {
        std::cout << fmt::format(
            "recovered {} ({}): {} run{}, {} metric rows\nthe damaged file is kept at {}\n",
            path.string(),
            method == store::RecoveryMethod::Backup ? "from its backup" : "salvaged row by row",
            report->runs, report->runs == 1 ? "" : "s", report->metrics,
            report->damagedKeptAt.string());
    }
    return 0;
}

}  // namespace

void addStoreCommand(CLI::App& app, CommonOptions& common, int& exitCode) {
    CLI::App* storeCmd =
        app.add_subcommand("store", "Check, back up or recover the run store file");
    storeCmd->require_subcommand(1);
    auto fromBackup = std::make_shared<bool>(false);
    auto fresh = std::make_shared<bool>(false);

    CLI::App* check =
        storeCmd->add_subcommand("check", "Is the store readable? (exit 1 when damaged)");
    check->callback([&common, &exitCode] { exitCode = checkCommand(common); });
    CLI::App* backup = storeCmd->add_subcommand(
        "backup", "Write a verified copy to <store>.backup now (also done on open, every 6 h)");
    backup->callback([&common, &exitCode] { exitCode = backupCommand(common); });
    CLI::App* recover = storeCmd->add_subcommand(
        "recover", "Replace a damaged store by every row SQLite can still read (or its backup)");
    CLI::Option* backupFlag =
        recover->add_flag("--from-backup", *fromBackup, "Restore the last good backup instead");
    recover
        ->add_flag("--fresh", *fresh,
                   "Start a fresh, empty store instead, keeping the damaged file (and its "
                   "backup) beside it")
        ->excludes(backupFlag);
    recover->callback([fromBackup, fresh, &common, &exitCode] {
        exitCode = recoverCommand(common, *fresh        ? store::RecoveryMethod::Fresh
                                          : *fromBackup ? store::RecoveryMethod::Backup
                                                        : store::RecoveryMethod::Salvage);
    });
    for (CLI::App* sub : {storeCmd, check, backup, recover}) {
        sub->add_option("--db", common.dbPath, "Run store (SQLite file)");
        sub->add_flag("--json", common.json, "One JSON object per line");
    }
}

}  // namespace ws::cli
