// SPDX-License-Identifier: GPL-3.0-or-later
// saveConfigYaml -> parseConfig gives back an equal Config (defaults and a config that uses every
// kind of value), the saved text is stable, hashConfig tracks content, and describeFields()
// covers exactly the keys the writer saves.
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <cmath>
#include <set>

#include "config_test_util.h"
#include "engine/config/config_yaml.h"
#include "engine/config/describe.h"
#include "engine/core/hash.h"

namespace ws::config {
namespace {

Config roundTrip(const Config& c, YamlStyle style) {
    const std::string text = saveConfigYaml(c, style);
    // Absolute paths and an unrelated base folder: nothing may be re-resolved.
    auto loaded = parseConfig(text, "saved.yaml", "/elsewhere");
    EXPECT_TRUE(loaded.ok()) << (loaded.ok() ? "" : loaded.error().message) << "\n" << text;
    if (!loaded.ok()) return {};
    EXPECT_TRUE(loaded->warnings.empty());
    return loaded->config;
}

// Uses every value kind: schedules, optional sections, lists, awkward strings and doubles.
Config everythingSet() {
    Config c;
    c.model.name = "quote\" backslash\\ colon: hash # tab\t newline\n unicode é";
    c.model.hiddenSize = 96;
    c.model.numHeads = 3;
    c.model.dropoutRate = 0.1 + 0.2;  // 0.30000000000000004 must survive exactly
    c.model.layerNormEpsilon = 1e-300;
    c.model.initializer.mean = -0.0;
    c.model.initializer.std = 1.0 / 3.0;
    c.model.outputLayerInitializer =
        InitializerConfig{.name = "normal", .mean = 0, .std = 0.004, .a = -1, .b = 1};
    c.model.posScalingExtraArgs = PosScalingExtraArgs{
        .lowFreqFactor = 2.0, .highFreqFactor = 8.0, .originalMaxPositionEmbeddings = 4096};
    c.model.mixedPrecision = true;
    c.optimizer.optimizerType = "sgd";
    c.optimizer.betas = {0.5, 0.25};
    c.optimizer.learningRate.constant = 0.123;
    c.optimizer.learningRate.schedule = {{.scheduler = "Linear",
                                          .initialLearningRate = 0,
                                          .endLearningRate = 6e-4,
                                          .learningRate = 0,
                                          .totalIters = 1525},
                                         {.scheduler = "Constant",
                                          .initialLearningRate = 0,
                                          .endLearningRate = 0,
                                          .learningRate = 2.5e-5,
                                          .totalIters = 0}};
    c.trainInput.dataDir = {"/data/a.txt", "/data/folder with spaces", "/data/true"};
    c.trainInput.tokenizer = {.type = "bpe",
                              .vocabFile = "/v.json",
                              .mergesFile = "/m.txt",
                              .tokenizerFile = "/t.json",
                              .vocabSize = 300};
    c.evalInput.dataDir = {"/data/null"};
    c.runconfig.seed = -42;
    c.runconfig.maxSteps = 5'000'000'000LL;
    c.runconfig.modelDir = "";
    c.runconfig.checkpointPath = "/ckpt/model.safetensors";
    c.model.moe = MoeConfig{.numExperts = 8,
                            .topK = 2,
                            .loadBalancingLossCoef = 0.1 + 0.2,
                            .moeLayerFrequency = 2,
                            .capacityFactor = 1.25,
                            .expertWeightingNormalization = true,
                            .routingAlgorithm = "learned",
                            .routerFp32 = true};
    c.lora = LoraConfig{
        .rank = 4, .alpha = 0.1 + 0.2, .dropout = 0.05, .targets = {"attn.c_proj", "c_fc"}};
    SweepConfig sweep;
    sweep.base = "../base config.yaml";
    sweep.method = "random";
    sweep.numTrials = 7;
    sweep.seed = -3;
    SweepAxis names, widths, decay, rates;
    names.key = "model.name";
    names.values = {"a \"b\"", "true", "1e-3"};
    widths.key = "model.hidden_size";
    widths.values = {"32", "64"};
    widths.with = {{"model.num_heads", {"2", "4"}}};
    decay.key = "optimizer.weight_decay";
    decay.range = SweepRange{0, 0.1 + 0.2, 0.1};
    rates.key = "optimizer.learning_rate";
    rates.log2Range = SweepRange{-12, -4, 0.5};
    sweep.parameters.axes = {names, widths, decay, rates};
    sweep.parametrization = {"sp", "mup"};
    sweep.parametrizations.bundles = {
        {"sp", {}}, {"mup", {{"model.mup_base_hidden_size", "32"}, {"model.name", "x: y"}}}};
    sweep.seeds = 3;
    sweep.maxSteps = 250;
    sweep.parallelTrials = 2;
    sweep.maxLoss = 10.5;
    sweep.finalLossSteps = 4;
    sweep.maxTrials = 1000;
    sweep.earlyStopping = {
        .rungs = {50, 125}, .reductionFactor = 4, .groupBy = {"model.hidden_size"}};
    c.sweep = sweep;
    SparsitySectionConfig sparsity;
    sparsity.sparsity = 0.5 + 0.25;
    sparsity.type = "gmp";
    sparsity.initMethod = "topk";
    sparsity.initSparsity = 0.125;
    sparsity.dropFraction = {.type = "constant", .init = 0.2, .halfPeriod = 30, .minimum = 0.05};
    sparsity.schedule = {.freq = 7, .start = 3, .stop = 90};
    sparsity.paramNamePatterns = {".*proj_[qkv]_dense_layer.weight", "h\\.1\\..*"};
    c.sparsity = sparsity;
    return c;
}

TEST(ConfigRoundTrip, DefaultsRoundTrip) {
    const Config defaults;
    EXPECT_EQ(roundTrip(defaults, YamlStyle::Commented), defaults);
    EXPECT_EQ(roundTrip(defaults, YamlStyle::Plain), defaults);
}

TEST(ConfigRoundTrip, EveryValueKindRoundTrips) {
    const Config c = everythingSet();
    const Config back = roundTrip(c, YamlStyle::Commented);
    EXPECT_EQ(back, c);
    EXPECT_EQ(back.model.name, c.model.name);
    EXPECT_TRUE(std::signbit(back.model.initializer.mean));
    EXPECT_EQ(roundTrip(c, YamlStyle::Plain), c);
}

TEST(ConfigRoundTrip, SavedTextIsStableAndReadable) {
    const Config c = everythingSet();
    const std::string once = saveConfigYaml(c);
    EXPECT_EQ(saveConfigYaml(roundTrip(c, YamlStyle::Commented)), once);
    const std::string plain = saveConfigYaml(Config{}, YamlStyle::Plain);
    EXPECT_EQ(plain.find('#'), std::string::npos);
    EXPECT_NE(plain.find("model:\n    name: \"gpt2\"\n    vocab_size: 50257\n"), std::string::npos)
        << plain;
    EXPECT_NE(plain.find("    betas: [0.9, 0.999]\n"), std::string::npos);
    EXPECT_NE(plain.find("    learning_rate: 0.001\n"), std::string::npos);
    EXPECT_NE(plain.find("    layer_norm_epsilon: 1.0e-05\n"), std::string::npos);
    const std::string commented = saveConfigYaml(c);
    EXPECT_NE(commented.find("    # Width d_model of the residual stream (>= 1)\n"
                             "    hidden_size: 96\n"),
              std::string::npos)
        << commented;
    EXPECT_NE(commented.find("    learning_rate:\n"
                             "        - scheduler: \"Linear\"\n"
                             "          initial_learning_rate: 0.0\n"),
              std::string::npos)
        << commented;
}

// Checkpoints store the commented YAML and the hash their build computed. A later build that adds
// a field re-parses that YAML into a config with one more line, so hashConfig no longer matches;
// hashOfWrittenConfig recovers the writer's own hash from the text it wrote.
TEST(ConfigRoundTrip, HashOfWrittenConfigIsTheWritersHashEvenWithoutNewerFields) {
    Config c;
    c.runconfig.seed = 7;
    c.model.hiddenSize = 96;
    const std::string commented = saveConfigYaml(c, YamlStyle::Commented);
    EXPECT_EQ(hashOfWrittenConfig(commented), hashConfig(c));
    // As an older build without memoryx.shards wrote it: its plain text and its commented text
    // both lack the field (and its comment line).
    auto drop = [](std::string text, const std::string& line) {
        const size_t at = text.find(line);
        EXPECT_NE(at, std::string::npos) << line;
        return at == std::string::npos ? text : text.erase(at, line.size());
    };
    const std::string olderPlain = drop(saveConfigYaml(c, YamlStyle::Plain), "    shards: 1\n");
    const std::string olderCommented = drop(commented, "    shards: 1\n");
    EXPECT_EQ(hashOfWrittenConfig(olderCommented), sha256Hex(olderPlain));
    EXPECT_NE(hashOfWrittenConfig(olderCommented), hashConfig(c));
    // The old text still parses (the new field takes its default), to the same config.
    auto parsed = parseConfig(olderCommented, "older build", {});
    ASSERT_TRUE(parsed.ok()) << parsed.error().message;
    EXPECT_EQ(hashConfig(parsed->config), hashConfig(c));
}

// Without adapters nothing about LoRA is written, so every existing config keeps its text and hash.
TEST(ConfigRoundTrip, ConfigWithoutLoraWritesNoLoraKey) {
    EXPECT_EQ(saveConfigYaml(Config{}, YamlStyle::Plain).find("lora"), std::string::npos);
    Config c;
    c.lora.emplace();
    EXPECT_NE(saveConfigYaml(c, YamlStyle::Plain).find("lora:"), std::string::npos);
    EXPECT_NE(hashConfig(c), hashConfig(Config{}));
}

// A dense model writes no moe key (existing configs keep their text and hash); ModelZoo's
// moe_params spelling loads into the same section.
TEST(ConfigRoundTrip, MoeSectionOnlyWhenPresentAndModelZooSpellingLoads) {
    EXPECT_EQ(saveConfigYaml(Config{}, YamlStyle::Plain).find("moe"), std::string::npos);
    Config c;
    c.model.moe = MoeConfig{.numExperts = 8, .topK = 2, .capacityFactor = 1.5};
    EXPECT_EQ(roundTrip(c, YamlStyle::Plain), c);
    EXPECT_EQ(roundTrip(c, YamlStyle::Commented), c);
    auto parsed = parseConfig(
        "model:\n  moe_params:\n    num_experts: 8\n    top_k: 2\n    capacity_factor: 1.5\n",
        "modelzoo", {});
    ASSERT_TRUE(parsed.ok()) << parsed.error().message;
    EXPECT_EQ(parsed->config.model.moe, c.model.moe);
}

TEST(ConfigRoundTrip, HashFollowsContentNotComments) {
    const Config a;
    Config b;
    EXPECT_EQ(hashConfig(a), hashConfig(b));
    EXPECT_EQ(hashConfig(a).size(), 64u);
    b.runconfig.seed = 2;
    EXPECT_NE(hashConfig(a), hashConfig(b));
    // Identity is the plain text: the commented form carries help text that may be reworded.
    EXPECT_EQ(hashConfig(a), hashConfig(roundTrip(a, YamlStyle::Commented)));
}

// Key paths of a saved YAML tree; schedule pieces as learning_rate[N] like describeFields().
void collectPaths(const YAML::Node& node, const std::string& prefix, std::set<std::string>& out) {
    for (auto it = node.begin(); it != node.end(); ++it) {
        const std::string path =
            prefix.empty() ? it->first.Scalar() : prefix + "." + it->first.Scalar();
        out.insert(path);
        if (it->second.IsMap()) collectPaths(it->second, path, out);
        if (it->second.IsSequence() && it->second.size() > 0 && it->second[0].IsMap())
            collectPaths(it->second[0], path + "[N]", out);
    }
}

TEST(ConfigDescribe, CoversEveryFieldTheWriterSaves) {
    const std::vector<FieldDescription> fields = describeFields();
    std::set<std::string> described;
    for (const FieldDescription& f : fields) {
        // Maps keyed by config keys (sweep.parameters) describe their entries under "<key>";
        // their saved form has the real keys, so neither side is compared below that level.
        if (f.path.find("<key>") != std::string::npos) continue;
        EXPECT_TRUE(described.insert(f.path).second) << "listed twice: " << f.path;
        EXPECT_FALSE(f.help.empty()) << f.path;
        EXPECT_FALSE(f.type.empty()) << f.path;
        EXPECT_LE(f.min, f.max) << f.path;
    }
    std::set<std::string> saved;
    collectPaths(YAML::Load(saveConfigYaml(everythingSet(), YamlStyle::Plain)), "", saved);
    std::erase_if(saved, [](const std::string& path) {
        return path.starts_with("sweep.parameters.") || path.starts_with("sweep.parametrizations.");
    });
    EXPECT_EQ(described, saved);
}

TEST(ConfigDescribe, DescribesTypesDefaultsBoundsAndChoices) {
    const std::vector<FieldDescription> fields = describeFields();
    auto find = [&](const std::string& path) -> const FieldDescription& {
        for (const FieldDescription& f : fields)
            if (f.path == path) return f;
        ADD_FAILURE() << "missing " << path;
        return fields.front();
    };
    const FieldDescription& hidden = find("model.hidden_size");
    EXPECT_EQ(hidden.type, "int");
    EXPECT_EQ(hidden.defaultValue, "768");
    EXPECT_EQ(hidden.min, 1);
    EXPECT_TRUE(std::isinf(hidden.max));
    EXPECT_EQ(find("model").type, "section");
    EXPECT_EQ(find("model.output_layer_initializer").type, "optional_section");
    EXPECT_EQ(find("optimizer.betas").defaultValue, "[0.9, 0.999]");
    EXPECT_EQ(find("optimizer.learning_rate").type, "learning_rate");
    EXPECT_EQ(find("optimizer.learning_rate[N].scheduler").choices,
              (std::vector<std::string>{"Linear", "Cosine", "Constant"}));
    EXPECT_EQ(find("optimizer.learning_rate[N].total_iters").aliases,
              (std::vector<std::string>{"steps", "decay_steps"}));
    EXPECT_EQ(find("train_input.tokenizer.type").defaultValue, "\"byte\"");
    EXPECT_EQ(find("train_input.data_dir").type, "string[]");
    EXPECT_EQ(find("runconfig.seed").type, "int64");
}

TEST(ConfigDescribe, EveryDefaultParsesBackAsAnOverride) {
    const Config defaults;
    Config withOptional = defaults;  // setting a key inside an optional section creates it
    withOptional.model.outputLayerInitializer = InitializerConfig{};
    Config withSweep = defaults;
    withSweep.sweep = SweepConfig{};
    Config withLora = defaults;
    withLora.lora = LoraConfig{};
    Config withMoe = defaults;
    withMoe.model.moe = MoeConfig{};
    Config withSparsity = defaults;
    withSparsity.sparsity = SparsitySectionConfig{};
    Config withPosScaling = defaults;
    withPosScaling.model.posScalingExtraArgs = PosScalingExtraArgs{};
    for (const FieldDescription& f : describeFields()) {
        if (f.type == "section" || f.type == "optional_section" ||
            f.path.find("[N]") != std::string::npos || f.path.find("<key>") != std::string::npos)
            continue;
        Config c;
        const Status status = applyOverride(c, f.path + "=" + f.defaultValue);
        EXPECT_TRUE(status.ok()) << f.path << ": " << status.error().message;
        const bool inOptional = f.path.starts_with("model.output_layer_initializer.");
        EXPECT_EQ(c, inOptional                                            ? withOptional
                     : f.path.starts_with("sweep.")                        ? withSweep
                     : f.path.starts_with("lora.")                         ? withLora
                     : f.path.starts_with("model.moe.")                    ? withMoe
                     : f.path.starts_with("sparsity.")                     ? withSparsity
                     : f.path.starts_with("model.pos_scaling_extra_args.") ? withPosScaling
                                                                           : defaults)
            << f.path;
    }
}

}  // namespace
}  // namespace ws::config
