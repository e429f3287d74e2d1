// SPDX-License-Identifier: GPL-3.0-or-later
// RunStore behaviour: runs CRUD, metrics (NaN/Inf included), events, checkpoints, persistence
// across reopen, delete cascades and the errors a user can run into.
#include "engine/store/run_store.h"

#include <SQLiteCpp/Database.h>
#include <SQLiteCpp/Statement.h>
#include <gtest/gtest.h>

#include <cctype>
#include <cmath>
#include <fstream>
#include <limits>

#include "engine/core/hash.h"
#include "engine/store/placement_records.h"
#include "support/temp_dir.h"

namespace ws::store {
namespace {

using ws::testing::TempDir;
constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

std::unique_ptr<RunStore> openOrDie(const std::filesystem::path& path) {
    auto store = RunStore::open(path);
    EXPECT_TRUE(store.ok()) << store.error().message;
    return store.ok() ? std::move(store).value() : nullptr;
}

int64_t newRun(RunStore& store, const std::string& name, std::optional<int64_t> parent = {}) {
    NewRun run;
    run.name = name;
    run.configYaml = "model:\n  n_layer: 2\n";
    run.parentRun = parent;
    auto id = store.createRun(run);
    EXPECT_TRUE(id.ok()) << id.error().message;
    return id.ok() ? *id : -1;
}

// True for "YYYY-MM-DDTHH:MM:SSZ" (or "...SS.mmmZ" with milliseconds). Not std::regex: it trips
// GCC 12's -Wmaybe-uninitialized under the sanitizers.
bool isIsoUtc(const std::string& text, bool milliseconds) {
    const std::string shape = milliseconds ? "dddd-dd-ddTdd:dd:dd.dddZ" : "dddd-dd-ddTdd:dd:ddZ";
    if (text.size() != shape.size()) return false;
    for (size_t i = 0; i < shape.size(); ++i) {
        const bool ok = shape[i] == 'd' ? std::isdigit(static_cast<unsigned char>(text[i])) != 0
                                        : text[i] == shape[i];
        if (!ok) return false;
    }
    return true;
}

int64_t countRows(const std::filesystem::path& db, const std::string& sql) {
    SQLite::Database raw(db.string(), SQLite::OPEN_READONLY);
    return raw.execAndGet(sql).getInt64();
}

// Two stores in one folder never share run folders: run 1 of a.sqlite and run 1 of b.sqlite
// would otherwise both write runs/run-1.
TEST(RunStore, EachStoreFileHasItsOwnRunsFolder) {
    EXPECT_EQ(RunStore::runsFolderFor("/data/runs.sqlite"), std::filesystem::path("/data/runs"));
    EXPECT_EQ(RunStore::runsFolderFor("/data/a.sqlite"), std::filesystem::path("/data/a-runs"));
    EXPECT_EQ(RunStore::runsFolderFor("/data/b.db"), std::filesystem::path("/data/b-runs"));
    EXPECT_NE(RunStore::runsFolderFor("/data/a.sqlite"), RunStore::runsFolderFor("/data/b.sqlite"));
    EXPECT_EQ(RunStore::runsFolderFor(RunStore::defaultPath()),
              RunStore::defaultPath().parent_path() / "runs");
}

TEST(RunStore, CreatesAndReadsRuns) {
    TempDir dir("store_crud");
    auto store = openOrDie(dir / "runs.sqlite");
    ASSERT_TRUE(store);
    NewRun spec;
    spec.name = "nano";
    spec.configYaml = "model:\n  hidden_size: 64\n";
    spec.kind = "finetune";
    spec.modelDir = "/tmp/nano";
    auto first = store->createRun(spec);
    ASSERT_TRUE(first.ok()) << first.error().message;
    const int64_t second = newRun(*store, "", *first);

    auto run = store->getRun(*first);
    ASSERT_TRUE(run.ok()) << run.error().message;
    EXPECT_EQ(run->name, "nano");
    EXPECT_EQ(run->status, "created");
    EXPECT_EQ(run->kind, "finetune");
    EXPECT_EQ(run->modelDir, "/tmp/nano");
    EXPECT_EQ(run->configYaml, spec.configYaml);
    EXPECT_EQ(run->configHash, sha256Hex(spec.configYaml));  // filled in when not given
    EXPECT_FALSE(run->parentRun.has_value());
    EXPECT_TRUE(run->summaryJson.empty());
    EXPECT_TRUE(isIsoUtc(run->created, false)) << run->created;

    auto child = store->getRun(second);
    ASSERT_TRUE(child.ok());
    EXPECT_EQ(child->name, "run-" + std::to_string(second));  // default name
    EXPECT_EQ(child->parentRun, *first);
    EXPECT_EQ(child->kind, "train");

    auto runs = store->listRuns();
    ASSERT_TRUE(runs.ok());
    ASSERT_EQ(runs->size(), 2u);
    EXPECT_EQ((*runs)[0].id, second);  // newest first
    EXPECT_EQ((*runs)[1].id, *first);

    ASSERT_TRUE(store->setStatus(*first, "running").ok());
    ASSERT_TRUE(store->setStatus(*first, "diverged").ok());
    ASSERT_TRUE(store->renameRun(*first, "nano-2").ok());
    ASSERT_TRUE(store->setModelDir(*first, "/data/runs/7").ok());
    ASSERT_TRUE(store->setSummary(*first, R"({"final_loss": 2.5, "steps": 100})").ok());
    run = store->getRun(*first);
    ASSERT_TRUE(run.ok());
    EXPECT_EQ(run->status, "diverged");
    EXPECT_EQ(run->name, "nano-2");
    EXPECT_EQ(run->modelDir, "/data/runs/7");
    EXPECT_EQ(run->summaryJson, R"({"final_loss": 2.5, "steps": 100})");
}

TEST(RunStore, RejectsBadWritesWithClearMessages) {
    TempDir dir("store_badwrites");
    auto store = openOrDie(dir / "runs.sqlite");
    ASSERT_TRUE(store);
    const int64_t id = newRun(*store, "a");

    auto badStatus = store->setStatus(id, "suspended");
    ASSERT_FALSE(badStatus.ok());
    EXPECT_NE(badStatus.error().message.find("'suspended'"), std::string::npos);
    EXPECT_NE(badStatus.error().message.find("finished"), std::string::npos);

    auto badJson = store->setSummary(id, "{not json");
    ASSERT_FALSE(badJson.ok());
    EXPECT_NE(badJson.error().message.find("not valid JSON"), std::string::npos);
    EXPECT_TRUE(store->getRun(id)->summaryJson.empty());

    for (Status s :
         {store->setStatus(999, "running"), store->renameRun(999, "x"),
          store->setModelDir(999, "/x"), store->setSummary(999, "{}"), store->deleteRun(999)}) {
        ASSERT_FALSE(s.ok());
        EXPECT_NE(s.error().message.find("no run with id 999"), std::string::npos)
            << s.error().message;
        EXPECT_NE(s.error().message.find("runs.sqlite"), std::string::npos);
    }
    EXPECT_FALSE(store->getRun(999).ok());
    EXPECT_FALSE(store->metrics(999, "loss").ok());
    EXPECT_FALSE(store->renameRun(id, "").ok());

    NewRun orphan;
    orphan.name = "orphan";
    orphan.parentRun = 4242;
    auto created = store->createRun(orphan);
    ASSERT_FALSE(created.ok());
    EXPECT_NE(created.error().message.find("parent run 4242"), std::string::npos);
    NewRun noKind;
    noKind.kind = "";
    EXPECT_FALSE(store->createRun(noKind).ok());
    EXPECT_EQ(store->listRuns()->size(), 1u);
}

TEST(RunStore, MetricsRoundTripIncludingNonFiniteValues) {
    TempDir dir("store_nan");
    const auto path = dir / "runs.sqlite";
    auto store = openOrDie(path);
    ASSERT_TRUE(store);
    const int64_t id = newRun(*store, "diverging");
    const std::vector<double> values{1.5,
                                     kNaN,
                                     kInf,
                                     -kInf,
                                     -0.0,
                                     1e-300,
                                     std::numeric_limits<double>::max(),
                                     std::numeric_limits<double>::denorm_min()};
    for (size_t i = 0; i < values.size(); ++i) {
        store->logMetric(id, static_cast<int64_t>(i), "loss", values[i], 100.0 + i);
    }
    store->logMetric(id, 3, "lr", 0.001, kNaN);
    store->flush();
    ASSERT_TRUE(store->asyncWriteStatus().ok()) << store->asyncWriteStatus().error().message;

    auto points = store->metrics(id, "loss");
    ASSERT_TRUE(points.ok()) << points.error().message;
    ASSERT_EQ(points->size(), values.size());
    for (size_t i = 0; i < values.size(); ++i) {
        const MetricPoint& p = (*points)[i];
        EXPECT_EQ(p.step, static_cast<int64_t>(i));
        EXPECT_EQ(p.wallTime, 100.0 + i);
        if (std::isnan(values[i])) {
            EXPECT_TRUE(std::isnan(p.value)) << i;
        } else {
            EXPECT_EQ(p.value, values[i]) << i;
            EXPECT_EQ(std::signbit(p.value), std::signbit(values[i])) << i;
        }
    }
    auto lr = store->metrics(id, "lr");
    ASSERT_TRUE(lr.ok());
    ASSERT_EQ(lr->size(), 1u);
    EXPECT_TRUE(std::isnan((*lr)[0].wallTime));

    // On disk: non-finite values are NULL plus a flag, so SQL aggregates skip them.
    EXPECT_EQ(countRows(path, "SELECT count(*) FROM metrics WHERE value IS NULL"), 3);
    EXPECT_EQ(countRows(path, "SELECT count(*) FROM metrics WHERE special = 'nan'"), 1);
    EXPECT_EQ(countRows(path, "SELECT count(*) FROM metrics WHERE special = '-inf'"), 1);

    store->logMetric(id, 10, "loss", kNaN, 0);
    store->flush();
    auto last = store->lastMetrics(id);
    ASSERT_TRUE(last.ok());
    ASSERT_EQ(last->size(), 2u);
    EXPECT_TRUE(std::isnan(last->at("loss")));  // a diverged run's last loss stays NaN
    EXPECT_EQ(last->at("lr"), 0.001);
    EXPECT_TRUE(store->metrics(id, "missing")->empty());
}

TEST(RunStore, LastMetricsTakesTheHighestStepThenTheLastLogged) {
    TempDir dir("store_last");
    auto store = openOrDie(dir / "runs.sqlite");
    ASSERT_TRUE(store);
    const int64_t id = newRun(*store, "a");
    const int64_t other = newRun(*store, "b");
    store->logMetric(id, 5, "loss", 3.0, 0);
    store->logMetric(id, 9, "loss", 2.0, 0);
    store->logMetric(id, 7, "loss", 2.5, 0);  // logged later, but an earlier step (a resume)
    store->logMetric(id, 9, "eval", 4.0, 0);
    store->logMetric(id, 9, "eval", 3.5, 0);  // same step: the later one wins
    store->logMetric(other, 100, "loss", 1.0, 0);
    store->flush();
    auto last = store->lastMetrics(id);
    ASSERT_TRUE(last.ok());
    EXPECT_EQ(*last, (std::map<std::string, double>{{"eval", 3.5}, {"loss", 2.0}}));
    auto loss = store->metrics(id, "loss");
    ASSERT_TRUE(loss.ok());
    ASSERT_EQ(loss->size(), 3u);
    EXPECT_EQ((*loss)[1].step, 7);  // step order
    auto eval = store->metrics(id, "eval");
    ASSERT_EQ(eval->size(), 2u);
    EXPECT_EQ((*eval)[0].value, 4.0);  // same step: logging order
    EXPECT_EQ((*eval)[1].value, 3.5);
}

TEST(RunStore, EventsAndCheckpoints) {
    TempDir dir("store_events");
    auto store = openOrDie(dir / "runs.sqlite");
    ASSERT_TRUE(store);
    const int64_t id = newRun(*store, "a");
    store->logEvent(id, "info", "starting");
    store->logEvent(id, "warning", "loss spike at step 12");
    store->logEvent(id, "error", "diverged: loss is NaN");
    store->flush();
    auto events = store->events(id);
    ASSERT_TRUE(events.ok());
    ASSERT_EQ(events->size(), 3u);
    EXPECT_EQ((*events)[0].message, "starting");
    EXPECT_EQ((*events)[1].level, "warning");
    EXPECT_EQ((*events)[2].message, "diverged: loss is NaN");
    EXPECT_TRUE(isIsoUtc((*events)[0].time, true)) << (*events)[0].time;

    const std::string digest = sha256Hex("weights");
    ASSERT_TRUE(store->recordCheckpoint(id, 200, dir / "step200.safetensors", digest).ok());
    ASSERT_TRUE(
        store
            ->recordCheckpoint(id, 100, dir / "step100.safetensors",
                               "ABCDEF0123456789ABCDEF0123456789ABCDEF0123456789ABCDEF01234567"
                               "89")
            .ok());
    auto bad = store->recordCheckpoint(id, 300, dir / "x.safetensors", "123");
    ASSERT_FALSE(bad.ok());
    EXPECT_NE(bad.error().message.find("SHA-256"), std::string::npos);
    EXPECT_FALSE(store->recordCheckpoint(999, 1, dir / "y.safetensors", digest).ok());
    auto checkpoints = store->checkpoints(id);
    ASSERT_TRUE(checkpoints.ok());
    ASSERT_EQ(checkpoints->size(), 2u);
    EXPECT_EQ((*checkpoints)[0].step, 100);
    EXPECT_EQ((*checkpoints)[0].sha256,
              "abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789");
    EXPECT_EQ((*checkpoints)[1].path, (dir / "step200.safetensors").string());
    EXPECT_EQ((*checkpoints)[1].sha256, digest);
}

TEST(RunStore, TruncateAfterDropsTheAbandonedTailAndForgetCheckpointOneStep) {
    TempDir dir("store_truncate");
    auto store = openOrDie(dir / "runs.sqlite");
    ASSERT_TRUE(store);
    const int64_t id = newRun(*store, "a");
    for (int64_t step = 1; step <= 6; ++step) store->logMetric(id, step, "loss", double(step), 0);
    const std::string digest = sha256Hex("weights");
    for (int64_t step : {2, 4, 6}) {
        ASSERT_TRUE(store->recordCheckpoint(id, step, dir / "c", digest).ok());
    }
    // Queued metrics are committed before the truncation runs.
    ASSERT_TRUE(store->truncateAfter(id, 4).ok());
    store->flush();
    auto loss = store->metrics(id, "loss");
    ASSERT_TRUE(loss.ok());
    ASSERT_EQ(loss->size(), 4u);
    EXPECT_EQ(loss->back().step, 4);
    ASSERT_TRUE(store->forgetCheckpoint(id, 2).ok());
    auto checkpoints = store->checkpoints(id);
    ASSERT_TRUE(checkpoints.ok());
    ASSERT_EQ(checkpoints->size(), 1u);
    EXPECT_EQ((*checkpoints)[0].step, 4);
    EXPECT_FALSE(store->truncateAfter(999, 1).ok());
    EXPECT_FALSE(store->forgetCheckpoint(999, 1).ok());
}

TEST(RunStore, ReopenPersistsWhatTheDestructorFlushed) {
    TempDir dir("store_reopen");
    const auto path = dir / "nested" / "folder" / "runs.sqlite";  // folders are created
    int64_t id = 0;
    {
        auto store = openOrDie(path);
        ASSERT_TRUE(store);
        id = newRun(*store, "persisted");
        for (int i = 0; i < 2500; ++i) store->logMetric(id, i, "loss", 1.0 / (i + 1), i);
        store->logEvent(id, "info", "bye");
        ASSERT_TRUE(store->setStatus(id, "finished").ok());
        // No flush: the destructor must write what is queued.
    }
    auto store = openOrDie(path);
    ASSERT_TRUE(store);
    auto run = store->getRun(id);
    ASSERT_TRUE(run.ok());
    EXPECT_EQ(run->name, "persisted");
    EXPECT_EQ(run->status, "finished");
    auto loss = store->metrics(id, "loss");
    ASSERT_TRUE(loss.ok());
    ASSERT_EQ(loss->size(), 2500u);
    EXPECT_EQ(loss->back().value, 1.0 / 2500);
    EXPECT_EQ(store->events(id)->size(), 1u);
}

TEST(RunStore, DeleteRemovesMetricsEventsAndCheckpointsButKeepsChildren) {
    TempDir dir("store_delete");
    const auto path = dir / "runs.sqlite";
    auto store = openOrDie(path);
    ASSERT_TRUE(store);
    const int64_t parent = newRun(*store, "parent");
    const int64_t child = newRun(*store, "child", parent);
    const int64_t keep = newRun(*store, "keep");
    for (int64_t run : {parent, keep}) {
        for (int i = 0; i < 10; ++i) store->logMetric(run, i, "loss", i, i);
        store->logEvent(run, "info", "hello");
        ASSERT_TRUE(store->recordCheckpoint(run, 10, dir / "c.safetensors", sha256Hex("c")).ok());
    }
    // Queued rows of the deleted run are written before the delete, then removed with it.
    ASSERT_TRUE(store->deleteRun(parent).ok());
    store->flush();
    EXPECT_FALSE(store->getRun(parent).ok());
    EXPECT_FALSE(store->metrics(parent, "loss").ok());
    const std::string where = " WHERE run = " + std::to_string(parent);
    EXPECT_EQ(countRows(path, "SELECT count(*) FROM metrics" + where), 0);
    EXPECT_EQ(countRows(path, "SELECT count(*) FROM events" + where), 0);
    EXPECT_EQ(countRows(path, "SELECT count(*) FROM checkpoints" + where), 0);
    EXPECT_EQ(store->metrics(keep, "loss")->size(), 10u);
    EXPECT_EQ(store->events(keep)->size(), 1u);
    EXPECT_EQ(store->checkpoints(keep)->size(), 1u);
    auto orphan = store->getRun(child);
    ASSERT_TRUE(orphan.ok());
    EXPECT_FALSE(orphan->parentRun.has_value());
    EXPECT_FALSE(store->deleteRun(parent).ok());
    EXPECT_TRUE(store->asyncWriteStatus().ok());
}

// Rank 0 records which rank on which host computes which systems; a continued run replaces it,
// a run in one process has none, and deleting the run drops it.
TEST(RunStore, PlacementRoundTripsIsReplacedAndDeletedWithTheRun) {
    TempDir dir("store_placement");
    const auto path = dir / "runs.sqlite";
    int64_t a = -1, b = -1;
    const std::vector<RankPlacement> two{{0, "hostA", 0, 1}, {1, "hostB", 1, 2}};
    {
        auto store = openOrDie(path);
        ASSERT_TRUE(store);
        a = newRun(*store, "across");
        b = newRun(*store, "alone");
        ASSERT_TRUE(savePlacement(*store, a, two).ok());
        auto none = placement(*store, b);
        ASSERT_TRUE(none.ok());
        EXPECT_TRUE(none->empty());
        auto missing = savePlacement(*store, 999, two);
        ASSERT_FALSE(missing.ok());
        EXPECT_NE(missing.error().message.find("no run 999"), std::string::npos);
    }
    auto store = openOrDie(path);  // persisted across reopen
    ASSERT_TRUE(store);
    auto read = placement(*store, a);
    ASSERT_TRUE(read.ok()) << read.error().message;
    EXPECT_EQ(*read, two);

    const std::vector<RankPlacement> three{
        {0, "hostA", 0, 1}, {1, "hostB", 1, 1}, {2, "hostC", 2, 1}};
    ASSERT_TRUE(savePlacement(*store, a, three).ok());  // resumed with -np 3
    EXPECT_EQ(*placement(*store, a), three);
    ASSERT_TRUE(savePlacement(*store, a, {}).ok());  // resumed in one process
    EXPECT_TRUE(placement(*store, a)->empty());

    ASSERT_TRUE(savePlacement(*store, a, two).ok());
    ASSERT_TRUE(store->deleteRun(a).ok());
    EXPECT_EQ(countRows(path, "SELECT COUNT(*) FROM run_placement"), 0);
}

TEST(RunStore, RowsForAnUnknownRunAreReportedNotFatal) {
    TempDir dir("store_unknown");
    auto store = openOrDie(dir / "runs.sqlite");
    ASSERT_TRUE(store);
    const int64_t id = newRun(*store, "a");
    store->logMetric(id, 1, "loss", 1.0, 0);
    store->logMetric(12345, 1, "loss", 1.0, 0);
    store->logMetric(id, 2, "loss", 2.0, 0);
    store->flush();
    EXPECT_EQ(store->metrics(id, "loss")->size(), 2u);  // the rest of the batch was written
    const Status health = store->asyncWriteStatus();
    ASSERT_FALSE(health.ok());
    EXPECT_NE(health.error().message.find("dropped 1 "), std::string::npos)
        << health.error().message;
}

TEST(RunStore, CorruptFileIsAClearError) {
    TempDir dir("store_corrupt");
    const auto path = dir / "runs.sqlite";
    {
        std::ofstream out(path, std::ios::binary);
        for (int i = 0; i < 200; ++i) out << "this is not a database, it is a text file\n";
    }
    auto store = RunStore::open(path);
    ASSERT_FALSE(store.ok());
    EXPECT_NE(store.error().message.find(path.string()), std::string::npos);
    EXPECT_NE(store.error().message.find("not an SQLite database"), std::string::npos)
        << store.error().message;
}

TEST(RunStore, UnwritableLocationIsAClearError) {
    TempDir dir("store_unwritable");
    std::ofstream(dir / "a_file") << "x";
    // The folder cannot be created because a file has its name (works even when run as root).
    const auto path = dir / "a_file" / "runs.sqlite";
    auto store = RunStore::open(path);
    ASSERT_FALSE(store.ok());
    EXPECT_NE(store.error().message.find(path.string()), std::string::npos)
        << store.error().message;

    auto folder = RunStore::open(dir.path());
    ASSERT_FALSE(folder.ok());
    EXPECT_NE(folder.error().message.find("is a folder"), std::string::npos);
}

TEST(RunStore, ForeignSqliteDatabaseIsRefused) {
    TempDir dir("store_foreign");
    const auto path = dir / "other.sqlite";
    {
        SQLite::Database other(path.string(), SQLite::OPEN_READWRITE | SQLite::OPEN_CREATE);
        other.exec("CREATE TABLE photos(id INTEGER PRIMARY KEY, file TEXT)");
    }
    auto store = RunStore::open(path);
    ASSERT_FALSE(store.ok());
    EXPECT_NE(store.error().message.find("another application"), std::string::npos)
        << store.error().message;
    EXPECT_NE(store.error().message.find(path.string()), std::string::npos);
    EXPECT_EQ(countRows(path, "SELECT count(*) FROM sqlite_master WHERE name = 'runs'"), 0);
}

}  // namespace
}  // namespace ws::store
