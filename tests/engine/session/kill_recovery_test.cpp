// SPDX-License-Identifier: GPL-3.0-or-later
// What a process killed at the wrong moment leaves behind, and how the next session puts it right:
// the regressions of what scripts/kill_campaign.py found (issue 19). Each test builds the state a
// SIGKILL leaves (the campaign reaches it with WAFER_TEST_KILL_AT, engine/core/kill_points.h)
// and checks the resume.
#include <gtest/gtest.h>

#include <map>
#include <mutex>
#include <set>

#include "engine/core/hash.h"
#include "engine/modelio/checkpoints.h"
#include "engine/session/resume.h"
#include "engine/session/session.h"
#include "engine/store/run_store.h"
#include "session_test_util.h"

namespace ws::session {
namespace {
using namespace testing;
namespace fs = std::filesystem;

// Continues the run from `checkpoint` with the checkpoint's own config.
RunSummary resume(const TempDir& dir, const fs::path& checkpoint) {
    auto config = resumeConfig(checkpoint);
    EXPECT_TRUE(config.ok()) << config.error().message;
    if (!config.ok()) return {};
    SessionOptions options = unnamedOptionsIn(dir);
    options.resumeFrom = checkpoint;
    return train(std::move(config).value(), std::move(options));
}

// Killed between putting checkpoint-4 in place and recording its checksums, after an earlier
// process deleted checkpoint-2 but was killed before forgetting its rows: the store lags the
// folder both ways. Continuing the run puts the rows right.
TEST(KillRecovery, ContinuedRunRecordsTheResumedCheckpointAndForgetsDeletedOnes) {
    TempDir dir("kill_rows");
    writeTinyCorpus(dir.path());
    SessionOptions options = unnamedOptionsIn(dir);
    options.stopAfterStep = 4;
    const RunSummary first =
        train(tinyConfig(dir.path(), 6, {"runconfig.checkpoint_steps=2"}), options);
    ASSERT_EQ(first.state, RunState::Stopped) << first.detail;
    const fs::path model = dir.path() / "model";
    {
        auto store = store::RunStore::open(dir.path() / "runs.sqlite");
        ASSERT_TRUE(store.ok());
        ASSERT_TRUE((*store)->forgetCheckpoint(first.runId, 4).ok());
        fs::remove_all(model / "checkpoint-2");
        ASSERT_TRUE((*store)->setStatus(first.runId, "running").ok());
    }
    const RunSummary resumed = resume(dir, model / "checkpoint-4");
    ASSERT_EQ(resumed.state, RunState::Finished) << resumed.detail;
    ASSERT_EQ(resumed.runId, first.runId);  // continued, not a new run

    auto store = store::RunStore::open(dir.path() / "runs.sqlite");
    ASSERT_TRUE(store.ok());
    auto records = (*store)->checkpoints(first.runId);
    ASSERT_TRUE(records.ok());
    std::map<int64_t, std::set<std::string>> files;
    for (const auto& record : *records) {
        auto sha = sha256File(record.path);
        ASSERT_TRUE(sha.ok()) << "a row names a file that is gone: " << record.path;
        EXPECT_EQ(*sha, record.sha256) << record.path;
        EXPECT_TRUE(files[record.step].insert(fs::path(record.path).filename()).second)
            << "two rows for " << record.path;
    }
    const std::set<std::string> all = {modelio::kModelFile, modelio::kOptimizerFile,
                                       modelio::kTrainerStateFile};
    EXPECT_EQ(files.count(2), 0u) << "rows of the deleted checkpoint-2 remain";
    EXPECT_EQ(files[4], all) << "checkpoint-4 has no rows";
    EXPECT_EQ(files[6], all);
}

// A RunStore that notes, whenever a checkpoint is recorded, whether the run's metrics up to that
// step had been flushed before: the checkpoint folder is on disk by then, and a kill there must
// not lose the metrics of the steps it covers (the resume never logs them again).
class FlushWatchingRecorder final : public store::RunRecorder {
public:
    explicit FlushWatchingRecorder(store::RunStore& store) : m_store(store) {}
    Result<int64_t> createRun(const store::NewRun& run) override { return m_store.createRun(run); }
    Status setStatus(int64_t run, std::string_view s) override { return m_store.setStatus(run, s); }
    Status setSummary(int64_t run, std::string_view j) override {
        return m_store.setSummary(run, j);
    }
    Status setModelDir(int64_t run, const fs::path& dir) override {
        return m_store.setModelDir(run, dir);
    }
    void logMetric(int64_t run, int64_t step, std::string_view key, double value,
                   double wall) override {
        std::lock_guard lock(m_mutex);
        if (key == "loss") m_loggedThrough = step;
        m_store.logMetric(run, step, key, value, wall);
    }
    void logEvent(int64_t run, std::string_view level, std::string_view message) override {
        m_store.logEvent(run, level, message);
    }
    Status recordCheckpoint(int64_t run, int64_t step, const fs::path& file,
                            std::string_view sha) override {
        std::lock_guard lock(m_mutex);
        if (m_flushedThrough < step) unflushed.insert(step);
        return m_store.recordCheckpoint(run, step, file, sha);
    }
    Status forgetCheckpoint(int64_t run, int64_t step) override {
        return m_store.forgetCheckpoint(run, step);
    }
    void flush() override {
        int64_t through;
        {
            std::lock_guard lock(m_mutex);
            through = m_loggedThrough;
        }
        m_store.flush();
        std::lock_guard lock(m_mutex);
        m_flushedThrough = std::max(m_flushedThrough, through);
    }
    std::set<int64_t> unflushed;  // checkpoint steps written before their metrics were flushed

private:
    store::RunStore& m_store;
    std::mutex m_mutex;
    int64_t m_loggedThrough = 0;
    int64_t m_flushedThrough = 0;
};

TEST(KillRecovery, MetricsReachTheStoreBeforeTheirCheckpointExists) {
    TempDir dir("kill_metrics");
    writeTinyCorpus(dir.path());
    auto store = store::RunStore::open(dir.path() / "runs.sqlite");
    ASSERT_TRUE(store.ok());
    FlushWatchingRecorder recorder(**store);
    SessionOptions options = unnamedOptionsIn(dir);
    options.recorder = &recorder;
    const RunSummary run =
        train(tinyConfig(dir.path(), 6, {"runconfig.checkpoint_steps=2"}), options);
    ASSERT_EQ(run.state, RunState::Finished) << run.detail;
    EXPECT_TRUE(recorder.unflushed.empty())
        << "checkpoint-" << *recorder.unflushed.begin()
        << " was on disk before the metrics of its steps were in the store";
}

// A process killed while writing its final weights leaves the atomic writer's temp file, and one
// killed while deleting an old checkpoint its hidden folder; the next session of the folder
// removes both.
TEST(KillRecovery, ResumeRemovesTempFilesAndHiddenFoldersAKilledRunLeft) {
    TempDir dir("kill_leftovers");
    writeTinyCorpus(dir.path());
    SessionOptions options = unnamedOptionsIn(dir);
    options.stopAfterStep = 2;
    const RunSummary first =
        train(tinyConfig(dir.path(), 4, {"runconfig.checkpoint_steps=2"}), options);
    ASSERT_EQ(first.state, RunState::Stopped) << first.detail;
    const fs::path model = dir.path() / "model";
    std::ofstream(model / ".model.safetensors.tmp-Ab12Cd") << "half a file";
    fs::create_directories(model / ".checkpoint-0.pruned.partial");
    std::ofstream(model / ".checkpoint-0.pruned.partial" / "trainer_state.json") << "{}";
    // A request the studio or `wafer runs pause` is writing into the control file right now: not
    // this run's leftover, so it stays (removing it made that request fail).
    const fs::path request = model / "..wafer-control.json.tmp-Xy34Zw";
    std::ofstream(request) << "{\"command\": \"pause\"";
    const RunSummary resumed = resume(dir, model / "checkpoint-2");
    ASSERT_EQ(resumed.state, RunState::Finished) << resumed.detail;
    EXPECT_TRUE(fs::exists(request)) << "another process's control request was removed";
    fs::remove(request);
    for (const auto& entry : fs::directory_iterator(model)) {
        const std::string name = entry.path().filename().string();
        EXPECT_TRUE(name == ".wafer.lock" || name == ".wafer-control.json" || name[0] != '.')
            << "left behind: " << entry.path();
    }
    EXPECT_TRUE(fs::exists(model / "model.safetensors"));
}

}  // namespace
}  // namespace ws::session
