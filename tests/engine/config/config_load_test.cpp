// SPDX-License-Identifier: GPL-3.0-or-later
// Loading YAML into a Config: one test per error class with the exact message (file:line:col,
// key path, what was found, what is allowed), aliases, learning-rate forms, relative paths and
// ModelZoo-layout params files in fixtures/.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <sstream>

#include "config_test_util.h"
#include "engine/config/config_yaml.h"
#include "engine/config/validate.h"

namespace ws::config {
namespace {

using test::anyContains;
using test::parseError;
using test::parseText;

TEST(ConfigLoad, ReadsValuesAndKeepsDefaultsForMissingKeys) {
    auto loaded = parseText(
        "model:\n"
        "    hidden_size: 64\n"
        "    mixed_precision: yes\n"
        "    dropout_rate: 1e-1\n"
        "runconfig:\n"
        "    max_steps: 1.0e3\n");
    ASSERT_TRUE(loaded.ok()) << loaded.error().message;
    const Config& c = loaded->config;
    EXPECT_EQ(c.model.hiddenSize, 64);
    EXPECT_TRUE(c.model.mixedPrecision);
    EXPECT_DOUBLE_EQ(c.model.dropoutRate, 0.1);
    EXPECT_EQ(c.runconfig.maxSteps, 1000);  // an integral number written as a double is fine
    EXPECT_EQ(c.model.numHeads, Config{}.model.numHeads);
    EXPECT_TRUE(loaded->warnings.empty());
}

TEST(ConfigLoad, ReadsModelZooMupKeys) {
    auto loaded = parseText(
        "model:\n"
        "    hidden_size: 256\n"
        "    filter_size: 1024\n"
        "    mup_base_hidden_size: 32\n"
        "    mup_base_filter_size: 128\n"
        "    embeddings_scale: 10.0\n"
        "    output_logits_alpha: 2.0\n"
        "    scale_output_logits_by_d: false\n"
        "    scale_qk_dot_by_d: true\n"
        "    attention_logits_alpha: 0.5\n");
    ASSERT_TRUE(loaded.ok()) << loaded.error().message;
    const ModelConfig& m = loaded->config.model;
    EXPECT_TRUE(m.mupEnabled());
    EXPECT_EQ(m.mupBaseHiddenSize, 32);
    EXPECT_EQ(m.mupBaseFilterSize, 128);
    EXPECT_EQ(m.embeddingsScale, 10.0);
    EXPECT_EQ(m.outputLogitsAlpha, 2.0);
    EXPECT_FALSE(m.scaleOutputLogitsByD);
    EXPECT_TRUE(m.scaleQkDotByD);
    EXPECT_EQ(m.attentionLogitsAlpha, 0.5);
    EXPECT_TRUE(loaded->warnings.empty());
    EXPECT_FALSE(ModelConfig{}.mupEnabled());  // off by default
}

TEST(ConfigLoad, MupOnlyLogitKeysWarnWhenMupIsOff) {
    auto loaded = parseText("model:\n    output_logits_alpha: 2.0\n");
    ASSERT_TRUE(loaded.ok()) << loaded.error().message;
    EXPECT_TRUE(anyContains(loaded->warnings, "only act under muP, which is off"));
}

TEST(ConfigLoad, UnknownKeyNamesPlaceAndSuggestsTheClosestKey) {
    EXPECT_EQ(parseError("model:\n    hiden_size: 64\n"),
              "test.yaml:2:5: model.hiden_size: unknown key; did you mean `hidden_size`?");
    EXPECT_EQ(parseError("modle:\n    hidden_size: 64\n"),
              "test.yaml:1:1: modle: unknown key; did you mean `model`?");
    EXPECT_EQ(parseError("train_input:\n    tokenizer:\n        typ: byte\n"),
              "test.yaml:3:9: train_input.tokenizer.typ: unknown key; did you mean `type`?");
}

TEST(ConfigLoad, UnknownKeyFromAnotherSectionSaysWhereItBelongs) {
    EXPECT_EQ(parseError("model:\n    max_sequence_length: 64\n"),
              "test.yaml:2:5: model.max_sequence_length: unknown key; `max_sequence_length` "
              "belongs in train_input or eval_input, not in model");
}

TEST(ConfigLoad, UnknownKeyWithoutNearMatchListsTheAllowedKeys) {
    const std::string error = parseError("runconfig:\n    banana: 1\n");
    EXPECT_NE(error.find("test.yaml:2:5: runconfig.banana: unknown key; the keys allowed in "
                         "runconfig are max_steps, eval_steps,"),
              std::string::npos)
        << error;
}

TEST(ConfigLoad, WrongTypeNamesExpectedTypeAndFoundValue) {
    EXPECT_EQ(parseError("model:\n    hidden_size: abc\n"),
              "test.yaml:2:18: model.hidden_size: expected an integer >= 1, found \"abc\"");
    EXPECT_EQ(parseError("model:\n    num_heads: 2.5\n"),
              "test.yaml:2:16: model.num_heads: expected an integer >= 1, found \"2.5\" "
              "(integers have no fractional part)");
    EXPECT_EQ(parseError("model:\n    mixed_precision: maybe\n"),
              "test.yaml:2:22: model.mixed_precision: expected true or false, found \"maybe\"");
    EXPECT_EQ(parseError("model:\n    hidden_size: [1, 2]\n"),
              "test.yaml:2:18: model.hidden_size: expected an integer >= 1, found a list");
    EXPECT_EQ(parseError("model: 5\n"),
              "test.yaml:1:8: model: expected a section (indented `key: value` lines), found "
              "\"5\"");
    EXPECT_EQ(parseError("model:\n    hidden_size:\n"),
              "test.yaml:2:5: model.hidden_size: expected an integer >= 1, found nothing");
}

TEST(ConfigLoad, OutOfRangeNamesTheRange) {
    EXPECT_EQ(parseError("model:\n    hidden_size: 0\n"),
              "test.yaml:2:18: model.hidden_size: expected an integer >= 1, found \"0\"");
    EXPECT_EQ(parseError("model:\n    dropout_rate: 1.5\n"),
              "test.yaml:2:19: model.dropout_rate: expected a number in [0, 0.999], found \"1.5\"");
    EXPECT_EQ(parseError("model:\n    hidden_size: 99999999999\n"),
              "test.yaml:2:18: model.hidden_size: expected an integer >= 1 that fits in 32 bits, "
              "found \"99999999999\"");
}

TEST(ConfigLoad, ChoicesAreCaseInsensitiveAndNormalised) {
    auto loaded = parseText(
        "optimizer:\n"
        "    optimizer_type: AdamW\n"
        "    learning_rate:\n"
        "        - scheduler: linear\n"
        "          initial_learning_rate: 0.0\n"
        "          end_learning_rate: 1.0e-3\n"
        "          total_iters: 10\n");
    ASSERT_TRUE(loaded.ok()) << loaded.error().message;
    EXPECT_EQ(loaded->config.optimizer.optimizerType, "adamw");
    EXPECT_EQ(loaded->config.optimizer.learningRate.schedule.at(0).scheduler, "Linear");
}

TEST(ConfigLoad, BadChoiceListsTheChoicesAndSuggestsOne) {
    EXPECT_EQ(parseError("optimizer:\n    optimizer_type: adam\n"),
              "test.yaml:2:21: optimizer.optimizer_type: expected one of \"adamw\", \"sgd\" (any "
              "letter case), found \"adam\"; did you mean \"adamw\"?");
    EXPECT_EQ(parseError("model:\n    fp16_type: float16\n"),
              "test.yaml:2:16: model.fp16_type: expected one of \"bfloat16\" (any letter case), "
              "found \"float16\"; float16 needs loss scaling, which Wafer Studio does not "
              "implement: use bfloat16");
}

TEST(ConfigLoad, ValueAliasesAreReadUnderOurNameWithAWarning) {
    auto loaded = parseText(
        "model:\n"
        "    fp16_type: cbfloat16\n"
        "optimizer:\n"
        "    learning_rate:\n"
        "        - scheduler: CosineDecay\n"
        "          initial_learning_rate: 6.0e-4\n"
        "          end_learning_rate: 6.0e-5\n"
        "          decay_steps: 100\n");
    ASSERT_TRUE(loaded.ok()) << loaded.error().message;
    EXPECT_EQ(loaded->config.model.fp16Type, "bfloat16");
    const SchedulerConfig& piece = loaded->config.optimizer.learningRate.schedule.at(0);
    EXPECT_EQ(piece.scheduler, "Cosine");
    EXPECT_EQ(piece.totalIters, 100);
    ASSERT_EQ(loaded->warnings.size(), 2u);
    EXPECT_EQ(loaded->warnings[0],
              "test.yaml:2:16: model.fp16_type: read \"cbfloat16\" as \"bfloat16\" (the same "
              "setting under Wafer Studio's name)");
}

TEST(ConfigLoad, MalformedYamlGivesLineAndColumn) {
    const std::string error = parseError("model:\n    hidden_size: [64, 128\nrunconfig:\n");
    EXPECT_EQ(error.rfind("test.yaml:", 0), 0u) << error;
    EXPECT_NE(error.find(": malformed YAML: "), std::string::npos) << error;
    EXPECT_EQ(parseError("model:\n    hidden_size: 64\n  num_heads: 4\n"),
              "test.yaml:3:3: malformed YAML: end of map not found");
    EXPECT_EQ(parseError(""),
              "test.yaml: the file is empty; expected sections model, optimizer, train_input, "
              "eval_input, runconfig (see presets/gpt-nano.yaml)");
    EXPECT_EQ(parseError("- model\n"),
              "test.yaml:1:1: expected sections (model:, optimizer:, train_input:, ...), found a "
              "list");
}

TEST(ConfigLoad, DuplicateKeysWithDifferentValuesAndTwoSpellingsOfOneKeyAreErrors) {
    EXPECT_EQ(parseError("model:\n    hidden_size: 64\n    hidden_size: 128\n"),
              "test.yaml:3:5: model.hidden_size: this key appears twice in the same section "
              "with different values: \"64\" at line 2, \"128\" at line 3; keep the one you "
              "mean");
    EXPECT_EQ(parseError("optimizer:\n    betas: [0.9, 0.95]\n    betas: [0.9, 0.99]\n"),
              "test.yaml:3:5: optimizer.betas: this key appears twice in the same section with "
              "different values: [0.9, 0.95] at line 2, [0.9, 0.99] at line 3; keep the one "
              "you mean");
    EXPECT_EQ(parseError("optimizer:\n    weight_decay: 0.1\n    weight_decay_rate: 0.2\n"),
              "test.yaml:3:5: optimizer.weight_decay_rate: `weight_decay` and "
              "`weight_decay_rate` are two names of the same setting; keep only `weight_decay`");
}

TEST(ConfigLoad, ARepeatedKeyWithTheSameValueLoadsWithAWarningNamingBothLines) {
    auto loaded = parseText(
        "model:\n"
        "    hidden_size: 64\n"
        "    num_heads: 4\n"
        "    hidden_size: 6.4e1\n"  // the same number written differently
        "optimizer:\n"
        "    betas: [0.9, 0.95]\n"
        "    betas: [0.9, 0.95]\n");
    ASSERT_TRUE(loaded.ok()) << loaded.error().message;
    EXPECT_EQ(loaded->config.model.hiddenSize, 64);
    ASSERT_EQ(loaded->warnings.size(), 2u);
    EXPECT_EQ(loaded->warnings[0],
              "test.yaml:4:5: model.hidden_size: this key appears twice in the same section "
              "(lines 2 and 4) with the same value \"6.4e1\"; read once, delete one of them");
    EXPECT_EQ(loaded->warnings[1],
              "test.yaml:7:5: optimizer.betas: this key appears twice in the same section "
              "(lines 6 and 7) with the same value [0.9, 0.95]; read once, delete one of them");
}

TEST(ConfigLoad, AliasesAreAccepted) {
    auto loaded = parseText(
        "optimizer:\n"
        "    weight_decay_rate: 0.05\n"
        "    epsilon: 1.0e-6\n"
        "    beta1: 0.8\n"
        "    beta2: 0.99\n"
        "runconfig:\n"
        "    keep_checkpoint_max: 3\n");
    ASSERT_TRUE(loaded.ok()) << loaded.error().message;
    EXPECT_DOUBLE_EQ(loaded->config.optimizer.weightDecay, 0.05);
    EXPECT_DOUBLE_EQ(loaded->config.optimizer.eps, 1e-6);
    EXPECT_EQ(loaded->config.optimizer.betas, (std::array<double, 2>{0.8, 0.99}));
    EXPECT_EQ(loaded->config.runconfig.maxCheckpoints, 3);
    EXPECT_EQ(parseError("optimizer:\n    betas: [0.9, 0.95]\n    beta1: 0.8\n"),
              "test.yaml:3:5: optimizer.beta1: betas is also given; write either betas: "
              "[beta1, beta2] or beta1 and beta2");
}

TEST(ConfigLoad, LearningRateAsANumber) {
    auto loaded = parseText("optimizer:\n    learning_rate: 2e-4\n");
    ASSERT_TRUE(loaded.ok()) << loaded.error().message;
    EXPECT_DOUBLE_EQ(loaded->config.optimizer.learningRate.constant, 2e-4);
    EXPECT_TRUE(loaded->config.optimizer.learningRate.schedule.empty());
    EXPECT_EQ(parseError("optimizer:\n    learning_rate: fast\n"),
              "test.yaml:2:20: optimizer.learning_rate: expected a number >= 0 or a list of "
              "schedule pieces ({scheduler: Linear|Cosine|Constant, ...}), found \"fast\"");
}

TEST(ConfigLoad, LearningRateAsAScheduleList) {
    auto loaded = parseText(
        "optimizer:\n"
        "    learning_rate:\n"
        "        - scheduler: Linear\n"
        "          initial_learning_rate: 0.0\n"
        "          end_learning_rate: 6.0e-4\n"
        "          steps: 100\n"
        "        - scheduler: Constant\n"
        "          learning_rate: 6.0e-4\n");
    ASSERT_TRUE(loaded.ok()) << loaded.error().message;
    const std::vector<SchedulerConfig>& schedule = loaded->config.optimizer.learningRate.schedule;
    ASSERT_EQ(schedule.size(), 2u);
    EXPECT_EQ(schedule[0].scheduler, "Linear");
    EXPECT_DOUBLE_EQ(schedule[0].endLearningRate, 6e-4);
    EXPECT_EQ(schedule[0].totalIters, 100);
    EXPECT_EQ(schedule[1].scheduler, "Constant");
    EXPECT_DOUBLE_EQ(schedule[1].learningRate, 6e-4);
    EXPECT_EQ(schedule[1].totalIters, 0);
}

TEST(ConfigLoad, ScheduleErrorsNameThePiece) {
    EXPECT_EQ(parseError("optimizer:\n"
                         "    learning_rate:\n"
                         "        - scheduler: Linear\n"
                         "          initial_learning_rate: 0.0\n"
                         "          end_learning_rate: 1.0e-3\n"
                         "          total_iters: 10\n"
                         "        - scheduler: Linear\n"
                         "          initial_learning_rate: 1.0e-3\n"
                         "          end_learning_rate: 0.0\n"
                         "          total_iters: -5\n"),
              "test.yaml:10:24: optimizer.learning_rate[1].total_iters: expected an integer >= 0, "
              "found \"-5\"");
    EXPECT_EQ(parseError("optimizer:\n"
                         "    learning_rate:\n"
                         "        - scheduler: Cosine\n"
                         "          initial_learning_rate: 1.0e-3\n"
                         "          total_iters: 10\n"),
              "test.yaml:3:11: optimizer.learning_rate[0]: a Cosine piece needs "
              "end_learning_rate (missing here)");
    EXPECT_EQ(parseError("optimizer:\n"
                         "    learning_rate:\n"
                         "        - scheduler: Constant\n"
                         "          learning_rate: 1.0e-3\n"
                         "          total_iter: 10\n"),
              "test.yaml:5:11: optimizer.learning_rate[0].total_iter: unknown key; did you mean "
              "`total_iters`?");
    // A misspelt required key is reported once, as the typo, not also as missing.
    EXPECT_EQ(parseError("optimizer:\n"
                         "    learning_rate:\n"
                         "        - scheduler: Linear\n"
                         "          initial_learning_rate: 0.0\n"
                         "          end_learning_rat: 1.0e-3\n"),
              "test.yaml:5:11: optimizer.learning_rate[0].end_learning_rat: unknown key; did you "
              "mean `end_learning_rate`?");
}

TEST(ConfigLoad, BetasMustBeTwoNumbers) {
    EXPECT_EQ(parseError("optimizer:\n    betas: [0.9]\n"),
              "test.yaml:2:12: optimizer.betas: expected a list of 2 numbers in [0, 1] like "
              "[0.9, 0.95], found a list of 1");
    EXPECT_EQ(parseError("optimizer:\n    betas: [0.9, high]\n"),
              "test.yaml:2:18: optimizer.betas[1]: expected a number in [0, 1], found \"high\"");
}

TEST(ConfigLoad, DataDirIsAPathOrAList) {
    auto single = parseText("train_input:\n    data_dir: corpus\n");
    ASSERT_TRUE(single.ok()) << single.error().message;
    EXPECT_EQ(single->config.trainInput.dataDir, std::vector<std::string>{"/base/presets/corpus"});
    auto list = parseText("train_input:\n    data_dir: [a.txt, /abs/b]\n");
    ASSERT_TRUE(list.ok()) << list.error().message;
    EXPECT_EQ(list->config.trainInput.dataDir,
              (std::vector<std::string>{"/base/presets/a.txt", "/abs/b"}));
    EXPECT_EQ(parseError("train_input:\n    data_dir: {a: b}\n"),
              "test.yaml:2:15: train_input.data_dir: expected a path or a list of paths, found a "
              "section");
}

TEST(ConfigLoad, RelativePathsResolveAgainstTheFileFolderButModelDirStays) {
    auto loaded = parseText(
        "train_input:\n"
        "    data_dir: ../resources/corpus\n"
        "    tokenizer:\n"
        "        type: bpe\n"
        "        vocab_file: gpt2/vocab.json\n"
        "        merges_file: /opt/gpt2/merges.txt\n"
        "eval_input:\n"
        "    data_dir: ./val\n"
        "runconfig:\n"
        "    model_dir: runs/mine\n"
        "    checkpoint_path: ../base/model.safetensors\n");
    ASSERT_TRUE(loaded.ok()) << loaded.error().message;
    const Config& c = loaded->config;
    EXPECT_EQ(c.trainInput.dataDir, std::vector<std::string>{"/base/resources/corpus"});
    EXPECT_EQ(c.trainInput.tokenizer.vocabFile, "/base/presets/gpt2/vocab.json");
    EXPECT_EQ(c.trainInput.tokenizer.mergesFile, "/opt/gpt2/merges.txt");
    EXPECT_EQ(c.evalInput.dataDir, std::vector<std::string>{"/base/presets/val"});
    EXPECT_EQ(c.runconfig.modelDir, "runs/mine");
    EXPECT_EQ(c.runconfig.checkpointPath, "/base/base/model.safetensors");
}

TEST(ConfigLoad, UnusedTopLevelSectionsWarnButTheNewTrainerLayoutIsRefused) {
    // sparsity: is read (config_sparsity_test.cpp); csx: is not.
    auto loaded = parseText("sparsity:\n    sparsity: 0.75\ncsx:\n    num_csx: 2\n");
    ASSERT_TRUE(loaded.ok()) << loaded.error().message;
    ASSERT_EQ(loaded->warnings.size(), 1u);
    ASSERT_TRUE(loaded->config.sparsity);
    EXPECT_EQ(loaded->config.sparsity->sparsity, 0.75);
    EXPECT_EQ(loaded->warnings[0].rfind("test.yaml:3:1: csx: ModelZoo setting not implemented", 0),
              0u)
        << loaded->warnings[0];
    EXPECT_EQ(parseError("trainer:\n    init:\n        seed: 1\n"),
              "test.yaml:2:5: trainer: this is ModelZoo 2.x's trainer layout, which Wafer Studio "
              "does not read; use the legacy layout with top-level sections model, optimizer, "
              "train_input, eval_input, runconfig");
}

TEST(ConfigLoad, IgnoredModelZooKeySaysWhenTheFileAsksForSomethingElse) {
    auto loaded =
        parseText("model:\n    attention_softmax_fp32: False\n    fold_rope_consts: True\n");
    ASSERT_TRUE(loaded.ok()) << loaded.error().message;
    ASSERT_EQ(loaded->warnings.size(), 2u);
    EXPECT_EQ(loaded->warnings[0],
              "test.yaml:2:5: model.attention_softmax_fp32: ModelZoo setting not implemented by "
              "Wafer Studio, ignored: attention softmax is always computed in fp32 (the file asks "
              "for \"False\"; Wafer Studio behaves as true)");
    EXPECT_EQ(loaded->warnings[1],
              "test.yaml:3:5: model.fold_rope_consts: ModelZoo setting not implemented by "
              "Wafer Studio, ignored: a Cerebras runtime setting with no effect here");
}

TEST(ConfigLoad, ReportsEveryErrorInOnePass) {
    const std::string error =
        parseError("model:\n    hidden_size: x\n    num_heads: y\nrunconfig:\n    max_step: 3\n");
    EXPECT_EQ(error,
              "test.yaml:2:18: model.hidden_size: expected an integer >= 1, found \"x\"\n"
              "test.yaml:3:16: model.num_heads: expected an integer >= 1, found \"y\"\n"
              "test.yaml:5:5: runconfig.max_step: unknown key; did you mean `max_steps`?");
}

TEST(ConfigLoad, MissingFileNamesThePath) {
    auto loaded = loadConfigFile("/nonexistent/dir/gpt.yaml");
    ASSERT_FALSE(loaded.ok());
    EXPECT_EQ(loaded.error().message,
              "cannot open config file /nonexistent/dir/gpt.yaml: No such file or directory; "
              "check the path (presets live in presets/)");
}

TEST(ConfigLoad, FileErrorsUseTheFileNameAsGiven) {
    test::TempDir dir;
    const std::filesystem::path file = dir.path() / "gpt-nano.yaml";
    std::ofstream(file) << "# comment\nmodel:\n    vocab_size: 256\n    hidden_size: abc\n";
    auto loaded = loadConfigFile(file);
    ASSERT_FALSE(loaded.ok());
    EXPECT_EQ(loaded.error().message, file.string() +
                                          ":4:18: model.hidden_size: expected an integer >= 1, "
                                          "found \"abc\"");
}

std::filesystem::path fixture(const char* name) {
    return std::filesystem::path(WAFER_CONFIG_FIXTURES_DIR) / name;
}

TEST(ConfigLoad, ModelZooGpt2SmallLoadsWithWarnings) {
    auto loaded = loadConfigFile(fixture("modelzoo_params_gpt2_small.yaml"));
    ASSERT_TRUE(loaded.ok()) << loaded.error().message;
    const Config& c = loaded->config;
    EXPECT_EQ(c.model.hiddenSize, 768);
    EXPECT_EQ(c.model.numHiddenLayers, 12);
    EXPECT_EQ(c.model.maxPositionEmbeddings, 2048);
    EXPECT_DOUBLE_EQ(c.model.dropoutRate, 0.1);
    EXPECT_TRUE(c.model.mixedPrecision);
    EXPECT_EQ(c.optimizer.optimizerType, "adamw");
    EXPECT_EQ(c.optimizer.betas, (std::array<double, 2>{0.9, 0.95}));
    EXPECT_DOUBLE_EQ(c.optimizer.weightDecay, 0.01);
    ASSERT_EQ(c.optimizer.learningRate.schedule.size(), 2u);
    EXPECT_EQ(c.optimizer.learningRate.schedule[0].totalIters, 1600);
    EXPECT_EQ(c.optimizer.learningRate.schedule[1].totalIters, 150000);
    EXPECT_EQ(c.trainInput.batchSize, 112);
    EXPECT_EQ(c.trainInput.dataProcessor, "GptHDF5DataProcessor");
    EXPECT_EQ(c.trainInput.dataDir.at(0),
              (std::filesystem::path(WAFER_CONFIG_FIXTURES_DIR) /
               "language/datasets/owt_pretraining_gpt_hdf5/train_8M_msl2048")
                  .lexically_normal()
                  .string());
    EXPECT_EQ(c.runconfig.maxSteps, 151600);
    EXPECT_EQ(c.runconfig.modelDir, "./model_dir");
    for (const char* key :
         {"train_input.prefetch_factor", "model.loss_scaling", "model.loss_weight",
          "model.attention_type", "optimizer.initial_loss_scale", "optimizer.max_loss_scale"})
        EXPECT_TRUE(anyContains(loaded->warnings, std::string(key) + ": ModelZoo setting not "
                                                                     "implemented"))
            << key;
    EXPECT_TRUE(validate(c).empty()) << validate(c).front();
}

TEST(ConfigLoad, CerebrasGpt111mLoadsWithOlderSpellings) {
    auto loaded = loadConfigFile(fixture("modelzoo_cerebras_gpt_111m.yaml"));
    ASSERT_TRUE(loaded.ok()) << loaded.error().message;
    const Config& c = loaded->config;
    EXPECT_EQ(c.model.numHiddenLayers, 10);
    EXPECT_EQ(c.optimizer.betas, (std::array<double, 2>{0.9, 0.95}));  // beta1/beta2
    EXPECT_DOUBLE_EQ(c.optimizer.weightDecay, 0.1);                    // weight_decay_rate
    ASSERT_EQ(c.optimizer.learningRate.schedule.size(), 2u);
    EXPECT_EQ(c.optimizer.learningRate.schedule[0].totalIters, 1525);  // steps
    EXPECT_EQ(c.optimizer.learningRate.schedule[1].totalIters, 7512);
    EXPECT_DOUBLE_EQ(c.optimizer.learningRate.schedule[1].endLearningRate, 6e-5);
    ASSERT_TRUE(c.model.outputLayerInitializer.has_value());
    EXPECT_DOUBLE_EQ(c.model.outputLayerInitializer->std, 0.004472135954999579);
    EXPECT_EQ(c.trainInput.maxSequenceLength, 2048);
    EXPECT_EQ(c.trainInput.dataDir.size(), 3u);
    EXPECT_EQ(c.runconfig.maxSteps, 9037);
    for (const char* key :
         {"train_input.vocab_size", "train_input.repeat", "model.use_position_embedding",
          "model.use_bfloat16", "optimizer.log_summaries", "runconfig.execution_strategy"})
        EXPECT_TRUE(anyContains(loaded->warnings, key)) << key;
    EXPECT_TRUE(validate(c).empty()) << validate(c).front();
}

// The real file repeats `steps: 150000` in its second schedule piece (issue: it was refused).
TEST(ConfigLoad, ModelZooGpt2SmallWsWithARepeatedKeyLoads) {
    auto loaded = loadConfigFile(fixture("modelzoo_params_gpt2_small_ws.yaml"));
    ASSERT_TRUE(loaded.ok()) << loaded.error().message;
    const Config& c = loaded->config;
    ASSERT_EQ(c.optimizer.learningRate.schedule.size(), 2u);
    EXPECT_EQ(c.optimizer.learningRate.schedule[1].totalIters, 150000);
    EXPECT_EQ(c.trainInput.maxSequenceLength, 2048);
    EXPECT_TRUE(anyContains(loaded->warnings,
                            "modelzoo_params_gpt2_small_ws.yaml:64:9: "
                            "optimizer.learning_rate[1].steps: this key appears twice in the "
                            "same section (lines 63 and 64) with the same value \"150000\""));
    EXPECT_TRUE(validate(c).empty()) << validate(c).front();
}

// Cerebras-GPT 111M muP as ModelZoo 1.9 wrote it: the older muP keys become the current ones.
TEST(ConfigLoad, ModelZooOlderMupKeysTranslateToTheCurrentOnes) {
    auto loaded = loadConfigFile(fixture("modelzoo_cerebras_gpt_111m_mup.yaml"));
    ASSERT_TRUE(loaded.ok()) << loaded.error().message;
    const ModelConfig& m = loaded->config.model;
    EXPECT_TRUE(m.mupEnabled());
    EXPECT_EQ(m.mupBaseHiddenSize, 256);  // 768 x 1/3
    EXPECT_EQ(m.mupBaseFilterSize, 1024);
    EXPECT_EQ(m.outputLogitsAlpha, 1.0);  // logits x 1/3 = alpha / m with m = 3
    EXPECT_TRUE(m.scaleOutputLogitsByD);
    EXPECT_EQ(m.embeddingsScale, 10.0);
    EXPECT_TRUE(m.scaleQkDotByD);
    // Under mup_base_hidden_size the engine divides these by sqrt(m) again; the translation
    // multiplies them back so the weights start with the stds the file gives.
    const double sqrtM = std::sqrt(3.0);
    EXPECT_NEAR(m.initializer.std / sqrtM, 0.02, 1e-12);
    EXPECT_NEAR(m.initializer.b / sqrtM, 0.04, 1e-12);
    ASSERT_TRUE(m.outputLayerInitializer.has_value());
    EXPECT_NEAR(m.outputLayerInitializer->std / sqrtM, 0.004472135954999579, 1e-12);
    EXPECT_EQ(m.embeddingInitializer.std, 0.02);  // embeddings are not rescaled under muP

    // The same model written with the current keys loads to the same config.
    std::ostringstream read;
    read << std::ifstream(fixture("modelzoo_cerebras_gpt_111m_mup.yaml")).rdbuf();
    std::string text = read.str();
    auto replace = [&text](const std::string& from, const std::string& to) {
        const size_t at = text.find(from);
        ASSERT_NE(at, std::string::npos) << from;
        text.replace(at, from.size(), to);
    };
    replace("    output_logits_scale: 0.3333333333333333\n",
            "    mup_base_hidden_size: 256\n    mup_base_filter_size: 1024\n"
            "    output_logits_alpha: 1.0\n");
    replace("    adjust_learning_rate:\n        decoder_kernel: 0.3333333333333333\n", "");
    replace("        std: 0.02\n        a: -0.04\n        b: 0.04\n    output_layer_initializer",
            "        std: 0.0346410161514\n        a: -0.0692820323028\n"
            "        b: 0.0692820323028\n    output_layer_initializer");
    replace(
        "        std: 0.004472135954999579\n        a: -0.008944271909999158\n"
        "        b: 0.008944271909999158\n",
        "        std: 0.00774596669241\n        a: -0.0154919333848\n"
        "        b: 0.0154919333848\n");
    auto modern =
        parseConfig(text, "modern.yaml", std::filesystem::path(WAFER_CONFIG_FIXTURES_DIR));
    ASSERT_TRUE(modern.ok()) << modern.error().message;
    EXPECT_EQ(loaded->config, modern->config);
    EXPECT_FALSE(anyContains(modern->warnings, "muP"));

    // Said once, where the older key is, with the numbers.
    EXPECT_TRUE(anyContains(
        loaded->warnings,
        "modelzoo_cerebras_gpt_111m_mup.yaml:92:9: optimizer.adjust_learning_rate."
        "decoder_kernel: ModelZoo's older muP keys read as the current ones: decoder_kernel "
        "0.333333 (= base width / hidden_size) gives model.mup_base_hidden_size 256 and "
        "mup_base_filter_size 1024 (width multiplier m = 3); model.output_logits_scale 0.333333 "
        "(= output_logits_alpha / m) gives output_logits_alpha 1; model.initializer and "
        "output_layer_initializer are multiplied by sqrt(m) = 1.73205"))
        << ::testing::PrintToString(loaded->warnings);
    EXPECT_FALSE(anyContains(loaded->warnings, "output_logits_scale: ModelZoo setting not"));
    EXPECT_FALSE(anyContains(loaded->warnings, "adjust_learning_rate: ModelZoo setting not"));
    // use_cs_grad_accum: micro-batches do accumulate gradients now.
    EXPECT_TRUE(anyContains(loaded->warnings,
                            "runconfig.use_cs_grad_accum: ModelZoo setting not implemented by "
                            "Wafer Studio, ignored: gradient accumulation follows "
                            "train_input.micro_batch_size"));
    EXPECT_FALSE(anyContains(loaded->warnings, "gradient accumulation is not implemented"));
    // No max_sequence_length: ModelZoo reads it from the HDF5 files; here the model's context.
    EXPECT_EQ(loaded->config.trainInput.maxSequenceLength, 2048);
    EXPECT_TRUE(anyContains(
        loaded->warnings,
        "train_input.max_sequence_length: not given; ModelZoo's GptHDF5DataProcessor takes it "
        "from its HDF5 files; here it is the model's context, model.max_position_embeddings = "
        "2048 tokens per sequence, which a run (and wafer validate) checks against the files"));
    EXPECT_TRUE(validate(loaded->config).empty()) << validate(loaded->config).front();
}

TEST(ConfigLoad, OlderMupKeysThatCannotBeTranslatedExactlyAreRefused) {
    const std::string model = "model:\n    hidden_size: 768\n    filter_size: 3072\n";
    EXPECT_EQ(parseError(model + "    output_logits_scale: 0.5\n"),
              "test.yaml:4:5: model.output_logits_scale: ModelZoo's older muP logit multiplier "
              "needs optimizer.adjust_learning_rate.decoder_kernel too: Wafer Studio scales the "
              "logits only under muP, whose width multiplier m it takes from decoder_kernel (= "
              "base width / hidden_size). Add adjust_learning_rate: {decoder_kernel: ...}, or "
              "write model.mup_base_hidden_size, mup_base_filter_size and output_logits_alpha "
              "instead");
    EXPECT_EQ(parseError(model + "optimizer:\n    adjust_learning_rate:\n"
                                 "        decoder_kernel: 0.3\n"),
              "test.yaml:6:9: optimizer.adjust_learning_rate.decoder_kernel: decoder_kernel 0.3 "
              "is muP's base width / hidden_size, but it gives a base width of 768 x 0.3 = "
              "230.4 and a base MLP width of 3072 x 0.3 = 921.6; both must be whole numbers: "
              "write model.mup_base_hidden_size and mup_base_filter_size instead");
    EXPECT_EQ(parseError(model + "    mup_base_hidden_size: 256\n    mup_base_filter_size: 1024\n"
                                 "optimizer:\n    adjust_learning_rate:\n"
                                 "        decoder_kernel: 0.5\n"),
              "test.yaml:8:9: optimizer.adjust_learning_rate.decoder_kernel: the file describes "
              "muP twice, with ModelZoo's older keys (model.output_logits_scale, "
              "optimizer.adjust_learning_rate) and the current ones (model.mup_base_hidden_size, "
              "mup_base_filter_size, output_logits_alpha); keep the current ones and delete the "
              "older");
    EXPECT_EQ(parseError("optimizer:\n    adjust_learning_rate:\n        embedding: 0.5\n"),
              "test.yaml:3:9: optimizer.adjust_learning_rate.embedding: only decoder_kernel "
              "(muP's learning-rate factor for the hidden layers, read as "
              "model.mup_base_hidden_size) can be translated; delete this entry or describe the "
              "model with the mup_base_* keys");
    // Without the logits key the logits stay as they were (alpha = m cancels the 1 / m).
    auto loaded = parseText(model +
                            "optimizer:\n    adjust_learning_rate:\n"
                            "        decoder_kernel: 0.25\n");
    ASSERT_TRUE(loaded.ok()) << loaded.error().message;
    EXPECT_EQ(loaded->config.model.mupBaseHiddenSize, 192);
    EXPECT_EQ(loaded->config.model.outputLogitsAlpha, 4.0);
}

TEST(ConfigLoad, MissingSequenceLengthIsChosenVisiblyForModelZooDataProcessors) {
    // Wafer Studio's own text reader keeps the documented default without a note.
    auto plain = parseText("train_input:\n    batch_size: 4\n");
    ASSERT_TRUE(plain.ok()) << plain.error().message;
    EXPECT_EQ(plain->config.trainInput.maxSequenceLength, 128);
    EXPECT_EQ(plain->config.evalInput.maxSequenceLength, 128);
    EXPECT_TRUE(plain->warnings.empty());
    // Another ModelZoo processor: the default, said.
    auto text = parseText("train_input:\n    data_processor: GptTextDataProcessor\n");
    ASSERT_TRUE(text.ok()) << text.error().message;
    EXPECT_EQ(text->config.trainInput.maxSequenceLength, 128);
    EXPECT_EQ(text->warnings,
              std::vector<std::string>{
                  "test.yaml: train_input.max_sequence_length: not given; using the default of "
                  "128 tokens per sequence. Set train_input.max_sequence_length to choose"});
    // An override that gives it is not "not given".
    auto overridden = parseText(
        "model:\n    max_position_embeddings: 512\n"
        "train_input:\n    data_processor: GptHDF5DataProcessor\n",
        {"train_input.max_sequence_length=256"});
    ASSERT_TRUE(overridden.ok()) << overridden.error().message;
    EXPECT_EQ(overridden->config.trainInput.maxSequenceLength, 256);
    EXPECT_TRUE(overridden->warnings.empty());
}

}  // namespace
}  // namespace ws::config
