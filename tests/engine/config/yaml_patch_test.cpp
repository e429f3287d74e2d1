// SPDX-License-Identifier: GPL-3.0-or-later
// patchConfigYaml(): a change made to the config rewrites only that value in the user's YAML
// text; comments, key order and untouched spellings survive, missing keys and sections are
// inserted with the section's indentation, and the result reads back as the intended config.
// Checked on hand-written layouts and on every shipped preset.
#include <gtest/gtest.h>

#include "config_test_util.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "engine/config/yaml_patch.h"

namespace ws::config {
namespace {

const std::filesystem::path kPresets = std::filesystem::path(WAFER_PRESETS_DIR).lexically_normal();

Config parsed(const std::string& text, const std::filesystem::path& baseDir = {}) {
    auto loaded = parseConfig(text, "test.yaml", baseDir);
    EXPECT_TRUE(loaded.ok()) << (loaded.ok() ? "" : loaded.error().message);
    return loaded.ok() ? loaded->config : Config{};
}

Config with(Config config, const std::vector<std::string>& overrides) {
    for (const std::string& o : overrides) {
        const Status status = applyOverride(config, o);
        EXPECT_TRUE(status.ok()) << o << ": " << (status.ok() ? "" : status.error().message);
    }
    return config;
}

std::vector<std::string> linesOf(const std::string& text) {
    std::vector<std::string> lines;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    return lines;
}

std::vector<std::string> commentLines(const std::string& text) {
    std::vector<std::string> out;
    for (const std::string& line : linesOf(text)) {
        const size_t first = line.find_first_not_of(' ');
        if (first != std::string::npos && line[first] == '#') out.push_back(line);
    }
    return out;
}

// Keys in order of appearance ("    hidden_size: 128  # x" -> "hidden_size").
std::vector<std::string> keyOrder(const std::string& text) {
    std::vector<std::string> keys;
    for (const std::string& line : linesOf(text)) {
        const size_t first = line.find_first_not_of(" -");
        if (first == std::string::npos || line[first] == '#') continue;
        const size_t colon = line.find(':', first);
        if (colon != std::string::npos) keys.push_back(line.substr(first, colon - first));
    }
    return keys;
}

std::string readFile(const std::filesystem::path& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream out;
    out << in.rdbuf();
    return out.str();
}

const std::string kUserText = R"(# my experiment: do not lose this comment
model:
  name: "mine"      # a name I like
  hidden_size: 64   # keep it small
  num_heads: 4
  num_hidden_layers: 2
  filter_size: 256
  max_position_embeddings: 64
  vocab_size: 256
  initializer: {name: truncated_normal, std: 0.02, a: -0.04, b: 0.04}

optimizer:
  betas: [0.9, 0.95]   # GPT-3's
  epsilon: 1.0e-8      # ModelZoo's older spelling
  learning_rate:
    # warm up, then decay
    - scheduler: "Linear"
      initial_learning_rate: 0.0
      end_learning_rate: 1.0e-3
      total_iters: 10   # short warm-up
    - scheduler: "Cosine"
      initial_learning_rate: 1.0e-3
      end_learning_rate: 1.0e-4
      steps: 0          # to the end

train_input:
  data_dir: 'corpus'   # single-quoted on purpose
  batch_size: 8

runconfig:
  max_steps: 100
# trailing remark
)";

TEST(YamlPatch, ChangedScalarIsWrittenAndCommentsAndOrderSurvive) {
    const Config before = parsed(kUserText);
    const Config after = with(before, {"model.hidden_size=128", "runconfig.max_steps=250"});
    const YamlPatch patch = patchConfigYaml(kUserText, before, after, {});
    ASSERT_FALSE(patch.regenerated) << patch.note;
    EXPECT_NE(patch.text.find("  hidden_size: 128   # keep it small\n"), std::string::npos)
        << patch.text;
    EXPECT_NE(patch.text.find("  max_steps: 250\n"), std::string::npos) << patch.text;
    EXPECT_EQ(commentLines(patch.text), commentLines(kUserText));
    EXPECT_EQ(keyOrder(patch.text), keyOrder(kUserText));
    EXPECT_NE(patch.text.find("epsilon: 1.0e-8      # ModelZoo's older spelling"),
              std::string::npos);  // an untouched alias keeps its spelling
    EXPECT_EQ(parsed(patch.text), after);
    // Every line but the two changed ones is byte for byte the same.
    const auto a = linesOf(kUserText), b = linesOf(patch.text);
    ASSERT_EQ(a.size(), b.size());
    int differing = 0;
    for (size_t i = 0; i < a.size(); ++i) differing += a[i] != b[i];
    EXPECT_EQ(differing, 2);
}

TEST(YamlPatch, FlowListQuotedStringAndFlowMapValuesAreReplacedInPlace) {
    const Config before = parsed(kUserText);
    const Config after =
        with(before, {"optimizer.betas=[0.8, 0.99]", "train_input.data_dir=other",
                      "model.name=\"it's \\\"new\\\"\"", "model.initializer.std=0.01",
                      "model.initializer.mean=0.5", "optimizer.eps=1e-6"});
    const YamlPatch patch = patchConfigYaml(kUserText, before, after, {});
    ASSERT_FALSE(patch.regenerated) << patch.note;
    EXPECT_NE(patch.text.find("  betas: [0.8, 0.99]   # GPT-3's\n"), std::string::npos)
        << patch.text;
    EXPECT_NE(patch.text.find("  data_dir: \"other\"   # single-quoted on purpose\n"),
              std::string::npos)
        << patch.text;
    EXPECT_NE(patch.text.find("# a name I like"), std::string::npos);
    EXPECT_NE(patch.text.find("  initializer: {name: truncated_normal, std: 0.01, a: -0.04, b: "
                              "0.04, mean: 0.5}\n"),
              std::string::npos)
        << patch.text;
    EXPECT_NE(patch.text.find("  epsilon: 1.0e-06      # ModelZoo's older spelling\n"),
              std::string::npos)
        << patch.text;
    EXPECT_EQ(commentLines(patch.text), commentLines(kUserText));
    EXPECT_EQ(parsed(patch.text), after);
}

TEST(YamlPatch, ScheduleKeysArePatchedInsideTheListKeepingItsComments) {
    const Config before = parsed(kUserText);
    const Config after = with(before, {"optimizer.learning_rate[0].total_iters=20",
                                       "optimizer.learning_rate[1].end_learning_rate=2e-5"});
    const YamlPatch patch = patchConfigYaml(kUserText, before, after, {});
    ASSERT_FALSE(patch.regenerated) << patch.note;
    EXPECT_NE(patch.text.find("      total_iters: 20   # short warm-up\n"), std::string::npos)
        << patch.text;
    EXPECT_NE(patch.text.find("      steps: 0          # to the end\n"), std::string::npos);
    EXPECT_EQ(commentLines(patch.text), commentLines(kUserText));
    EXPECT_EQ(parsed(patch.text), after);
}

TEST(YamlPatch, ANewScheduleShapeReplacesTheListAsABlock) {
    const Config before = parsed(kUserText);
    const Config constant = with(before, {"optimizer.learning_rate=3e-4"});
    YamlPatch patch = patchConfigYaml(kUserText, before, constant, {});
    ASSERT_FALSE(patch.regenerated) << patch.note;
    // The comment above the old list stays where it was.
    EXPECT_NE(
        patch.text.find("  learning_rate: 3.0e-04\n    # warm up, then decay\n\ntrain_input:"),
        std::string::npos)
        << patch.text;
    EXPECT_EQ(parsed(patch.text), constant);

    const Config three =
        with(before, {"optimizer.learning_rate=[{scheduler: Linear, initial_learning_rate: 0, "
                      "end_learning_rate: 0.001, total_iters: 5}, {scheduler: Constant, "
                      "learning_rate: 0.001, total_iters: 10}, {scheduler: Cosine, "
                      "initial_learning_rate: 0.001, end_learning_rate: 0, total_iters: 0}]"});
    patch = patchConfigYaml(kUserText, before, three, {});
    ASSERT_FALSE(patch.regenerated) << patch.note;
    EXPECT_NE(patch.text.find("    - scheduler: \"Constant\"\n"), std::string::npos) << patch.text;
    EXPECT_NE(patch.text.find("  # warm up, then decay\n"), std::string::npos);
    EXPECT_NE(patch.text.find("# trailing remark"), std::string::npos);
    EXPECT_EQ(parsed(patch.text), three);
}

TEST(YamlPatch, MissingKeyIsInsertedUnderItsSectionAndMissingSectionAtTheEnd) {
    const Config before = parsed(kUserText);
    const Config after =
        with(before, {"model.dropout_rate=0.1", "train_input.tokenizer.type=byte",
                      "train_input.shuffle=true", "wafer.spec=wse3", "runconfig.seed=7"});
    const YamlPatch patch = patchConfigYaml(kUserText, before, after, {});
    ASSERT_FALSE(patch.regenerated) << patch.note;
    // Indented like the section's other keys, after its last key.
    EXPECT_NE(patch.text.find("  vocab_size: 256\n  initializer: {name: truncated_normal, std: "
                              "0.02, a: -0.04, b: 0.04}\n  dropout_rate: 0.1\n"),
              std::string::npos)
        << patch.text;
    EXPECT_NE(patch.text.find("  batch_size: 8\n  shuffle: true\n"), std::string::npos);
    EXPECT_NE(patch.text.find("  max_steps: 100\n  seed: 7\n"), std::string::npos);
    EXPECT_NE(patch.text.find("\nwafer:\n  spec: \"wse3\"\n"), std::string::npos) << patch.text;
    EXPECT_EQ(commentLines(patch.text), commentLines(kUserText));
    EXPECT_EQ(parsed(patch.text), after);
}

TEST(YamlPatch, OptionalSectionAppearsAndDisappears) {
    const Config before = parsed(kUserText);
    const Config added = with(before, {"model.output_layer_initializer={std: 0.005}"});
    YamlPatch patch = patchConfigYaml(kUserText, before, added, {});
    ASSERT_FALSE(patch.regenerated) << patch.note;
    EXPECT_NE(patch.text.find("  output_layer_initializer:\n    name: \"truncated_normal\"\n"),
              std::string::npos)
        << patch.text;
    EXPECT_EQ(parsed(patch.text), added);

    const std::string withSection = patch.text;
    patch = patchConfigYaml(withSection, added, before, {});
    ASSERT_FALSE(patch.regenerated) << patch.note;
    EXPECT_EQ(patch.text.find("output_layer_initializer"), std::string::npos) << patch.text;
    EXPECT_EQ(parsed(patch.text), before);
}

TEST(YamlPatch, EmptyValueAndEmptySectionAreFilledIn) {
    const std::string text =
        "model:\n    hidden_size: 64\n    name:\neval_input:\nrunconfig:\n"
        "    max_steps: 3\n";
    const Config before = parsed(text);
    const Config after = with(before, {"model.name=x", "eval_input.batch_size=4"});
    const YamlPatch patch = patchConfigYaml(text, before, after, {});
    ASSERT_FALSE(patch.regenerated) << patch.note;
    EXPECT_NE(patch.text.find("    name: \"x\"\n"), std::string::npos) << patch.text;
    EXPECT_NE(patch.text.find("eval_input:\n    batch_size: 4\nrunconfig:"), std::string::npos)
        << patch.text;
    EXPECT_EQ(parsed(patch.text), after);
}

TEST(YamlPatch, UnchangedConfigLeavesTheTextAsItIs) {
    const Config config = parsed(kUserText);
    const YamlPatch patch = patchConfigYaml(kUserText, config, config, {});
    EXPECT_FALSE(patch.regenerated);
    EXPECT_EQ(patch.text, kUserText);
}

TEST(YamlPatch, ALayoutItCannotFollowFallsBackToTheWholeTextWithANote) {
    // An anchor/alias pair: the value's text is somewhere else.
    const std::string text =
        "model:\n    hidden_size: &w 64\n    filter_size: *w\n    num_heads: 4\n";
    const Config before = parsed(text);
    const Config after = with(before, {"model.filter_size=256"});
    const YamlPatch patch = patchConfigYaml(text, before, after, {});
    EXPECT_TRUE(patch.regenerated);
    EXPECT_NE(patch.note.find("model.filter_size"), std::string::npos) << patch.note;
    EXPECT_EQ(parsed(patch.text), after);
}

TEST(YamlPatch, EveryPresetKeepsAllItsCommentLinesWhenSeveralFieldsChange) {
    int patched = 0;
    for (const auto& entry : std::filesystem::directory_iterator(kPresets)) {
        if (!entry.is_regular_file() || entry.path().extension() != ".yaml") continue;
        SCOPED_TRACE(entry.path().string());
        const std::string text = readFile(entry.path());
        const Config before = parsed(text, kPresets);
        Config after = with(before, {"model.hidden_size=96", "model.num_heads=3",
                                     "optimizer.betas=[0.85, 0.98]", "runconfig.max_steps=17",
                                     "train_input.batch_size=5", "model.dropout_rate=0.05"});
        if (!after.optimizer.learningRate.schedule.empty())
            after = with(after, {"optimizer.learning_rate[0].total_iters=7"});
        const YamlPatch patch = patchConfigYaml(text, before, after, kPresets);
        ASSERT_FALSE(patch.regenerated) << patch.note;
        EXPECT_EQ(commentLines(patch.text), commentLines(text));
        EXPECT_EQ(parsed(patch.text, kPresets), after);
        // Only changed lines differ (plus at most the one inserted key).
        const auto a = linesOf(text), b = linesOf(patch.text);
        EXPECT_LE(b.size(), a.size() + 1);
        ++patched;
    }
    EXPECT_GE(patched, 5);
}

TEST(YamlPatch, RealPresetChangeKeepsCommentsAndRelativePaths) {
    const std::string text = readFile(kPresets / "gpt-nano.yaml");
    const Config before = parsed(text, kPresets);
    const Config after = with(before, {"model.hidden_size=256", "runconfig.max_steps=50"});
    const YamlPatch patch = patchConfigYaml(text, before, after, kPresets);
    ASSERT_FALSE(patch.regenerated) << patch.note;
    EXPECT_NE(patch.text.find(
                  "    hidden_size: 256             # width of the residual stream (d_model)"),
              std::string::npos)
        << patch.text;
    EXPECT_NE(patch.text.find("data_dir: ../resources/corpus   # a folder of .txt files"),
              std::string::npos);
    EXPECT_EQ(commentLines(patch.text), commentLines(text));
}

TEST(YamlPatch, AbsolutizedPathsMeanTheSameFromAnotherFolder) {
    const std::string text = readFile(kPresets / "gpt-nano.yaml");
    const std::string moved = absolutizeConfigPaths(text, kPresets);
    const std::string corpus = (kPresets / "../resources/corpus").lexically_normal().string();
    EXPECT_NE(moved.find("data_dir: \"" + corpus + "\"   # a folder of .txt files"),
              std::string::npos)
        << moved;
    EXPECT_EQ(commentLines(moved), commentLines(text));
    EXPECT_EQ(parsed(moved, "/somewhere/else"), parsed(text, kPresets));
    // Text that is already absolute, or does not parse, comes back unchanged.
    EXPECT_EQ(absolutizeConfigPaths(moved, kPresets), moved);
    EXPECT_EQ(absolutizeConfigPaths("model: [", kPresets), "model: [");
}

}  // namespace
}  // namespace ws::config
