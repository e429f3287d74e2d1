// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/session/session.h"

#include <gtest/gtest.h>

#include <fmt/format.h>

#include <cmath>
#include <cstring>
#include <numbers>
#include <span>
#include <sstream>

#include "engine/core/units.h"
#include "engine/model/model_facts.h"
#include "engine/model/parameters.h"
#include "engine/modelio/weights_io.h"
#include "engine/store/run_store.h"
#include "engine/tensor/simd.h"
#include "engine/tokenizer/tokenizer.h"
#include "engine/wafer/run_fit.h"
#include "session_test_util.h"
#include "support/wait_until.h"

namespace ws::session {
namespace {
using namespace testing;

TEST(Session, TrainsRecordsAndWritesWeights) {
    TempDir dir;
    writeTinyCorpus(dir.path());
    auto session = Session::create(tinyConfig(dir.path(), 20), sessionOptionsIn(dir));
    ASSERT_TRUE(session.ok()) << session.error().message;
    const auto steps = stepsOf(runToEnd(**session));
    const auto& summary = (*session)->summary();
    ASSERT_EQ(summary.state, RunState::Finished) << summary.detail;
    ASSERT_EQ(steps.size(), 20u);
    EXPECT_EQ(steps.back().step, 20);
    EXPECT_LT(steps.back().loss, steps.front().loss - 1.0);  // it learns
    EXPECT_FALSE(std::isnan(steps[4].evalLoss));             // eval_frequency 5
    EXPECT_TRUE(std::isnan(steps[3].evalLoss));
    EXPECT_TRUE(std::filesystem::exists(dir.path() / "model" / "model.safetensors"));
    EXPECT_TRUE(std::filesystem::exists(dir.path() / "model" / "config.yaml"));

    auto store = store::RunStore::open(dir.path() / "runs.sqlite");
    ASSERT_TRUE(store.ok());
    auto run = (*store)->getRun(summary.runId);
    ASSERT_TRUE(run.ok());
    EXPECT_EQ(run->status, "finished");
    EXPECT_EQ(run->name, "test run");
    auto losses = (*store)->metrics(summary.runId, "loss");
    ASSERT_TRUE(losses.ok());
    ASSERT_EQ(losses->size(), 20u);
    EXPECT_EQ((*losses)[7].value, steps[7].loss);
    auto evals = (*store)->metrics(summary.runId, "eval_loss");
    ASSERT_TRUE(evals.ok());
    EXPECT_EQ(evals->size(), 4u);  // steps 5, 10, 15, 20
}

TEST(Session, SameSeedGivesBitIdenticalLosses) {
    TempDir dir;
    writeTinyCorpus(dir.path());
    std::vector<double> first, second;
    for (auto* losses : {&first, &second}) {
        auto options = sessionOptionsIn(dir);
        options.recordInStore = false;
        auto session = Session::create(tinyConfig(dir.path(), 8), options);
        ASSERT_TRUE(session.ok());
        for (const auto& m : stepsOf(runToEnd(**session))) losses->push_back(m.loss);
    }
    ASSERT_EQ(first.size(), 8u);
    EXPECT_EQ(first, second);
}

TEST(Session, DifferentSeedGivesDifferentLosses) {
    TempDir dir;
    writeTinyCorpus(dir.path());
    std::vector<double> a, b;
    for (auto [losses, seed] : {std::pair{&a, "1"}, std::pair{&b, "2"}}) {
        auto options = sessionOptionsIn(dir);
        options.recordInStore = false;
        auto session = Session::create(
            tinyConfig(dir.path(), 3, {std::string("runconfig.seed=") + seed}), options);
        ASSERT_TRUE(session.ok());
        for (const auto& m : stepsOf(runToEnd(**session))) losses->push_back(m.loss);
    }
    EXPECT_NE(a, b);
}

TEST(Session, StopRequestEndsAfterCurrentStepAndKeepsOutputs) {
    TempDir dir;
    writeTinyCorpus(dir.path());
    auto session = Session::create(tinyConfig(dir.path(), 100000), sessionOptionsIn(dir));
    ASSERT_TRUE(session.ok());
    (*session)->start();
    std::vector<Event> events;
    int64_t seen = 0;
    const bool threeSteps = ws::testing::waitUntil(
        std::chrono::seconds(60),
        [&] {
            (*session)->events().waitAndDrain(events, std::chrono::milliseconds(50));
            seen = static_cast<int64_t>(stepsOf(events).size());
            return seen >= 3;
        },
        std::chrono::milliseconds(0));
    if (!threeSteps) (*session)->requestStop();  // end the worker before failing
    ASSERT_TRUE(threeSteps) << "only " << seen << " steps within 60 s";
    (*session)->requestStop();
    (*session)->wait();
    const auto& summary = (*session)->summary();
    EXPECT_EQ(summary.state, RunState::Stopped);
    EXPECT_GE(summary.steps, 3);
    EXPECT_LT(summary.steps, 100000);
    EXPECT_TRUE(std::filesystem::exists(dir.path() / "model" / "model.safetensors"));
    auto store = store::RunStore::open(dir.path() / "runs.sqlite");
    ASSERT_TRUE(store.ok());
    auto losses = (*store)->metrics(summary.runId, "loss");
    ASSERT_TRUE(losses.ok());
    EXPECT_EQ(static_cast<int64_t>(losses->size()), summary.steps);  // nothing lost
    EXPECT_EQ((*store)->getRun(summary.runId)->status, "stopped");
}

TEST(Session, CheckpointPathInitialisesFromSavedWeights) {
    TempDir dir;
    writeTinyCorpus(dir.path());
    auto options = sessionOptionsIn(dir);
    options.recordInStore = false;
    auto trained = Session::create(tinyConfig(dir.path(), 10), options);
    ASSERT_TRUE(trained.ok());
    runToEnd(**trained);
    const double trainedEval = (*trained)->summary().finalEvalLoss;
    ASSERT_FALSE(std::isnan(trainedEval));

    // Zero further steps from the saved weights: the final evaluation must match exactly.
    const auto weights = (dir.path() / "model" / "model.safetensors").string();
    auto restarted = Session::create(
        tinyConfig(dir.path(), 0, {"runconfig.checkpoint_path=" + weights}), options);
    ASSERT_TRUE(restarted.ok());
    runToEnd(**restarted);
    EXPECT_EQ((*restarted)->summary().state, RunState::Finished) << (*restarted)->summary().detail;
    EXPECT_EQ((*restarted)->summary().steps, 0);
    EXPECT_EQ((*restarted)->summary().finalEvalLoss, trainedEval);
}

// Each variant must still learn: loss after 20 steps well below the first step's.
void expectLearns(const std::vector<std::string>& overrides) {
    TempDir dir;
    writeTinyCorpus(dir.path());
    auto options = sessionOptionsIn(dir);
    options.recordInStore = false;
    auto session = Session::create(tinyConfig(dir.path(), 20, overrides), options);
    ASSERT_TRUE(session.ok()) << session.error().message;
    const auto steps = stepsOf(runToEnd(**session));
    ASSERT_EQ((*session)->summary().state, RunState::Finished) << (*session)->summary().detail;
    ASSERT_EQ(steps.size(), 20u);
    EXPECT_LT(steps.back().loss, steps.front().loss - 0.8);
}

TEST(Session, Bfloat16ComputeLearns) {
    expectLearns({"model.mixed_precision=true", "model.fp16_type=bfloat16"});
}

TEST(Session, Bfloat16RunLogsWhichBf16PathRuns) {
    TempDir dir;
    writeTinyCorpus(dir.path());
    auto options = sessionOptionsIn(dir);
    options.recordInStore = false;
    auto session = Session::create(
        tinyConfig(dir.path(), 1, {"model.mixed_precision=true", "model.fp16_type=bfloat16"}),
        options);
    ASSERT_TRUE(session.ok()) << session.error().message;
    std::string precision;
    for (const Event& e : runToEnd(**session)) {
        if (const auto* line = std::get_if<LogLine>(&e)) {
            if (line->message.rfind("precision: ", 0) == 0) precision = line->message;
        }
    }
    const bool named = precision.find("bf16 on AMX") != std::string::npos ||
                       precision.find("bf16 on AVX512-BF16") != std::string::npos ||
                       precision.find("bf16 emulated in fp32") != std::string::npos;
    EXPECT_TRUE(named) << "log line: '" << precision << "'";
}

TEST(Session, SgdWithMomentumLearns) {
    expectLearns(
        {"optimizer.optimizer_type=sgd", "optimizer.momentum=0.9", "optimizer.learning_rate=0.5"});
}

TEST(Session, DropoutAndUntiedHeadLearn) {
    expectLearns({"model.dropout_rate=0.1", "model.attention_dropout_rate=0.1",
                  "model.share_embedding_weights=false"});
}

// A μP model (2x its 16-wide base) trains through the streamed session and says what μP does.
TEST(Session, MupModelLearnsAndLogsItsMultipliers) {
    const std::vector<std::string> mup = {
        "model.mup_base_hidden_size=16", "model.mup_base_filter_size=32",
        "model.embeddings_scale=10", "model.scale_qk_dot_by_d=true",
        "optimizer.learning_rate=0.01"};
    expectLearns(mup);
    TempDir dir;
    writeTinyCorpus(dir.path());
    auto options = sessionOptionsIn(dir);
    options.recordInStore = false;
    auto session = Session::create(tinyConfig(dir.path(), 1, mup), options);
    ASSERT_TRUE(session.ok()) << session.error().message;
    bool sawMup = false;
    for (const auto& e : runToEnd(**session))
        if (const auto* line = std::get_if<LogLine>(&e))
            sawMup = sawMup || line->message.find(
                                   "muP: width multiplier m = 2 (base 16), MLP "
                                   "m_ffn = 2") != std::string::npos;
    EXPECT_TRUE(sawMup);
}

TEST(Session, SeparateEvalCorpusIsUsedWhole) {
    TempDir dir;
    writeTinyCorpus(dir.path());
    std::filesystem::create_directories(dir.path() / "held-out");
    {
        std::ofstream out(dir.path() / "held-out" / "eval.txt");
        for (int i = 0; i < 40; ++i) out << "a lazy dog sleeps under the quick brown fox.\n";
    }
    auto options = sessionOptionsIn(dir);
    options.recordInStore = false;
    auto session = Session::create(
        tinyConfig(dir.path(), 5, {"eval_input.data_dir=" + (dir.path() / "held-out").string()}),
        options);
    ASSERT_TRUE(session.ok()) << session.error().message;
    runToEnd(**session);
    EXPECT_EQ((*session)->summary().state, RunState::Finished) << (*session)->summary().detail;
    EXPECT_TRUE(std::isfinite((*session)->summary().finalEvalLoss));
}

// Bits per byte with the byte tokenizer: every target is one byte, so it is the eval loss / ln 2
// exactly; the step events, the summary and the store's eval_bpb metric all carry it.
TEST(Session, EvalBitsPerByteOfAByteRunIsTheLossOverLn2) {
    TempDir dir;
    writeTinyCorpus(dir.path());
    auto session = Session::create(tinyConfig(dir.path(), 10), sessionOptionsIn(dir));
    ASSERT_TRUE(session.ok()) << session.error().message;
    const auto steps = stepsOf(runToEnd(**session));
    const RunSummary& summary = (*session)->summary();
    ASSERT_EQ(summary.state, RunState::Finished) << summary.detail;
    ASSERT_EQ(steps.size(), 10u);
    ASSERT_TRUE(std::isfinite(steps[4].evalLoss));
    EXPECT_EQ(steps[4].evalBitsPerByte, steps[4].evalLoss / std::numbers::ln2);
    EXPECT_TRUE(std::isnan(steps[3].evalBitsPerByte));
    EXPECT_EQ(summary.finalEvalBitsPerByte, summary.finalEvalLoss / std::numbers::ln2);
    auto store = store::RunStore::open(dir.path() / "runs.sqlite");
    ASSERT_TRUE(store.ok());
    auto bpb = (*store)->metrics(summary.runId, "eval_bpb");
    ASSERT_TRUE(bpb.ok());
    ASSERT_EQ(bpb->size(), 2u);  // steps 5 and 10
    EXPECT_EQ((*bpb)[1].value, summary.finalEvalBitsPerByte);
}

// Bits per byte with a trained BPE: the evaluated targets' nats over the bytes they decode to,
// counted here independently (decoding each evaluated window's targets) on an eval corpus with
// multi-byte UTF-8.
TEST(Session, EvalBitsPerByteOfABpeRunCountsTheBytesItsTargetsDecodeTo) {
    TempDir dir;
    writeTinyCorpus(dir.path());
    std::filesystem::create_directories(dir.path() / "held-out");
    std::string evalText;
    for (int i = 0; i < 30; ++i)
        evalText += fmt::format("the lazy fox ({}) sleeps: Größe über café, naïve dog.\n", i);
    std::ofstream(dir.path() / "held-out" / "eval.txt") << evalText;
    auto options = sessionOptionsIn(dir);
    options.recordInStore = false;
    const int evalSteps = 3;
    auto config = tinyConfig(
        dir.path(), 5,
        {"train_input.tokenizer={type: train-bpe, vocab_size: 300}", "model.vocab_size=300",
         "eval_input.data_dir=" + (dir.path() / "held-out").string(),
         fmt::format("runconfig.eval_steps={}", evalSteps)});
    const config::Config cfg = config.config;
    auto session = Session::create(std::move(config), options);
    ASSERT_TRUE(session.ok()) << session.error().message;
    const auto steps = stepsOf(runToEnd(**session));
    const RunSummary& summary = (*session)->summary();
    ASSERT_EQ(summary.state, RunState::Finished) << summary.detail;
    ASSERT_TRUE(std::isfinite(summary.finalEvalLoss));

    // The same tokenizer (the session's cached copy), the eval windows of data/dataset.h.
    std::ostringstream corpus;
    corpus << std::ifstream(dir.path() / "corpus" / "text.txt").rdbuf();
    auto tok = tokenizer::makeTokenizer(cfg.trainInput.tokenizer, corpus.str(), options.cacheDir);
    ASSERT_TRUE(tok.ok()) << tok.error().message;
    const std::vector<int32_t> tokens = (*tok)->encode(evalText);
    const int B = cfg.evalInput.batchSize, T = cfg.trainInput.maxSequenceLength;
    const int64_t windows = int64_t(tokens.size() - 1) / T;
    ASSERT_GE(windows, int64_t(evalSteps) * B) << "every evaluated window is a different one";
    int64_t bytes = 0;
    for (int64_t k = 0; k < int64_t(evalSteps) * B; ++k) {
        const std::span<const int32_t> targets(tokens.data() + k * T + 1, size_t(T));
        bytes += int64_t((*tok)->decode(targets).size());
    }
    const double targetsPerByte = double(int64_t(evalSteps) * B * T) / double(bytes);
    EXPECT_LT(targetsPerByte, 0.8) << "the BPE merges several bytes into a token";
    const double expected = summary.finalEvalLoss * targetsPerByte / std::numbers::ln2;
    EXPECT_NEAR(summary.finalEvalBitsPerByte, expected, 1e-12 * expected);
    EXPECT_NEAR(steps.back().evalBitsPerByte, expected, 1e-12 * expected);
}

// Same config, same seed: the streamed cluster variants land where one system does (the
// executor tests pin the tolerance; here the whole session path is exercised end to end).
TEST(Session, SystemsMicroBatchesAndFileMemoryXTrainTheSameModel) {
    TempDir dir;
    writeTinyCorpus(dir.path());
    auto finalLoss = [&](const std::vector<std::string>& overrides) {
        auto options = sessionOptionsIn(dir);
        options.recordInStore = false;
        auto session = Session::create(tinyConfig(dir.path(), 6, overrides), options);
        EXPECT_TRUE(session.ok()) << session.error().message;
        const auto steps = stepsOf(runToEnd(**session));
        EXPECT_EQ((*session)->summary().state, RunState::Finished) << (*session)->summary().detail;
        return steps.empty() ? 0.0 : steps.back().loss;
    };
    const double one = finalLoss({});
    EXPECT_NEAR(finalLoss({"runconfig.num_csx=4"}), one, 1e-4);
    EXPECT_NEAR(finalLoss({"train_input.micro_batch_size=1"}), one, 1e-4);
    const auto store = (dir.path() / "store.memoryx").string();
    EXPECT_EQ(finalLoss({"memoryx.backing=file", "memoryx.path=" + store}), one);
    EXPECT_TRUE(std::filesystem::exists(store));
}

// The drill-down chart shows each layer's share of a step's gradient norm: one norm per
// ParameterTable layer (embeddings, blocks, head) whose squares add up to the global norm, with
// an untied head, several systems and micro-batches, and frozen layers (which count as 0, as in
// the global norm that clipping uses).
TEST(Session, PerLayerGradientNormsAddUpToTheGlobalNorm) {
    TempDir dir;
    writeTinyCorpus(dir.path());
    constexpr size_t numBlocks = 2;  // tinyConfig's num_hidden_layers
    const std::vector<std::vector<std::string>> variants = {
        {},
        {"model.share_embedding_weights=false"},
        {"runconfig.num_csx=2", "train_input.micro_batch_size=1"},
        {"optimizer.freeze_embeddings=true", "optimizer.freeze_blocks=1"}};
    for (const auto& overrides : variants) {
        const bool frozen = overrides.size() == 2 && overrides[0].starts_with("optimizer.freeze");
        auto options = sessionOptionsIn(dir);
        options.recordInStore = false;
        auto session = Session::create(tinyConfig(dir.path(), 4, overrides), options);
        ASSERT_TRUE(session.ok()) << session.error().message;
        const auto steps = stepsOf(runToEnd(**session));
        ASSERT_EQ(steps.size(), 4u);
        for (const auto& m : steps) {
            SCOPED_TRACE(::testing::Message()
                         << "step " << m.step << " variant #" << (&overrides - variants.data()));
            ASSERT_EQ(m.layerGradNorms.size(), numBlocks + 2);
            double sumSquares = 0.0;
            for (size_t l = 0; l < m.layerGradNorms.size(); ++l) {
                const double n = m.layerGradNorms[l];
                EXPECT_TRUE(std::isfinite(n));
                if (frozen && l <= 1) {
                    EXPECT_EQ(n, 0.0) << "frozen layer " << l;  // embeddings and h.0
                } else {
                    EXPECT_GT(n, 0.0) << "layer " << l;
                }
                sumSquares += n * n;
            }
            EXPECT_GT(m.gradNorm, 0.0);
            EXPECT_NEAR(std::sqrt(sumSquares), m.gradNorm, 1e-5 * m.gradNorm);
        }
    }
}

TEST(Session, StepThatCannotFitTheWaferIsRefusedWithTheNumbers) {
    TempDir dir;
    writeTinyCorpus(dir.path());
    auto options = sessionOptionsIn(dir);
    auto session = Session::create(tinyConfig(dir.path(), 5, {"wafer.sram_bytes=200000"}), options);
    ASSERT_TRUE(session.ok());
    runToEnd(**session);
    const auto& summary = (*session)->summary();
    EXPECT_EQ(summary.state, RunState::Failed);
    EXPECT_NE(summary.detail.find("max_sequence_length"), std::string::npos) << summary.detail;
    EXPECT_NE(summary.detail.find("micro_batch_size 1 does not fit"), std::string::npos);
    EXPECT_FALSE(std::filesystem::exists(dir.path() / "runs.sqlite"));  // nothing recorded
}

// The Config tab checks the fit live with wafer::fitOnWafer; the run must refuse with the very
// same message, or the two would drift apart.
TEST(Session, WaferFitCheckGivesTheMessageTheRunFailsWith) {
    TempDir dir;
    writeTinyCorpus(dir.path());
    for (const std::string& override :
         {std::string("wafer.sram_bytes=200000"), std::string("wafer.spec=teaching16")}) {
        auto options = sessionOptionsIn(dir);
        options.recordInStore = false;
        config::LoadedConfig loaded = tinyConfig(dir.path(), 2, {override});
        const auto checked = wafer::fitOnWafer(loaded.config);
        ASSERT_FALSE(checked.ok()) << override;
        auto session = Session::create(std::move(loaded), options);
        ASSERT_TRUE(session.ok()) << session.error().message;
        runToEnd(**session);
        EXPECT_EQ((*session)->summary().state, RunState::Failed);
        EXPECT_EQ((*session)->summary().detail, checked.error().message) << override;
    }
    // The tiny model fits the default wafer: the check passes with the micro-batch it trains.
    const auto fits = wafer::fitOnWafer(tinyConfig(dir.path(), 2).config);
    ASSERT_TRUE(fits.ok()) << fits.error().message;
    EXPECT_EQ(fits->microBatch, 4);
}

// Issue 14: the weight buffer holds what streams in, 2-byte bf16 weights in bf16 mode, so the
// wafer's SRAM left for activations grows by half the fp32 buffer; the check and the config's
// facts agree on the buffer's size.
TEST(Session, Bf16WeightBufferIsHalfAndLeavesMoreRoomOnTheWafer) {
    TempDir dir;
    const std::vector<std::string> bf16 = {"model.mixed_precision=true",
                                           "model.fp16_type=bfloat16"};
    auto with = [&](std::vector<std::string> overrides, const std::vector<std::string>& more) {
        overrides.insert(overrides.end(), more.begin(), more.end());
        return tinyConfig(dir.path(), 2, overrides).config;
    };
    const auto facts32 = model::deriveFacts(with({}, {}));
    const auto facts16 = model::deriveFacts(with(bf16, {}));
    EXPECT_EQ(facts32.streamBytesPerWeight, 4);
    EXPECT_EQ(facts16.streamBytesPerWeight, 2);
    EXPECT_EQ(facts32.waferBufferBytes, 2 * facts16.waferBufferBytes);
    EXPECT_EQ(facts32.streamedBytesPerPass, 2 * facts16.streamedBytesPerPass);
    const model::ParameterTable table(model::GptShape::fromConfig(with({}, {}).model));
    EXPECT_EQ(facts16.waferBufferBytes, 2 * 2 * int64_t(model::largestStreamedVisit(table)));

    // SRAM for the bf16 buffer and one sequence's activations, but not for the fp32 buffer.
    const auto fit32 = wafer::fitOnWafer(with({}, {}));
    ASSERT_TRUE(fit32.ok()) << fit32.error().message;
    const int64_t sram = facts16.waferBufferBytes + fit32->bytesPerSequence;
    const std::string sramOverride = "wafer.sram_bytes=" + std::to_string(sram);
    const auto tight32 = wafer::fitOnWafer(with({sramOverride}, {}));
    ASSERT_FALSE(tight32.ok());
    EXPECT_NE(tight32.error().message.find("After the weight buffer (" +
                                           ws::formatBytes(double(facts32.waferBufferBytes)) + ")"),
              std::string::npos)
        << tight32.error().message;
    const auto tight16 = wafer::fitOnWafer(with({sramOverride}, bf16));
    ASSERT_TRUE(tight16.ok()) << tight16.error().message;
    EXPECT_EQ(tight16->microBatch, 1);
}

TEST(Session, MisspeltWaferSpecIsRefusedWithTheSpecItMeant) {
    TempDir dir;
    // Even with wafer.sram_bytes replacing the spec's SRAM, a spec that does not exist is an error.
    for (const auto& overrides :
         {std::vector<std::string>{"wafer.spec=teaching16"},
          std::vector<std::string>{"wafer.spec=teaching16", "wafer.sram_bytes=100000000"}}) {
        const auto checked = wafer::fitOnWafer(tinyConfig(dir.path(), 2, overrides).config);
        ASSERT_FALSE(checked.ok());
        EXPECT_NE(checked.error().message.find("wafer.spec: no wafer spec named \"teaching16\""),
                  std::string::npos)
            << checked.error().message;
        EXPECT_NE(checked.error().message.find("did you mean \"teaching-16x16\"?"),
                  std::string::npos)
            << checked.error().message;
    }
}

// Issue 16: a LoRA fine-tune from saved base weights. With no steps the adapted model is the base
// (B = 0): the same final evaluation bit for bit. Trained, only the adapters change (every base
// tensor in the written weights is the base's, byte for byte), the eval loss falls, and two
// systems train what one does.
TEST(Session, LoraFineTuneTrainsOnlyTheAdapters) {
    TempDir dir;
    writeTinyCorpus(dir.path());
    auto options = sessionOptionsIn(dir);
    options.recordInStore = false;
    auto base = Session::create(tinyConfig(dir.path(), 10), options);
    ASSERT_TRUE(base.ok());
    runToEnd(**base);
    const double baseEval = (*base)->summary().finalEvalLoss;
    const auto weights = dir.path() / "model" / "model.safetensors";
    auto lora = [&](int steps, const std::string& folder, std::vector<std::string> more = {}) {
        std::vector<std::string> overrides = {
            "runconfig.checkpoint_path=" + weights.string(), "lora.rank=4",
            "lora.targets=[c_attn, attn.c_proj, c_fc, mlp.c_proj]", "optimizer.learning_rate=0.01"};
        overrides.insert(overrides.end(), more.begin(), more.end());
        auto config = tinyConfig(dir.path(), steps, overrides);
        config.config.runconfig.modelDir = (dir.path() / folder).string();
        auto session = Session::create(std::move(config), options);
        EXPECT_TRUE(session.ok()) << session.error().message;
        const auto steps_ = stepsOf(runToEnd(**session));
        EXPECT_EQ((*session)->summary().state, RunState::Finished) << (*session)->summary().detail;
        return std::pair{(*session)->summary().finalEvalLoss,
                         steps_.empty() ? 0.0 : steps_.back().loss};
    };
    EXPECT_EQ(lora(0, "lora0").first, baseEval);
    const auto [trainedEval, lastLoss] = lora(10, "lora1");
    EXPECT_LT(trainedEval, baseEval);

    const auto loaded = config::parseConfig(tinyConfigYaml(10), "tiny.yaml", dir.path());
    ASSERT_TRUE(loaded.ok());
    model::GptShape shape = model::GptShape::fromConfig(loaded->config.model);
    const model::ParameterTable baseTable(shape);
    shape.applyLora(
        config::LoraConfig{.rank = 4, .targets = {"c_attn", "attn.c_proj", "c_fc", "mlp.c_proj"}});
    const model::ParameterTable table(shape);
    std::vector<float> before(baseTable.totalSize()), after(table.totalSize());
    ASSERT_TRUE(modelio::loadWeights(weights, baseTable, before.data()).ok());
    const Status read =
        modelio::loadWeights(dir.path() / "lora1" / "model.safetensors", table, after.data());
    ASSERT_TRUE(read.ok()) << read.error().message;
    for (const model::TensorSlice& t : baseTable.tensors()) {
        const model::TensorSlice* same = table.find(t.name);
        ASSERT_NE(same, nullptr);
        EXPECT_EQ(std::memcmp(before.data() + t.offset, after.data() + same->offset,
                              t.size * sizeof(float)),
                  0)
            << t.name;
    }
    double bNorm = 0;
    for (const model::TensorSlice& t : table.tensors())
        if (t.name.find("lora_B") != std::string::npos)
            for (size_t i = 0; i < t.size; ++i) bNorm += std::abs(after[t.offset + i]);
    EXPECT_GT(bNorm, 0.0);

    EXPECT_NEAR(lora(10, "lora2", {"runconfig.num_csx=2"}).second, lastLoss, 1e-4);
}

// Issue 14: the log says which SIMD target the element kernels run on, before any other line.
TEST(Session, FirstLogLineNamesTheSimdTarget) {
    TempDir dir;
    writeTinyCorpus(dir.path());
    auto options = sessionOptionsIn(dir);
    options.recordInStore = false;
    auto session = Session::create(tinyConfig(dir.path(), 1), options);
    ASSERT_TRUE(session.ok()) << session.error().message;
    std::string first;
    for (const auto& e : runToEnd(**session)) {
        if (const auto* line = std::get_if<LogLine>(&e); line && first.empty())
            first = line->message;
    }
    EXPECT_NE(first.find("element kernels on " + tensor::simdTargetName()), std::string::npos)
        << first;
}

TEST(Session, SmallWaferRunsMicroBatchesAutomatically) {
    TempDir dir;
    writeTinyCorpus(dir.path());
    auto options = sessionOptionsIn(dir);
    options.recordInStore = false;
    // Room for the weight buffer and about two sequences' activations.
    auto session = Session::create(tinyConfig(dir.path(), 2, {"wafer.sram_bytes=500000"}), options);
    ASSERT_TRUE(session.ok());
    auto events = runToEnd(**session);
    EXPECT_EQ((*session)->summary().state, RunState::Finished) << (*session)->summary().detail;
    bool sawMicro = false;
    for (const auto& e : events) {
        if (const auto* line = std::get_if<LogLine>(&e)) {
            if (line->message.find("micro-batch(es) of 2 sequences") != std::string::npos) {
                sawMicro = true;
            }
        }
    }
    EXPECT_TRUE(sawMicro);
}

// Issue 12, 4b: ModelZoo's eval batch (120 x 2048 tokens) was allocated whole and killed the
// process. An eval batch larger than a training micro-batch is evaluated in micro-batches of at
// most that size, with the same loss as evaluating it whole.
TEST(Session, EvalBatchLargerThanATrainingMicroBatchIsEvaluatedInMicroBatches) {
    TempDir dir;
    writeTinyCorpus(dir.path());
    auto evalLoss = [&](const std::vector<std::string>& extra, std::vector<Event>& events) {
        std::vector<std::string> overrides = {"train_input.batch_size=8",
                                              "eval_input.batch_size=8"};
        overrides.insert(overrides.end(), extra.begin(), extra.end());
        auto options = sessionOptionsIn(dir);
        options.recordInStore = false;
        // max_steps 0: the starting weights (same seed) are evaluated once at the end.
        auto session = Session::create(tinyConfig(dir.path(), 0, overrides), options);
        EXPECT_TRUE(session.ok());
        events = runToEnd(**session);
        EXPECT_EQ((*session)->summary().state, RunState::Finished) << (*session)->summary().detail;
        return (*session)->summary().finalEvalLoss;
    };
    auto logged = [](const std::vector<Event>& events, std::string_view text) {
        for (const auto& e : events)
            if (const auto* line = std::get_if<LogLine>(&e))
                if (line->message.find(text) != std::string::npos) return true;
        return false;
    };
    std::vector<Event> wholeEvents, splitEvents;
    const double whole = evalLoss({}, wholeEvents);  // the wafer takes all 8 sequences at once
    // Room for about two sequences' activations: training runs micro-batches of 2, and so does
    // the evaluation of its 8 sequences.
    const double split = evalLoss({"wafer.sram_bytes=500000"}, splitEvents);
    ASSERT_TRUE(std::isfinite(whole));
    EXPECT_NEAR(split, whole, 1e-5 * std::abs(whole));
    EXPECT_FALSE(logged(wholeEvents, "evaluation: eval_input.batch_size"));
    EXPECT_TRUE(logged(splitEvents,
                       "evaluation: eval_input.batch_size 8 in 4 micro-batches of 2 sequences"));
}

// No allocation failure escapes a run as an abort: the run ends failed with a message that says
// where memory ran out and what to lower, and what it recorded before stays.
TEST(Session, OutOfMemoryInsideARunEndsItFailedAndKeepsMetricsAndCheckpoints) {
    TempDir dir;
    writeTinyCorpus(dir.path());
    auto options = sessionOptionsIn(dir);
    options.failAllocationAtStep = 3;
    auto session =
        Session::create(tinyConfig(dir.path(), 5, {"runconfig.checkpoint_steps=2"}), options);
    ASSERT_TRUE(session.ok()) << session.error().message;
    const auto events = runToEnd(**session);
    const RunSummary& summary = (*session)->summary();
    ASSERT_EQ(summary.state, RunState::Failed);
    EXPECT_EQ(summary.detail.rfind("out of memory while training step 3: this computer could not "
                                   "allocate it. The run stopped here; its metrics and "
                                   "checkpoints so far are kept. Lower train_input.batch_size",
                                   0),
              0u)
        << summary.detail;
    EXPECT_EQ(stepsOf(events).size(), 2u);

    auto store = store::RunStore::open(dir.path() / "runs.sqlite");
    ASSERT_TRUE(store.ok());
    auto run = (*store)->getRun(summary.runId);
    ASSERT_TRUE(run.ok());
    EXPECT_EQ(run->status, "failed");
    auto losses = (*store)->metrics(summary.runId, "loss");
    ASSERT_TRUE(losses.ok());
    ASSERT_EQ(losses->size(), 2u);  // steps 1 and 2
    EXPECT_EQ(losses->back().step, 2);
    EXPECT_TRUE(std::filesystem::is_directory(dir.path() / "model" / "checkpoint-2"));
}

TEST(Session, PublishesStreamingSpans) {
    TempDir dir;
    writeTinyCorpus(dir.path());
    auto options = sessionOptionsIn(dir);
    options.recordInStore = false;
    auto session = Session::create(tinyConfig(dir.path(), 1), options);
    ASSERT_TRUE(session.ok());
    int streamIns = 0, updates = 0;
    for (const auto& e : runToEnd(**session)) {
        if (const auto* span = std::get_if<streaming::Span>(&e)) {
            streamIns += span->kind == streaming::SpanKind::StreamIn;
            updates += span->kind == streaming::SpanKind::Update;
        }
    }
    EXPECT_EQ(updates, 4);    // embeddings, 2 blocks, head
    EXPECT_EQ(streamIns, 7);  // 4 forward + 3 backward (the embedding backward needs no weights)
}

// The teaching "Step Layer": while paused, each stepOnePhase() lets exactly one layer visit (one
// forward or backward compute span) through, in the executor's order, and the run stays paused;
// Continue then runs on.
TEST(Session, PausedRunStepsOneLayerPhaseAtATime) {
    TempDir dir;
    writeTinyCorpus(dir.path());
    auto options = sessionOptionsIn(dir);
    options.recordInStore = false;
    auto session = Session::create(tinyConfig(dir.path(), 100000), options);
    ASSERT_TRUE(session.ok()) << session.error().message;
    Session& s = **session;
    s.stepOnePhase();   // not paused: ignored
    s.setPaused(true);  // pauses at the first layer visit
    s.start();
    std::vector<streaming::Span> computed;
    // Moves the compute spans out of the queue (other events, such as the loader's prefetch
    // spans, are not layer phases).
    auto takeCompute = [&] {
        std::vector<Event> events;
        s.events().drain(events);
        for (const auto& e : events)
            if (const auto* span = std::get_if<streaming::Span>(&e))
                if (span->kind == streaming::SpanKind::Forward ||
                    span->kind == streaming::SpanKind::Backward)
                    computed.push_back(*span);
    };
    // The worker publishes a layer's compute span before it reaches the next pause point, and
    // runs no layer while it stands there: once it has stopped `n` times, every phase it ran is
    // in the queue and no other can follow until the next command. No sleep decides this.
    auto waitForPauseStop = [&](int64_t n) {
        return ws::testing::waitUntil(std::chrono::seconds(30),
                                      [&] { return s.pauseStops() >= n; });
    };
    ASSERT_TRUE(waitForPauseStop(1)) << "never paused; state " << runStateName(s.state());
    EXPECT_EQ(s.state(), RunState::Paused);
    takeCompute();
    EXPECT_TRUE(computed.empty()) << "paused before the first layer";

    // Embeddings, 2 blocks and the head forward, then the head's backward.
    const std::vector<std::pair<int, bool>> expected = {
        {0, false}, {1, false}, {2, false}, {3, false}, {3, true}};
    for (size_t i = 0; i < expected.size(); ++i) {
        s.stepOnePhase();
        ASSERT_TRUE(waitForPauseStop(int64_t(i) + 2)) << "no pause after phase " << i;
        takeCompute();
        ASSERT_EQ(computed.size(), i + 1) << "one phase per step command";
        EXPECT_EQ(s.pauseStops(), int64_t(i) + 2) << "the run must pause again after one phase";
        EXPECT_EQ(computed[i].layer, expected[i].first) << i;
        EXPECT_EQ(computed[i].kind == streaming::SpanKind::Backward, expected[i].second) << i;
        EXPECT_EQ(computed[i].step, 0);  // the first step (0-based)
        EXPECT_EQ(s.state(), RunState::Paused);
    }
    s.setPaused(false);  // Continue: runs on through the step and beyond
    const bool ranOn = ws::testing::waitUntil(std::chrono::seconds(30), [&] {
        takeCompute();
        return computed.back().step >= 3;
    });
    EXPECT_TRUE(ranOn) << "Continue did not reach step 3; last span of step "
                       << computed.back().step;
    s.requestStop();
    s.wait();
    EXPECT_EQ(s.summary().state, RunState::Stopped);
}

TEST(Session, UnwritableMemoryXPathIsAClearError) {
    TempDir dir;
    writeTinyCorpus(dir.path());
    auto options = sessionOptionsIn(dir);
    options.recordInStore = false;
    auto session = Session::create(
        tinyConfig(dir.path(), 2,
                   {"memoryx.backing=file",
                    "memoryx.path=" + (dir.path() / "missing" / "store.memoryx").string()}),
        options);
    ASSERT_TRUE(session.ok());
    runToEnd(**session);
    EXPECT_EQ((*session)->summary().state, RunState::Failed);
    EXPECT_NE((*session)->summary().detail.find("memoryx.path"), std::string::npos);
}

TEST(Session, MissingCorpusFailsWithThePath) {
    TempDir dir;  // no corpus written
    auto options = sessionOptionsIn(dir);
    auto session = Session::create(tinyConfig(dir.path(), 5), options);
    ASSERT_TRUE(session.ok());
    runToEnd(**session);
    EXPECT_EQ((*session)->summary().state, RunState::Failed);
    EXPECT_NE((*session)->summary().detail.find("corpus"), std::string::npos)
        << (*session)->summary().detail;
}

TEST(Session, InvalidConfigIsRefusedBeforeAnythingRuns) {
    TempDir dir;
    writeTinyCorpus(dir.path());
    auto session =
        Session::create(tinyConfig(dir.path(), 5, {"model.num_heads=3"}), sessionOptionsIn(dir));
    ASSERT_FALSE(session.ok());
    EXPECT_NE(session.error().message.find("num_heads"), std::string::npos)
        << session.error().message;
    EXPECT_FALSE(std::filesystem::exists(dir.path() / "runs.sqlite"));
}

}  // namespace
}  // namespace ws::session
