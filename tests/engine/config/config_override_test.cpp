// SPDX-License-Identifier: GPL-3.0-or-later
// --set overrides: scalars, nested keys, lists and list elements, sections merged by a map,
// optional sections created and removed, and every kind of bad override with its message.
#include <gtest/gtest.h>

#include <fstream>

#include "config_test_util.h"
#include "engine/config/config_yaml.h"

namespace ws::config {
namespace {

using test::overrideError;

Config withSchedule() {
    Config c;
    c.optimizer.learningRate.schedule = {{.scheduler = "Linear",
                                          .initialLearningRate = 0,
                                          .endLearningRate = 1e-3,
                                          .learningRate = 0,
                                          .totalIters = 10},
                                         {.scheduler = "Cosine",
                                          .initialLearningRate = 1e-3,
                                          .endLearningRate = 1e-4,
                                          .learningRate = 0,
                                          .totalIters = 0}};
    return c;
}

TEST(ConfigOverride, SetsScalarsAtAnyDepth) {
    Config c;
    ASSERT_TRUE(applyOverride(c, "model.hidden_size=128").ok());
    ASSERT_TRUE(applyOverride(c, "train_input.tokenizer.type = train-bpe").ok());
    ASSERT_TRUE(applyOverride(c, "optimizer.optimizer_type=SGD").ok());
    ASSERT_TRUE(applyOverride(c, "runconfig.model_dir=").ok());
    ASSERT_TRUE(applyOverride(c, "model.name=\"my: model\"").ok());
    EXPECT_EQ(c.model.hiddenSize, 128);
    EXPECT_EQ(c.trainInput.tokenizer.type, "train-bpe");
    EXPECT_EQ(c.optimizer.optimizerType, "sgd");
    EXPECT_EQ(c.runconfig.modelDir, "");
    EXPECT_EQ(c.model.name, "my: model");
}

TEST(ConfigOverride, AcceptsAliases) {
    Config c;
    ASSERT_TRUE(applyOverride(c, "optimizer.weight_decay_rate=0.2").ok());
    EXPECT_DOUBLE_EQ(c.optimizer.weightDecay, 0.2);
}

TEST(ConfigOverride, SetsListsAndListElements) {
    Config c;
    ASSERT_TRUE(applyOverride(c, "optimizer.betas=[0.8, 0.9]").ok());
    EXPECT_EQ(c.optimizer.betas, (std::array<double, 2>{0.8, 0.9}));
    ASSERT_TRUE(applyOverride(c, "optimizer.betas[1]=0.99").ok());
    EXPECT_EQ(c.optimizer.betas, (std::array<double, 2>{0.8, 0.99}));
    ASSERT_TRUE(applyOverride(c, "train_input.data_dir=[a.txt, b]").ok());
    EXPECT_EQ(c.trainInput.dataDir, (std::vector<std::string>{"a.txt", "b"}));
    ASSERT_TRUE(applyOverride(c, "train_input.data_dir[1]=c").ok());
    EXPECT_EQ(c.trainInput.dataDir, (std::vector<std::string>{"a.txt", "c"}));
    ASSERT_TRUE(applyOverride(c, "train_input.data_dir=one/folder").ok());
    EXPECT_EQ(c.trainInput.dataDir, std::vector<std::string>{"one/folder"});
}

TEST(ConfigOverride, SetsSchedulePiecesAndWholeSchedules) {
    Config c = withSchedule();
    ASSERT_TRUE(applyOverride(c, "optimizer.learning_rate[1].total_iters=500").ok());
    EXPECT_EQ(c.optimizer.learningRate.schedule[1].totalIters, 500);
    ASSERT_TRUE(applyOverride(c, "optimizer.learning_rate[0].steps=20").ok());  // alias
    EXPECT_EQ(c.optimizer.learningRate.schedule[0].totalIters, 20);
    // A map merges into the piece: only end_learning_rate changes.
    ASSERT_TRUE(applyOverride(c, "optimizer.learning_rate[0]={end_learning_rate: 0.01}").ok());
    EXPECT_DOUBLE_EQ(c.optimizer.learningRate.schedule[0].endLearningRate, 0.01);
    EXPECT_EQ(c.optimizer.learningRate.schedule[0].totalIters, 20);
    // A number replaces the schedule by a constant.
    Config constant = c;
    ASSERT_TRUE(applyOverride(constant, "optimizer.learning_rate=3e-4").ok());
    EXPECT_TRUE(constant.optimizer.learningRate.schedule.empty());
    EXPECT_DOUBLE_EQ(constant.optimizer.learningRate.constant, 3e-4);
    // A list replaces the schedule.
    ASSERT_TRUE(
        applyOverride(c, "optimizer.learning_rate=[{scheduler: constant, learning_rate: 0.01}]")
            .ok());
    ASSERT_EQ(c.optimizer.learningRate.schedule.size(), 1u);
    EXPECT_EQ(c.optimizer.learningRate.schedule[0].scheduler, "Constant");
    EXPECT_DOUBLE_EQ(c.optimizer.learningRate.schedule[0].learningRate, 0.01);
}

TEST(ConfigOverride, MergesMapsIntoSectionsAndHandlesOptionalSections) {
    Config c;
    ASSERT_TRUE(applyOverride(c, "train_input.tokenizer={type: train-bpe, vocab_size: 512}").ok());
    EXPECT_EQ(c.trainInput.tokenizer.type, "train-bpe");
    EXPECT_EQ(c.trainInput.tokenizer.vocabSize, 512);
    ASSERT_TRUE(applyOverride(c, "model={hidden_size: 64, num_heads: 2}").ok());
    EXPECT_EQ(c.model.hiddenSize, 64);
    EXPECT_EQ(c.model.numHeads, 2);
    EXPECT_EQ(c.model.numHiddenLayers, Config{}.model.numHiddenLayers);  // untouched

    ASSERT_FALSE(c.model.outputLayerInitializer.has_value());
    ASSERT_TRUE(applyOverride(c, "model.output_layer_initializer.std=0.01").ok());
    ASSERT_TRUE(c.model.outputLayerInitializer.has_value());
    EXPECT_DOUBLE_EQ(c.model.outputLayerInitializer->std, 0.01);
    EXPECT_EQ(c.model.outputLayerInitializer->name, "truncated_normal");
    ASSERT_TRUE(applyOverride(c, "model.output_layer_initializer=null").ok());
    EXPECT_FALSE(c.model.outputLayerInitializer.has_value());
}

TEST(ConfigOverride, LoraSectionIsCreatedByOneKeyAndTakesPeftSpellings) {
    Config c;
    ASSERT_TRUE(applyOverride(c, "lora.rank=16").ok());
    ASSERT_TRUE(c.lora.has_value());
    EXPECT_EQ(c.lora->rank, 16);
    EXPECT_DOUBLE_EQ(c.lora->alpha, LoraConfig{}.alpha);
    EXPECT_EQ(c.lora->targets, LoraConfig{}.targets);
    // PEFT's LoraConfig names (r, lora_alpha, lora_dropout, target_modules) are accepted.
    ASSERT_TRUE(
        applyOverride(c,
                      "lora={r: 4, lora_alpha: 8, lora_dropout: 0.1, target_modules: [c_fc, "
                      "mlp.c_proj]}")
            .ok());
    EXPECT_EQ(c.lora->rank, 4);
    EXPECT_DOUBLE_EQ(c.lora->alpha, 8);
    EXPECT_DOUBLE_EQ(c.lora->dropout, 0.1);
    EXPECT_EQ(c.lora->targets, (std::vector<std::string>{"c_fc", "mlp.c_proj"}));
    ASSERT_TRUE(applyOverride(c, "lora=null").ok());
    EXPECT_FALSE(c.lora.has_value());
}

TEST(ConfigOverride, BadSyntaxSaysWhatIsExpected) {
    Config c;
    EXPECT_EQ(overrideError(c, "model.hidden_size"),
              "--set model.hidden_size: expected key.path=value, e.g. model.hidden_size=128 or "
              "optimizer.betas=[0.9, 0.95]");
    EXPECT_EQ(overrideError(c, "=5"),
              "--set =5: the key before '=' is empty; expected key.path=value, e.g. "
              "model.hidden_size=128");
    EXPECT_EQ(overrideError(c, "model..hidden_size=1"),
              "--set model..hidden_size=1: an empty name in the key path; expected "
              "key.path=value, e.g. optimizer.learning_rate[0].total_iters=100");
    EXPECT_EQ(overrideError(c, "optimizer.betas[x]=1"),
              "--set optimizer.betas[x]=1: \"betas[x]\" is not a key with a list index like "
              "learning_rate[0]; expected key.path=value, e.g. "
              "optimizer.learning_rate[0].total_iters=100");
    const std::string malformed = overrideError(c, "optimizer.betas=[0.9,");
    EXPECT_EQ(
        malformed.rfind("--set optimizer.betas=[0.9,: the value is not valid YAML (column ", 0), 0u)
        << malformed;
    EXPECT_EQ(c, Config{});  // failures leave the config as it was
}

TEST(ConfigOverride, UnknownKeySuggestsTheClosestPath) {
    Config c;
    EXPECT_EQ(overrideError(c, "model.hiden_size=1"),
              "--set model.hiden_size=1: unknown key model.hiden_size; did you mean "
              "model.hidden_size?");
    EXPECT_EQ(overrideError(c, "modle.hidden_size=1"),
              "--set modle.hidden_size=1: unknown key modle; did you mean model?");
    EXPECT_EQ(overrideError(c, "model.attention_softmax_fp32=false"),
              "--set model.attention_softmax_fp32=false: model.attention_softmax_fp32 is a "
              "ModelZoo setting Wafer Studio does not implement (files may contain it; it is "
              "ignored there), so it cannot be set");
}

TEST(ConfigOverride, WrongValueUsesTheLoadMessages) {
    Config c;
    EXPECT_EQ(overrideError(c, "model.hidden_size=abc"),
              "--set model.hidden_size=abc: model.hidden_size: expected an integer >= 1, found "
              "\"abc\"");
    EXPECT_EQ(overrideError(c, "optimizer.betas[1]=2"),
              "--set optimizer.betas[1]=2: optimizer.betas[1]: expected a number in [0, 1], found "
              "\"2\"");
    EXPECT_EQ(overrideError(c, "model.initializer={nme: normal}"),
              "--set model.initializer={nme: normal}: model.initializer.nme: unknown key; did you "
              "mean `name`?");
}

TEST(ConfigOverride, IndexErrorsSayWhatExists) {
    Config c;
    EXPECT_EQ(overrideError(c, "optimizer.learning_rate[0].total_iters=5"),
              "--set optimizer.learning_rate[0].total_iters=5: optimizer.learning_rate is a "
              "single number (0.001), not a schedule; set the whole schedule, e.g. "
              "optimizer.learning_rate=[{scheduler: Constant, learning_rate: 0.001}]");
    Config s = withSchedule();
    EXPECT_EQ(overrideError(s, "optimizer.learning_rate[2].total_iters=5"),
              "--set optimizer.learning_rate[2].total_iters=5: optimizer.learning_rate has 2 "
              "pieces, [0] to [1]; to add pieces set the whole list");
    EXPECT_EQ(overrideError(s, "optimizer.betas[2]=0.5"),
              "--set optimizer.betas[2]=0.5: optimizer.betas has 2 entries, [0] and [1]");
    EXPECT_EQ(overrideError(s, "model[0].hidden_size=5"),
              "--set model[0].hidden_size=5: model is a section, not a list; drop the [0]");
    EXPECT_EQ(overrideError(s, "model.hidden_size.x=5"),
              "--set model.hidden_size.x=5: model.hidden_size is a single value; it has no keys "
              "inside");
    EXPECT_EQ(overrideError(s, "model=5"),
              "--set model=5: model is a section: give a map like {key: value} or set one key, "
              "e.g. model.<key>=<value>");
}

TEST(ConfigOverride, LoadConfigFileAppliesOverridesAfterResolvingPaths) {
    test::TempDir dir;
    const std::filesystem::path file = dir.path() / "c.yaml";
    std::ofstream(file) << "train_input:\n    data_dir: corpus\nmodel:\n    hidden_size: 64\n";
    auto loaded = loadConfigFile(file, {"model.hidden_size=32", "eval_input.data_dir=val"});
    ASSERT_TRUE(loaded.ok()) << loaded.error().message;
    EXPECT_EQ(loaded->config.model.hiddenSize, 32);
    EXPECT_EQ(loaded->config.trainInput.dataDir,
              std::vector<std::string>{(dir.path() / "corpus").string()});
    // Override paths are relative to the current directory, so they stay as written.
    EXPECT_EQ(loaded->config.evalInput.dataDir, std::vector<std::string>{"val"});
    EXPECT_EQ(loaded->sourceFile, file);

    auto failed = loadConfigFile(file, {"model.hidden_size=x", "runconfig.max_step=1"});
    ASSERT_FALSE(failed.ok());
    EXPECT_EQ(failed.error().message,
              "--set model.hidden_size=x: model.hidden_size: expected an integer >= 1, found "
              "\"x\"\n--set runconfig.max_step=1: unknown key runconfig.max_step; did you mean "
              "runconfig.max_steps?");
}

}  // namespace
}  // namespace ws::config
