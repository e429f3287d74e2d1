// SPDX-License-Identifier: GPL-3.0-or-later
// run_placement rows (see placement_records.h), through RunStore's writer thread and reader.
#include "engine/store/placement_records.h"

#include <SQLiteCpp/Database.h>
#include <SQLiteCpp/Statement.h>
#include <SQLiteCpp/Transaction.h>
#include <fmt/format.h>

namespace ws::store {

Status savePlacement(RunStore& store, int64_t run, const std::vector<RankPlacement>& ranks) {
    return store.writeWith([&](SQLite::Database& db) -> Status {
        SQLite::Transaction transaction(db, SQLite::TransactionBehavior::IMMEDIATE);
        {
            SQLite::Statement exists(db, "SELECT 1 FROM runs WHERE id = ?");
            exists.bind(1, run);
            if (!exists.executeStep()) return Error{fmt::format("run store has no run {}", run)};
        }
        SQLite::Statement erase(db, "DELETE FROM run_placement WHERE run = ?");
        erase.bind(1, run);
        erase.exec();
        for (const auto& r : ranks) {
            SQLite::Statement insert(db,
                                     "INSERT INTO run_placement(run, rank, host, first_system, "
                                     "systems) VALUES (?, ?, ?, ?, ?)");
            insert.bind(1, run);
            insert.bind(2, r.rank);
            insert.bind(3, r.host);
            insert.bind(4, r.firstSystem);
            insert.bind(5, r.systems);
            insert.exec();
        }
        transaction.commit();
        return {};
    });
}

Result<std::vector<RankPlacement>> placement(const RunStore& store, int64_t run) {
    std::vector<RankPlacement> out;
    Status status = store.readWith([&](SQLite::Database& db) -> Status {
        SQLite::Statement query(db,
                                "SELECT rank, host, first_system, systems FROM run_placement "
                                "WHERE run = ? ORDER BY rank");
        query.bind(1, run);
        while (query.executeStep()) {
            out.push_back({query.getColumn(0).getInt(), query.getColumn(1).getString(),
                           query.getColumn(2).getInt(), query.getColumn(3).getInt()});
        }
        return {};
    });
    if (!status.ok()) return status.error();
    return out;
}

Status saveMemoryXShards(RunStore& store, int64_t run, const std::vector<MemoryXShard>& shards) {
    return store.writeWith([&](SQLite::Database& db) -> Status {
        SQLite::Transaction transaction(db, SQLite::TransactionBehavior::IMMEDIATE);
        SQLite::Statement erase(db, "DELETE FROM run_memoryx_shards WHERE run = ?");
        erase.bind(1, run);
        erase.exec();
        for (const auto& s : shards) {
            SQLite::Statement insert(
                db, "INSERT INTO run_memoryx_shards(run, rank, layers, bytes) VALUES (?, ?, ?, ?)");
            insert.bind(1, run);
            insert.bind(2, s.rank);
            insert.bind(3, s.layers);
            insert.bind(4, s.bytes);
            insert.exec();
        }
        transaction.commit();
        return {};
    });
}

Result<std::vector<MemoryXShard>> memoryxShards(const RunStore& store, int64_t run) {
    std::vector<MemoryXShard> out;
    Status status = store.readWith([&](SQLite::Database& db) -> Status {
        SQLite::Statement query(
            db, "SELECT rank, layers, bytes FROM run_memoryx_shards WHERE run = ? ORDER BY rank");
        query.bind(1, run);
        while (query.executeStep()) {
            out.push_back({query.getColumn(0).getInt(), query.getColumn(1).getString(),
                           query.getColumn(2).getInt64()});
        }
        return {};
    });
    if (!status.ok()) return status.error();
    return out;
}

}  // namespace ws::store
