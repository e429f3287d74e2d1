// SPDX-License-Identifier: GPL-3.0-or-later
// Following a run store live, as the studio does beside `wafer train --db`: dataVersion() moves
// exactly when another connection (a second RunStore on the file, a plain SQLite connection as
// another process would hold, or this store's own writer thread) commits, and stays put for
// reads; metricsAfter() returns only the steps logged after the ones already shown.
#include <SQLiteCpp/Database.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "engine/store/run_store.h"
#include "support/temp_dir.h"

namespace ws::store {
namespace {

using ws::testing::TempDir;

std::unique_ptr<RunStore> openOrDie(const std::filesystem::path& path) {
    auto store = RunStore::open(path);
    EXPECT_TRUE(store.ok()) << store.error().message;
    return store.ok() ? std::move(store).value() : nullptr;
}

int64_t versionOf(const RunStore& store) {
    auto version = store.dataVersion();
    EXPECT_TRUE(version.ok()) << version.error().message;
    return version.ok() ? *version : -1;
}

TEST(RunStoreFollow, DataVersionMovesWhenAnyOtherConnectionCommits) {
    TempDir dir("store_follow_version");
    const auto path = dir / "runs.sqlite";
    auto studio = openOrDie(path);
    auto cli = openOrDie(path);
    ASSERT_TRUE(studio && cli);

    const int64_t start = versionOf(*studio);
    EXPECT_EQ(versionOf(*studio), start) << "nothing was committed";

    // Another store on the file (what `wafer train --db` holds) creates a run and logs.
    NewRun run;
    run.name = "from-the-cli";
    auto id = cli->createRun(run);
    ASSERT_TRUE(id.ok()) << id.error().message;
    const int64_t afterCreate = versionOf(*studio);
    EXPECT_NE(afterCreate, start);
    EXPECT_EQ(versionOf(*studio), afterCreate) << "stable until the next commit";

    cli->logMetric(*id, 1, "loss", 3.5, 0.1);
    cli->flush();
    const int64_t afterMetric = versionOf(*studio);
    EXPECT_NE(afterMetric, afterCreate);

    // Reads change nothing, on either side.
    ASSERT_TRUE(cli->listRuns().ok());
    ASSERT_TRUE(studio->metrics(*id, "loss").ok());
    EXPECT_EQ(versionOf(*studio), afterMetric);

    // The status change that ends a run shows too.
    ASSERT_TRUE(cli->setStatus(*id, "finished").ok());
    const int64_t afterStatus = versionOf(*studio);
    EXPECT_NE(afterStatus, afterMetric);

    // A plain SQLite connection, as another program would hold, is seen the same way.
    {
        SQLite::Database raw(path.string(), SQLite::OPEN_READWRITE, 5000);
        raw.exec("UPDATE runs SET name = 'renamed elsewhere'");
    }
    const int64_t afterRaw = versionOf(*studio);
    EXPECT_NE(afterRaw, afterStatus);
    EXPECT_EQ(studio->getRun(*id)->name, "renamed elsewhere");

    // The store's own writes go through its writer thread, another connection: seen as well,
    // so one poll serves the studio's own runs and everyone else's.
    ASSERT_TRUE(studio->renameRun(*id, "renamed here").ok());
    EXPECT_NE(versionOf(*studio), afterRaw);
}

TEST(RunStoreFollow, MetricsAfterReturnsOnlyTheNewSteps) {
    TempDir dir("store_follow_metrics");
    const auto path = dir / "runs.sqlite";
    auto studio = openOrDie(path);
    auto cli = openOrDie(path);
    ASSERT_TRUE(studio && cli);
    NewRun run;
    run.name = "growing";
    auto id = cli->createRun(run);
    ASSERT_TRUE(id.ok()) << id.error().message;
    for (int64_t step = 1; step <= 10; ++step)
        cli->logMetric(*id, step, "loss", 10.0 / double(step), double(step));
    cli->logMetric(*id, 11, "loss", std::numeric_limits<double>::quiet_NaN(), 11.0);
    cli->logMetric(*id, 5, "lr", 1e-3, 5.0);  // another key is not mixed in
    cli->flush();

    auto tail = studio->metricsAfter(*id, "loss", 7);
    ASSERT_TRUE(tail.ok()) << tail.error().message;
    ASSERT_EQ(tail->size(), 4u);
    EXPECT_EQ(tail->front().step, 8);
    EXPECT_DOUBLE_EQ(tail->front().value, 10.0 / 8.0);
    EXPECT_DOUBLE_EQ(tail->front().wallTime, 8.0);
    EXPECT_EQ(tail->back().step, 11);
    EXPECT_TRUE(std::isnan(tail->back().value));  // a diverging run shows as it does in full

    // From the start it is metrics(); past the end it is empty.
    auto all = studio->metricsAfter(*id, "loss", std::numeric_limits<int64_t>::min());
    ASSERT_TRUE(all.ok());
    EXPECT_EQ(all->size(), studio->metrics(*id, "loss")->size());
    auto none = studio->metricsAfter(*id, "loss", 11);
    ASSERT_TRUE(none.ok());
    EXPECT_TRUE(none->empty());

    // A run deleted meanwhile is an error naming it, not an empty answer.
    auto missing = studio->metricsAfter(*id + 100, "loss", 0);
    ASSERT_FALSE(missing.ok());
    EXPECT_NE(missing.error().message.find("no run with id"), std::string::npos);
}

}  // namespace
}  // namespace ws::store
