// SPDX-License-Identifier: GPL-3.0-or-later
// Dynamic sparsity in a real session (the top-level sparsity section): masks in the checkpoints and
// an exact resume, masks in a file-backed MemoryX, a dynamic-sparse run that learns while its
// level stays exact, per-layer metrics, and the emulator following the current mask.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <set>

#include "engine/fileio/safetensors.h"
#include "engine/modelio/checkpoints.h"
#include "engine/session/resume.h"
#include "engine/session/session.h"
#include "engine/store/run_store.h"
#include "engine/streaming/memoryx.h"
#include "session_test_util.h"

namespace ws::session {
namespace {
using namespace testing;
using namespace ws::modelio;
namespace fs = std::filesystem;

const std::string kRigl =
    "sparsity={sparsity: 0.75, type: rigl, init_method: random, drop_fraction: {type: cosine, "
    "init: 0.3, half_period: 9}, schedule: {freq: 2, stop: 9}}";
const std::string kSet =
    "sparsity={sparsity: 0.75, type: set, drop_fraction: {init: 0.3}, schedule: {freq: 5, "
    "stop: 25}}";

config::LoadedConfig sparseConfig(const TempDir& dir, int steps, const std::string& modelDir,
                                  std::vector<std::string> extra) {
    extra.push_back("train_input.shuffle=true");
    extra.push_back("runconfig.checkpoint_steps=3");
    auto c = tinyConfig(dir.path(), steps, extra);
    c.config.runconfig.modelDir = (dir.path() / modelDir).string();
    return c;
}

// Zeros of a tensor in a weights file, and the mask of it in an optimizer file.
size_t zerosOf(const fs::path& file, const std::string& name) {
    auto f = fileio::SafetensorsFile::open(file);
    EXPECT_TRUE(f.ok());
    auto values = f->readAsFloat(name);
    EXPECT_TRUE(values.ok());
    return size_t(std::count(values->begin(), values->end(), 0.0f));
}

std::vector<uint8_t> maskOf(const fs::path& optimizerFile, const std::string& name) {
    auto f = fileio::SafetensorsFile::open(optimizerFile);
    EXPECT_TRUE(f.ok());
    const auto* t = f->find(name + kMaskSuffix);
    EXPECT_NE(t, nullptr) << name;
    if (!t) return {};
    const auto* bytes = static_cast<const uint8_t*>(t->data);
    return std::vector<uint8_t>(bytes, bytes + t->bytes);
}

TEST(SessionSparsity, RiglMasksSurviveCheckpointAndResumeBitForBit) {
    TempDir dir("sparse_resume");
    writeTinyCorpus(dir.path());
    constexpr int kSteps = 10;
    const RunSummary whole =
        train(sparseConfig(dir, kSteps, "whole", {kRigl}), sessionOptionsIn(dir));
    ASSERT_EQ(whole.state, RunState::Finished) << whole.detail;

    auto stopping = sessionOptionsIn(dir);
    stopping.stopAfterStep = 5;  // between the mask updates after steps 4 and 6
    const RunSummary first = train(sparseConfig(dir, kSteps, "split", {kRigl}), stopping);
    ASSERT_EQ(first.state, RunState::Stopped) << first.detail;
    const fs::path at5 = dir.path() / "split" / "checkpoint-5";
    auto resuming = sessionOptionsIn(dir);
    resuming.resumeFrom = at5;
    auto config = resumeConfig(at5);
    ASSERT_TRUE(config.ok()) << config.error().message;
    const RunSummary second = train(std::move(config).value(), resuming);
    ASSERT_EQ(second.state, RunState::Finished) << second.detail;

    expectSameTensors(dir.path() / "whole" / kModelFile, dir.path() / "split" / kModelFile);
    const fs::path endWhole = dir.path() / "whole" / "checkpoint-10" / kOptimizerFile;
    const fs::path endSplit = dir.path() / "split" / "checkpoint-10" / kOptimizerFile;
    expectSameTensors(endWhole, endSplit);  // Adam's moments and the masks
    // The masks moved between checkpoints and keep the level: 75% of every masked matrix.
    const std::string fc = "h.0.mlp.c_fc.weight";
    const auto early = maskOf(dir.path() / "whole" / "checkpoint-3" / kOptimizerFile, fc);
    const auto late = maskOf(endWhole, fc);
    EXPECT_NE(early, late);
    EXPECT_EQ(size_t(std::count(late.begin(), late.end(), 1)), size_t(32 * 64 * 3 / 4));
    EXPECT_GE(zerosOf(dir.path() / "whole" / kModelFile, fc), size_t(32 * 64 * 3 / 4));
}

TEST(SessionSparsity, FileBackedMemoryXHoldsTheMasksAndTrainsAsRamDoes) {
    TempDir dir("sparse_file");
    writeTinyCorpus(dir.path());
    const RunSummary ram = train(sparseConfig(dir, 8, "ram", {kRigl}), sessionOptionsIn(dir));
    ASSERT_EQ(ram.state, RunState::Finished) << ram.detail;
    const fs::path store = dir.path() / "store.memoryx";
    const RunSummary file =
        train(sparseConfig(dir, 8, "file",
                           {kRigl, "memoryx.backing=file", "memoryx.path=" + store.string()}),
              sessionOptionsIn(dir));
    ASSERT_EQ(file.state, RunState::Finished) << file.detail;
    expectSameTensors(dir.path() / "ram" / kModelFile, dir.path() / "file" / kModelFile);
    expectSameTensors(dir.path() / "ram" / "checkpoint-8" / kOptimizerFile,
                      dir.path() / "file" / "checkpoint-8" / kOptimizerFile);
    // The store file keeps the masks beside the weights: reopened, they are the final ones.
    auto reopened = streaming::MemoryX::open(store);
    ASSERT_TRUE(reopened.ok()) << reopened.error().message;
    ASSERT_NE((*reopened)->pruneMask(), nullptr);
    config::ModelConfig m = sparseConfig(dir, 8, "x", {}).config.model;
    const model::ParameterTable table(model::GptShape::fromConfig(m));
    const auto* fc = table.find("h.1.mlp.c_fc.weight");
    const auto mask = maskOf(dir.path() / "file" / "checkpoint-8" / kOptimizerFile, fc->name);
    ASSERT_EQ(mask.size(), fc->size);
    EXPECT_EQ(std::memcmp((*reopened)->pruneMask() + fc->offset, mask.data(), mask.size()), 0);
}

TEST(SessionSparsity, DynamicSparseRunLearnsRecordsLayersAndReplansTheWafer) {
    TempDir dir("sparse_learn");
    writeTinyCorpus(dir.path());
    auto options = sessionOptionsIn(dir);
    options.evaluateAtStart = true;
    std::vector<Event> events;
    const RunSummary s =
        train(sparseConfig(dir, 30, "set", {kSet, "wafer.spec=teaching-16x16"}), options, &events);
    ASSERT_EQ(s.state, RunState::Finished) << s.detail;
    EXPECT_LT(s.finalEvalLoss, s.initialEvalLoss - 0.5)
        << "a 75% SET-sparse model learns on the tiny corpus";
    // The emulator re-plans when the mask changes: several step plans over the run, and the
    // emulated FLOPs skip the zero weights.
    std::set<const wafer::StepPrediction*> plans;
    for (const auto& e : events)
        if (const auto* step = std::get_if<EmulatedStep>(&e)) plans.insert(step->prediction.get());
    EXPECT_GE(plans.size(), 2u);
    ASSERT_GT(s.emulatedSec, 0.0);
    const double dense = (*plans.begin())->modelFlopsPerStep * 30;
    EXPECT_LT(s.emulatedFlops, 0.9 * dense);
    // Per-layer sparsity and imbalance as metrics for the Wafer tab.
    auto store = store::RunStore::open(dir.path() / "runs.sqlite");
    ASSERT_TRUE(store.ok());
    for (const char* key : {"sparsity/h.0", "sparsity/h.1", "sparsity_imbalance/h.1"}) {
        auto series = (*store)->metrics(s.runId, key);
        ASSERT_TRUE(series.ok()) << key;
        ASSERT_FALSE(series->empty()) << key;
        if (std::string(key).starts_with("sparsity/")) {
            for (const auto& point : *series) {
                EXPECT_NEAR(point.value, 0.75, 1e-3) << key;
            }
        } else {
            EXPECT_GT(series->back().value, 1.0) << key;
        }
    }
}

}  // namespace
}  // namespace ws::session
