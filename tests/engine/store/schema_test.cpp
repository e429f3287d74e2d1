// SPDX-License-Identifier: GPL-3.0-or-later
// Schema versioning: a new or empty file migrates to the latest version, a newer version is
// refused with a clear message, the migration list extends by appending a function, and a
// failing migration leaves the file untouched.
#include "engine/store/schema.h"

#include <SQLiteCpp/Database.h>
#include <gtest/gtest.h>

#include <fstream>
#include <stdexcept>
#include <vector>

#include "engine/store/run_store.h"
#include "support/temp_dir.h"

namespace ws::store {
namespace {

using ws::testing::TempDir;

int pragma(const std::filesystem::path& path, const char* name) {
    SQLite::Database db(path.string(), SQLite::OPEN_READONLY);
    return db.execAndGet(std::string("PRAGMA ") + name).getInt();
}

TEST(Schema, EmptyFileMigratesToTheLatestVersion) {
    TempDir dir("schema_empty");
    const auto path = dir / "runs.sqlite";
    std::ofstream(path).flush();  // a zero-byte file is an empty (version 0) SQLite database
    ASSERT_EQ(std::filesystem::file_size(path), 0u);
    {
        auto store = RunStore::open(path);
        ASSERT_TRUE(store.ok()) << store.error().message;
        EXPECT_TRUE((*store)->listRuns()->empty());
    }
    EXPECT_EQ(pragma(path, "user_version"), static_cast<int>(detail::migrations().size()));
    EXPECT_EQ(pragma(path, "application_id"), detail::kApplicationId);
    SQLite::Database db(path.string(), SQLite::OPEN_READONLY);
    for (const char* table : {"runs", "metrics", "checkpoints", "events"}) {
        EXPECT_TRUE(db.tableExists(table)) << table;
    }
    EXPECT_EQ(db.execAndGet("SELECT count(*) FROM sqlite_master WHERE type = 'index' AND name = "
                            "'metrics_run_key_step'")
                  .getInt(),
              1);
    EXPECT_EQ(db.execAndGet("PRAGMA journal_mode").getString(), "wal");
}

TEST(Schema, NewerVersionIsRefusedAndLeftAlone) {
    TempDir dir("schema_newer");
    const auto path = dir / "runs.sqlite";
    ASSERT_TRUE(RunStore::open(path).ok());
    {
        SQLite::Database db(path.string(), SQLite::OPEN_READWRITE);
        db.exec("PRAGMA user_version = 99");
    }
    auto store = RunStore::open(path);
    ASSERT_FALSE(store.ok());
    const std::string& message = store.error().message;
    EXPECT_NE(message.find(path.string()), std::string::npos) << message;
    EXPECT_NE(message.find("schema version 99"), std::string::npos) << message;
    EXPECT_NE(message.find("newer"), std::string::npos) << message;
    EXPECT_EQ(pragma(path, "user_version"), 99);
}

// A negative user_version (header bytes 60-63) used to run migrations[-1] (fuzz_run_store;
// tests/fuzz/regressions/run_store/ holds the fuzz input).
TEST(Schema, NegativeVersionIsRefusedAndLeftAlone) {
    TempDir dir("schema_negative");
    const auto path = dir / "runs.sqlite";
    ASSERT_TRUE(RunStore::open(path).ok());
    {
        SQLite::Database db(path.string(), SQLite::OPEN_READWRITE);
        db.exec("PRAGMA user_version = -1");
    }
    auto store = RunStore::open(path);
    ASSERT_FALSE(store.ok());
    const std::string& message = store.error().message;
    EXPECT_NE(message.find(path.string()), std::string::npos) << message;
    EXPECT_NE(message.find("schema version -1"), std::string::npos) << message;
    EXPECT_NE(message.find("damaged"), std::string::npos) << message;
    EXPECT_EQ(pragma(path, "user_version"), -1);
}

void addTagsV2(SQLite::Database& db) {
    db.exec("CREATE TABLE tags(run INTEGER NOT NULL REFERENCES runs(id), tag TEXT NOT NULL)");
}
void brokenV2(SQLite::Database& db) {
    db.exec("CREATE TABLE half_done(x)");
    throw std::runtime_error("migration 2 failed halfway");
}

TEST(Schema, ANewVersionIsOneAppendedFunction) {
    TempDir dir("schema_v2");
    const auto v1File = dir / "v1.sqlite";
    ASSERT_TRUE(RunStore::open(v1File).ok());  // a store written by the current release
    std::vector<detail::Migration> withNext(detail::migrations().begin(),
                                            detail::migrations().end());
    withNext.push_back(&addTagsV2);
    const int next = static_cast<int>(withNext.size());

    SQLite::Database v1(v1File.string(), SQLite::OPEN_READWRITE);
    ASSERT_TRUE(detail::migrate(v1, withNext, v1File.string()).ok());
    EXPECT_EQ(v1.execAndGet("PRAGMA user_version").getInt(), next);
    EXPECT_TRUE(v1.tableExists("tags"));
    EXPECT_TRUE(detail::migrate(v1, withNext, v1File.string()).ok());  // idempotent

    SQLite::Database fresh((dir / "fresh.sqlite").string(),
                           SQLite::OPEN_READWRITE | SQLite::OPEN_CREATE);
    ASSERT_TRUE(detail::migrate(fresh, withNext, "fresh.sqlite").ok());
    EXPECT_EQ(fresh.execAndGet("PRAGMA user_version").getInt(), next);
    EXPECT_TRUE(fresh.tableExists("runs"));
    EXPECT_TRUE(fresh.tableExists("tags"));

    // The current build refuses the newer file it cannot understand.
    auto refused = RunStore::open(v1File);
    ASSERT_FALSE(refused.ok());
    EXPECT_NE(refused.error().message.find("schema version " + std::to_string(next)),
              std::string::npos);
}

TEST(Schema, AVersion1StoreGainsTheSweepTrialsTable) {
    TempDir dir("schema_sweeps");
    const auto path = dir / "v1.sqlite";
    {
        SQLite::Database db(path.string(), SQLite::OPEN_READWRITE | SQLite::OPEN_CREATE);
        const detail::Migration v1Only[] = {detail::migrations()[0]};
        ASSERT_TRUE(detail::migrate(db, v1Only, path.string()).ok());
        EXPECT_FALSE(db.tableExists("sweep_trials"));
    }
    ASSERT_TRUE(RunStore::open(path).ok());
    SQLite::Database db(path.string(), SQLite::OPEN_READONLY);
    EXPECT_TRUE(db.tableExists("sweep_trials"));
}

TEST(Schema, AVersion2StoreKeepsItsRunsAndGainsTheRunPlacementTable) {
    TempDir dir("schema_placement");
    const auto path = dir / "v2.sqlite";
    {
        SQLite::Database db(path.string(), SQLite::OPEN_READWRITE | SQLite::OPEN_CREATE);
        const detail::Migration v2Only[] = {detail::migrations()[0], detail::migrations()[1]};
        ASSERT_TRUE(detail::migrate(db, v2Only, path.string()).ok());
        db.exec(
            "INSERT INTO runs(name, created, status, config_yaml, config_hash, kind) VALUES "
            "('old', '2026-01-01T00:00:00Z', 'finished', '', '', 'train')");
        EXPECT_FALSE(db.tableExists("run_placement"));
    }
    auto store = RunStore::open(path);
    ASSERT_TRUE(store.ok()) << store.error().message;
    auto old = (*store)->getRun(1);
    ASSERT_TRUE(old.ok());
    EXPECT_EQ(old->name, "old");
    SQLite::Database db(path.string(), SQLite::OPEN_READONLY);
    EXPECT_TRUE(db.tableExists("run_placement"));
}

TEST(Schema, AFailingMigrationLeavesTheFileUnchanged) {
    TempDir dir("schema_fail");
    const detail::Migration broken[] = {detail::migrations()[0], &brokenV2};
    SQLite::Database fresh((dir / "fresh.sqlite").string(),
                           SQLite::OPEN_READWRITE | SQLite::OPEN_CREATE);
    auto status = detail::migrate(fresh, broken, "fresh.sqlite");
    ASSERT_FALSE(status.ok());
    EXPECT_NE(status.error().message.find("fresh.sqlite"), std::string::npos);
    EXPECT_NE(status.error().message.find("migration 2 failed halfway"), std::string::npos);
    EXPECT_EQ(fresh.execAndGet("PRAGMA user_version").getInt(), 0);
    EXPECT_EQ(fresh.execAndGet("PRAGMA application_id").getInt(), 0);
    EXPECT_FALSE(fresh.tableExists("runs"));  // v1 was rolled back with the failed v2
    EXPECT_FALSE(fresh.tableExists("half_done"));
}

TEST(Schema, AnotherApplicationsVersionedDatabaseIsRefused) {
    TempDir dir("schema_foreign");
    const auto path = dir / "foreign.sqlite";
    {
        SQLite::Database db(path.string(), SQLite::OPEN_READWRITE | SQLite::OPEN_CREATE);
        db.exec("PRAGMA user_version = 1");  // same version number, different owner
    }
    auto store = RunStore::open(path);
    ASSERT_FALSE(store.ok());
    EXPECT_NE(store.error().message.find("another application"), std::string::npos)
        << store.error().message;
}

}  // namespace
}  // namespace ws::store
