// SPDX-License-Identifier: GPL-3.0-or-later
// Expanding sweeps: grids, ranges and log2 ranges, seeded random draws, seeds, parametrization
// bundles, and the errors for empty, contradictory, unknown and oversized spaces.
#include "engine/sweep/space.h"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <set>

#include "support/temp_dir.h"

namespace ws::sweep {
namespace {

const char* kBase =
    "model:\n"
    "  hidden_size: 32\n"
    "  num_hidden_layers: 1\n"
    "  num_heads: 2\n"
    "  filter_size: 64\n"
    "  vocab_size: 256\n"
    "  max_position_embeddings: 64\n"
    "train_input:\n"
    "  data_dir: corpus\n"
    "  batch_size: 2\n"
    "  max_sequence_length: 16\n"
    "runconfig:\n"
    "  max_steps: 10\n"
    "  seed: 5\n";

config::LoadedConfig withSweep(const std::string& sweepYaml) {
    auto loaded = config::parseConfig(std::string(kBase) + "sweep:\n" + sweepYaml, "s.yaml", "/x");
    EXPECT_TRUE(loaded.ok()) << (loaded.ok() ? "" : loaded.error().message);
    return loaded.ok() ? std::move(loaded).value() : config::LoadedConfig{};
}

std::string planError(const std::string& sweepYaml) {
    auto plan = planSweep(withSweep(sweepYaml));
    return plan.ok() ? std::string("(planned)") : plan.error().message;
}

TEST(SweepSpace, GridIsTheProductInDeclaredOrderLastKeyFastest) {
    auto plan = planSweep(
        withSweep("  parameters:\n"
                  "    model.hidden_size: {values: [32, 64]}\n"
                  "    optimizer.learning_rate: {log2_range: {min: -3, max: -1, step: 1}}\n"));
    ASSERT_TRUE(plan.ok()) << plan.error().message;
    ASSERT_EQ(plan->trials.size(), 6u);
    EXPECT_EQ(plan->points, 6u);
    EXPECT_EQ(plan->trials[0].param("model.hidden_size"), "32");
    EXPECT_EQ(plan->trials[0].param("optimizer.learning_rate"), "0.125");
    EXPECT_EQ(plan->trials[1].param("optimizer.learning_rate"), "0.25");
    EXPECT_EQ(plan->trials[2].param("optimizer.learning_rate"), "0.5");
    EXPECT_EQ(plan->trials[3].param("model.hidden_size"), "64");
    // The values reach the trial's config.
    EXPECT_EQ(plan->trials[3].config.config.model.hiddenSize, 64);
    EXPECT_DOUBLE_EQ(plan->trials[2].config.config.optimizer.learningRate.constant, 0.5);
    EXPECT_EQ(plan->trials[2].config.config.runconfig.seed, 5);
    EXPECT_FALSE(plan->trials[0].config.config.sweep.has_value());
    EXPECT_FALSE(plan->needsConfirmation);
}

TEST(SweepSpace, Log2RangeCoversTheReferenceGrid) {
    auto plan = planSweep(
        withSweep("  parameters:\n"
                  "    optimizer.learning_rate: {log2_range: {min: -12, max: -4, step: 1}}\n"));
    ASSERT_TRUE(plan.ok()) << plan.error().message;
    ASSERT_EQ(plan->trials.size(), 9u);
    for (size_t i = 0; i < 9; ++i)
        EXPECT_DOUBLE_EQ(log2Value(plan->trials[i].param("optimizer.learning_rate")),
                         -12.0 + double(i));
}

TEST(SweepSpace, RangeStepsWithoutFloatingPointDust) {
    auto plan = planSweep(
        withSweep("  parameters:\n    optimizer.weight_decay: {range: {min: 0, max: 0.3, step: "
                  "0.1}}\n"));
    ASSERT_TRUE(plan.ok()) << plan.error().message;
    ASSERT_EQ(plan->trials.size(), 4u);
    EXPECT_EQ(plan->trials[3].param("optimizer.weight_decay"), "0.3");
}

TEST(SweepSpace, SeedsRepeatEveryPointSeedMajor) {
    auto plan = planSweep(
        withSweep("  seeds: 3\n  max_steps: 4\n  parameters:\n    model.hidden_size: [32, 64]\n"));
    ASSERT_TRUE(plan.ok()) << plan.error().message;
    ASSERT_EQ(plan->trials.size(), 6u);
    EXPECT_EQ(plan->points, 2u);
    EXPECT_EQ(plan->trials[0].seed, 5);
    EXPECT_EQ(plan->trials[1].seed, 5);
    EXPECT_EQ(plan->trials[2].seed, 6);
    EXPECT_EQ(plan->trials[5].seed, 7);
    EXPECT_EQ(plan->trials[5].config.config.runconfig.seed, 7);
    EXPECT_EQ(plan->trials[5].config.config.runconfig.maxSteps, 4);
    EXPECT_NE(plan->trials[0].pointKey(), plan->trials[2].pointKey());
}

TEST(SweepSpace, RandomDrawsAreSeededAndReproducible) {
    const std::string yaml =
        "  method: random\n  num_trials: 5\n  seed: 42\n  parameters:\n"
        "    model.hidden_size: [32, 64, 128]\n"
        "    optimizer.learning_rate: {log2_range: {min: -10, max: -4, step: 1}}\n";
    auto a = planSweep(withSweep(yaml));
    auto b = planSweep(withSweep(yaml));
    ASSERT_TRUE(a.ok()) << a.error().message;
    ASSERT_TRUE(b.ok());
    ASSERT_EQ(a->trials.size(), 5u);
    std::set<std::string> keys;
    for (size_t i = 0; i < 5; ++i) {
        EXPECT_EQ(a->trials[i].pointKey(), b->trials[i].pointKey());
        keys.insert(a->trials[i].pointKey());
    }
    EXPECT_EQ(keys.size(), 5u) << "draws are distinct points";
    auto c = planSweep(withSweep(yaml.substr(0, yaml.find("seed: 42")) + "seed: 43\n" +
                                 yaml.substr(yaml.find("  parameters"))));
    ASSERT_TRUE(c.ok()) << c.error().message;
    bool differs = false;
    for (size_t i = 0; i < 5; ++i) differs |= c->trials[i].pointKey() != a->trials[i].pointKey();
    EXPECT_TRUE(differs);
}

TEST(SweepSpace, ParametrizationIsANamedBundleOfOverrides) {
    auto plan = planSweep(withSweep(
        "  parametrization: [sp, wide_init]\n"
        "  parametrizations:\n"
        "    wide_init: {model.initializer.std: 0.08, model.embedding_initializer.std: 0.08}\n"
        "  parameters:\n    model.hidden_size: [32, 64]\n"));
    ASSERT_TRUE(plan.ok()) << plan.error().message;
    ASSERT_EQ(plan->trials.size(), 4u);
    EXPECT_EQ(plan->trials[0].parametrization, "sp");
    EXPECT_EQ(plan->trials[1].parametrization, "wide_init");
    EXPECT_EQ(plan->trials[1].param("parametrization"), "wide_init");
    EXPECT_DOUBLE_EQ(plan->trials[0].config.config.model.initializer.std, 0.02);
    EXPECT_DOUBLE_EQ(plan->trials[1].config.config.model.initializer.std, 0.08);
}

TEST(SweepSpace, CompanionKeysMoveWithTheirAxis) {
    auto plan = planSweep(
        withSweep("  parameters:\n"
                  "    model.hidden_size: {values: [32, 64], with: {model.num_heads: [2, 4], "
                  "model.filter_size: [128, 256]}}\n"
                  "    optimizer.learning_rate: [0.001, 0.002]\n"));
    ASSERT_TRUE(plan.ok()) << plan.error().message;
    ASSERT_EQ(plan->trials.size(), 4u) << "linked, not multiplied";
    const auto& wide = plan->trials[3].config.config.model;
    EXPECT_EQ(wide.hiddenSize, 64);
    EXPECT_EQ(wide.numHeads, 4);
    EXPECT_EQ(wide.filterSize, 256);
    EXPECT_EQ(plan->trials[0].config.config.model.numHeads, 2);
    EXPECT_EQ(plan->trials[0].params.size(), 2u) << "companions are not parameters of their own";
    EXPECT_NE(planError("  parameters:\n    model.hidden_size: {values: [32, 64], with: "
                        "{model.num_heads: [2]}}\n")
                  .find("give one per value"),
              std::string::npos);
}

TEST(SweepSpace, ErrorsNameTheProblem) {
    EXPECT_NE(planError("  parameters:\n    model.hiden_size: [32]\n")
                  .find("did you mean model.hidden_size?"),
              std::string::npos);
    EXPECT_NE(planError("  parameters:\n    model.hidden_size: {values: []}\n").find("is empty"),
              std::string::npos);
    EXPECT_NE(planError("  parameters:\n    optimizer.learning_rate: {log2_range: {min: -4, "
                        "max: -12, step: 1}}\n")
                  .find("min -4 is above max -12"),
              std::string::npos);
    EXPECT_NE(planError("  seeds: 2\n  parameters:\n    runconfig.seed: [1, 2]\n").find("use one"),
              std::string::npos);
    EXPECT_NE(planError("  parametrization: [sp, mup]\n").find("mup is not defined"),
              std::string::npos);
    EXPECT_NE(planError("  parametrization: [sp, wi]\n  parametrizations:\n    wi: "
                        "{model.initializer.std: 0.1}\n  parameters:\n"
                        "    model.initializer.std: [0.1, 0.2]\n")
                  .find("contradict"),
              std::string::npos);
    EXPECT_NE(planError("  parametrization: [sp, mup]\n  parametrizations:\n    mup: "
                        "{model.mup_base_hiden_size: 32}\n")
                  .find("sweep.parametrizations.mup.model.mup_base_hiden_size: unknown key"),
              std::string::npos);
    EXPECT_NE(planError("  method: random\n  parameters:\n    model.hidden_size: [32]\n")
                  .find("num_trials"),
              std::string::npos);
    EXPECT_NE(planError("  max_steps: 4\n").find("the sweep is empty"), std::string::npos);
    EXPECT_NE(
        planError("  parameters:\n    model.hidden_size: [32, 33]\n").find("model.hidden_size=33"),
        std::string::npos)
        << "a trial config that fails validation names its values";
    EXPECT_NE(planError("  early_stopping: {rungs: [4], group_by: [model.hiden_size]}\n"
                        "  parameters:\n    model.hidden_size: [32, 64]\n")
                  .find("did you mean model.hidden_size?"),
              std::string::npos);
    EXPECT_NE(planError("  early_stopping: {rungs: [20]}\n  parameters:\n    model.hidden_size: "
                        "[32]\n")
                  .find("before the last step"),
              std::string::npos);
}

TEST(SweepSpace, AxisSyntaxErrorsComeFromTheLoaderWithLineNumbers) {
    auto loaded = config::parseConfig(std::string(kBase) +
                                          "sweep:\n  parameters:\n    model.hidden_size: {valuez: "
                                          "[32]}\n",
                                      "s.yaml", "/x");
    ASSERT_FALSE(loaded.ok());
    EXPECT_NE(loaded.error().message.find("s.yaml:17"), std::string::npos)
        << loaded.error().message;
    EXPECT_NE(loaded.error().message.find("did you mean `values`?"), std::string::npos);
    EXPECT_EQ(loaded.error().message.find("no values given"), std::string::npos)
        << "one error for one typo";
}

TEST(SweepSpace, AGridAboveMaxTrialsNeedsConfirmation) {
    auto plan = planSweep(withSweep(
        "  max_trials: 5\n  parameters:\n    optimizer.learning_rate: {log2_range: {min: -12, "
        "max: -4, step: 1}}\n"));
    ASSERT_TRUE(plan.ok()) << plan.error().message;
    EXPECT_TRUE(plan->needsConfirmation);
    EXPECT_NE(plan->confirmationMessage.find("9 trials"), std::string::npos);
    EXPECT_NE(plan->confirmationMessage.find("--yes"), std::string::npos);
    EXPECT_NE(planError("  parameters:\n    optimizer.learning_rate: {range: {min: 0, max: 1, "
                        "step: 0.00001}}\n")
                  .find("use a larger step"),
              std::string::npos);
}

TEST(SweepSpace, ASweepFileNamesItsBaseConfig) {
    ws::testing::TempDir dir("sweep_file");
    std::ofstream(dir.path() / "base.yaml") << kBase;
    std::ofstream(dir.path() / "sweep.yaml")
        << "sweep:\n  base: base.yaml\n  parameters:\n    model.hidden_size: [32, 64]\n";
    auto loaded = loadSweepFile(dir.path() / "sweep.yaml", {"sweep.seeds=2"});
    ASSERT_TRUE(loaded.ok()) << loaded.error().message;
    EXPECT_EQ(loaded->config.runconfig.seed, 5);
    ASSERT_TRUE(loaded->config.sweep);
    EXPECT_EQ(loaded->config.sweep->seeds, 2);
    auto plan = planSweep(*loaded);
    ASSERT_TRUE(plan.ok()) << plan.error().message;
    EXPECT_EQ(plan->trials.size(), 4u);

    std::ofstream(dir.path() / "mixed.yaml")
        << "model: {hidden_size: 64}\nsweep:\n  base: base.yaml\n  seeds: 2\n";
    auto mixed = loadSweepFile(dir.path() / "mixed.yaml");
    ASSERT_FALSE(mixed.ok());
    EXPECT_NE(mixed.error().message.find("holds only the sweep: section"), std::string::npos);

    auto plain = loadSweepFile(dir.path() / "base.yaml");
    ASSERT_FALSE(plain.ok());
    EXPECT_NE(plain.error().message.find("no sweep: section"), std::string::npos);

    // Issue 31: sweep.base may name a path the system refuses (a component past 255 bytes):
    // an error naming the key, never an exception.
    std::ofstream(dir.path() / "long.yaml")
        << "sweep:\n  base: " << std::string(300, 'b') << ".yaml\n  seeds: 2\n";
    auto tooLong = loadSweepFile(dir.path() / "long.yaml");
    ASSERT_FALSE(tooLong.ok());
    EXPECT_NE(tooLong.error().message.find("sweep.base: cannot open config file"),
              std::string::npos)
        << tooLong.error().message;
    EXPECT_NE(tooLong.error().message.find("File name too long"), std::string::npos)
        << tooLong.error().message;
}

TEST(SweepSpace, TheSweepSectionRoundTripsThroughSaveAndLoad) {
    config::LoadedConfig c = withSweep(
        "  method: random\n  num_trials: 3\n  seed: 9\n  seeds: 2\n  max_loss: 7.5\n"
        "  parametrization: [sp, mup]\n"
        "  parametrizations: {mup: {model.initializer.std: 0.08, model.name: \"a b\"}}\n"
        "  early_stopping: {rungs: [2, 5], reduction_factor: 4, group_by: [parametrization]}\n"
        "  parameters:\n"
        "    model.hidden_size: {values: [32, 64], with: {model.num_heads: [2, 4]}}\n"
        "    model.nonlinearity: {values: [gelu]}\n"
        "    optimizer.weight_decay: {range: {min: 0, max: 0.2, step: 0.1}}\n"
        "    optimizer.learning_rate: {log2_range: {min: -12, max: -4, step: 0.5}}\n");
    const std::string yaml = config::saveConfigYaml(c.config);
    auto again = config::parseConfig(yaml, "saved.yaml", "/x");
    ASSERT_TRUE(again.ok()) << again.error().message << "\n" << yaml;
    EXPECT_EQ(again->config, c.config) << yaml;
    auto plain = config::parseConfig(config::saveConfigYaml(c.config, config::YamlStyle::Plain),
                                     "plain.yaml", "/x");
    ASSERT_TRUE(plain.ok());
    EXPECT_EQ(plain->config, c.config);
}

TEST(SweepSpace, TheFieldCatalogueDescribesTheSweepSection) {
    bool parameters = false, rungs = false, axisValues = false;
    for (const auto& f : config::describeFields()) {
        if (f.path == "sweep.parameters") parameters = f.type == "sweep_parameters";
        if (f.path == "sweep.early_stopping.rungs") rungs = f.type == "int64[]";
        if (f.path == "sweep.parameters.<key>.values") axisValues = true;
    }
    EXPECT_TRUE(parameters);
    EXPECT_TRUE(rungs);
    EXPECT_TRUE(axisValues);
}

}  // namespace
}  // namespace ws::sweep

namespace ws::sweep {
namespace {

// The μTransfer preset plans with its sp half (the mup bundle needs μP's model.mup_* fields).
TEST(SweepPreset, TheLrWidthPresetPlansItsSpHalf) {
    auto loaded = loadSweepFile(std::filesystem::path(WAFER_PRESETS_DIR) / "mup-sweep.yaml",
                                {"sweep.parametrization=[sp]"});
    ASSERT_TRUE(loaded.ok()) << loaded.error().message;
    auto plan = planSweep(*loaded);
    ASSERT_TRUE(plan.ok()) << plan.error().message;
    EXPECT_EQ(plan->points, 32u);  // 4 widths x 8 learning rates
    ASSERT_EQ(plan->trials.size(), 96u);
    EXPECT_FALSE(plan->needsConfirmation);
    std::set<double> log2Lrs;
    for (const TrialSpec& t : plan->trials) {
        const auto& c = t.config.config;
        EXPECT_EQ(c.model.hiddenSize / c.model.numHeads, 16) << "head size 16";
        EXPECT_EQ(c.model.filterSize, 4 * c.model.hiddenSize);
        EXPECT_EQ(c.model.numHiddenLayers, 2);
        EXPECT_EQ(c.trainInput.maxSequenceLength, 64);
        EXPECT_EQ(c.trainInput.batchSize, 16);
        EXPECT_EQ(c.runconfig.maxSteps, 250);
        log2Lrs.insert(log2Value(t.param("optimizer.learning_rate")));
    }
    EXPECT_GE(log2Lrs.size(), 7u);
    EXPECT_EQ(plan->trials.front().config.config.model.hiddenSize, 16);
    EXPECT_EQ(plan->trials[31].config.config.model.hiddenSize, 128);
    EXPECT_EQ(plan->trials.back().seed, plan->trials.front().seed + 2);
}

}  // namespace
}  // namespace ws::sweep
