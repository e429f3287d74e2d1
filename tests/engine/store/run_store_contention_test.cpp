// SPDX-License-Identifier: GPL-3.0-or-later
// RunStore beside another process that writes the same file (issue 19): a synchronous write that
// reads before it writes (truncateAfter, deleteRun, savePlacement) must wait for the other
// writer and then succeed, never fail at once with "database is locked". In WAL mode a read
// transaction whose snapshot went stale (the other process committed meanwhile) cannot become a
// write transaction; the store's writes therefore start as write transactions (IMMEDIATE).
#include <gtest/gtest.h>

#include <SQLiteCpp/Database.h>
#include <SQLiteCpp/Statement.h>
#include <SQLiteCpp/Transaction.h>

#include <chrono>
#include <functional>
#include <future>

#include "engine/store/busy_waits.h"
#include "engine/store/placement_records.h"
#include "engine/store/run_store.h"
#include "support/temp_dir.h"
#include "support/wait_until.h"

namespace ws::store {
namespace {

using ws::testing::TempDir;

int64_t newRun(RunStore& store, const std::string& name) {
    NewRun run;
    run.name = name;
    auto id = store.createRun(run);
    EXPECT_TRUE(id.ok()) << id.error().message;
    return id.ok() ? *id : -1;
}

// Another process holds the write lock and commits a row while `write` runs on the store. The lock
// is released only once the store's own count shows its writer met it and is waiting (and the
// write has not finished meanwhile), so every call below really contends, however the threads
// are scheduled.
Status writeWhileAnotherProcessCommits(const std::filesystem::path& path, int64_t run,
                                       const std::function<Status()>& write) {
    SQLite::Database other(path.string(), SQLite::OPEN_READWRITE, 5000);
    SQLite::Transaction lock(other, SQLite::TransactionBehavior::IMMEDIATE);
    SQLite::Statement insert(other,
                             "INSERT INTO events(run, time, level, message) VALUES (?, "
                             "'2026-01-01T00:00:00.000Z', 'info', 'from another process')");
    insert.bind(1, run);
    insert.exec();
    const uint64_t waitsBefore = busyWaitsInProcess();
    auto pending = std::async(std::launch::async, write);
    const bool waited = ws::testing::waitUntil(std::chrono::seconds(4), [&] {
        return busyWaitsInProcess() > waitsBefore ||
               pending.wait_for(std::chrono::seconds(0)) == std::future_status::ready;
    });
    EXPECT_TRUE(waited) << "the write neither waited for the lock nor finished";
    EXPECT_GT(busyWaitsInProcess(), waitsBefore) << "the store's writer never met the other lock";
    EXPECT_EQ(pending.wait_for(std::chrono::seconds(0)), std::future_status::timeout)
        << "the write finished while another connection held the write lock";
    lock.commit();
    return pending.get();
}

TEST(RunStoreContention, WritesThatReadFirstWaitOutAnotherProcessThatCommits) {
    TempDir dir("store_contention");
    const auto path = dir / "runs.sqlite";
    auto opened = RunStore::open(path);
    ASSERT_TRUE(opened.ok()) << opened.error().message;
    auto& store = *opened.value();
    const int64_t kept = newRun(store, "kept");
    const int64_t doomed = newRun(store, "doomed");
    for (int i = 0; i < 10; ++i) store.logMetric(kept, i, "loss", i, i);
    store.flush();

    Status truncated =
        writeWhileAnotherProcessCommits(path, kept, [&] { return store.truncateAfter(kept, 4); });
    EXPECT_TRUE(truncated.ok()) << truncated.error().message;
    EXPECT_EQ(store.metrics(kept, "loss")->size(), 5u);

    Status placed = writeWhileAnotherProcessCommits(path, kept, [&] {
        return savePlacement(store, kept, {{0, "host", 0, 1}});
    });
    EXPECT_TRUE(placed.ok()) << placed.error().message;

    Status deleted =
        writeWhileAnotherProcessCommits(path, kept, [&] { return store.deleteRun(doomed); });
    EXPECT_TRUE(deleted.ok()) << deleted.error().message;
    EXPECT_FALSE(store.getRun(doomed).ok());
    EXPECT_EQ(store.events(kept)->size(), 3u);  // the other process's rows are all there

    // Queued rows too: they land after the other process's commit, none lost.
    Status logged = writeWhileAnotherProcessCommits(path, kept, [&] {
        for (int i = 5; i < 10; ++i) store.logMetric(kept, i, "loss", i, i);
        store.flush();
        return store.asyncWriteStatus();
    });
    EXPECT_TRUE(logged.ok()) << logged.error().message;
    EXPECT_EQ(store.metrics(kept, "loss")->size(), 10u);
}

}  // namespace
}  // namespace ws::store
