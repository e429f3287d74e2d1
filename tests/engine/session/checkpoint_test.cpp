// SPDX-License-Identifier: GPL-3.0-or-later
// Checkpoints and exact resume: the folder layout and cadence, bit-identical continuation after a
// clean stop, and the refusals (damaged, truncated, foreign files; checksum and config
// mismatches) that leave everything as it was. The SIGKILL case runs the real CLI in
// tests/app/cli_test.sh (case resume_after_sigkill).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>

#include "engine/core/hash.h"
#include "engine/fileio/safetensors.h"
#include "engine/modelio/checkpoints.h"
#include "engine/session/folder_lock.h"
#include "engine/session/resume.h"
#include "engine/session/session.h"
#include "engine/store/run_store.h"
#include "session_test_util.h"
#include "support/file_size_limit.h"

namespace ws::session {
namespace {
using namespace testing;
using namespace ws::modelio;  // the checkpoint folder and weights files
namespace fs = std::filesystem;

// Dropout, shuffled windows and a warmup + cosine schedule: every piece of state a resume must
// restore changes the trajectory here.
const std::vector<std::string> kRichOverrides = {
    "model.dropout_rate=0.1",
    "train_input.shuffle=true",
    "train_input.shuffle_seed=5",
    "optimizer.learning_rate=[{scheduler: Linear, initial_learning_rate: 0.0, "
    "end_learning_rate: 0.003, total_iters: 4}, {scheduler: Cosine, initial_learning_rate: "
    "0.003, end_learning_rate: 0.0003, total_iters: 0}]",
    "runconfig.checkpoint_steps=3",
};

// Llama-family blocks: rotary, RMSNorm, SwiGLU, grouped KV heads (the count set by each test), no
// biases, untied head.
const std::vector<std::string> kLlamaBlocks = {"model.position_embedding_type=rotary",
                                               "model.norm_type=rmsnorm",
                                               "model.nonlinearity=swiglu",
                                               "model.attention_module=multiquery_attention",
                                               "model.use_projection_bias_in_attention=false",
                                               "model.use_ffn_bias_in_attention=false",
                                               "model.use_ffn_bias=false",
                                               "model.share_embedding_weights=false"};

config::LoadedConfig richConfig(const TempDir& dir, int maxSteps, const std::string& modelDir,
                                std::vector<std::string> extra = {}) {
    std::vector<std::string> overrides = kRichOverrides;
    overrides.insert(overrides.end(), extra.begin(), extra.end());
    auto c = tinyConfig(dir.path(), maxSteps, overrides);
    c.config.runconfig.modelDir = (dir.path() / modelDir).string();
    return c;
}

std::string readBytes(const fs::path& file) {
    // Not istreambuf_iterator: GCC 12 at -O3 reports a false -Wnull-dereference inside it.
    std::ifstream in(file, std::ios::binary | std::ios::ate);
    std::string bytes(static_cast<size_t>(std::max<std::streamoff>(in.tellg(), 0)), '\0');
    in.seekg(0);
    in.read(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    return bytes;
}

void writeBytes(const fs::path& file, const std::string& bytes) {
    std::ofstream(file, std::ios::binary | std::ios::trunc) << bytes;
}

// Trains the rich config with `extra` for 6 steps in dir/whole, resumes a second run in
// dir/resumed from its checkpoint-3, and expects the final weights and the step-6 optimizer state
// to be the same bit for bit. *kept receives the config the checkpoint kept (what the resumed run
// trained), for the caller's checks of the section it is about.
void expectResumeFromStep3IsExact(const TempDir& dir, const std::vector<std::string>& extra,
                                  config::Config* kept) {
    const RunSummary whole = train(richConfig(dir, 6, "whole", extra), unnamedOptionsIn(dir));
    ASSERT_EQ(whole.state, RunState::Finished) << whole.detail;
    auto resuming = unnamedOptionsIn(dir);
    resuming.resumeFrom = dir.path() / "whole" / "checkpoint-3";
    auto config = resumeConfig(resuming.resumeFrom,
                               {"runconfig.model_dir=" + (dir.path() / "resumed").string()});
    ASSERT_TRUE(config.ok()) << config.error().message;
    *kept = config->config;
    const RunSummary resumed = train(std::move(config).value(), resuming);
    ASSERT_EQ(resumed.state, RunState::Finished) << resumed.detail;
    expectSameTensors(dir.path() / "whole" / kModelFile, dir.path() / "resumed" / kModelFile);
    expectSameTensors(dir.path() / "whole" / "checkpoint-6" / kOptimizerFile,
                      dir.path() / "resumed" / "checkpoint-6" / kOptimizerFile);
}

TEST(Checkpoint, CleanStopAndResumeEqualsAnUninterruptedRunBitForBit) {
    TempDir dir("ckpt_exact");
    writeTinyCorpus(dir.path());
    constexpr int kSteps = 10;
    const RunSummary whole = train(richConfig(dir, kSteps, "whole"), unnamedOptionsIn(dir));
    ASSERT_EQ(whole.state, RunState::Finished) << whole.detail;

    auto stopping = unnamedOptionsIn(dir);
    stopping.stopAfterStep = 4;
    const RunSummary first = train(richConfig(dir, kSteps, "split"), stopping);
    ASSERT_EQ(first.state, RunState::Stopped) << first.detail;
    ASSERT_EQ(first.steps, 4);
    // checkpoint_steps 3: one at step 3, the final one at the stop.
    EXPECT_TRUE(fs::is_directory(dir.path() / "split" / "checkpoint-3"));
    const fs::path at4 = dir.path() / "split" / "checkpoint-4";
    for (const char* file : {kModelFile, kOptimizerFile, kTrainerStateFile}) {
        EXPECT_TRUE(fs::is_regular_file(at4 / file)) << file;
    }
    const auto state = nlohmann::json::parse(readBytes(at4 / kTrainerStateFile));
    EXPECT_EQ(state["global_step"], 4);
    EXPECT_EQ(state["data_loader"]["next_step"], 4);
    EXPECT_EQ(state["optimizer"]["type"], "adamw");
    EXPECT_EQ(state["run_id"], first.runId);

    // What a writer killed mid-checkpoint leaves behind is cleared, never taken for a checkpoint.
    const fs::path partial = dir.path() / "split" / ".checkpoint-6.partial";
    fs::create_directories(partial);
    writeBytes(partial / kModelFile, "half a file");

    auto resuming = unnamedOptionsIn(dir);
    resuming.resumeFrom = at4;
    auto config = resumeConfig(at4);
    ASSERT_TRUE(config.ok()) << config.error().message;
    const RunSummary second = train(std::move(config).value(), resuming);
    ASSERT_EQ(second.state, RunState::Finished) << second.detail;
    EXPECT_EQ(second.steps, kSteps);
    EXPECT_EQ(second.runId, first.runId) << "a resume in the run's own folder continues the run";

    EXPECT_FALSE(fs::exists(partial));
    EXPECT_TRUE(fs::is_regular_file(dir.path() / "split" / "checkpoint-6" / kTrainerStateFile));
    expectSameTensors(dir.path() / "whole" / kModelFile, dir.path() / "split" / kModelFile);
    expectSameTensors(dir.path() / "whole" / "checkpoint-10" / kOptimizerFile,
                      dir.path() / "split" / "checkpoint-10" / kOptimizerFile);

    // The store holds one unbroken curve for the continued run, equal to the uninterrupted one.
    auto store = store::RunStore::open(dir.path() / "runs.sqlite");
    ASSERT_TRUE(store.ok());
    auto wholeLoss = (*store)->metrics(whole.runId, "loss");
    auto splitLoss = (*store)->metrics(first.runId, "loss");
    ASSERT_TRUE(wholeLoss.ok() && splitLoss.ok());
    ASSERT_EQ(splitLoss->size(), size_t(kSteps));
    for (int i = 0; i < kSteps; ++i) {
        EXPECT_EQ((*splitLoss)[i].step, i + 1);
        EXPECT_EQ((*splitLoss)[i].value, (*wholeLoss)[i].value) << "step " << i + 1;
    }
    auto run = (*store)->getRun(first.runId);
    ASSERT_TRUE(run.ok());
    EXPECT_EQ(run->status, "finished");
}

TEST(Checkpoint, ResumeInAnotherFolderStartsALinkedRunThatStillMatches) {
    TempDir dir("ckpt_linked");
    writeTinyCorpus(dir.path());
    const RunSummary whole = train(richConfig(dir, 6, "whole"), unnamedOptionsIn(dir));
    ASSERT_EQ(whole.state, RunState::Finished) << whole.detail;
    auto resuming = unnamedOptionsIn(dir);
    resuming.resumeFrom = dir.path() / "whole" / "checkpoint-3";
    auto config = resumeConfig(resuming.resumeFrom,
                               {"runconfig.model_dir=" + (dir.path() / "other").string()});
    ASSERT_TRUE(config.ok()) << config.error().message;
    const RunSummary linked = train(std::move(config).value(), resuming);
    ASSERT_EQ(linked.state, RunState::Finished) << linked.detail;
    EXPECT_NE(linked.runId, whole.runId);
    expectSameTensors(dir.path() / "whole" / kModelFile, dir.path() / "other" / kModelFile);
    auto store = store::RunStore::open(dir.path() / "runs.sqlite");
    ASSERT_TRUE(store.ok());
    auto run = (*store)->getRun(linked.runId);
    ASSERT_TRUE(run.ok());
    EXPECT_EQ(run->parentRun, whole.runId);
    auto loss = (*store)->metrics(linked.runId, "loss");
    ASSERT_TRUE(loss.ok());
    ASSERT_EQ(loss->size(), 3u);
    EXPECT_EQ(loss->front().step, 4);
}

TEST(Checkpoint, Bf16RunOnTwoThreadsResumesBitForBit) {
    // bf16 mode (oneDNN bf16 matmuls in the two-thread partition): resuming from a checkpoint
    // must still reproduce the uninterrupted run's weights and optimizer state exactly.
    TempDir dir("ckpt_bf16");
    writeTinyCorpus(dir.path());
    const std::vector<std::string> bf16 = {"model.mixed_precision=true", "model.fp16_type=bfloat16",
                                           "runconfig.num_threads=2"};
    config::Config kept;
    ASSERT_NO_FATAL_FAILURE(expectResumeFromStep3IsExact(dir, bf16, &kept));
    EXPECT_TRUE(kept.model.mixedPrecision) << "the checkpoint keeps the precision";
}

TEST(Checkpoint, LoraRunWithAdapterDropoutResumesBitForBit) {
    // Issue 16: the adapters are tensors of the table like any other, so their weights and Adam
    // state checkpoint and resume exactly; adapter dropout draws the same masks after a resume.
    TempDir dir("ckpt_lora");
    writeTinyCorpus(dir.path());
    const std::vector<std::string> lora = {"lora.rank=2", "lora.dropout=0.1",
                                           "lora.targets=[c_attn, mlp.c_proj]",
                                           "optimizer.learning_rate=0.01"};
    config::Config kept;
    ASSERT_NO_FATAL_FAILURE(expectResumeFromStep3IsExact(dir, lora, &kept));
    ASSERT_TRUE(kept.lora.has_value()) << "the checkpoint keeps the lora: section";
    auto file = fileio::SafetensorsFile::open(dir.path() / "whole" / kModelFile);
    ASSERT_TRUE(file.ok());
    EXPECT_NE(file->find("h.1.mlp.c_proj.lora_B.weight"), nullptr);
    // The frozen base has no optimizer state: the file holds the adapters' moments only.
    auto optimizer =
        fileio::SafetensorsFile::open(dir.path() / "whole" / "checkpoint-6" / kOptimizerFile);
    ASSERT_TRUE(optimizer.ok());
    for (const auto& name : optimizer->names())
        EXPECT_NE(name.find(".lora_"), std::string::npos) << name << " is frozen: no state";
    EXPECT_EQ(optimizer->names().size(), 2u * 2 * 2 * 2);  // moments x targets x A,B x blocks
}

TEST(Checkpoint, LlamaLoraOnQkvSlicesWithGqaResumesBitForBit) {
    // Issue 33: PEFT's Llama targets q_proj, k_proj, v_proj (slices of the fused c_attn) on a
    // grouped-query model (4 query heads, 2 KV heads): their tensors, Adam state and adapter
    // dropout masks checkpoint and resume exactly, and they train (B leaves its zero start; the
    // loss falling is tests/engine/model/lora_llama_test.cpp's QkvAdaptersOnGqaTrain...).
    TempDir dir("ckpt_llama_lora");
    writeTinyCorpus(dir.path());
    std::vector<std::string> llamaLora = kLlamaBlocks;
    llamaLora.insert(llamaLora.end(),
                     {"model.num_heads=4", "model.extra_attention_params.num_kv_groups=2",
                      "lora.rank=2", "lora.dropout=0.1", "lora.targets=[q_proj, k_proj, v_proj]",
                      "optimizer.learning_rate=0.01"});
    config::Config kept;
    ASSERT_NO_FATAL_FAILURE(expectResumeFromStep3IsExact(dir, llamaLora, &kept));
    ASSERT_TRUE(kept.lora.has_value());
    EXPECT_EQ(kept.lora->targets, (std::vector<std::string>{"q_proj", "k_proj", "v_proj"}));
    auto file = fileio::SafetensorsFile::open(dir.path() / "whole" / kModelFile);
    ASSERT_TRUE(file.ok());
    // K = 2 KV heads x 8: k_proj's B is (2, 16), q_proj's (2, 32).
    ASSERT_NE(file->find("h.1.attn.k_proj.lora_B.weight"), nullptr);
    EXPECT_EQ(file->find("h.1.attn.k_proj.lora_B.weight")->shape, (std::vector<int64_t>{2, 16}));
    EXPECT_EQ(file->find("h.0.attn.q_proj.lora_B.weight")->shape, (std::vector<int64_t>{2, 32}));
    EXPECT_EQ(file->find("h.0.attn.c_attn.lora_A.weight"), nullptr);
    auto optimizer =
        fileio::SafetensorsFile::open(dir.path() / "whole" / "checkpoint-6" / kOptimizerFile);
    ASSERT_TRUE(optimizer.ok());
    EXPECT_EQ(optimizer->names().size(), 2u * 3 * 2 * 2);  // moments x targets x A,B x blocks
    // Trained adapters: B moved away from its zero start.
    auto b = file->readAsFloat("h.0.attn.v_proj.lora_B.weight");
    ASSERT_TRUE(b.ok());
    double norm = 0;
    for (float v : *b) norm += std::abs(v);
    EXPECT_GT(norm, 0.0);
}

TEST(Checkpoint, MoeRunWithCapacityDropsResumesBitForBit) {
    // Mixture of experts: router and experts are tensors of the table like any other (their
    // names in the files), and the routing depends only on the weights and the batch, so a resume
    // reproduces the uninterrupted run exactly, capacity drops and load-balancing loss included.
    TempDir dir("ckpt_moe");
    writeTinyCorpus(dir.path());
    const std::vector<std::string> moe = {"model.moe.num_experts=3", "model.moe.top_k=2",
                                          "model.moe.capacity_factor=0.8",
                                          "model.moe.load_balancing_loss_coef=0.05"};
    config::Config kept;
    ASSERT_NO_FATAL_FAILURE(expectResumeFromStep3IsExact(dir, moe, &kept));
    ASSERT_TRUE(kept.model.moe.has_value()) << "the checkpoint keeps model.moe";
    auto file = fileio::SafetensorsFile::open(dir.path() / "whole" / kModelFile);
    ASSERT_TRUE(file.ok());
    EXPECT_NE(file->find("h.1.mlp.router.weight"), nullptr);
    EXPECT_NE(file->find("h.1.mlp.experts.2.c_proj.bias"), nullptr);
    EXPECT_EQ(file->find("h.1.mlp.c_fc.weight"), nullptr);
}

TEST(Checkpoint, LlamaBlocksRunResumesBitForBitWithTheirOwnTensors) {
    // Issue 33: a Llama-family model (rotary, RMSNorm, SwiGLU, grouped-query heads, no biases,
    // untied head) through the whole session: MemoryX, streaming, checkpoints and exact resume.
    TempDir dir("ckpt_llama");
    writeTinyCorpus(dir.path());
    std::vector<std::string> llama = kLlamaBlocks;
    llama.push_back("model.extra_attention_params.num_kv_groups=1");
    config::Config kept;
    ASSERT_NO_FATAL_FAILURE(expectResumeFromStep3IsExact(dir, llama, &kept));
    EXPECT_EQ(kept.model.normType, "rmsnorm") << "the checkpoint keeps the blocks";
    auto file = fileio::SafetensorsFile::open(dir.path() / "whole" / kModelFile);
    ASSERT_TRUE(file.ok());
    EXPECT_EQ(file->find("wpe.weight"), nullptr);
    EXPECT_EQ(file->find("h.0.ln_1.bias"), nullptr);
    EXPECT_EQ(file->find("h.0.attn.c_attn.bias"), nullptr);
    EXPECT_NE(file->find("lm_head.weight"), nullptr);
}

TEST(Checkpoint, LoraCheckpointWithFrozenStateFromBeforeResumesBitForBit) {
    // A LoRA checkpoint written before frozen tensors lost their optimizer state holds zero
    // moments for every base tensor: it still resumes, exactly.
    TempDir dir("ckpt_lora_old");
    writeTinyCorpus(dir.path());
    const std::vector<std::string> lora = {"lora.rank=2", "lora.targets=[c_attn, c_fc]",
                                           "optimizer.learning_rate=0.01"};
    const RunSummary whole = train(richConfig(dir, 6, "whole", lora), unnamedOptionsIn(dir));
    ASSERT_EQ(whole.state, RunState::Finished) << whole.detail;
    // The older layout: checkpoint-3 copied, its optimizer file with zeros for the base tensors.
    const fs::path old = dir.path() / "old" / "checkpoint-3";
    fs::create_directories(old.parent_path());
    fs::copy(dir.path() / "whole" / "checkpoint-3", old, fs::copy_options::recursive);
    {
        auto current = fileio::SafetensorsFile::open(old / kOptimizerFile);
        ASSERT_TRUE(current.ok());
        auto model = fileio::SafetensorsFile::open(old / kModelFile);
        ASSERT_TRUE(model.ok());
        std::vector<fileio::TensorView> views;
        std::vector<std::vector<float>> zeros;
        zeros.reserve(2 * model->names().size());
        for (const char* suffix : {".exp_avg", ".exp_avg_sq"}) {
            for (const auto& name : model->names()) {
                const auto* have = current->find(name + suffix);
                const auto* weight = model->find(name);
                if (have) {
                    views.push_back(
                        {have->name, have->dtype, have->shape, have->data, have->bytes});
                } else {
                    zeros.emplace_back(weight->bytes / sizeof(float), 0.0f);
                    views.push_back({name + suffix, fileio::DType::F32, weight->shape,
                                     zeros.back().data(), weight->bytes});
                }
            }
        }
        ASSERT_GT(views.size(), current->names().size());
        const fs::path rewritten = old.parent_path() / "optimizer.rewritten";
        std::string sha;
        ASSERT_TRUE(fileio::writeSafetensors(rewritten, views, current->metadata(), &sha).ok());
        fs::rename(rewritten, old / kOptimizerFile);
        nlohmann::json state;
        std::ifstream(old / "trainer_state.json") >> state;
        state["files"][kOptimizerFile]["sha256"] = sha;
        std::ofstream(old / "trainer_state.json") << state.dump(2);
    }
    auto resuming = unnamedOptionsIn(dir);
    resuming.resumeFrom = old;
    auto config = resumeConfig(resuming.resumeFrom,
                               {"runconfig.model_dir=" + (dir.path() / "resumed").string()});
    ASSERT_TRUE(config.ok()) << config.error().message;
    const RunSummary resumed = train(std::move(config).value(), resuming);
    ASSERT_EQ(resumed.state, RunState::Finished) << resumed.detail;
    expectSameTensors(dir.path() / "whole" / kModelFile, dir.path() / "resumed" / kModelFile);
    expectSameTensors(dir.path() / "whole" / "checkpoint-6" / kOptimizerFile,
                      dir.path() / "resumed" / "checkpoint-6" / kOptimizerFile);
}

TEST(Checkpoint, KeepsTheNewestMaxCheckpointsAndRecordsEachFilesSha256) {
    TempDir dir("ckpt_keep");
    writeTinyCorpus(dir.path());
    const RunSummary run =
        train(richConfig(dir, 7, "model",
                         {"runconfig.checkpoint_steps=2", "runconfig.max_checkpoints=2"}),
              unnamedOptionsIn(dir));
    ASSERT_EQ(run.state, RunState::Finished) << run.detail;
    std::vector<int64_t> steps;
    for (const auto& [step, folder] : listCheckpoints(dir.path() / "model")) steps.push_back(step);
    EXPECT_EQ(steps, (std::vector<int64_t>{6, 7}));  // 2, 4 pruned; 7 is the final one
    for (const auto& entry : fs::directory_iterator(dir.path() / "model")) {
        EXPECT_EQ(entry.path().filename().string().find(".checkpoint-"), std::string::npos)
            << "a partial folder was left behind: " << entry.path();
    }
    auto store = store::RunStore::open(dir.path() / "runs.sqlite");
    ASSERT_TRUE(store.ok());
    auto records = (*store)->checkpoints(run.runId);
    ASSERT_TRUE(records.ok());
    ASSERT_EQ(records->size(), 6u);  // three files for each of steps 6 and 7
    for (const auto& record : *records) {
        EXPECT_TRUE(record.step == 6 || record.step == 7) << record.step;
        auto sha = sha256File(record.path);
        ASSERT_TRUE(sha.ok()) << sha.error().message;
        EXPECT_EQ(*sha, record.sha256) << record.path;
    }
}

TEST(Checkpoint, CheckpointNowWritesAfterTheStepInFlight) {
    TempDir dir("ckpt_now");
    writeTinyCorpus(dir.path());
    auto session = Session::create(richConfig(dir, 3, "model", {"runconfig.checkpoint_steps=0"}),
                                   unnamedOptionsIn(dir));
    ASSERT_TRUE(session.ok()) << session.error().message;
    (*session)->requestCheckpoint();  // before the first step: taken after step 1
    runToEnd(**session);
    ASSERT_EQ((*session)->summary().state, RunState::Finished);
    std::vector<int64_t> steps;
    for (const auto& [step, folder] : listCheckpoints(dir.path() / "model")) steps.push_back(step);
    EXPECT_EQ(steps, (std::vector<int64_t>{1, 3}));  // the request, then the final one
}

// Also without a run store (SessionOptions::recordInStore false, as tests and benchmarks run).
TEST(Checkpoint, SgdMomentumStateRoundTripsWithoutARunStore) {
    TempDir dir("ckpt_sgd");
    writeTinyCorpus(dir.path());
    const std::vector<std::string> sgd = {"optimizer.optimizer_type=sgd", "optimizer.momentum=0.9"};
    auto noStore = [&] {
        auto o = unnamedOptionsIn(dir);
        o.recordInStore = false;
        return o;
    };
    const RunSummary whole = train(richConfig(dir, 6, "whole", sgd), noStore());
    ASSERT_EQ(whole.state, RunState::Finished) << whole.detail;
    auto stopping = noStore();
    stopping.stopAfterStep = 2;
    ASSERT_EQ(train(richConfig(dir, 6, "split", sgd), stopping).state, RunState::Stopped);
    EXPECT_FALSE(fs::exists(dir.path() / "runs.sqlite"));
    auto resuming = noStore();
    resuming.resumeFrom = dir.path() / "split" / "checkpoint-2";
    auto config = resumeConfig(resuming.resumeFrom);
    ASSERT_TRUE(config.ok()) << config.error().message;
    ASSERT_EQ(train(std::move(config).value(), resuming).state, RunState::Finished);
    expectSameTensors(dir.path() / "whole" / kModelFile, dir.path() / "split" / kModelFile);
    auto optimizer =
        fileio::SafetensorsFile::open(dir.path() / "split" / "checkpoint-6" / kOptimizerFile);
    ASSERT_TRUE(optimizer.ok());
    EXPECT_TRUE(optimizer->find("wte.weight.momentum_buffer"));
}

// A stopped run with checkpoints 3 and 4, for the refusal tests.
class CheckpointRefusal : public ::testing::Test {
protected:
    void SetUp() override {
        writeTinyCorpus(m_dir.path());
        auto options = unnamedOptionsIn(m_dir);
        options.stopAfterStep = 4;
        const RunSummary run = train(richConfig(m_dir, 10, "model"), options);
        ASSERT_EQ(run.state, RunState::Stopped) << run.detail;
        m_runId = run.runId;
        m_folder = m_dir.path() / "model" / "checkpoint-4";
        m_finalModel = readBytes(m_dir.path() / "model" / kModelFile);
    }

    // Resumes from m_folder with the checkpoint's config plus `overrides`; returns the summary.
    RunSummary resume(std::vector<std::string> overrides = {}, bool allowConfigChange = false) {
        auto options = unnamedOptionsIn(m_dir);
        options.resumeFrom = m_folder;
        options.allowConfigChange = allowConfigChange;
        auto config = tinyConfig(m_dir.path(), 10, kRichOverrides);
        config.config.runconfig.modelDir = (m_dir.path() / "model").string();
        for (const auto& o : overrides) EXPECT_TRUE(config::applyOverride(config.config, o).ok());
        return train(std::move(config), options);
    }

    // The refusal left the checkpoint, the run's weights and the store's run list as they were.
    void expectNothingChanged(const std::map<std::string, std::string>& before) {
        for (const auto& [file, bytes] : before) {
            EXPECT_EQ(readBytes(m_folder / file), bytes) << file << " was modified";
        }
        EXPECT_EQ(readBytes(m_dir.path() / "model" / kModelFile), m_finalModel);
        auto store = store::RunStore::open(m_dir.path() / "runs.sqlite");
        ASSERT_TRUE(store.ok());
        auto runs = (*store)->listRuns();
        ASSERT_TRUE(runs.ok());
        EXPECT_EQ(runs->size(), 1u) << "a refused resume created a run";
        EXPECT_EQ((*store)->getRun(m_runId)->status, "stopped");
        auto loss = (*store)->metrics(m_runId, "loss");
        ASSERT_TRUE(loss.ok());
        EXPECT_EQ(loss->size(), 4u);
    }

    std::map<std::string, std::string> snapshot() {
        std::map<std::string, std::string> files;
        for (const char* f : {kModelFile, kOptimizerFile, kTrainerStateFile}) {
            files[f] = readBytes(m_folder / f);
        }
        return files;
    }

    // Rewrites trainer_state.json's recorded SHA-256 of `file` to match its current bytes.
    void rerecordSha(const char* file) {
        auto state = nlohmann::json::parse(readBytes(m_folder / kTrainerStateFile));
        state["files"][file]["sha256"] = *sha256File(m_folder / file);
        writeBytes(m_folder / kTrainerStateFile, state.dump(2));
    }

    void expectRefused(const RunSummary& summary, const std::vector<std::string>& phrases) {
        EXPECT_EQ(summary.state, RunState::Failed);
        for (const auto& phrase : phrases) {
            EXPECT_NE(summary.detail.find(phrase), std::string::npos)
                << "'" << phrase << "' not in: " << summary.detail;
        }
    }

    TempDir m_dir{"ckpt_refuse"};
    int64_t m_runId = -1;
    fs::path m_folder;
    std::string m_finalModel;
};

TEST_F(CheckpointRefusal, TruncatedModelFileIsNamed) {
    std::string bytes = readBytes(m_folder / kModelFile);
    writeBytes(m_folder / kModelFile, bytes.substr(0, bytes.size() / 2));
    const auto before = snapshot();
    expectRefused(resume(), {(m_folder / kModelFile).string()});
    expectNothingChanged(before);
}

TEST_F(CheckpointRefusal, FlippedByteInOptimizerStateFailsItsChecksum) {
    std::string bytes = readBytes(m_folder / kOptimizerFile);
    bytes[bytes.size() - 3] ^= 0x40;
    writeBytes(m_folder / kOptimizerFile, bytes);
    const auto before = snapshot();
    expectRefused(resume(),
                  {(m_folder / kOptimizerFile).string(), "SHA-256", "changed or damaged"});
    expectNothingChanged(before);
}

TEST_F(CheckpointRefusal, DamagedTrainerStateIsNamed) {
    std::string text = readBytes(m_folder / kTrainerStateFile);
    writeBytes(m_folder / kTrainerStateFile, text.substr(0, text.size() - 20));
    const auto before = snapshot();
    expectRefused(resume(), {(m_folder / kTrainerStateFile).string(), "not a valid JSON"});
    expectNothingChanged(before);
}

TEST_F(CheckpointRefusal, MissingTrainerStateFieldIsNamed) {
    auto state = nlohmann::json::parse(readBytes(m_folder / kTrainerStateFile));
    state["data_loader"].erase("shuffle_seed");
    writeBytes(m_folder / kTrainerStateFile, state.dump(2));
    expectRefused(resume(), {kTrainerStateFile, "data_loader/shuffle_seed is missing"});
}

TEST_F(CheckpointRefusal, ForeignTrainerStateIsRefused) {
    writeBytes(m_folder / kTrainerStateFile, R"({"global_step": 4, "best_metric": null})");
    expectRefused(resume(), {kTrainerStateFile, "not a Wafer Studio trainer state"});
}

TEST_F(CheckpointRefusal, ForeignModelFileIsRefused) {
    // A valid safetensors file from another producer, consistently recorded in trainer_state.
    const std::vector<float> values(4, 1.0f);
    ASSERT_TRUE(
        fileio::writeSafetensors(m_folder / kModelFile,
                                 {{"wte.weight", fileio::DType::F32, {2, 2}, values.data(), 16}},
                                 {{"format", "pt"}})
            .ok());
    rerecordSha(kModelFile);
    const auto before = snapshot();
    expectRefused(resume(), {(m_folder / kModelFile).string(), "not written by Wafer Studio"});
    expectNothingChanged(before);
}

TEST_F(CheckpointRefusal, ChecksumMismatchWithTheRunStoreIsReported) {
    // Someone rewrote the optimizer file and trainer_state.json consistently: only the run
    // store still knows what was written.
    {
        auto file = fileio::SafetensorsFile::open(m_folder / kOptimizerFile);
        ASSERT_TRUE(file.ok());
        std::vector<std::vector<float>> copies;
        std::vector<fileio::TensorView> views;
        for (const auto& name : file->names()) {
            const auto* info = file->find(name);
            copies.emplace_back(info->bytes / sizeof(float), 0.0f);
            views.push_back({name, info->dtype, info->shape, copies.back().data(), info->bytes});
        }
        auto metadata = file->metadata();
        ASSERT_TRUE(fileio::writeSafetensors(m_folder / "replaced", views, metadata).ok());
    }
    fs::rename(m_folder / "replaced", m_folder / kOptimizerFile);
    rerecordSha(kOptimizerFile);
    const auto before = snapshot();
    expectRefused(resume(), {(m_folder / kOptimizerFile).string(), "run store"});
    expectNothingChanged(before);
}

TEST_F(CheckpointRefusal, ConfigChangeIsExplainedAndCanBeAllowed) {
    const auto before = snapshot();
    expectRefused(resume({"optimizer.weight_decay=0.5", "runconfig.log_steps=3"}),
                  {"optimizer.weight_decay:", "-> 0.5", "--allow-config-change"});
    expectNothingChanged(before);
    // A separate eval corpus frees the training split's held-out end: training changes.
    expectRefused(resume({"eval_input.data_dir=" + (m_dir.path() / "corpus").string()}),
                  {"eval_input.data_dir:"});
    expectNothingChanged(before);
    // Logging cadence does not change training: accepted without the override.
    const RunSummary harmless = resume({"runconfig.log_steps=3"});
    EXPECT_EQ(harmless.state, RunState::Finished) << harmless.detail;
}

TEST_F(CheckpointRefusal, AllowConfigChangeContinuesWithTheNewValues) {
    const RunSummary changed = resume({"optimizer.weight_decay=0.5"}, true);
    EXPECT_EQ(changed.state, RunState::Finished) << changed.detail;
    EXPECT_EQ(changed.runId, m_runId);
}

TEST_F(CheckpointRefusal, ResumingAnOlderCheckpointOverANewerOneIsRefused) {
    m_folder = m_dir.path() / "model" / "checkpoint-3";
    const auto before = snapshot();
    expectRefused(resume(), {"checkpoint-4", "overwrite", "runconfig.model_dir"});
    expectNothingChanged(before);
}

TEST_F(CheckpointRefusal, ChangedModelShapeIsRefusedNamingTheTensorEvenWhenAllowed) {
    const auto before = snapshot();
    expectRefused(resume({"model.filter_size=96"}, true),
                  {(m_folder / kModelFile).string(), "h.0.mlp.c_fc.weight", "shape"});
    expectNothingChanged(before);
}

TEST_F(CheckpointRefusal, WriterNeverReplacesAFolderAndLeavesNothingOnFailure) {
    auto c = tinyConfig(m_dir.path(), 10, kRichOverrides);
    const model::ParameterTable table(model::GptShape::fromConfig(c.config.model));
    std::vector<float> weights(table.totalSize(), 0.5f), moments(2 * table.totalSize(), 0.0f);
    const optim::OptimizerState state{moments.data(), moments.data() + table.totalSize()};
    const auto before = snapshot();
    auto again = writeCheckpoint(m_dir.path() / "model", table, weights.data(), state, 2, c.config,
                                 TrainerState::forRun(c.config, 4, m_runId, 0.0));
    ASSERT_FALSE(again.ok());
    EXPECT_NE(again.error().message.find("never overwritten"), std::string::npos)
        << again.error().message;
    EXPECT_EQ(snapshot(), before);

    // The disk fills up after model.safetensors (the optimizer state is twice its size): an
    // error naming the file, and neither a checkpoint nor a partial folder left behind.
    const fs::path fresh = m_dir.path() / "fresh";
    fs::create_directories(fresh);
    Result<WrittenCheckpoint> failed = Error{"not run"};
    {
        ws::testing::FileSizeLimit limit(table.totalSize() * sizeof(float) * 3 / 2);
        failed = writeCheckpoint(fresh, table, weights.data(), state, 2, c.config,
                                 TrainerState::forRun(c.config, 5, m_runId, 0.0));
    }
    ASSERT_FALSE(failed.ok());
    EXPECT_NE(failed.error().message.find(kOptimizerFile), std::string::npos)
        << failed.error().message;
    EXPECT_TRUE(fs::is_empty(fresh));
}

TEST_F(CheckpointRefusal, RunStillTrainingInTheFolderIsNotTouched) {
    // Stands in for a session of another process training in the run's folder.
    auto held = FolderLock::acquire(m_dir.path() / "model");
    ASSERT_TRUE(held.ok()) << held.error().message;
    const auto before = snapshot();
    expectRefused(resume(), {(m_dir.path() / "model").string(), "in use"});
    expectNothingChanged(before);  // status, metrics and files of the live run stay as they are
}

// A run the store says is "running" is shown as interrupted once no session holds its folder
// (the kernel dropped a killed process's lock); the probe neither creates nor keeps a lock.
TEST_F(CheckpointRefusal, ARunningRunWhoseFolderNobodyHoldsIsShownInterrupted) {
    const auto folder = m_dir.path() / "model";
    EXPECT_FALSE(FolderLock::isHeld(m_dir.path() / "no-such-folder"));
    EXPECT_FALSE(std::filesystem::exists(m_dir.path() / "no-such-folder"));
    {
        auto held = FolderLock::acquire(folder);
        ASSERT_TRUE(held.ok()) << held.error().message;
        EXPECT_TRUE(FolderLock::isHeld(folder));  // through another descriptor of this process
        EXPECT_TRUE(FolderLock::isHeld(folder));  // probing twice does not take it over
        EXPECT_EQ(shownRunStatus("running", folder), "running");
    }
    EXPECT_FALSE(FolderLock::isHeld(folder));
    EXPECT_EQ(shownRunStatus("running", folder), "interrupted");
    EXPECT_EQ(shownRunStatus("finished", folder), "finished");
    EXPECT_EQ(shownRunStatus("stopped", folder), "stopped");
    EXPECT_EQ(shownRunStatus("running", {}), "running");  // no folder: nothing to judge by
    auto again = FolderLock::acquire(folder);             // the probes left nothing behind
    EXPECT_TRUE(again.ok());
}

TEST_F(CheckpointRefusal, ResolvesRunIdsAndFoldersToTheNewestCheckpoint) {
    auto byRun = resolveResumeTarget(std::to_string(m_runId), m_dir.path() / "runs.sqlite");
    ASSERT_TRUE(byRun.ok()) << byRun.error().message;
    EXPECT_EQ(byRun->filename(), "checkpoint-4");
    auto byFolder = resolveResumeTarget((m_dir.path() / "model").string(), {});
    ASSERT_TRUE(byFolder.ok()) << byFolder.error().message;
    EXPECT_EQ(byFolder->filename(), "checkpoint-4");
    auto missing = resolveResumeTarget("999", m_dir.path() / "runs.sqlite");
    ASSERT_FALSE(missing.ok());
    EXPECT_NE(missing.error().message.find("999"), std::string::npos);
    EXPECT_FALSE(resolveResumeTarget("no/such/folder", {}).ok());
}

// A run killed before its first checkpoint left only what a run writes as it starts (config.yaml
// and the tokenizer's files): --resume says it cannot continue and gives the command that starts
// it again with the same config, and that config loads.
TEST(ResumeTarget, ARunThatEndedBeforeItsFirstCheckpointIsOfferedARestart) {
    TempDir dir("ckpt_none_yet");
    const fs::path folder = dir.path() / "run-1";
    fs::create_directories(folder);
    const config::LoadedConfig c = tinyConfig(dir.path(), 6);
    writeBytes(folder / "config.yaml", config::saveConfigYaml(c.config));
    auto target = resolveResumeTarget(folder.string(), {});
    ASSERT_FALSE(target.ok());
    const std::string& message = target.error().message;
    EXPECT_NE(message.find("ended before its first checkpoint"), std::string::npos) << message;
    const std::string command = "wafer train " + (folder / "config.yaml").string();
    EXPECT_NE(message.find(command), std::string::npos) << message;
    auto again = config::loadConfigFile(folder / "config.yaml");
    ASSERT_TRUE(again.ok()) << again.error().message;
    EXPECT_EQ(again->config.model, c.config.model);
    // A folder that never held a run is not offered anything of the kind.
    fs::create_directories(dir.path() / "empty");
    auto empty = resolveResumeTarget((dir.path() / "empty").string(), {});
    ASSERT_FALSE(empty.ok());
    EXPECT_NE(empty.error().message.find("no checkpoint folder"), std::string::npos)
        << empty.error().message;
}

}  // namespace
}  // namespace ws::session
