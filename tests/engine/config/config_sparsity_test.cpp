// SPDX-License-Identifier: GPL-3.0-or-later
// The top-level sparsity section as ModelZoo writes it (sparsity_config.h): each type, ModelZoo
// 2.2's spellings, bad keys and regexes with their line and column, the cross-field rules, the
// field catalogue and a save/load round trip.
#include <gtest/gtest.h>

#include "config_test_util.h"

#include "engine/config/describe.h"
#include "engine/config/validate.h"

namespace ws::config {
namespace {
using namespace test;

// ModelZoo 2.0.2's params_gpt3_125m_rigl75.yaml, its sparsity section verbatim.
constexpr const char* kRigl75 =
    "sparsity:\n"
    "    sparsity: 0.75\n"
    "    init_method: \"random\"\n"
    "    type: \"rigl\"\n"
    "    drop_fraction:\n"
    "      type: \"cosine\" # anneal drop fraction with cosine schedule\n"
    "      init: 0.3\n"
    "      half_period: 3584 # set half-period to schedule at 75% of max_steps\n"
    "    schedule:\n"
    "      freq: 100 # update every 100 steps\n"
    "      stop: 3584 # stop updates at step 3584 (not inclusive)\n"
    "    param_name_patterns:\n"
    "      - \".*proj_[qkv]_dense_layer.weight\"\n"
    "      - \".*proj_output_dense_layer.weight\"\n"
    "      - \".*linear_layer.weight\"\n";

TEST(ConfigSparsity, ReadsModelZoosRigl75SectionAsWritten) {
    auto loaded = parseText(kRigl75);
    ASSERT_TRUE(loaded.ok()) << loaded.error().message;
    EXPECT_TRUE(loaded->warnings.empty());
    ASSERT_TRUE(loaded->config.sparsity);
    const SparsitySectionConfig& s = *loaded->config.sparsity;
    EXPECT_EQ(s.sparsity, 0.75);
    EXPECT_EQ(s.type, "rigl");
    EXPECT_EQ(s.initMethod, "random");
    EXPECT_EQ(s.dropFraction.type, "cosine");
    EXPECT_EQ(s.dropFraction.init, 0.3);
    EXPECT_EQ(s.dropFraction.halfPeriod, 3584);
    EXPECT_EQ(s.schedule.freq, 100);
    EXPECT_EQ(s.schedule.stop, 3584);
    ASSERT_EQ(s.paramNamePatterns.size(), 3u);
    EXPECT_EQ(s.paramNamePatterns[0], ".*proj_[qkv]_dense_layer.weight");
    EXPECT_FALSE(anyContains(validate(loaded->config), "sparsity"));
}

TEST(ConfigSparsity, ReadsEveryType) {
    for (const char* type : {"static", "set", "rigl", "gmp"}) {
        const std::string text =
            std::string("sparsity:\n  sparsity: 0.5\n  type: ") + type + "\n" +
            (std::string(type) == "gmp" ? "  init_sparsity: 0.1\n  schedule: {freq: 10, stop: 50}\n"
                                        : "");
        auto loaded = parseText(text);
        ASSERT_TRUE(loaded.ok()) << type << ": " << loaded.error().message;
        EXPECT_EQ(loaded->config.sparsity->type, type);
        EXPECT_EQ(loaded->config.sparsity->dynamic(), std::string(type) != "static");
    }
}

TEST(ConfigSparsity, ReadsModelZoo22SpellingsAndGlobFilters) {
    auto loaded = parseText(
        "sparsity:\n"
        "  sparsity: 0.75\n"
        "  algorithm: set\n"
        "  update: {freq: 50, stop: 500}\n"
        "  param_filter:\n"
        "    - '*proj_[qkv]_dense_layer.weight'\n"
        "    - '*linear_layer.weight'\n"
        "    - 'h.[!0].attn.c_proj.weight'\n");
    ASSERT_TRUE(loaded.ok()) << loaded.error().message;
    const SparsitySectionConfig& s = *loaded->config.sparsity;
    EXPECT_EQ(s.type, "set");
    EXPECT_EQ(s.schedule.freq, 50);
    EXPECT_EQ(s.schedule.stop, 500);
    // Whole-name matches, as fnmatch's; [!0] is a regex's [^0].
    EXPECT_EQ(
        s.paramNamePatterns,
        (std::vector<std::string>{".*proj_[qkv]_dense_layer\\.weight$", ".*linear_layer\\.weight$",
                                  "h\\.[^0]\\.attn\\.c_proj\\.weight$"}));
    ASSERT_EQ(loaded->warnings.size(), 1u);
    EXPECT_NE(loaded->warnings[0].find("test.yaml:5:3: sparsity.param_filter: ModelZoo 2.2's "
                                       "glob filter read as param_name_patterns"),
              std::string::npos)
        << loaded->warnings[0];
}

TEST(ConfigSparsity, BadKeysAndValuesNameThePlace) {
    EXPECT_EQ(parseError("sparsity:\n  sparsity: 0.75\n  drop_fracton: {init: 0.3}\n"),
              "test.yaml:3:3: sparsity.drop_fracton: unknown key; did you mean `drop_fraction`?");
    EXPECT_EQ(parseError("sparsity:\n  type: rigel\n"),
              "test.yaml:2:9: sparsity.type: expected one of \"static\", \"set\", \"rigl\", "
              "\"gmp\" (any letter case), found \"rigel\"; did you mean \"rigl\"?");
    EXPECT_EQ(parseError("sparsity:\n  schedule:\n    freq: 0\n"),
              "test.yaml:3:11: sparsity.schedule.freq: expected an integer >= 1, found \"0\"");
    EXPECT_EQ(parseError("sparsity:\n  sparsity: 1.5\n"),
              "test.yaml:2:13: sparsity.sparsity: expected a number in [0, 0.99], found \"1.5\"");
}

TEST(ConfigSparsity, BadRegexIsReportedWhereItIsWritten) {
    const std::string error = parseError(
        "sparsity:\n  sparsity: 0.5\n  param_name_patterns:\n    - '.*c_fc.weight'\n"
        "    - '.*proj_[qkv_dense'\n");
    EXPECT_EQ(error.rfind("test.yaml:5:7: sparsity.param_name_patterns[1]: \".*proj_[qkv_dense\" "
                          "is not a valid regex (",
                          0),
              0u)
        << error;
    EXPECT_NE(error.find("write a regex such as"), std::string::npos) << error;
}

TEST(ConfigSparsity, CrossFieldRulesSayWhatToDo) {
    auto both = parseText("model:\n  sparsity: {level: 0.5}\nsparsity: {sparsity: 0.5}\n");
    ASSERT_TRUE(both.ok()) << both.error().message;
    both->config.trainInput.dataDir = {"/data"};
    const auto errors = validate(both->config);
    ASSERT_EQ(errors.size(), 1u);
    EXPECT_NE(errors[0].find("keep the top-level section"), std::string::npos) << errors[0];

    auto gmp = parseText("sparsity: {sparsity: 0.5, type: gmp, init_sparsity: 0.7}\n");
    ASSERT_TRUE(gmp.ok());
    gmp->config.trainInput.dataDir = {"/data"};
    const auto gmpErrors = validate(gmp->config);
    EXPECT_TRUE(anyContains(gmpErrors, "sparsity.init_sparsity (0.7) is above sparsity.sparsity"));
    EXPECT_TRUE(anyContains(gmpErrors, "sparsity.type gmp needs sparsity.schedule.stop"));

    auto sharded = parseText(
        "sparsity: {sparsity: 0.5}\nmemoryx: {shards: 2}\n"
        "runconfig: {num_csx: 2}\ntrain_input: {batch_size: 8}\n");
    ASSERT_TRUE(sharded.ok());
    sharded->config.trainInput.dataDir = {"/data"};
    EXPECT_TRUE(anyContains(validate(sharded->config), "use memoryx.shards: 1 for a sparse model"));
}

TEST(ConfigSparsity, FieldsListTheNewKeysAndTheSectionRoundTrips) {
    std::vector<std::string> paths;
    for (const FieldDescription& f : describeFields()) paths.push_back(f.path);
    for (const char* key :
         {"sparsity.sparsity", "sparsity.type", "sparsity.init_method", "sparsity.init_sparsity",
          "sparsity.drop_fraction.type", "sparsity.drop_fraction.init",
          "sparsity.drop_fraction.half_period", "sparsity.schedule.freq", "sparsity.schedule.stop",
          "sparsity.param_name_patterns"})
        EXPECT_NE(std::find(paths.begin(), paths.end(), key), paths.end()) << key;
    auto loaded = parseText(kRigl75);
    ASSERT_TRUE(loaded.ok());
    auto back = parseText(saveConfigYaml(loaded->config));
    ASSERT_TRUE(back.ok()) << back.error().message;
    EXPECT_EQ(back->config, loaded->config);
}

TEST(ConfigSparsity, OverridesReachTheSection) {
    auto loaded =
        parseText("sparsity: {sparsity: 0.5}\n", {"sparsity.type=set", "sparsity.schedule.freq=7"});
    ASSERT_TRUE(loaded.ok()) << loaded.error().message;
    EXPECT_EQ(loaded->config.sparsity->type, "set");
    EXPECT_EQ(loaded->config.sparsity->schedule.freq, 7);
}

}  // namespace
}  // namespace ws::config
