// SPDX-License-Identifier: GPL-3.0-or-later
// Fine-tuning on instruction and chat records: the plan reads them as the run does (format,
// records, examples, rows, steps per epoch, the chat template), refuses records mixed with text,
// and grows the vocabulary for the template's special tokens the way Hugging Face's
// resize_token_embeddings does (the base's rows bit for bit, each new row their mean). Under LoRA
// the new rows train beside the adapters (PEFT's trainable_token_indices) while every other base
// weight stays bit-identical, and a resumed run ends where an uninterrupted one does.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>

#include "../session/session_test_util.h"
#include "engine/finetune/finetune_plan.h"
#include "engine/modelio/checkpoints.h"
#include "engine/modelio/load_model.h"
#include "engine/optim/optimizer.h"
#include "engine/session/param_groups.h"
#include "engine/session/resume.h"
#include "engine/session/session.h"
#include "support/test_shapes.h"

namespace ws::finetune {
namespace {

namespace fs = std::filesystem;
using session::testing::TempDir;

constexpr int kBaseVocab = 256;  // tinyConfig's byte tokenizer; ChatML adds ids 256 and 257
constexpr int C = 32;            // tinyConfig's hidden size

TEST(Optimizer, FrozenPrefixStaysBitIdenticalAndLeavesTheNorm) {
    config::OptimizerConfig c;
    c.weightDecay = 0.1;
    std::vector<float> params = {-0.0f, 1.5f, -2.0f, 0.25f};
    const std::vector<float> grads = {3.0f, 4.0f, 12.0f, 5.0f};
    optim::ParamGroup g{0, 4, true, 1.0, false};
    g.frozenPrefix = 2;
    optim::Optimizer opt(c, {g}, 4, optim::GradientLayout::Trainable);
    EXPECT_DOUBLE_EQ(opt.gradientNorm(grads.data()), 13.0);  // 12 and 5 only
    const std::vector<double> halves = opt.rangeGradientNorms(grads.data(), {{{0, 2}, {2, 2}}});
    EXPECT_DOUBLE_EQ(halves[0], 0.0);
    EXPECT_DOUBLE_EQ(halves[1], 13.0);
    const std::vector<float> before = params;
    for (int step = 1; step <= 3; ++step) opt.update(params.data(), grads.data(), 1e-2, 1.0, step);
    EXPECT_EQ(std::memcmp(params.data(), before.data(), 2 * sizeof(float)), 0);
    EXPECT_TRUE(std::signbit(params[0]));
    EXPECT_NE(params[2], before[2]);
    EXPECT_NE(params[3], before[3]);
}

TEST(ParamGroups, TrainableTokensUnderLoraTrainTheirRowsOnly) {
    config::ModelConfig m = ws::testing::modelConfig(258, 32, 2, 2, 64, 64);
    model::GptShape shape = model::GptShape::fromConfig(m);
    config::LoraConfig lora;
    lora.rank = 2;
    lora.trainableTokensFrom = 256;
    shape.applyLora(lora);
    const model::ParameterTable table(shape);
    size_t trained = 0;
    for (const auto& g : session::parameterGroups(table, {})) {
        if (g.frozen) continue;
        trained += g.size - g.frozenPrefix;
    }
    size_t adapters = 0;
    for (const auto& t : table.tensors())
        if (t.name.find(".lora_") != std::string::npos) adapters += t.size;
    EXPECT_EQ(trained, adapters + 2 * 32);  // two wte rows (tied head)
    EXPECT_EQ(model::trainableParameterCount(table, {}), trained);
}

// A base trained by a real session on the byte tokenizer, and chat records to fine-tune it on.
class FinetuneRecords : public ::testing::Test {
protected:
    void SetUp() override {
        ASSERT_NO_FATAL_FAILURE(
            session::testing::trainTinyBase(m_tmp.path(), 10));  // into m_tmp / "model"
        std::ofstream records(m_tmp / "chat.jsonl");
        for (int i = 0; i < 40; ++i)
            records << R"({"messages": [{"role": "user", "content": "add )" << i
                    << R"("}, {"role": "assistant", "content": ")" << i + 1 << R"("}]})"
                    << "\n";
        std::ofstream(m_tmp / "new.txt") << "a wafer streams weights layer by layer\n";
    }

    FinetuneRequest request(std::vector<std::string> overrides, int loraRank = 0) const {
        FinetuneRequest r;
        r.base = (m_tmp / "model").string();
        r.dataFiles = {(m_tmp / "chat.jsonl").string()};
        r.loraRank = loraRank;
        r.overrides = std::move(overrides);
        return r;
    }

    session::RunSummary train(config::LoadedConfig config, fs::path resumeFrom = {}) const {
        session::SessionOptions o;
        o.recordInStore = false;
        o.cacheDir = m_tmp / "cache";
        o.resumeFrom = std::move(resumeFrom);
        auto s = session::Session::create(std::move(config), o);
        EXPECT_TRUE(s.ok()) << s.error().message;
        if (!s.ok()) return {};
        (*s)->run();
        return (*s)->summary();
    }

    TempDir m_tmp{"finetune_records"};
};

TEST_F(FinetuneRecords, PlanReadsTheRecordsAndGrowsTheVocabulary) {
    auto plan = planFinetune(request({}));
    ASSERT_TRUE(plan.ok()) << plan.error().message;
    const FinetuneSummary& s = plan->summary;
    EXPECT_TRUE(s.records);
    EXPECT_EQ(s.recordFormat, "OpenAI messages");
    EXPECT_NE(s.formatEvidence.find("messages"), std::string::npos) << s.formatEvidence;
    EXPECT_EQ(s.chatTemplate, "chatml");
    EXPECT_EQ(s.trainRecords + s.heldOutRecords, 40);
    EXPECT_EQ(s.heldOutRecords, 4);  // kRecordsHeldOut of them
    EXPECT_EQ(s.examples, s.trainRecords);
    EXPECT_GT(s.trainedTokens, 0);
    EXPECT_LT(s.trainedTokens, s.trainTokens);  // the answers only
    EXPECT_EQ(s.truncated, 0);
    EXPECT_GT(s.trainRows, 0);
    EXPECT_EQ(s.stepsPerEpoch, (s.trainRows + s.batchSize - 1) / s.batchSize);
    EXPECT_EQ(s.maxSteps, std::max<int64_t>(kMinSteps, kDefaultEpochs * s.stepsPerEpoch));
    EXPECT_NE(explainSteps(s).find("training rows ÷ 4 rows per step"), std::string::npos)
        << explainSteps(s);
    EXPECT_EQ(s.baseVocab, kBaseVocab);
    EXPECT_EQ(s.vocab, kBaseVocab + 2);
    EXPECT_EQ(s.addedTokens, "chatml's <|im_start|>, <|im_end|>");
    EXPECT_TRUE(s.samplePrompt.starts_with("add ")) << s.samplePrompt;
    const config::Config& c = plan->config.config;
    EXPECT_EQ(c.model.vocabSize, kBaseVocab + 2);
    EXPECT_EQ(c.trainInput.format, "messages");
    EXPECT_EQ(c.trainInput.chatTemplate, "chatml");
    EXPECT_FALSE(c.lora.has_value());

    auto lora = planFinetune(request({}, 4));
    ASSERT_TRUE(lora.ok()) << lora.error().message;
    ASSERT_TRUE(lora->config.config.lora.has_value());
    EXPECT_EQ(lora->config.config.lora->trainableTokensFrom, kBaseVocab);
    // Adapters plus the two new rows of the tied embedding.
    EXPECT_EQ(lora->summary.parameters - lora->summary.frozenParameters,
              2 * 4 * (128 + 64 + 96 + 96) + 2 * C);
}

TEST_F(FinetuneRecords, RecordsMixedWithTextAreRefused) {
    FinetuneRequest r = request({});
    r.dataFiles.push_back((m_tmp / "new.txt").string());
    auto plan = planFinetune(r);
    ASSERT_FALSE(plan.ok());
    EXPECT_NE(plan.error().message.find("chat.jsonl holds instruction or chat records"),
              std::string::npos)
        << plan.error().message;
    EXPECT_NE(plan.error().message.find("new.txt is plain text"), std::string::npos);
}

// A full fine-tune at learning rate 0 saves exactly its starting weights: the grown table.
TEST_F(FinetuneRecords, GrowthCopiesTheBaseRowsAndMeanInitialisesTheNewOnes) {
    auto plan = planFinetune(request({"runconfig.max_steps=1", "optimizer.learning_rate=0",
                                      "runconfig.model_dir=" + (m_tmp / "grown").string()}));
    ASSERT_TRUE(plan.ok()) << plan.error().message;
    const session::RunSummary run = train(std::move(plan->config));
    ASSERT_EQ(run.state, session::RunState::Finished) << run.detail;
    auto base = modelio::loadModel(m_tmp / "model");
    auto grown = modelio::loadModel(m_tmp / "grown");
    ASSERT_TRUE(base.ok() && grown.ok());
    EXPECT_EQ(grown->config.model.vocabSize, kBaseVocab + 2);
    const model::ParameterTable baseTable(base->shape), table(grown->shape);
    const model::TensorSlice& oldWte = *baseTable.find("wte.weight");
    const model::TensorSlice& wte = *table.find("wte.weight");
    const float* old = base->params.data() + oldWte.offset;
    const float* now = grown->params.data() + wte.offset;
    EXPECT_EQ(std::memcmp(old, now, size_t(kBaseVocab) * C * sizeof(float)), 0);
    for (int c = 0; c < C; ++c) {
        double sum = 0.0;
        for (int r = 0; r < kBaseVocab; ++r) sum += old[r * C + c];
        const float mean = float(sum / kBaseVocab);
        EXPECT_EQ(now[kBaseVocab * C + c], mean) << "column " << c;
        EXPECT_EQ(now[(kBaseVocab + 1) * C + c], mean) << "column " << c;
    }
    // The saved tokenizer knows the added tokens.
    ASSERT_NE(grown->tokenizer, nullptr);
    EXPECT_EQ(grown->tokenizer->vocabSize(), kBaseVocab + 2);
    EXPECT_EQ(grown->tokenizer->encode("<|im_end|>"), std::vector<int32_t>{kBaseVocab + 1});
}

// LoRA: the adapters and the two new rows train; every other base weight stays bit-identical.
// Stopped at step 3 and resumed, the run ends exactly where the uninterrupted one does.
TEST_F(FinetuneRecords, LoraTrainsTheNewRowsOnlyAndResumesExactly) {
    auto plan = planFinetune(request({"runconfig.max_steps=6", "runconfig.checkpoint_steps=3",
                                      "runconfig.model_dir=" + (m_tmp / "whole").string()},
                                     4));
    ASSERT_TRUE(plan.ok()) << plan.error().message;
    const session::RunSummary whole = train(std::move(plan->config));
    ASSERT_EQ(whole.state, session::RunState::Finished) << whole.detail;

    auto base = modelio::loadModel(m_tmp / "model");
    auto tuned = modelio::loadModel(m_tmp / "whole");
    ASSERT_TRUE(base.ok() && tuned.ok());
    const model::ParameterTable baseTable(base->shape), table(tuned->shape);
    int same = 0, adaptersChanged = 0;
    for (const auto& t : table.tensors()) {
        const float* now = tuned->params.data() + t.offset;
        if (t.name.find(".lora_") != std::string::npos) {
            adaptersChanged += t.name.find("lora_B") != std::string::npos &&
                               std::any_of(now, now + t.size, [](float v) { return v != 0.0f; });
            continue;
        }
        const model::TensorSlice& b = *baseTable.find(t.name);
        const float* old = base->params.data() + b.offset;
        EXPECT_EQ(std::memcmp(old, now, b.size * sizeof(float)), 0) << t.name;
        ++same;
        if (t.name == "wte.weight") {
            ASSERT_EQ(t.size, b.size + 2 * C);
            double meanRow = 0.0;  // the new rows moved off their start (the mean)
            for (int r = 0; r < kBaseVocab; ++r) meanRow += old[r * C];
            meanRow /= kBaseVocab;
            EXPECT_NE(now[kBaseVocab * C], float(meanRow));
            EXPECT_NE(
                std::memcmp(now + kBaseVocab * C, now + (kBaseVocab + 1) * C, C * sizeof(float)),
                0);  // and apart: <|im_start|> and <|im_end|> differ now
        }
    }
    EXPECT_EQ(same, int(baseTable.tensors().size()));
    EXPECT_GT(adaptersChanged, 0);

    const fs::path checkpoint = m_tmp / "whole" / "checkpoint-3";
    auto resumed =
        session::resumeConfig(checkpoint, {"runconfig.model_dir=" + (m_tmp / "resumed").string()});
    ASSERT_TRUE(resumed.ok()) << resumed.error().message;
    const session::RunSummary second = train(std::move(resumed).value(), checkpoint);
    ASSERT_EQ(second.state, session::RunState::Finished) << second.detail;
    session::testing::expectSameTensors(m_tmp / "whole" / modelio::kModelFile,
                                        m_tmp / "resumed" / modelio::kModelFile);
    session::testing::expectSameTensors(
        m_tmp / "whole" / "checkpoint-6" / modelio::kOptimizerFile,
        m_tmp / "resumed" / "checkpoint-6" / modelio::kOptimizerFile);
}

}  // namespace
}  // namespace ws::finetune
