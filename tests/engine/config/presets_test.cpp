// SPDX-License-Identifier: GPL-3.0-or-later
// Every presets/*.yaml loads without warnings, validates, and round-trips; the shipped presets
// keep the shapes their comments promise.
#include <gtest/gtest.h>

#include "config_test_util.h"

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "engine/config/config_yaml.h"
#include "engine/config/validate.h"

namespace ws::config {
namespace {

const std::filesystem::path kPresets = std::filesystem::path(WAFER_PRESETS_DIR).lexically_normal();

std::vector<std::filesystem::path> presetFiles() {
    std::vector<std::filesystem::path> files;
    for (const auto& entry : std::filesystem::directory_iterator(kPresets))
        if (entry.is_regular_file() && entry.path().extension() == ".yaml")
            files.push_back(entry.path());
    std::sort(files.begin(), files.end());
    return files;
}

Config loadPreset(const std::string& name) {
    auto loaded = loadConfigFile(kPresets / name);
    EXPECT_TRUE(loaded.ok()) << name << ": " << (loaded.ok() ? "" : loaded.error().message);
    return loaded.ok() ? loaded->config : Config{};
}

TEST(Presets, EveryPresetLoadsValidatesAndRoundTrips) {
    const std::vector<std::filesystem::path> files = presetFiles();
    ASSERT_GE(files.size(), 3u);
    for (const std::filesystem::path& file : files) {
        SCOPED_TRACE(file.string());
        auto loaded = loadConfigFile(file);
        ASSERT_TRUE(loaded.ok()) << loaded.error().message;
        for (const std::string& warning : loaded->warnings) ADD_FAILURE() << warning;
        for (const std::string& error : validate(loaded->config)) ADD_FAILURE() << error;
        auto again = parseConfig(saveConfigYaml(loaded->config), "saved", "/elsewhere");
        ASSERT_TRUE(again.ok()) << again.error().message;
        EXPECT_EQ(again->config, loaded->config);
        // Presets read the bundled corpus (or, fine-tuning on chat records, the bundled
        // instruction set), resolved against the presets folder.
        ASSERT_FALSE(loaded->config.trainInput.dataDir.empty());
        const std::filesystem::path resources = kPresets.parent_path() / "resources";
        if (loaded->config.trainInput.dataDir.front().ends_with(".jsonl"))
            EXPECT_EQ(loaded->config.trainInput.dataDir.front(),
                      (resources / "instructions" / "train.jsonl").string());
        else
            EXPECT_EQ(loaded->config.trainInput.dataDir.front(), (resources / "corpus").string());
    }
}

TEST(Presets, GptNanoIsTheSmallByteModel) {
    const Config c = loadPreset("gpt-nano.yaml");
    EXPECT_EQ(c.trainInput.tokenizer.type, "byte");
    EXPECT_EQ(c.model.vocabSize, 256);
    EXPECT_EQ(c.model.hiddenSize, 128);
    EXPECT_EQ(c.model.numHiddenLayers, 4);
    EXPECT_EQ(c.model.numHeads, 4);
    EXPECT_EQ(c.model.filterSize, 512);
    EXPECT_EQ(c.trainInput.maxSequenceLength, 128);
    EXPECT_EQ(c.trainInput.batchSize, 16);
    EXPECT_EQ(c.optimizer.optimizerType, "adamw");
    EXPECT_EQ(c.optimizer.betas, (std::array<double, 2>{0.9, 0.95}));
    ASSERT_EQ(c.optimizer.learningRate.schedule.size(), 2u);
    const SchedulerConfig& warmup = c.optimizer.learningRate.schedule[0];
    EXPECT_EQ(warmup.scheduler, "Linear");
    EXPECT_DOUBLE_EQ(warmup.initialLearningRate, 0.0);
    EXPECT_DOUBLE_EQ(warmup.endLearningRate, 3e-3);
    EXPECT_EQ(warmup.totalIters, 30);
    EXPECT_DOUBLE_EQ(c.optimizer.learningRate.schedule[1].endLearningRate, 3e-4);
    EXPECT_DOUBLE_EQ(c.optimizer.weightDecay, 0.1);
    EXPECT_DOUBLE_EQ(c.optimizer.maxGradientNorm, 1.0);
    EXPECT_EQ(c.runconfig.maxSteps, 600);
    EXPECT_EQ(c.runconfig.evalFrequency, 100);
    EXPECT_EQ(c.runconfig.evalSteps, 10);
    EXPECT_EQ(c.runconfig.logSteps, 10);
    EXPECT_EQ(c.runconfig.seed, 1);
    EXPECT_EQ(c.runconfig.modelDir, "");
}

TEST(Presets, GptMicroTrainsItsOwnBpe) {
    const Config c = loadPreset("gpt-micro.yaml");
    EXPECT_EQ(c.trainInput.tokenizer.type, "train-bpe");
    EXPECT_EQ(c.trainInput.tokenizer.vocabSize, 2048);
    EXPECT_EQ(c.model.vocabSize, 2048);
    EXPECT_EQ(c.model.hiddenSize, 256);
    EXPECT_EQ(c.model.numHiddenLayers, 6);
    EXPECT_EQ(c.model.numHeads, 8);
    EXPECT_EQ(c.model.filterSize, 1024);
    EXPECT_EQ(c.trainInput.maxSequenceLength, 256);
    EXPECT_EQ(c.trainInput.batchSize, 8);
    EXPECT_EQ(c.runconfig.maxSteps, 2000);
}

// The shipped base model (resources/base-model/) is llama-base trained by make_base_model.sh: its
// config keeps the preset's shape, optimizer and data settings, so the preset reproduces it.
TEST(Presets, LlamaBaseIsTheRecipeOfTheShippedBaseModel) {
    const Config c = loadPreset("llama-base.yaml");
    EXPECT_EQ(c.model.name, "llama-base");
    EXPECT_EQ(c.model.positionEmbeddingType, "rotary");
    EXPECT_EQ(c.trainInput.tokenizer.type, "train-bpe");
    EXPECT_EQ(c.trainInput.tokenizer.vocabSize, 2048);
    EXPECT_EQ(c.model.vocabSize, 2048);
    EXPECT_TRUE(c.model.mixedPrecision);
    auto shipped = loadConfigFile(kPresets / "../resources/base-model/config.yaml");
    ASSERT_TRUE(shipped.ok()) << shipped.error().message;
    const Config& s = shipped->config;
    EXPECT_EQ(s.model, c.model);
    EXPECT_EQ(s.optimizer, c.optimizer);
    EXPECT_EQ(s.trainInput.tokenizer, c.trainInput.tokenizer);
    EXPECT_EQ(s.trainInput.batchSize, c.trainInput.batchSize);
    EXPECT_EQ(s.trainInput.maxSequenceLength, c.trainInput.maxSequenceLength);
    EXPECT_EQ(s.trainInput.validationFraction, c.trainInput.validationFraction);
    EXPECT_EQ(s.runconfig.maxSteps, c.runconfig.maxSteps);
    EXPECT_EQ(s.runconfig.seed, c.runconfig.seed);
}

// gpt-base, the GPT-2-block base llama-base replaced, is kept as the comparison on the same
// budget: the same data, optimizer, schedule, steps and width (`wafer validate` counts 5,246,208
// parameters for llama-base against 5,296,128: test_model's parameter tests own that count).
TEST(Presets, GptBaseDiffersFromLlamaBaseOnlyInItsBlocks) {
    const Config gpt = loadPreset("gpt-base.yaml");
    const Config llama = loadPreset("llama-base.yaml");
    EXPECT_EQ(gpt.optimizer, llama.optimizer);
    EXPECT_EQ(gpt.trainInput.tokenizer, llama.trainInput.tokenizer);
    EXPECT_EQ(gpt.trainInput.batchSize, llama.trainInput.batchSize);
    EXPECT_EQ(gpt.trainInput.maxSequenceLength, llama.trainInput.maxSequenceLength);
    EXPECT_EQ(gpt.runconfig.maxSteps, llama.runconfig.maxSteps);
    EXPECT_EQ(gpt.runconfig.seed, llama.runconfig.seed);
    EXPECT_EQ(gpt.model.dropoutRate, llama.model.dropoutRate);
    EXPECT_EQ(gpt.model.hiddenSize, llama.model.hiddenSize);
    EXPECT_EQ(gpt.model.numHiddenLayers, llama.model.numHiddenLayers);
    // SwiGLU's three C x 3C matrices (9 C^2) against GPT-2's two C x 4C (8 C^2); GQA's narrower K
    // and V (2 of 4 heads: C^2 less) make up the difference.
    EXPECT_EQ(llama.model.filterSize, 3 * llama.model.hiddenSize);
    EXPECT_EQ(gpt.model.filterSize, 4 * gpt.model.hiddenSize);
}

TEST(Presets, CerebrasGpt111mKeepsThePublishedRecipe) {
    const Config c = loadPreset("cerebras-gpt-111m.yaml");
    EXPECT_EQ(c.model.numHiddenLayers, 10);
    EXPECT_EQ(c.model.hiddenSize, 768);
    EXPECT_EQ(c.model.numHeads, 12);
    EXPECT_EQ(c.model.filterSize, 3072);
    EXPECT_EQ(c.model.vocabSize, 50257);
    EXPECT_EQ(c.model.maxPositionEmbeddings, 2048);
    EXPECT_EQ(c.trainInput.maxSequenceLength, 2048);
    EXPECT_EQ(c.trainInput.batchSize, 120);
    EXPECT_EQ(c.optimizer.betas, (std::array<double, 2>{0.9, 0.95}));
    EXPECT_DOUBLE_EQ(c.optimizer.eps, 1e-8);
    EXPECT_DOUBLE_EQ(c.optimizer.weightDecay, 0.1);
    ASSERT_EQ(c.optimizer.learningRate.schedule.size(), 2u);
    EXPECT_EQ(c.optimizer.learningRate.schedule[0].totalIters, 1525);
    EXPECT_DOUBLE_EQ(c.optimizer.learningRate.schedule[0].endLearningRate, 6e-4);
    EXPECT_EQ(c.optimizer.learningRate.schedule[1].totalIters, 7512);
    EXPECT_DOUBLE_EQ(c.optimizer.learningRate.schedule[1].endLearningRate, 6e-5);
    EXPECT_EQ(c.runconfig.maxSteps, 1525 + 7512);
    EXPECT_DOUBLE_EQ(c.model.initializer.std, 0.02);
    ASSERT_TRUE(c.model.outputLayerInitializer.has_value());
    EXPECT_DOUBLE_EQ(c.model.outputLayerInitializer->std, 0.02 / std::sqrt(2.0 * 10));
    EXPECT_EQ(c.trainInput.tokenizer.type, "byte");
}

// The Llama-family presets (issue 33) carry the published shapes in ModelZoo's keys: SmolLM-135M
// (576 x 30, 9 heads, 3 KV heads, 1536, vocab 49152, tied, theta 1e4) and Llama-2 70B (8192 x
// 80, 64 heads, 8 KV heads, 28672, vocab 32000, untied); no biases, RMSNorm, SwiGLU, rotary.
void expectLlamaBlocks(const ModelConfig& m) {
    EXPECT_EQ(m.positionEmbeddingType, "rotary");
    EXPECT_EQ(m.normType, "rmsnorm");
    EXPECT_EQ(m.nonlinearity, "swiglu");
    EXPECT_FALSE(m.useProjectionBiasInAttention);
    EXPECT_FALSE(m.useFfnBiasInAttention);
    EXPECT_FALSE(m.useFfnBias);
}

TEST(Presets, SmolLmHasThePublishedShape) {
    const ModelConfig m = loadPreset("smollm-135m.yaml").model;
    expectLlamaBlocks(m);
    EXPECT_EQ(m.hiddenSize, 576);
    EXPECT_EQ(m.numHiddenLayers, 30);
    EXPECT_EQ(m.numHeads, 9);
    EXPECT_EQ(m.attentionModule, "multiquery_attention");
    EXPECT_EQ(m.extraAttentionParams.numKvGroups, 3);
    EXPECT_EQ(m.filterSize, 1536);
    EXPECT_EQ(m.vocabSize, 49152);
    EXPECT_TRUE(m.shareEmbeddingWeights);
    EXPECT_EQ(m.ropeTheta, 1e4);
}

TEST(Presets, Llama2ShapesAreThePublishedOnes) {
    const Config big = loadPreset("llama-2-70b.yaml");
    expectLlamaBlocks(big.model);
    EXPECT_EQ(big.model.hiddenSize, 8192);
    EXPECT_EQ(big.model.numHiddenLayers, 80);
    EXPECT_EQ(big.model.numHeads, 64);
    EXPECT_EQ(big.model.extraAttentionParams.numKvGroups, 8);
    EXPECT_EQ(big.model.filterSize, 28672);
    EXPECT_EQ(big.model.vocabSize, 32000);
    EXPECT_FALSE(big.model.shareEmbeddingWeights);
    EXPECT_EQ(big.wafer.spec, "wse3");
    const ModelConfig seven = loadPreset("llama-2-7b.yaml").model;
    expectLlamaBlocks(seven);
    EXPECT_EQ(seven.hiddenSize, 4096);
    EXPECT_EQ(seven.numHiddenLayers, 32);
    EXPECT_EQ(seven.numHeads, 32);
    EXPECT_EQ(seven.extraAttentionParams.numKvGroups, 0);  // multi-head
    EXPECT_EQ(seven.filterSize, 11008);
    EXPECT_FALSE(seven.shareEmbeddingWeights);
}

// The small Llama and the BTLM-style preset train on the bundled corpus as bytes, like gpt-nano.
TEST(Presets, SmallLlamaAndBtlmTrainOnTheCorpusAsBytes) {
    const Config llama = loadPreset("llama-nano.yaml");
    expectLlamaBlocks(llama.model);
    EXPECT_EQ(llama.model.extraAttentionParams.numKvGroups, 2);
    EXPECT_EQ(llama.trainInput.tokenizer.type, "byte");
    EXPECT_EQ(llama.model.vocabSize, 256);
    const Config btlm = loadPreset("btlm-nano.yaml");
    EXPECT_EQ(btlm.model.positionEmbeddingType, "alibi");
    EXPECT_EQ(btlm.model.nonlinearity, "swiglu");
    EXPECT_TRUE(btlm.model.mupEnabled());
    EXPECT_EQ(btlm.model.embeddingsScale, 14.6);
    EXPECT_EQ(btlm.model.outputLogitsAlpha, 2.22);
    EXPECT_TRUE(btlm.model.scaleQkDotByD);
    EXPECT_EQ(btlm.trainInput.tokenizer.type, "byte");
}

}  // namespace
}  // namespace ws::config
