// SPDX-License-Identifier: GPL-3.0-or-later
// The variable-sequence-length keys of train_input / eval_input (use_vsl, short_sequence_length,
// short_sequence_steps): loaded from YAML, and every bad combination refused with a message that
// names the key and the fix.
#include <gtest/gtest.h>

#include "config_test_util.h"

#include "engine/config/config_yaml.h"
#include "engine/config/validate.h"

namespace ws::config {
namespace {

Config twoStage(int shortT, int64_t steps) {
    Config c;
    c.trainInput.dataDir = {"/data/corpus"};
    c.trainInput.maxSequenceLength = 128;
    c.trainInput.shortSequenceLength = shortT;
    c.trainInput.shortSequenceSteps = steps;
    c.runconfig.maxSteps = 100;
    return c;
}

std::string onlyError(const Config& c) {
    const std::vector<std::string> errors = validate(c);
    EXPECT_EQ(errors.size(), 1u);
    for (size_t i = 1; i < errors.size(); ++i) ADD_FAILURE() << "error: " << errors[i];
    return errors.empty() ? std::string() : errors.front();
}

void expectHas(const std::string& text, const std::string& part) {
    EXPECT_NE(text.find(part), std::string::npos) << "'" << part << "' not in: " << text;
}

TEST(ConfigVsl, AValidTwoStageScheduleAndVslPass) {
    Config c = twoStage(32, 80);
    c.trainInput.useVsl = true;
    c.evalInput.useVsl = true;
    EXPECT_TRUE(validate(c).empty());
}

// MoE and the sparsity section each re-plan the emulated step their own way; VSL refuses them by
// name (model.sparsity, planned once, works with it).
TEST(ConfigVsl, MoeAndSparsityMasksAreRefusedWithVsl) {
    Config c = twoStage(32, 80);
    c.model.moe = MoeConfig{};
    c.model.moe->numExperts = 4;
    expectHas(onlyError(c), "short_sequence_length with model.moe");
    c.model.moe.reset();
    c.sparsity = SparsitySectionConfig{};
    c.sparsity->sparsity = 0.75;
    expectHas(onlyError(c), "with the top-level sparsity section");
    c.sparsity.reset();
    c.model.sparsity.level = 0.5;
    EXPECT_TRUE(validate(c).empty());
}

TEST(ConfigVsl, SwitchStepBeyondMaxStepsIsRefused) {
    const std::string e = onlyError(twoStage(32, 100));
    expectHas(e, "train_input.short_sequence_steps (100) is not below runconfig.max_steps (100)");
    expectHas(e, "e.g. 80");
}

TEST(ConfigVsl, ShortLengthMustBeShorterThanAndDivideTheLongOne) {
    std::string e = onlyError(twoStage(256, 50));
    expectHas(e,
              "train_input.short_sequence_length (256) is not shorter than "
              "train_input.max_sequence_length (128)");
    expectHas(e, "one of 1, 2, 4, 8, 16, 32, 64");
    e = onlyError(twoStage(128, 50));
    expectHas(e, "not shorter than");
    e = onlyError(twoStage(48, 50));
    expectHas(e,
              "train_input.short_sequence_length (48) does not divide "
              "train_input.max_sequence_length (128)");
}

TEST(ConfigVsl, HalfAScheduleIsRefused) {
    expectHas(onlyError(twoStage(32, 0)), "train_input.short_sequence_steps is 0");
    expectHas(onlyError(twoStage(0, 40)), "train_input.short_sequence_length is 0");
    Config c = twoStage(0, 0);
    c.evalInput.shortSequenceLength = 32;
    expectHas(onlyError(c),
              "eval_input.short_sequence_length / short_sequence_steps: only "
              "train_input has a sequence-length schedule");
}

TEST(ConfigVsl, KeysLoadFromYaml) {
    const std::string yaml = R"(
train_input:
    data_dir: /data/corpus
    max_sequence_length: 128
    use_vsl: true
    short_sequence_length: 32
    short_sequence_steps: 450
eval_input:
    use_vsl: true
runconfig:
    max_steps: 600
)";
    auto loaded = parseConfig(yaml, "test.yaml", {});
    ASSERT_TRUE(loaded.ok()) << loaded.error().message;
    const Config& c = loaded->config;
    EXPECT_TRUE(c.trainInput.useVsl);
    EXPECT_TRUE(c.evalInput.useVsl);
    EXPECT_EQ(c.trainInput.shortSequenceLength, 32);
    EXPECT_EQ(c.trainInput.shortSequenceSteps, 450);
    EXPECT_TRUE(validate(c).empty());
}

TEST(ConfigVsl, NanoVslPresetTrainsEightyPercentOfItsStepsShort) {
    auto loaded = loadConfigFile(std::filesystem::path(WAFER_PRESETS_DIR) / "gpt-nano-vsl.yaml");
    ASSERT_TRUE(loaded.ok()) << loaded.error().message;
    const Config& c = loaded->config;
    EXPECT_TRUE(validate(c).empty());
    EXPECT_TRUE(c.trainInput.useVsl);
    EXPECT_EQ(c.trainInput.maxSequenceLength, 512);
    EXPECT_EQ(c.trainInput.shortSequenceLength, 128);
    EXPECT_EQ(c.trainInput.shortSequenceSteps * 5, c.runconfig.maxSteps * 4);
    // The same tokens per step as gpt-nano (16 x 128), in rows of 512.
    EXPECT_EQ(c.trainInput.batchSize * c.trainInput.maxSequenceLength, 16 * 128);
}

}  // namespace
}  // namespace ws::config
