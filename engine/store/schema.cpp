// SPDX-License-Identifier: GPL-3.0-or-later
// Run store schema v1 and the migration runner (see schema.h).
#include "engine/store/schema.h"

#include <SQLiteCpp/Statement.h>
#include <SQLiteCpp/Transaction.h>
#include <fmt/format.h>

#include <array>

namespace ws::store::detail {

namespace {

// v1, the first release. Special metric values: SQLite stores a NaN REAL as NULL and -0.0 as 0,
// so `value` is NULL for NaN and the infinities (SQL aggregates skip them) and `special` says
// which one ('nan', 'inf', '-inf'); for -0.0 value is 0 and special is '-0'; otherwise NULL.
// Run status and kind are checked in code (not CHECK constraints) so a later version can add
// values without rebuilding the table.
void createVersion1(SQLite::Database& db) {
    db.exec(R"SQL(
        CREATE TABLE runs (
            id           INTEGER PRIMARY KEY,
            name         TEXT NOT NULL,
            created      TEXT NOT NULL,             -- ISO-8601 UTC, e.g. 2025-01-31T12:00:00Z
            status       TEXT NOT NULL,             -- created|running|finished|stopped|diverged|failed
            config_yaml  TEXT NOT NULL,
            config_hash  TEXT NOT NULL,
            parent_run   INTEGER REFERENCES runs(id) ON DELETE SET NULL,
            model_dir    TEXT NOT NULL DEFAULT '',
            kind         TEXT NOT NULL,             -- train|finetune|sweep|sweep-trial|...
            sweep_id     INTEGER REFERENCES runs(id) ON DELETE SET NULL,
            summary_json TEXT NOT NULL DEFAULT ''
        );
        CREATE TABLE metrics (
            run       INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
            step      INTEGER NOT NULL,
            key       TEXT NOT NULL,
            value     REAL,                         -- NULL for NaN and +-inf, see special
            special   TEXT,                         -- NULL | 'nan' | 'inf' | '-inf' | '-0'
            wall_time REAL
        );
        CREATE INDEX metrics_run_key_step ON metrics(run, key, step);
        CREATE TABLE checkpoints (
            run     INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
            step    INTEGER NOT NULL,
            path    TEXT NOT NULL,
            sha256  TEXT NOT NULL,
            created TEXT NOT NULL
        );
        CREATE INDEX checkpoints_run_step ON checkpoints(run, step);
        CREATE TABLE events (
            run     INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
            time    TEXT NOT NULL,                  -- ISO-8601 UTC with milliseconds
            level   TEXT NOT NULL,
            message TEXT NOT NULL
        );
        CREATE INDEX events_run ON events(run);
        CREATE INDEX runs_parent ON runs(parent_run);
        CREATE INDEX runs_sweep ON runs(sweep_id);
    )SQL");
}

// Sweeps: a sweep is a run of kind 'sweep' (v1's runs.sweep_id already points trials at it);
// this table holds what a run row cannot: each trial's place in the sweep, its parameters, and
// the sweep's verdict on it (pruned by ASHA and why, diverged above max_loss, final_loss), so a
// stopped sweep resumes without rerunning finished trials. Kept as its own step so that it can be
// renumbered freely when merged beside other migrations.
void addSweepTrials(SQLite::Database& db) {
    db.exec(R"SQL(
        CREATE TABLE sweep_trials (
            sweep_run   INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
            trial       INTEGER NOT NULL,       -- index in the sweep's expansion order
            point_key   TEXT NOT NULL,          -- canonical parameters + seed, checked on resume
            params_json TEXT NOT NULL,          -- {"config.key": value, ...}
            seed        INTEGER NOT NULL,
            run         INTEGER REFERENCES runs(id) ON DELETE SET NULL,
            status      TEXT NOT NULL,          -- running|finished|pruned|diverged|stopped|failed
            steps       INTEGER NOT NULL DEFAULT 0,
            final_loss  REAL,                   -- NULL when not finite
            rung_losses TEXT NOT NULL DEFAULT '{}',  -- {"step": loss} at each ASHA rung reached
            reason      TEXT NOT NULL DEFAULT '',
            PRIMARY KEY (sweep_run, trial)
        );
        CREATE INDEX sweep_trials_run ON sweep_trials(run);
    )SQL");
}

// Training across processes (`mpirun -np P wafer train`): which rank, on which host, computed
// which systems [first_system, first_system + systems). One row per rank; none for a run in one
// process. Its own step, renumbered freely when merged beside other migrations.
void addRunPlacement(SQLite::Database& db) {
    db.exec(R"SQL(
        CREATE TABLE run_placement (
            run          INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
            rank         INTEGER NOT NULL,
            host         TEXT NOT NULL,
            first_system INTEGER NOT NULL,
            systems      INTEGER NOT NULL,
            PRIMARY KEY (run, rank)
        );
    )SQL");
}

// memoryx.shards > 1: which rank held which layers of MemoryX, and their bytes (weights,
// gradients and optimizer state). One row per shard; none when rank 0 holds all of MemoryX.
void addMemoryXShards(SQLite::Database& db) {
    db.exec(R"SQL(
        CREATE TABLE run_memoryx_shards (
            run    INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
            rank   INTEGER NOT NULL,
            layers TEXT NOT NULL,
            bytes  INTEGER NOT NULL,
            PRIMARY KEY (run, rank)
        );
    )SQL");
}

constexpr std::array<Migration, 4> kMigrations{&createVersion1, &addSweepTrials, &addRunPlacement,
                                               &addMemoryXShards};

}  // namespace

std::span<const Migration> migrations() {
    return kMigrations;
}

namespace {
struct SchemaState {
    int version = 0;
    int applicationId = 0;
    int tables = 0;
};

// One statement, so one snapshot: read piecewise, a store another process is creating at that
// moment could show its tables but not yet its application_id (and be refused as foreign).
SchemaState readSchemaState(SQLite::Database& db) {
    SQLite::Statement read(db,
                           "SELECT (SELECT user_version FROM pragma_user_version), "
                           "(SELECT application_id FROM pragma_application_id), "
                           "(SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name "
                           "NOT LIKE 'sqlite_%')");
    SchemaState state;
    if (read.executeStep()) {
        state.version = read.getColumn(0).getInt();
        state.applicationId = read.getColumn(1).getInt();
        state.tables = read.getColumn(2).getInt();
    }
    return state;
}

Status checkOwnership(const SchemaState& state, int latest, const std::string& dbName) {
    // user_version is any 32-bit integer in the file header; a negative one used to index the
    // migration list before its start and call what lay there (found by fuzz_run_store).
    if (state.version < 0) {
        return Error{fmt::format(
            "run store {} has schema version {}, which no version of Wafer Studio writes: its "
            "header is damaged or it belongs to another program; use another run store file "
            "(--db)",
            dbName, state.version)};
    }
    if (state.version > latest) {
        return Error{fmt::format(
            "run store {} has schema version {}, but this build of Wafer Studio knows only up to "
            "version {}: it was written by a newer version. Update Wafer Studio, or use another "
            "run store file (--db)",
            dbName, state.version, latest)};
    }
    const bool fresh = state.version == 0 && state.applicationId == 0 && state.tables == 0;
    if (!fresh && state.applicationId != kApplicationId) {
        return Error{
            fmt::format("{} is an SQLite database of another application "
                        "(application_id {}, {} tables), not a Wafer Studio run store; "
                        "choose another file",
                        dbName, state.applicationId, state.tables)};
    }
    return {};
}
}  // namespace

Status migrate(SQLite::Database& db, std::span<const Migration> steps, const std::string& dbName) {
    const int latest = static_cast<int>(steps.size());
    try {
        // Fast path without the write lock: opening a current store while another process is
        // writing to it must not wait for that writer.
        SchemaState state = readSchemaState(db);
        if (Status s = checkOwnership(state, latest, dbName); !s) return s;
        if (state.version == latest) return {};

        // IMMEDIATE takes the write lock before reading the version again, so two processes
        // opening the same new file cannot both run the migrations.
        SQLite::Transaction transaction(db, SQLite::TransactionBehavior::IMMEDIATE);
        state = readSchemaState(db);
        if (Status s = checkOwnership(state, latest, dbName); !s) return s;
        if (state.version == latest) return {};
        if (state.version == 0) db.exec(fmt::format("PRAGMA application_id = {}", kApplicationId));
        for (int v = state.version; v < latest; ++v) steps[static_cast<size_t>(v)](db);
        db.exec(fmt::format("PRAGMA user_version = {}", latest));
        transaction.commit();
    } catch (const std::exception& e) {
        return Error{fmt::format("cannot set up the run store schema in {}: {}", dbName, e.what())};
    }
    return {};
}

}  // namespace ws::store::detail
