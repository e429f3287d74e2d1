// SPDX-License-Identifier: GPL-3.0-or-later
// sweep_trials rows (see sweep_records.h), through RunStore's writer thread and read connection.
#include "engine/store/sweep_records.h"

#include <SQLiteCpp/Database.h>
#include <SQLiteCpp/Statement.h>
#include <fmt/format.h>

#include <cmath>
#include <limits>

namespace ws::store {

Status saveSweepTrial(RunStore& store, const SweepTrialRecord& r) {
    return store.writeWith([&](SQLite::Database& db) -> Status {
        {
            // Scoped: a SELECT left open would hold a read transaction, and upgrading it to the
            // INSERT's write fails at once ("database is locked") after another connection wrote.
            SQLite::Statement sweep(db, "SELECT kind FROM runs WHERE id = ?");
            sweep.bind(1, r.sweepRun);
            if (!sweep.executeStep())
                return Error{fmt::format("run store has no sweep run {}", r.sweepRun)};
        }
        SQLite::Statement upsert(db,
                                 "INSERT OR REPLACE INTO sweep_trials(sweep_run, trial, point_key, "
                                 "params_json, seed, run, status, steps, final_loss, rung_losses, "
                                 "reason) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
        upsert.bind(1, r.sweepRun);
        upsert.bind(2, r.trial);
        upsert.bind(3, r.pointKey);
        upsert.bind(4, r.paramsJson);
        upsert.bind(5, r.seed);
        if (r.run) upsert.bind(6, *r.run);
        upsert.bind(7, r.status);
        upsert.bind(8, r.steps);
        if (std::isfinite(r.finalLoss)) upsert.bind(9, r.finalLoss);
        upsert.bind(10, r.rungLossesJson);
        upsert.bind(11, r.reason);
        upsert.exec();
        return {};
    });
}

Result<std::vector<SweepTrialRecord>> sweepTrials(const RunStore& store, int64_t sweepRun) {
    std::vector<SweepTrialRecord> out;
    Status status = store.readWith([&](SQLite::Database& db) -> Status {
        SQLite::Statement query(db,
                                "SELECT trial, point_key, params_json, seed, run, status, steps, "
                                "final_loss, rung_losses, reason FROM sweep_trials WHERE "
                                "sweep_run = ? ORDER BY trial");
        query.bind(1, sweepRun);
        while (query.executeStep()) {
            SweepTrialRecord r;
            r.sweepRun = sweepRun;
            r.trial = query.getColumn(0).getInt();
            r.pointKey = query.getColumn(1).getString();
            r.paramsJson = query.getColumn(2).getString();
            r.seed = query.getColumn(3).getInt64();
            if (!query.getColumn(4).isNull()) r.run = query.getColumn(4).getInt64();
            r.status = query.getColumn(5).getString();
            r.steps = query.getColumn(6).getInt64();
            r.finalLoss = query.getColumn(7).isNull() ? std::numeric_limits<double>::quiet_NaN()
                                                      : query.getColumn(7).getDouble();
            r.rungLossesJson = query.getColumn(8).getString();
            r.reason = query.getColumn(9).getString();
            out.push_back(std::move(r));
        }
        return {};
    });
    if (!status.ok()) return status.error();
    return out;
}

}  // namespace ws::store
