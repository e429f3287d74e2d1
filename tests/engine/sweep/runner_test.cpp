// SPDX-License-Identifier: GPL-3.0-or-later
// Real sweeps of a tiny model through SweepRunner: trials recorded as runs tied to the sweep,
// a divergence bound marking trials diverged (kept, not dropped), ASHA stopping a trial exactly at
// its rung, and a stopped sweep resuming without rerunning its finished trials.
#include "engine/sweep/runner.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>

#include "engine/session/folder_lock.h"
#include "engine/store/run_store.h"
#include "engine/store/sweep_records.h"
#include "support/temp_dir.h"
#include "support/test_shapes.h"
#include "support/wait_until.h"

namespace ws::sweep {
namespace {

using ws::testing::TempDir;

using ws::testing::writeTinyCorpus;

// How far below its first step's loss a trial of tinySweep that learns must end. The grid below
// ends 0.18 to 0.66 nats under its first steps' 5.56-5.57; at learning rate 2^-40 a trial ends at
// 5.558, within batch noise of its first loss.
constexpr double kLearnedNats = 0.1;

config::LoadedConfig tinySweep(const std::filesystem::path& dir, const std::string& sweepYaml) {
    const std::string yaml =
        "model:\n  hidden_size: 16\n  num_hidden_layers: 1\n  num_heads: 2\n  filter_size: 32\n"
        "  vocab_size: 256\n  max_position_embeddings: 16\n"
        "optimizer:\n  learning_rate: 0.003\n  betas: [0.9, 0.95]\n  max_gradient_norm: 1.0\n"
        "train_input:\n  data_dir: corpus\n  batch_size: 2\n  max_sequence_length: 16\n"
        "eval_input:\n  batch_size: 2\n"
        "runconfig:\n  max_steps: 6\n  eval_frequency: 0\n  eval_steps: 0\n  log_steps: 1\n"
        "  seed: 3\n"
        "wafer:\n  emulate: false\n"
        "sweep:\n" +
        sweepYaml;
    auto loaded = config::parseConfig(yaml, "tiny-sweep.yaml", dir);
    EXPECT_TRUE(loaded.ok()) << (loaded.ok() ? "" : loaded.error().message);
    return std::move(loaded).value();
}

RunnerOptions optionsIn(const TempDir& dir) {
    RunnerOptions o;
    o.dbPath = dir.path() / "runs.sqlite";
    o.cacheDir = dir.path() / "cache";
    o.name = "test sweep";
    o.cores = 2;  // as on the reference machine: 2 parallel trials get 1 thread each
    return o;
}

std::vector<SweepEvent> runToEnd(SweepRunner& runner) {
    runner.run();
    std::vector<SweepEvent> events;
    runner.events().drain(events);
    return events;
}

TEST(SweepRunner, ATinyGridRecordsEveryTrialAsARunOfTheSweep) {
    TempDir dir("sweep_grid");
    writeTinyCorpus(dir.path());
    auto plan = planSweep(tinySweep(dir.path(),
                                    "  parallel_trials: 2\n  final_loss_steps: 3\n"
                                    "  parameters:\n    model.hidden_size: [16, 32]\n"
                                    "    optimizer.learning_rate: {log2_range: {min: -9, max: "
                                    "-8, step: 1}}\n"));
    ASSERT_TRUE(plan.ok()) << plan.error().message;
    auto runner = SweepRunner::create(std::move(plan).value(), optionsIn(dir));
    ASSERT_TRUE(runner.ok()) << runner.error().message;
    const auto events = runToEnd(**runner);
    const SweepOutcome& out = (*runner)->outcome();
    EXPECT_EQ(out.status, "finished") << out.detail;
    ASSERT_EQ(out.trials.size(), 4u);
    int started = 0, progress = 0, finished = 0, running = 0, mostAtOnce = 0;
    std::map<int, double> firstLoss;  // trial -> its first step's training loss
    for (const auto& e : events) {
        if (const auto* p = std::get_if<TrialProgress>(&e); p && p->step == 1)
            firstLoss[p->trial] = p->loss;
        running += std::holds_alternative<TrialStarted>(e);
        running -= std::holds_alternative<TrialFinished>(e);
        mostAtOnce = std::max(mostAtOnce, running);
        started += std::holds_alternative<TrialStarted>(e);
        progress += std::holds_alternative<TrialProgress>(e);
        finished += std::holds_alternative<TrialFinished>(e);
        if (const auto* s = std::get_if<TrialStarted>(&e)) {
            EXPECT_EQ(s->threads, 1) << "cores shared";
        }
    }
    EXPECT_EQ(started, 4);
    EXPECT_EQ(finished, 4);
    EXPECT_EQ(mostAtOnce, 2) << "parallel_trials: 2";
    EXPECT_EQ(progress, 24);
    for (const auto& t : out.trials) {
        EXPECT_EQ(t.status, TrialStatus::Finished) << t.reason;
        EXPECT_EQ(t.steps, 6);
        EXPECT_TRUE(std::isfinite(t.finalLoss));
        // It learned: its final loss (the mean of its last 3 steps) well below its own first
        // step's, where a model that learned nothing stays (about ln 256 = 5.55).
        ASSERT_TRUE(firstLoss.count(t.trial)) << "no step 1 of trial " << t.trial;
        EXPECT_LT(t.finalLoss, firstLoss[t.trial] - kLearnedNats)
            << "trial " << t.trial << " first step " << firstLoss[t.trial];
    }

    auto store = store::RunStore::open(dir.path() / "runs.sqlite");
    ASSERT_TRUE(store.ok());
    auto sweepRun = (*store)->getRun(out.sweepRunId);
    ASSERT_TRUE(sweepRun.ok());
    EXPECT_EQ(sweepRun->kind, "sweep");
    EXPECT_EQ(sweepRun->status, "finished");
    EXPECT_NE(sweepRun->configYaml.find("log2_range"), std::string::npos);
    auto runs = (*store)->listRuns();
    ASSERT_TRUE(runs.ok());
    int trials = 0;
    for (const auto& r : *runs) {
        if (r.kind != "sweep-trial") continue;
        ++trials;
        EXPECT_EQ(r.sweepId, out.sweepRunId);
        EXPECT_EQ(r.status, "finished");
        // Its weights, but no end-of-run checkpoint (a stopped trial reruns from scratch).
        EXPECT_TRUE(
            std::filesystem::exists(std::filesystem::path(r.modelDir) / "model.safetensors"))
            << r.modelDir;
        for (const auto& entry : std::filesystem::directory_iterator(r.modelDir))
            EXPECT_EQ(entry.path().filename().string().rfind("checkpoint-", 0), std::string::npos)
                << entry.path();
    }
    EXPECT_EQ(trials, 4);
    auto records = store::sweepTrials(**store, out.sweepRunId);
    ASSERT_TRUE(records.ok());
    ASSERT_EQ(records->size(), 4u);
    EXPECT_EQ((*records)[0].paramsJson,
              R"({"model.hidden_size": 16, "optimizer.learning_rate": 0.001953125})");
    EXPECT_EQ((*records)[3].status, "finished");
    EXPECT_TRUE((*records)[3].run.has_value());
}

// bf16 mode through a sweep: the precision itself as a swept key, so one trial trains with oneDNN
// bf16 matmuls (fp32 masters and optimizer state) beside its fp32 twin, from the same seed.
TEST(SweepRunner, ABf16TrialTrainsBesideItsFp32Twin) {
    TempDir dir("sweep_bf16");
    writeTinyCorpus(dir.path());
    auto plan = planSweep(tinySweep(dir.path(),
                                    "  parallel_trials: 2\n  final_loss_steps: 3\n"
                                    "  parameters:\n    model.mixed_precision: [false, true]\n"));
    ASSERT_TRUE(plan.ok()) << plan.error().message;
    auto runner = SweepRunner::create(std::move(plan).value(), optionsIn(dir));
    ASSERT_TRUE(runner.ok()) << runner.error().message;
    runToEnd(**runner);
    const SweepOutcome& out = (*runner)->outcome();
    EXPECT_EQ(out.status, "finished") << out.detail;
    ASSERT_EQ(out.trials.size(), 2u);
    for (const auto& t : out.trials) {
        EXPECT_EQ(t.status, TrialStatus::Finished) << t.reason;
        EXPECT_LT(t.finalLoss, 5.4);  // below ln 256 = 5.55: both learned in 6 steps
    }
    // Six steps from one seed: bf16 rounding moves the loss by far less than training did.
    EXPECT_NEAR(out.trials[1].finalLoss, out.trials[0].finalLoss, 0.02 * out.trials[0].finalLoss);
    EXPECT_NE(out.trials[1].finalLoss, out.trials[0].finalLoss) << "the bf16 trial ran in fp32";
    auto store = store::RunStore::open(dir.path() / "runs.sqlite");
    ASSERT_TRUE(store.ok());
    auto records = store::sweepTrials(**store, out.sweepRunId);
    ASSERT_TRUE(records.ok());
    ASSERT_EQ(records->size(), 2u);
    EXPECT_EQ((*records)[1].paramsJson, R"({"model.mixed_precision": true})");
}

TEST(SweepRunner, ALossAboveTheBoundMarksTheTrialDivergedAndKeepsIt) {
    TempDir dir("sweep_diverge");
    writeTinyCorpus(dir.path());
    auto plan = planSweep(tinySweep(dir.path(),
                                    "  max_loss: 5.0\n"
                                    "  parameters:\n    optimizer.learning_rate: [0.003, 0.3]\n"));
    ASSERT_TRUE(plan.ok()) << plan.error().message;
    // The initial loss is about ln(256) = 5.55, above the bound: every trial diverges at step 1.
    auto runner = SweepRunner::create(std::move(plan).value(), optionsIn(dir));
    ASSERT_TRUE(runner.ok());
    runToEnd(**runner);
    const SweepOutcome& out = (*runner)->outcome();
    ASSERT_EQ(out.trials.size(), 2u);
    for (const auto& t : out.trials) {
        EXPECT_EQ(t.status, TrialStatus::Diverged);
        EXPECT_EQ(t.steps, 1) << "stopped right after the step that crossed the bound";
        EXPECT_TRUE(std::isnan(t.finalLoss));
        EXPECT_NE(t.reason.find("above sweep.max_loss 5"), std::string::npos) << t.reason;
    }
    auto store = store::RunStore::open(dir.path() / "runs.sqlite");
    ASSERT_TRUE(store.ok());
    auto run = (*store)->getRun(out.trials[0].runId);
    ASSERT_TRUE(run.ok());
    EXPECT_EQ(run->status, "diverged");
}

TEST(SweepRunner, AFailingTrialIsRecordedAndTheSweepGoesOn) {
    TempDir dir("sweep_fail");
    writeTinyCorpus(dir.path());
    // A corpus folder that does not exist fails its trial while it prepares (validation does not
    // touch the file system); the other trial trains.
    auto plan = planSweep(tinySweep(dir.path(), "  parameters:\n    train_input.data_dir: [" +
                                                    (dir.path() / "missing").string() + ", " +
                                                    (dir.path() / "corpus").string() + "]\n"));
    ASSERT_TRUE(plan.ok()) << plan.error().message;
    auto runner = SweepRunner::create(std::move(plan).value(), optionsIn(dir));
    ASSERT_TRUE(runner.ok());
    runToEnd(**runner);
    const SweepOutcome& out = (*runner)->outcome();
    EXPECT_EQ(out.status, "finished");
    ASSERT_EQ(out.trials.size(), 2u);
    EXPECT_EQ(out.trials[0].status, TrialStatus::Failed);
    EXPECT_NE(out.trials[0].reason.find("missing"), std::string::npos) << out.trials[0].reason;
    EXPECT_EQ(out.trials[1].status, TrialStatus::Finished);
}

// Issue 31: a sweep none of whose trials could train was stored as "finished" (a green check in
// the Runs dock) with no result at all. It fails, for its trials' reason, and the store says so.
TEST(SweepRunner, ASweepWhoseTrialsAllFailHasFailed) {
    TempDir dir("sweep_all_fail");
    const std::string missing = (dir.path() / "missing").string();
    auto plan = planSweep(tinySweep(dir.path(), "  parameters:\n    train_input.data_dir: [" +
                                                    missing + ", " + missing + "/again]\n"));
    ASSERT_TRUE(plan.ok()) << plan.error().message;
    auto runner = SweepRunner::create(std::move(plan).value(), optionsIn(dir));
    ASSERT_TRUE(runner.ok());
    runToEnd(**runner);
    const SweepOutcome& out = (*runner)->outcome();
    EXPECT_EQ(out.status, "failed");
    EXPECT_NE(out.detail.find("every trial failed"), std::string::npos) << out.detail;
    EXPECT_NE(out.detail.find("missing"), std::string::npos) << out.detail;
    ASSERT_EQ(out.trials.size(), 2u);
    auto store = store::RunStore::open(dir.path() / "runs.sqlite");
    ASSERT_TRUE(store.ok());
    auto run = (*store)->getRun(out.sweepRunId);
    ASSERT_TRUE(run.ok());
    EXPECT_EQ(run->status, "failed");
}

TEST(SweepRunner, AshaStopsTheWorseTrialExactlyAtItsRung) {
    TempDir dir("sweep_asha");
    writeTinyCorpus(dir.path());
    // One at a time, so the arrival order is the trial order; a tiny learning rate learns
    // nothing in 2 steps, the larger one does.
    auto plan = planSweep(tinySweep(dir.path(),
                                    "  final_loss_steps: 1\n"
                                    "  early_stopping: {rungs: [3], reduction_factor: 2}\n"
                                    "  parameters:\n    optimizer.learning_rate: [0.01, "
                                    "0.000001]\n"));
    ASSERT_TRUE(plan.ok()) << plan.error().message;
    auto runner = SweepRunner::create(std::move(plan).value(), optionsIn(dir));
    ASSERT_TRUE(runner.ok());
    runToEnd(**runner);
    const SweepOutcome& out = (*runner)->outcome();
    ASSERT_EQ(out.trials.size(), 2u);
    EXPECT_EQ(out.trials[0].status, TrialStatus::Finished);
    EXPECT_EQ(out.trials[0].steps, 6);
    EXPECT_EQ(out.trials[1].status, TrialStatus::Pruned);
    EXPECT_EQ(out.trials[1].steps, 3);
    EXPECT_NE(out.trials[1].reason.find("rung 3"), std::string::npos) << out.trials[1].reason;
    EXPECT_EQ(out.trials[1].rungLosses.count(3), 1u);
}

TEST(SweepRunner, AStoppedSweepResumesWithoutRerunningFinishedTrials) {
    TempDir dir("sweep_resume");
    writeTinyCorpus(dir.path());
    auto plan = planSweep(tinySweep(dir.path(),
                                    "  parameters:\n    optimizer.learning_rate: [0.001, 0.002, "
                                    "0.004]\n"));
    ASSERT_TRUE(plan.ok()) << plan.error().message;
    auto first = SweepRunner::create(std::move(plan).value(), optionsIn(dir));
    ASSERT_TRUE(first.ok());
    SweepRunner& runner = **first;
    // Stop as soon as the first trial has finished.
    runner.start();
    bool stopped = false;
    const bool trialFinished = ws::testing::waitUntil(
        std::chrono::seconds(120),
        [&] {
            std::vector<SweepEvent> events;
            runner.events().waitAndDrain(events, std::chrono::milliseconds(50));
            for (const auto& e : events) {
                if (std::holds_alternative<TrialFinished>(e)) {
                    runner.requestStop();
                    stopped = true;
                }
            }
            return stopped;
        },
        std::chrono::milliseconds(0));
    if (!trialFinished) runner.requestStop();  // end the sweep before failing
    runner.wait();
    ASSERT_TRUE(trialFinished) << "no trial finished within 120 s";
    const SweepOutcome& out = runner.outcome();
    EXPECT_EQ(out.status, "stopped");
    const int64_t sweepId = out.sweepRunId;
    // The stop is announced with the sweep to resume, in no front end's words (no CLI flag).
    std::vector<SweepEvent> rest;
    runner.events().drain(rest);
    const SweepLog* stopping = nullptr;
    for (const auto& e : rest)
        if (const auto* l = std::get_if<SweepLog>(&e); l && l->resumableSweepRunId >= 0)
            stopping = l;
    ASSERT_NE(stopping, nullptr);
    EXPECT_EQ(stopping->resumableSweepRunId, sweepId);
    EXPECT_NE(stopping->message.find("stopping the sweep"), std::string::npos);
    EXPECT_EQ(stopping->message.find("--resume"), std::string::npos) << stopping->message;
    int settledBefore = 0;
    for (const auto& t : out.trials) settledBefore += isSettled(t.status);
    ASSERT_GE(settledBefore, 1);
    ASSERT_LT(settledBefore, 3);

    auto resumed = SweepRunner::resume(sweepId, optionsIn(dir));
    ASSERT_TRUE(resumed.ok()) << resumed.error().message;
    const auto events = runToEnd(**resumed);
    int earlier = 0, ranAgain = 0;
    for (const auto& e : events) {
        if (const auto* f = std::get_if<TrialFinished>(&e)) {
            earlier += f->fromEarlierSession;
            ranAgain += !f->fromEarlierSession;
        }
    }
    EXPECT_EQ(earlier, settledBefore);
    EXPECT_EQ(earlier + ranAgain, 3);
    const SweepOutcome& again = (*resumed)->outcome();
    EXPECT_EQ(again.status, "finished");
    EXPECT_EQ(again.sweepRunId, sweepId);
    ASSERT_EQ(again.trials.size(), 3u);
    for (const auto& t : again.trials) EXPECT_EQ(t.status, TrialStatus::Finished);

    auto store = store::RunStore::open(dir.path() / "runs.sqlite");
    ASSERT_TRUE(store.ok());
    auto records = store::sweepTrials(**store, sweepId);
    ASSERT_TRUE(records.ok());
    ASSERT_EQ(records->size(), 3u);
    for (const auto& r : *records) EXPECT_EQ(r.status, "finished");

    auto notASweep = SweepRunner::resume(again.trials[0].runId, optionsIn(dir));
    ASSERT_FALSE(notASweep.ok());
    EXPECT_NE(notASweep.error().message.find("not a sweep"), std::string::npos);
}

// A sweep holds its folder while it runs. One whose process was killed shows as interrupted and
// resumes; one still driven by another process (its folder locked) is refused, and its record is
// left as that process keeps it.
TEST(SweepRunner, AKilledSweepResumesAndALiveOneIsNotRunTwice) {
    TempDir dir("sweep_lock");
    writeTinyCorpus(dir.path());
    auto plan =
        planSweep(tinySweep(dir.path(), "  parameters:\n    optimizer.learning_rate: [0.002]\n"));
    ASSERT_TRUE(plan.ok()) << plan.error().message;
    auto first = SweepRunner::create(std::move(plan).value(), optionsIn(dir));
    ASSERT_TRUE(first.ok());
    runToEnd(**first);
    const int64_t sweepId = (*first)->outcome().sweepRunId;
    ASSERT_EQ((*first)->outcome().status, "finished");

    auto store = store::RunStore::open(dir.path() / "runs.sqlite");
    ASSERT_TRUE(store.ok());
    auto info = (*store)->getRun(sweepId);
    ASSERT_TRUE(info.ok());
    const std::filesystem::path folder = info->modelDir;
    ASSERT_FALSE(folder.empty()) << "the sweep records its folder";
    EXPECT_TRUE(std::filesystem::is_directory(folder));
    EXPECT_FALSE(session::FolderLock::isHeld(folder)) << "released when the sweep ended";

    // What a killed process leaves: "running" in the store, nobody holding the folder.
    ASSERT_TRUE((*store)->setStatus(sweepId, "running").ok());
    EXPECT_EQ(session::shownRunStatus("running", folder), "interrupted");

    {
        auto other = session::FolderLock::acquire(folder);  // another process drives it
        ASSERT_TRUE(other.ok());
        auto resumed = SweepRunner::resume(sweepId, optionsIn(dir));
        ASSERT_TRUE(resumed.ok()) << resumed.error().message;
        const auto events = runToEnd(**resumed);
        EXPECT_EQ((*resumed)->outcome().status, "failed");
        EXPECT_NE((*resumed)->outcome().detail.find("running in another process"),
                  std::string::npos)
            << (*resumed)->outcome().detail;
        auto after = (*store)->getRun(sweepId);
        ASSERT_TRUE(after.ok());
        EXPECT_EQ(after->status, "running");  // untouched: the live sweep owns its record
    }
    auto resumed = SweepRunner::resume(sweepId, optionsIn(dir));
    ASSERT_TRUE(resumed.ok()) << resumed.error().message;
    runToEnd(**resumed);
    EXPECT_EQ((*resumed)->outcome().status, "finished");
    auto after = (*store)->getRun(sweepId);
    ASSERT_TRUE(after.ok());
    EXPECT_EQ(after->status, "finished");
}

}  // namespace
}  // namespace ws::sweep
