// SPDX-License-Identifier: GPL-3.0-or-later
// The parts a Session is composed of, each exercised alone: the run's record in a real SQLite
// run store (RunRecord), the model folder's claim (RunFolder), the emulator beside training
// (EmulatorFeed), MemoryX's weights (RunWeights) and the evaluation's micro-batches (Evaluator).
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <numbers>
#include <variant>

#include <fmt/format.h>

#include "engine/data/token_cache.h"
#include "engine/model/gpt.h"
#include "engine/model/parameters.h"
#include "engine/modelio/load_model.h"
#include "engine/modelio/weights_io.h"
#include "engine/session/emulator_feed.h"
#include "engine/session/evaluator.h"
#include "engine/session/run_control.h"
#include "engine/session/run_folder.h"
#include "engine/session/run_record.h"
#include "engine/session/run_weights.h"
#include "engine/store/run_store.h"
#include "engine/tokenizer/tokenizer.h"
#include "session_test_util.h"

namespace ws::session {
namespace {
using namespace testing;

store::NewRun newRun(const std::string& name) {
    store::NewRun run;
    run.name = name;
    run.configYaml = "model: {}\n";
    run.configHash = "abc";
    run.kind = "train";
    return run;
}

// --- RunRecord -----------------------------------------------------------------------------

TEST(RunRecord, WritesTheRunRowItsMetricsEventsStatusAndSummaryToARealStore) {
    TempDir dir;
    const auto db = dir.path() / "runs.sqlite";
    auto opened = RunRecord::open(db, nullptr, true);
    ASSERT_TRUE(opened.ok()) << opened.error().message;
    RunRecord record = std::move(opened).value();
    ASSERT_NE(record.store(), nullptr);
    EXPECT_EQ(record.runId(), -1);
    record.event(LogLine::Level::Info, "before the row: not recorded");
    ASSERT_TRUE(record.createRun(newRun("recorded")).ok());
    ASSERT_GE(record.runId(), 1);
    record.metric(3, "loss", 1.5, 100.25);
    record.metric(4, "loss", 1.25, 101.5);
    record.event(LogLine::Level::Warning, "a warning");
    ASSERT_TRUE(record.setStatus(RunState::Preparing).ok());  // not recorded: stays "created"
    ASSERT_TRUE(record.setStatus(RunState::Running).ok());
    record.setModelDir(dir.path() / "model");
    record.setSummary(R"({"steps": 4})");
    record.flush();

    // Read back through another connection, as `wafer runs` and the studio do.
    auto reader = store::RunStore::open(db);
    ASSERT_TRUE(reader.ok()) << reader.error().message;
    const auto run = (*reader)->getRun(record.runId());
    ASSERT_TRUE(run.ok()) << run.error().message;
    EXPECT_EQ(run->name, "recorded");
    EXPECT_EQ(run->status, "running");
    EXPECT_EQ(run->modelDir, (dir.path() / "model").string());
    EXPECT_EQ(run->summaryJson, R"({"steps": 4})");
    const auto loss = (*reader)->metrics(record.runId(), "loss");
    ASSERT_TRUE(loss.ok());
    ASSERT_EQ(loss->size(), 2u);
    EXPECT_EQ((*loss)[0].step, 3);
    EXPECT_DOUBLE_EQ((*loss)[0].value, 1.5);
    EXPECT_DOUBLE_EQ((*loss)[0].wallTime, 100.25);
    EXPECT_EQ((*loss)[1].step, 4);
    const auto events = (*reader)->events(record.runId());
    ASSERT_TRUE(events.ok());
    ASSERT_EQ(events->size(), 1u);
    EXPECT_EQ((*events)[0].level, "warning");
    EXPECT_EQ((*events)[0].message, "a warning");
    EXPECT_EQ(record.lostRecords(Status::success()), std::nullopt);
}

TEST(RunRecord, ReportsADeletedStoreOnce) {
    TempDir dir;
    const auto db = dir.path() / "runs.sqlite";
    auto record = RunRecord::open(db, nullptr, true);
    ASSERT_TRUE(record.ok()) << record.error().message;
    ASSERT_TRUE(record->createRun(newRun("doomed")).ok());
    std::filesystem::remove(db);
    const auto lost = record->lostRecords(Status::success());
    ASSERT_TRUE(lost.has_value());
    EXPECT_NE(lost->find("was deleted while the run was running"), std::string::npos) << *lost;
    EXPECT_NE(lost->find(db.string()), std::string::npos) << *lost;
    EXPECT_EQ(record->lostRecords(Status::success()), std::nullopt);  // said once
}

TEST(RunRecord, ReportsAFailedStatusWrite) {
    TempDir dir;
    auto record = RunRecord::open(dir.path() / "runs.sqlite", nullptr, true);
    ASSERT_TRUE(record.ok()) << record.error().message;
    const auto lost = record->lostRecords(Error{"disk full"});
    ASSERT_TRUE(lost.has_value());
    EXPECT_EQ(lost->rfind("disk full; the run's record in the run store is incomplete", 0), 0u)
        << *lost;
}

// A recorder that counts what reaches it (a sweep trial's forwarding recorder stands here).
class CountingRecorder : public store::RunRecorder {
public:
    Result<int64_t> createRun(const store::NewRun&) override { return int64_t(42); }
    Status setStatus(int64_t, std::string_view s) override {
        statuses.emplace_back(s);
        return Status::success();
    }
    Status setSummary(int64_t, std::string_view) override { return Status::success(); }
    Status setModelDir(int64_t, const std::filesystem::path&) override { return Status::success(); }
    void logMetric(int64_t run, int64_t, std::string_view key, double, double) override {
        metrics.emplace_back(std::to_string(run) + ":" + std::string(key));
    }
    void logEvent(int64_t, std::string_view, std::string_view) override { ++events; }
    Status recordCheckpoint(int64_t, int64_t, const std::filesystem::path&,
                            std::string_view) override {
        return Status::success();
    }
    Status forgetCheckpoint(int64_t, int64_t) override { return Status::success(); }
    void flush() override { ++flushes; }

    std::vector<std::string> statuses, metrics;
    int events = 0, flushes = 0;
};

TEST(RunRecord, ForwardsToAGivenRecorderAndOpensNoStore) {
    TempDir dir;
    CountingRecorder counting;
    auto record = RunRecord::open(dir.path() / "runs.sqlite", &counting, true);
    ASSERT_TRUE(record.ok());
    EXPECT_EQ(record->store(), nullptr);
    EXPECT_FALSE(std::filesystem::exists(dir.path() / "runs.sqlite"));
    ASSERT_TRUE(record->createRun(newRun("trial")).ok());
    EXPECT_EQ(record->runId(), 42);
    record->metric(1, "loss", 2.0, 0.0);
    record->event(LogLine::Level::Info, "hello");
    ASSERT_TRUE(record->setStatus(RunState::Finished).ok());
    record->flush();
    EXPECT_EQ(counting.metrics, std::vector<std::string>{"42:loss"});
    EXPECT_EQ(counting.events, 1);
    EXPECT_EQ(counting.statuses, std::vector<std::string>{"finished"});
    EXPECT_EQ(counting.flushes, 1);
    // Placement rows belong to an opened store only.
    EXPECT_TRUE(record->savePlacement({{0, "a", 0, 1}}, {}).ok());
}

TEST(RunRecord, AnEmptyRecordRecordsNothing) {
    RunRecord record;
    EXPECT_EQ(record.recorder(), nullptr);
    record.metric(1, "loss", 1.0, 0.0);
    record.event(LogLine::Level::Error, "nowhere");
    EXPECT_TRUE(record.setStatus(RunState::Running).ok());
    EXPECT_EQ(record.lostRecords(Error{"ignored"}), std::nullopt);
    record.flush();
}

// --- RunFolder -----------------------------------------------------------------------------

TEST(RunFolder, RefusesAFolderAnotherSessionHolds) {
    TempDir dir;
    const auto folder = dir.path() / "model";
    {
        auto first = RunFolder::claim(folder);
        ASSERT_TRUE(first.ok()) << first.error().message;
        EXPECT_EQ(first->path(), folder);
        EXPECT_TRUE(FolderLock::isHeld(folder));
        auto second = RunFolder::claim(folder);
        ASSERT_FALSE(second.ok());
        EXPECT_NE(second.error().message.find("in use by another training session"),
                  std::string::npos)
            << second.error().message;
        EXPECT_NE(second.error().message.find(folder.string()), std::string::npos);
    }
    EXPECT_FALSE(FolderLock::isHeld(folder));  // released with the RunFolder
    EXPECT_TRUE(RunFolder::claim(folder).ok());
}

TEST(RunFolder, ClearsStaleControlRequestsButNotTheHolderOnes) {
    TempDir dir;
    const auto folder = dir.path() / "model";
    std::filesystem::create_directories(folder);
    ControlRequest stale;
    stale.runId = 1;
    stale.stop = true;
    ASSERT_TRUE(writeControlRequest(folder, stale).ok());
    auto claimed = RunFolder::claim(folder);
    ASSERT_TRUE(claimed.ok()) << claimed.error().message;
    auto after = readControlRequest(folder);
    ASSERT_TRUE(after.ok());
    EXPECT_FALSE(after->has_value()) << "a request left for an earlier session survived";
    // A request for the session that holds the folder stays, whoever else tries to claim it.
    ASSERT_TRUE(writeControlRequest(folder, stale).ok());
    EXPECT_FALSE(RunFolder::claim(folder).ok());
    after = readControlRequest(folder);
    ASSERT_TRUE(after.ok());
    ASSERT_TRUE(after->has_value());
    EXPECT_TRUE((*after)->stop);
}

TEST(RunFolder, ChoosesThePlacementThenModelDirThenARunFolderBesideTheStore) {
    config::Config cfg;
    const std::filesystem::path db = "/stores/a/runs.sqlite";
    const auto besideStore = store::RunStore::runsFolderFor(db);
    EXPECT_EQ(RunFolder::choose(std::nullopt, cfg, db, 7), besideStore / "run-7");
    EXPECT_EQ(RunFolder::choose(std::nullopt, cfg, db, -1), besideStore / "scratch");
    cfg.runconfig.modelDir = "/models/mine";
    EXPECT_EQ(RunFolder::choose(std::nullopt, cfg, db, 7), "/models/mine");
    ResumePlacement placement;
    EXPECT_EQ(RunFolder::choose(placement, cfg, db, 7), "/models/mine");
    placement.modelDir = "/models/continued";
    EXPECT_EQ(RunFolder::choose(placement, cfg, db, 7), "/models/continued");
}

TEST(RunFolder, CannotCreateAFolderUnderAFile) {
    TempDir dir;
    std::ofstream(dir.path() / "file") << "x";
    auto claimed = RunFolder::claim(dir.path() / "file" / "model");
    ASSERT_FALSE(claimed.ok());
    EXPECT_NE(claimed.error().message.find("cannot create runconfig.model_dir"), std::string::npos)
        << claimed.error().message;
}

TEST(RunFolder, WritesTheConfigAndTokenizerAModelFolderLoadsWith) {
    TempDir dir;
    auto claimed = RunFolder::claim(dir.path() / "model");
    ASSERT_TRUE(claimed.ok());
    const auto loaded = tinyConfig(dir.path(), 2);
    ASSERT_TRUE(claimed->writeModelFiles(loaded.config, *tokenizer::makeByteTokenizer()).ok());
    EXPECT_TRUE(std::filesystem::exists(dir.path() / "model" / "config.yaml"));
    auto tok = modelio::loadFolderTokenizer(dir.path() / "model");
    ASSERT_TRUE(tok.ok()) << tok.error().message;
    EXPECT_EQ((*tok)->kind(), "byte");
}

// --- EmulatorFeed --------------------------------------------------------------------------

struct FeedFixture {
    TempDir dir;
    config::LoadedConfig loaded;
    model::GptShape shape;
    EventQueue events;
    std::vector<std::string> logged;

    explicit FeedFixture(std::vector<std::string> overrides)
        : loaded(tinyConfig(dir.path(), 4, overrides)),
          shape(model::GptShape::fromConfig(loaded.config.model)) {}

    EmulatorFeed feed() {
        return EmulatorFeed(loaded.config, shape, 2, 32, {}, {}, events,
                            [this](LogLine::Level, std::string m) { logged.push_back(m); });
    }
    std::vector<Event> drain() {
        std::vector<Event> out;
        events.drain(out);
        return out;
    }
};

TEST(EmulatorFeed, OffPassesSpansThroughUntimedAndPublishesNoSteps) {
    FeedFixture f({"wafer.emulate=false"});
    EmulatorFeed feed = f.feed();
    EXPECT_FALSE(feed.on());
    EXPECT_TRUE(f.logged.empty());
    feed.beginStep(0, [](int64_t) { return 32.0; });
    streaming::Span span;
    span.kind = streaming::SpanKind::Forward;
    span.layer = 1;
    feed.publish(span);
    const auto out = f.drain();
    ASSERT_EQ(out.size(), 1u);
    ASSERT_TRUE(std::holds_alternative<streaming::Span>(out[0]));
    EXPECT_LT(std::get<streaming::Span>(out[0]).emuStart, 0.0);
    EXPECT_EQ(feed.elapsedThrough(3), 0.0);
    EXPECT_EQ(feed.stepFlops(128, 0), 0.0);
}

TEST(EmulatorFeed, PublishesEachStepOnTheEmulatedClockAndTimesItsSpans) {
    FeedFixture f({"wafer.spec=teaching-16x16"});
    EmulatorFeed feed = f.feed();
    ASSERT_TRUE(feed.on()) << (f.logged.empty() ? "" : f.logged.front());
    ASSERT_EQ(f.logged.size(), 1u);
    EXPECT_EQ(f.logged[0].rfind("emulated teaching-16x16: 1 system(s)", 0), 0u) << f.logged[0];
    int lengthAsked = 0;
    for (int64_t step = 0; step < 3; ++step)
        feed.beginStep(step, [&](int64_t) { return ++lengthAsked, 32.0; });
    EXPECT_EQ(lengthAsked, 0);  // unpacked steps are all planned at full length
    streaming::Span span;
    span.step = 1;
    span.system = 0;
    span.layer = 1;
    span.kind = streaming::SpanKind::Forward;
    feed.publish(span);
    const auto out = f.drain();
    ASSERT_EQ(out.size(), 4u);
    double stepS = 0.0;
    for (int i = 0; i < 3; ++i) {
        ASSERT_TRUE(std::holds_alternative<EmulatedStep>(out[size_t(i)]));
        const auto& s = std::get<EmulatedStep>(out[size_t(i)]);
        stepS = s.prediction->stepS;
        EXPECT_EQ(s.step, i);
        EXPECT_DOUBLE_EQ(s.emulatedStart, i * stepS);
    }
    ASSERT_GT(stepS, 0.0);
    const auto& timed = std::get<streaming::Span>(out[3]);
    EXPECT_GE(timed.emuStart, stepS);  // inside step 1
    EXPECT_LE(timed.emuEnd, 2 * stepS);
    EXPECT_DOUBLE_EQ(feed.elapsedThrough(3), 3 * stepS);
    const double dense = feed.stepFlops(128, 0);
    EXPECT_GT(dense, 0.0);
    EXPECT_DOUBLE_EQ(dense - feed.stepFlops(128, 10), 6.0 * 128 * 10);
}

TEST(EmulatorFeed, PackedStepsAskEachStepsAttentionLength) {
    FeedFixture f({"wafer.spec=teaching-16x16", "train_input.use_vsl=true"});
    EmulatorFeed feed = f.feed();
    ASSERT_TRUE(feed.on());
    std::vector<int64_t> asked;
    feed.catchUp(2, [&](int64_t step) { return asked.push_back(step), 32.0; });
    feed.beginStep(2, [&](int64_t step) { return asked.push_back(step), 8.0; });
    EXPECT_EQ(asked, (std::vector<int64_t>{0, 1, 2}));
    const auto out = f.drain();
    ASSERT_EQ(out.size(), 1u);  // catching up publishes nothing
    const auto& s = std::get<EmulatedStep>(out[0]);
    EXPECT_EQ(s.step, 2);
    EXPECT_DOUBLE_EQ(s.emulatedStart, feed.elapsedThrough(2));
    EXPECT_GT(feed.elapsedThrough(3), feed.elapsedThrough(2));
}

// --- RunWeights, Evaluator -----------------------------------------------------------------

TEST(RunWeights, StartsFromTheSeededInitializersOrAWeightsFile) {
    TempDir dir;
    const auto loaded = tinyConfig(dir.path(), 2);
    const auto shape = model::GptShape::fromConfig(loaded.config.model);
    RunWeights weights(loaded.config, shape);
    ASSERT_TRUE(weights.planShards(1).ok());
    ASSERT_TRUE(weights.allocate(nullptr).ok());
    std::vector<std::string> logged;
    const RunWeights::Log log = [&](LogLine::Level, std::string m) { logged.push_back(m); };
    ASSERT_TRUE(weights.loadStarting(nullptr, log).ok());
    EXPECT_TRUE(logged.empty());
    EXPECT_FALSE(weights.sharded());
    EXPECT_EQ(weights.stateCopies(), 2);  // AdamW
    const model::ParameterTable& table = weights.table();
    std::vector<float> expected(table.totalSize());
    model::initParameters(table, loaded.config.model, 7, expected.data());
    std::vector<float> scratch;
    const float* all = weights.allWeights(scratch);
    EXPECT_EQ(all, weights.weights());  // whole MemoryX: no copy
    EXPECT_TRUE(scratch.empty());
    ASSERT_TRUE(std::equal(expected.begin(), expected.end(), all));
    const auto reader = weights.reader();
    const auto& last = table.tensors().back();
    EXPECT_EQ(reader(0, table.tensors().size() - 1), all + last.offset);

    // The same weights written and read back as runconfig.checkpoint_path.
    const auto file = dir.path() / "start.safetensors";
    ASSERT_TRUE(modelio::saveWeights(file, table, all, loaded.config, 0).ok());
    auto fromFile = tinyConfig(dir.path(), 2, {"runconfig.seed=99"});
    fromFile.config.runconfig.checkpointPath = file.string();
    RunWeights again(fromFile.config, shape);
    ASSERT_TRUE(again.planShards(1).ok());
    ASSERT_TRUE(again.allocate(nullptr).ok());
    ASSERT_TRUE(again.loadStarting(nullptr, log).ok());
    ASSERT_EQ(logged.size(), 1u);
    EXPECT_EQ(logged[0], "initialised from " + file.string());
    EXPECT_TRUE(std::equal(expected.begin(), expected.end(), again.weights()));
    EXPECT_TRUE(again.shardRecords().empty());
}

TEST(RunWeights, RefusesMoreShardsThanProcesses) {
    TempDir dir;
    const auto loaded = tinyConfig(dir.path(), 2, {"memoryx.shards=2"});
    RunWeights weights(loaded.config, model::GptShape::fromConfig(loaded.config.model));
    const Status st = weights.planShards(1);
    ASSERT_FALSE(st.ok());
    EXPECT_NE(st.error().message.find("memoryx.shards"), std::string::npos) << st.error().message;
}

TEST(Evaluator, SplitsTheEvalBatchIntoTheLargestDivisorNoLargerThanATrainingMicroBatch) {
    EXPECT_EQ(Evaluator::microBatch(16, 16), 16);
    EXPECT_EQ(Evaluator::microBatch(16, 6), 4);
    EXPECT_EQ(Evaluator::microBatch(120, 7), 6);
    EXPECT_EQ(Evaluator::microBatch(7, 4), 1);
    EXPECT_EQ(Evaluator::microBatch(1, 8), 1);
}

// Issue 34: the evaluation's loss is token-weighted over the trained targets; with none masked
// that is the mean over the batches of the mean of their equal micro-batches' means, bit for bit
// the value it had before, and it counts every target.
TEST(Evaluator, UnmaskedLossIsTheMeanOfItsMicroBatchesBitForBitOverEveryTarget) {
    TempDir dir;
    const auto loaded = tinyConfig(dir.path(), 2, {"runconfig.eval_steps=3"});
    const config::Config& cfg = loaded.config;
    const auto shape = model::GptShape::fromConfig(cfg.model);
    RunWeights weights(cfg, shape);
    ASSERT_TRUE(weights.planShards(1).ok());
    ASSERT_TRUE(weights.allocate(nullptr).ok());
    ASSERT_TRUE(weights.loadStarting(nullptr, [](LogLine::Level, std::string) {}).ok());
    std::string text;
    for (int i = 0; i < 60; ++i) text += fmt::format("line {}: the quick brown fox jumps.\n", i);
    const auto byte = tokenizer::makeByteTokenizer();
    auto cache = data::TokenCache::build(text, *byte, dir.path() / "cache");
    ASSERT_TRUE(cache.ok()) << cache.error().message;
    const int T = cfg.trainInput.maxSequenceLength, B = cfg.evalInput.batchSize;
    auto data = data::Dataset::create(*cache, 1.0, T);
    ASSERT_TRUE(data.ok()) << data.error().message;
    Evaluator evaluator(cfg, shape, T, 2, *data, nullptr, tokenizer::tokenByteCounts(*byte));
    ASSERT_EQ(evaluator.micro(), 2);
    ASSERT_EQ(evaluator.batches(), 3);
    const Evaluator::Result r = evaluator.evaluate(weights);

    // The value as the evaluation computed it before the mask: micro-batch means averaged.
    std::vector<float> scratch;
    const float* w = weights.allWeights(scratch);
    model::Gpt<float> gpt(shape, 2, T);
    std::vector<int32_t> in(size_t(B) * T), tg(size_t(B) * T);
    double sum = 0.0;
    for (int64_t i = 0; i < 3; ++i) {
        data->validationBatch(i, B, T, in.data(), tg.data());
        double batchSum = 0.0;
        for (int m = 0; m < B / 2; ++m)
            batchSum += gpt.forward(w, in.data() + m * 2 * T, tg.data() + m * 2 * T, false, 0);
        sum += batchSum / double(B / 2);
    }
    const double expected = sum / 3.0;
    EXPECT_EQ(r.loss, expected);
    EXPECT_EQ(r.tokens, 3 * B * T);
    EXPECT_EQ(r.bitsPerByte, expected / std::numbers::ln2);  // one byte per byte token
}

}  // namespace
}  // namespace ws::session
