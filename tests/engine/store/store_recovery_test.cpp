// SPDX-License-Identifier: GPL-3.0-or-later
// A damaged run store is refused, named and never changed; it can be salvaged with SQLite's
// .recover or restored from the verified backup that opening the store keeps fresh.
#include <gtest/gtest.h>

#include <SQLiteCpp/Database.h>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "engine/core/hash.h"
#include "engine/store/run_store.h"
#include "engine/store/store_recovery.h"
#include "support/temp_dir.h"

namespace ws::store {
namespace {

namespace fs = std::filesystem;
using ws::testing::TempDir;

void addRun(const fs::path& db, const std::string& name, int points) {
    auto opened = RunStore::open(db);
    ASSERT_TRUE(opened.ok()) << opened.error().message;
    NewRun run;
    run.name = name;
    auto id = (*opened)->createRun(run);
    ASSERT_TRUE(id.ok()) << id.error().message;
    for (int step = 1; step <= points; ++step) (*opened)->logMetric(*id, step, "loss", 2.0, step);
    (*opened)->flush();
}

// Overwrites `count` bytes at `offset` (after the store has been closed and checkpointed).
void scribble(const fs::path& file, std::streamoff offset, size_t count) {
    std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(offset);
    const std::string junk(count, '\x5a');
    f.write(junk.data(), std::streamsize(junk.size()));
}

std::string fileHash(const fs::path& file) {
    auto hash = sha256File(file);
    return hash.ok() ? *hash : hash.error().message;
}

void ageBackup(const fs::path& db, std::chrono::seconds by) {
    fs::last_write_time(backupPathFor(db), fs::last_write_time(backupPathFor(db)) - by);
}

TEST(StoreRecovery, OpeningKeepsAVerifiedBackupOfAStoreWithRuns) {
    TempDir dir("store_backup");
    const fs::path db = dir / "runs.sqlite";
    addRun(db, "first", 10);  // the store was empty when opened: nothing to back up yet
    EXPECT_FALSE(checkStore(db).backup.has_value());
    addRun(db, "second", 10);  // opened with one run: backed up
    StoreHealth health = checkStore(db);
    EXPECT_EQ(health.state, StoreHealth::State::Healthy);
    ASSERT_TRUE(health.backup.has_value());
    EXPECT_EQ(health.backup->path, backupPathFor(db));
    EXPECT_EQ(health.backup->runs, 1);
    addRun(db, "third", 10);  // changed, but the backup is minutes old: kept
    EXPECT_EQ(checkStore(db).backup->runs, 1);
    ageBackup(db, kBackupMinInterval + std::chrono::minutes(1));
    addRun(db, "fourth", 10);  // changed since a backup older than the interval: retaken
    EXPECT_EQ(checkStore(db).backup->runs, 3);
}

TEST(StoreRecovery, ADamagedStoreIsRefusedWithTheRoutesBackAndLeftUntouched) {
    TempDir dir("store_damaged");
    const fs::path db = dir / "runs.sqlite";
    addRun(db, "kept", 10);
    ASSERT_TRUE(backupStore(db).ok());
    scribble(db, 0, 16);  // the "SQLite format 3" magic
    const std::string before = fileHash(db);

    auto opened = RunStore::open(db);
    ASSERT_FALSE(opened.ok());
    const std::string& message = opened.error().message;
    EXPECT_NE(message.find("is damaged"), std::string::npos) << message;
    EXPECT_NE(message.find("has not been changed"), std::string::npos) << message;
    EXPECT_NE(message.find("wafer store recover --db " + db.string()), std::string::npos)
        << message;
    EXPECT_NE(message.find("--from-backup"), std::string::npos) << message;
    EXPECT_NE(message.find("with 1 run:"), std::string::npos) << message;
    EXPECT_EQ(fileHash(db), before);
    EXPECT_EQ(checkStore(db).state, StoreHealth::State::Damaged);
}

TEST(StoreRecovery, TheBackupIsRestoredAndTheDamagedFileKept) {
    TempDir dir("store_restore");
    const fs::path db = dir / "runs.sqlite";
    addRun(db, "one", 10);
    addRun(db, "two", 10);
    ASSERT_TRUE(backupStore(db).ok());
    addRun(db, "three (after the backup)", 10);
    scribble(db, 0, 16);
    const std::string damaged = fileHash(db);

    auto report = recoverStore(db, RecoveryMethod::Backup);
    ASSERT_TRUE(report.ok()) << report.error().message;
    EXPECT_EQ(report->runs, 2);
    EXPECT_EQ(report->metrics, 20);
    EXPECT_EQ(fileHash(report->damagedKeptAt), damaged);
    auto reopened = RunStore::open(db);
    ASSERT_TRUE(reopened.ok()) << reopened.error().message;
    auto runs = (*reopened)->listRuns();
    ASSERT_TRUE(runs.ok());
    ASSERT_EQ(runs->size(), 2u);
    EXPECT_EQ((*runs)[1].name, "one");
}

TEST(StoreRecovery, SalvageKeepsTheRowsSqliteCanStillRead) {
    TempDir dir("store_salvage");
    const fs::path db = dir / "runs.sqlite";
    for (int i = 0; i < 3; ++i) addRun(db, "run " + std::to_string(i), 2000);
    int pageSize = 0, pages = 0;
    {
        SQLite::Database check(db.string(), SQLite::OPEN_READONLY);
        pageSize = check.execAndGet("PRAGMA page_size").getInt();
        pages = check.execAndGet("PRAGMA page_count").getInt();
    }
    ASSERT_GT(pages, 20);
    // Wreck one page in the middle (metric rows), as a torn or misplaced write would.
    scribble(db, std::streamoff(pageSize) * (pages / 2), size_t(pageSize));
    ASSERT_EQ(checkStore(db).state, StoreHealth::State::Damaged);
    // Opening finds damage below the first pages when the backup is due (it reads every page).
    const std::string backupBefore = fileHash(backupPathFor(db));
    ageBackup(db, kBackupMaxAge + std::chrono::hours(1));
    auto refused = RunStore::open(db);
    ASSERT_FALSE(refused.ok());
    EXPECT_NE(refused.error().message.find("is damaged"), std::string::npos);
    EXPECT_EQ(fileHash(backupPathFor(db)), backupBefore) << "a damaged store replaced the backup";

    auto report = recoverStore(db, RecoveryMethod::Salvage);
    ASSERT_TRUE(report.ok()) << report.error().message;
    EXPECT_EQ(report->runs, 3);
    EXPECT_GT(report->metrics, 5000);  // one page of 6000 rows lost at most
    EXPECT_TRUE(fs::exists(report->damagedKeptAt));
    EXPECT_EQ(checkStore(db).state, StoreHealth::State::Healthy);
    auto reopened = RunStore::open(db);
    ASSERT_TRUE(reopened.ok()) << reopened.error().message;
    EXPECT_EQ((*reopened)->listRuns()->size(), 3u);
}

TEST(StoreRecovery, SalvageReadsPastAnOverwrittenHeader) {
    TempDir dir("store_header");
    const fs::path db = dir / "runs.sqlite";
    addRun(db, "a", 50);
    addRun(db, "b", 50);
    scribble(db, 0, 18);  // "file is not a database": magic and page size gone
    auto report = recoverStore(db, RecoveryMethod::Salvage);
    ASSERT_TRUE(report.ok()) << report.error().message;
    EXPECT_EQ(report->runs, 2);
    EXPECT_EQ(report->metrics, 100);
    auto reopened = RunStore::open(db);
    ASSERT_TRUE(reopened.ok()) << reopened.error().message;
    EXPECT_EQ((*reopened)->metrics(1, "loss")->size(), 50u);
}

// A negative schema version used to be copied into the salvaged store, which then could not be
// opened (and before that, made RunStore::open call migrations[-1]; fuzz_run_store).
TEST(StoreRecovery, SalvageRefusesANegativeSchemaVersion) {
    TempDir dir("store_negative_version");
    const fs::path db = dir / "runs.sqlite";
    addRun(db, "a", 5);
    {
        SQLite::Database raw(db.string(), SQLite::OPEN_READWRITE);
        raw.exec("PRAGMA user_version = -1");
    }
    scribble(db, 0, 18);  // and damaged, so that salvage is what recovery does
    const std::string before = fileHash(db);
    auto report = recoverStore(db, RecoveryMethod::Salvage);
    ASSERT_FALSE(report.ok());
    EXPECT_NE(report.error().message.find("schema version -1"), std::string::npos)
        << report.error().message;
    EXPECT_EQ(fileHash(db), before);
}

TEST(StoreRecovery, AHealthyStoreIsNotRecoveredOver) {
    TempDir dir("store_healthy");
    const fs::path db = dir / "runs.sqlite";
    addRun(db, "fine", 5);
    auto report = recoverStore(db, RecoveryMethod::Backup);
    ASSERT_FALSE(report.ok());
    EXPECT_NE(report.error().message.find("nothing to recover"), std::string::npos);
}

TEST(StoreRecovery, AnEmptiedFileWhoseBackupHoldsRunsIsDamaged) {
    TempDir dir("store_emptied");
    const fs::path db = dir / "runs.sqlite";
    addRun(db, "precious", 5);
    ASSERT_TRUE(backupStore(db).ok());
    fs::resize_file(db, 0);
    fs::remove(db.string() + "-wal");
    const StoreHealth health = checkStore(db);
    EXPECT_EQ(health.state, StoreHealth::State::Damaged);
    EXPECT_NE(health.problem.find("holds 1 run"), std::string::npos) << health.problem;
    EXPECT_FALSE(RunStore::open(db).ok());
}

// Overwrites the whole file with junk: nothing is left that salvage could read.
void wreck(const fs::path& db) {
    scribble(db, 0, size_t(fs::file_size(db)));
}

// Issue 31: salvage failed on a store without a backup, and its message said "restore the backup
// instead". Every message names only routes that exist: here a fresh store, which keeps the
// damaged file.
TEST(StoreRecovery, AFailedSalvageWithoutABackupNamesOnlyTheRoutesThatExist) {
    TempDir dir("store_unrecoverable");
    const fs::path db = dir / "runs.sqlite";
    addRun(db, "lost", 5);  // the store was empty when opened: no backup was taken
    ASSERT_FALSE(checkStore(db).backup.has_value());
    wreck(db);
    const std::string damaged = fileHash(db);
    const StoreHealth health = checkStore(db);
    ASSERT_EQ(health.state, StoreHealth::State::Damaged);
    const std::string advice = damagedStoreAdvice(db, health);
    EXPECT_EQ(advice.find("backup"), std::string::npos) << advice;
    EXPECT_NE(advice.find("wafer store recover --db " + db.string() + " --fresh"),
              std::string::npos)
        << advice;

    auto salvaged = recoverStore(db, RecoveryMethod::Salvage);
    ASSERT_FALSE(salvaged.ok());
    const std::string& why = salvaged.error().message;
    EXPECT_NE(why.find("Salvage failed: "), std::string::npos) << why;
    EXPECT_NE(why.find("Nothing was changed: the damaged file is still at " + db.string()),
              std::string::npos)
        << why;
    EXPECT_NE(why.find("There is no backup to restore"), std::string::npos) << why;
    EXPECT_EQ(why.find("restore the"), std::string::npos) << why;
    EXPECT_EQ(why.find("--from-backup"), std::string::npos) << why;
    EXPECT_EQ(why.find("`wafer store recover --db " + db.string() + "`"), std::string::npos)
        << why;  // salvage itself, which just failed
    EXPECT_NE(why.find("- Start a fresh, empty store: `wafer store recover --db " + db.string() +
                       " --fresh`"),
              std::string::npos)
        << why;
    EXPECT_EQ(fileHash(db), damaged);
    auto restored = recoverStore(db, RecoveryMethod::Backup);
    ASSERT_FALSE(restored.ok());
    EXPECT_NE(restored.error().message.find("there is no backup"), std::string::npos)
        << restored.error().message;
    EXPECT_EQ(restored.error().message.find("--from-backup"), std::string::npos)
        << restored.error().message;

    auto fresh = recoverStore(db, RecoveryMethod::Fresh);
    ASSERT_TRUE(fresh.ok()) << fresh.error().message;
    EXPECT_EQ(fileHash(fresh->damagedKeptAt), damaged);
    EXPECT_EQ(fresh->damagedKeptAt.parent_path(), db.parent_path());
    EXPECT_EQ(checkStore(db).state, StoreHealth::State::Missing);
    auto reopened = RunStore::open(db);
    ASSERT_TRUE(reopened.ok()) << reopened.error().message;
    EXPECT_TRUE((*reopened)->listRuns()->empty());
}

// A fresh store moves the backup aside with the damaged file: the new store's first backup
// would otherwise replace the last good copy of the old runs.
TEST(StoreRecovery, AFreshStoreKeepsTheBackupBesideTheDamagedFile) {
    TempDir dir("store_fresh_backup");
    const fs::path db = dir / "runs.sqlite";
    addRun(db, "one", 5);
    ASSERT_TRUE(backupStore(db).ok());
    const std::string backup = fileHash(backupPathFor(db));
    wreck(db);
    const std::string advice = damagedStoreAdvice(db, checkStore(db));
    EXPECT_NE(advice.find("--from-backup"), std::string::npos) << advice;
    EXPECT_NE(advice.find("- Or start a fresh, empty store"), std::string::npos) << advice;
    auto fresh = recoverStore(db, RecoveryMethod::Fresh);
    ASSERT_TRUE(fresh.ok()) << fresh.error().message;
    EXPECT_FALSE(fs::exists(backupPathFor(db)));
    EXPECT_EQ(fileHash(fs::path(fresh->damagedKeptAt.string() + ".backup")), backup);
    // A healthy store is never put out of sight.
    addRun(db, "new", 1);
    auto refused = recoverStore(db, RecoveryMethod::Fresh);
    ASSERT_FALSE(refused.ok());
    EXPECT_NE(refused.error().message.find("nothing to recover"), std::string::npos);
}

// Issue 31: damage below the pages that opening reads (the backup was fresh, so opening did not
// read every page) made `wafer runs list` say only "database disk image is malformed". A read
// that finds damage names it and the routes back, as a refused open does.
TEST(StoreRecovery, DamageFoundByAReadNamesTheRoutesBack) {
    TempDir dir("store_read_damage");
    const fs::path db = dir / "runs.sqlite";
    for (int i = 0; i < 3; ++i) addRun(db, "run " + std::to_string(i), 2000);
    int pageSize = 0, pages = 0;
    {
        SQLite::Database check(db.string(), SQLite::OPEN_READONLY);
        pageSize = check.execAndGet("PRAGMA page_size").getInt();
        pages = check.execAndGet("PRAGMA page_count").getInt();
    }
    scribble(db, std::streamoff(pageSize) * (pages / 2), size_t(pageSize));
    auto opened = RunStore::open(db);  // its backup is minutes old: not retaken, pages not read
    ASSERT_TRUE(opened.ok()) << opened.error().message;
    std::string message;
    for (int64_t run = 1; run <= 3 && message.empty(); ++run) {
        auto points = (*opened)->metrics(run, "loss");
        if (!points.ok()) message = points.error().message;
    }
    ASSERT_FALSE(message.empty()) << "no read met the damaged page";
    EXPECT_NE(message.find("is damaged"), std::string::npos) << message;
    EXPECT_NE(message.find("wafer store recover --db " + db.string()), std::string::npos)
        << message;
    EXPECT_NE(message.find("--from-backup"), std::string::npos) << message;  // it has one
}

// Another connection holding the store's exclusive lock (as one does while it opens a new store
// and turns WAL on) until `release` is called.
class ExclusiveHolder {
public:
    explicit ExclusiveHolder(const fs::path& db)
        : m_db(std::in_place, db.string(), SQLite::OPEN_READWRITE) {
        m_db->exec("PRAGMA locking_mode = EXCLUSIVE");
        m_db->exec("BEGIN EXCLUSIVE");
        m_db->exec("CREATE TABLE lock_probe(x)");
    }
    // In WAL mode an exclusive-mode connection keeps its lock until it closes.
    void release() {
        if (!m_db) return;
        m_db->exec("ROLLBACK");
        m_db.reset();
    }

private:
    std::optional<SQLite::Database> m_db;
};

// A sweep's trials open one store at once: a lock held by another connection is waited for,
// and one held longer than kBusyWait is "busy", never "damaged" (which once failed a trial with
// "The run store ... is damaged (database is locked)").
TEST(StoreRecovery, ALockedStoreIsBusyNotDamagedAndIsNotRecoveredOver) {
    TempDir dir("store_locked");
    const fs::path db = dir / "runs.sqlite";
    addRun(db, "kept", 5);
    addRun(db, "kept too", 5);
    const std::string before = fileHash(db);
    ExclusiveHolder holder(db);
    const StoreHealth health = checkStore(db);
    EXPECT_EQ(health.state, StoreHealth::State::Busy) << health.problem;
    EXPECT_NE(health.problem.find("locked"), std::string::npos) << health.problem;
    auto report = recoverStore(db, RecoveryMethod::Salvage);
    ASSERT_FALSE(report.ok());
    EXPECT_NE(report.error().message.find("in use"), std::string::npos) << report.error().message;
    holder.release();
    EXPECT_EQ(checkStore(db).state, StoreHealth::State::Healthy);
    EXPECT_EQ(fileHash(db), before);
    for (const auto& entry : fs::directory_iterator(dir.path()))
        EXPECT_EQ(entry.path().filename().string().find(".damaged-"), std::string::npos)
            << entry.path();
}

TEST(StoreRecovery, ALockReleasedWithinTheWaitIsWaitedFor) {
    TempDir dir("store_lock_wait");
    const fs::path db = dir / "runs.sqlite";
    addRun(db, "kept", 5);
    ExclusiveHolder holder(db);
    std::thread releaser([&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(300));  // the other side's work
        holder.release();
    });
    const StoreHealth health = checkStore(db);
    releaser.join();
    EXPECT_EQ(health.state, StoreHealth::State::Healthy) << health.problem;
}

// Two trials opening a store that does not exist yet, at the same moment, many times over: both
// get it, and it stays one healthy store holding both runs.
TEST(StoreRecovery, StoresOpenedAtOnceByTwoThreadsBothOpen) {
    TempDir dir("store_open_race");
    for (int round = 0; round < 20; ++round) {
        const fs::path db = dir / ("runs-" + std::to_string(round) + ".sqlite");
        std::vector<std::string> errors(2);
        std::vector<std::thread> openers;
        for (int t = 0; t < 2; ++t) {
            openers.emplace_back([&, t] {
                auto opened = RunStore::open(db);
                if (!opened.ok()) {
                    errors[size_t(t)] = opened.error().message;
                    return;
                }
                NewRun run;
                run.name = "opener " + std::to_string(t);
                if (auto id = (*opened)->createRun(run); !id.ok())
                    errors[size_t(t)] = id.error().message;
                (*opened)->flush();
            });
        }
        for (auto& o : openers) o.join();
        EXPECT_EQ(errors[0], "") << "round " << round;
        EXPECT_EQ(errors[1], "") << "round " << round;
        auto reopened = RunStore::open(db);
        ASSERT_TRUE(reopened.ok()) << reopened.error().message;
        auto runs = (*reopened)->listRuns();
        ASSERT_TRUE(runs.ok());
        EXPECT_EQ(runs->size(), 2u) << "round " << round;
    }
}

}  // namespace
}  // namespace ws::store
