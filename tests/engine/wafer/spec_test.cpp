// SPDX-License-Identifier: GPL-3.0-or-later
// Wafer specs: the shipped presets load with their published figures; bad files fail with
// file:line:col and the key to fix; overrides, SwarmX tree depth and system limits.
#include <gtest/gtest.h>

#include "engine/wafer/spec.h"

namespace ws::wafer {
namespace {

const std::string kPresets = WAFER_PRESETS_DIR "/wafers/";

const char* kValid = R"(wafer:
  name: t
  grid_rows: 4
  grid_cols: 8
  clock_ghz: 1.0
  fmacs_per_core_per_cycle: 4
  sram_bytes_per_core: 49152
  fabric_bytes_per_link_per_cycle: 4
  hop_latency_cycles: 1
  io_gb_per_s: 1
  stream_bytes_per_value: 2
  compute_efficiency: 0.5
cluster:
  max_systems: 16
  swarmx_fan_out: 4
  swarmx_hop_latency_us: 2
  memoryx_update_gparams_per_s: 1
  memoryx_bytes: 1.0e12
  link_gbit_per_s: 100
  links_per_system: 12
  fabric_aggregate_tbit_per_s: 1000
  memoryx_gb_per_s: 150
  host_input_gb_per_s: 12.5
  swarmx_port_jitter: 0.2
)";

std::string replaced(std::string text, const std::string& from, const std::string& to) {
    text.replace(text.find(from), from.size(), to);
    return text;
}

TEST(WaferSpec, ShippedPresetsLoadWithTheirFigures) {
    auto wse2 = loadWaferSpecFile(kPresets + "wse2.yaml");
    ASSERT_TRUE(wse2.ok()) << wse2.error().message;
    EXPECT_EQ(wse2->cores(), 750 * 994);
    EXPECT_EQ(wse2->fmacsPerCycle, 4);
    EXPECT_EQ(wse2->sramBytesPerCore, 48 * 1024);
    EXPECT_DOUBLE_EQ(wse2->ioBytesPerS(), 150e9);
    EXPECT_EQ(wse2->cluster.maxSystems, 192);
    // 745,500 usable cores x 4 FMACs x 2 x 1.1 GHz.
    EXPECT_NEAR(wse2->peakFlopsPerS(), 745500.0 * 4 * 2 * 1.1e9, 1e6);
    for (const char* name : {"wse3", "teaching-16x16"}) {
        auto s = loadWaferSpecFile(kPresets + name + ".yaml");
        ASSERT_TRUE(s.ok()) << s.error().message;
        EXPECT_EQ(s->name, name);
    }
}

TEST(WaferSpec, FindsPresetsByName) {
    auto s = loadWaferSpec("teaching-16x16");
    ASSERT_TRUE(s.ok()) << s.error().message;
    EXPECT_EQ(s->gridRows, 16);
    auto missing = loadWaferSpec("wse9");
    ASSERT_FALSE(missing.ok());
    EXPECT_NE(missing.error().message.find("wse9"), std::string::npos);
    EXPECT_NE(missing.error().message.find("wse2"), std::string::npos);  // lists what exists
}

// Issue 31: a spec path read from a config (wafer.spec) may be anything: an error naming why.
TEST(WaferSpec, APathTheSystemRefusesIsAnErrorSayingWhy) {
    const std::string tooLong = "/tmp/" + std::string(300, 'w') + ".yaml";
    auto refused = loadWaferSpec(tooLong);
    ASSERT_FALSE(refused.ok());
    EXPECT_NE(refused.error().message.find("File name too long"), std::string::npos)
        << refused.error().message;
    auto missing = loadWaferSpec("/tmp/no-such-spec.yaml");
    ASSERT_FALSE(missing.ok());
    EXPECT_NE(missing.error().message.find("No such file or directory"), std::string::npos)
        << missing.error().message;
}

TEST(WaferSpec, KnownNamesAndDidYouMeanForATypo) {
    EXPECT_EQ(knownSpecNames(), (std::vector<std::string>{"teaching-16x16", "wse2", "wse3"}));
    for (const auto& [typed, meant] : {std::pair{"teaching16", "teaching-16x16"},
                                       std::pair{"WSE-3", "wse3"}, std::pair{"wse22", "wse2"}}) {
        auto missing = loadWaferSpec(typed);
        ASSERT_FALSE(missing.ok()) << typed;
        EXPECT_NE(missing.error().message.find(std::string("did you mean \"") + meant + "\"?"),
                  std::string::npos)
            << missing.error().message;
    }
    auto unrelated = loadWaferSpec("banana");
    ASSERT_FALSE(unrelated.ok());
    EXPECT_EQ(unrelated.error().message.find("did you mean"), std::string::npos)
        << unrelated.error().message;
}

TEST(WaferSpec, RejectsZeroAndNegativeSizesWithTheirLine) {
    auto zero = parseWaferSpec(replaced(kValid, "grid_rows: 4", "grid_rows: 0"), "s.yaml");
    ASSERT_FALSE(zero.ok());
    EXPECT_NE(zero.error().message.find("s.yaml:3:14: wafer.grid_rows"), std::string::npos)
        << zero.error().message;
    auto negative = parseWaferSpec(
        replaced(kValid, "sram_bytes_per_core: 49152", "sram_bytes_per_core: -1"), "s.yaml");
    ASSERT_FALSE(negative.ok());
    EXPECT_NE(negative.error().message.find("s.yaml:7:24: wafer.sram_bytes_per_core"),
              std::string::npos)
        << negative.error().message;
    auto fraction = parseWaferSpec(replaced(kValid, "grid_cols: 8", "grid_cols: 2.5"), "s.yaml");
    ASSERT_FALSE(fraction.ok());
    EXPECT_NE(fraction.error().message.find("whole number"), std::string::npos);
}

TEST(WaferSpec, RejectsUnknownAndMissingKeys) {
    auto unknown =
        parseWaferSpec(replaced(kValid, "grid_cols: 8", "grid_cols: 8\n  grid_colz: 9"), "s.yaml");
    ASSERT_FALSE(unknown.ok());
    EXPECT_NE(unknown.error().message.find("wafer.grid_colz: unknown key"), std::string::npos);
    auto missing = parseWaferSpec(replaced(kValid, "  clock_ghz: 1.0\n", ""), "s.yaml");
    ASSERT_FALSE(missing.ok());
    EXPECT_NE(missing.error().message.find("wafer.clock_ghz: missing"), std::string::npos);
    auto broken = parseWaferSpec("wafer: [", "s.yaml");
    ASSERT_FALSE(broken.ok());
    EXPECT_NE(broken.error().message.find("s.yaml:"), std::string::npos);
}

TEST(WaferSpec, OverridesAreCheckedAndAtomic) {
    auto spec = parseWaferSpec(kValid, "s.yaml");
    ASSERT_TRUE(spec.ok()) << spec.error().message;
    ASSERT_TRUE(overrideField(*spec, "wafer.grid_rows=64").ok());
    EXPECT_EQ(spec->gridRows, 64);
    ASSERT_TRUE(overrideField(*spec, "cluster.max_systems=4").ok());
    EXPECT_EQ(spec->cluster.maxSystems, 4);
    EXPECT_FALSE(overrideField(*spec, "wafer.grid_rows=0").ok());
    EXPECT_FALSE(overrideField(*spec, "wafer.compute_efficiency=1.5").ok());
    EXPECT_FALSE(overrideField(*spec, "wafer.nope=1").ok());
    EXPECT_FALSE(overrideField(*spec, "grid_rows=1").ok());
    EXPECT_EQ(spec->gridRows, 64);
    EXPECT_DOUBLE_EQ(spec->computeEfficiency, 0.5);
}

TEST(WaferSpec, SwarmXTreeDepthIsCeilLog4) {
    ClusterSpec c;
    c.swarmxFanOut = 4;
    EXPECT_EQ(c.treeDepth(1), 0);
    EXPECT_EQ(c.treeDepth(2), 1);
    EXPECT_EQ(c.treeDepth(4), 1);
    EXPECT_EQ(c.treeDepth(5), 2);
    EXPECT_EQ(c.treeDepth(16), 2);
    EXPECT_EQ(c.treeDepth(17), 3);
    EXPECT_EQ(c.treeDepth(64), 3);
    EXPECT_EQ(c.treeDepth(192), 4);
    c.swarmxFanOut = 2;
    EXPECT_EQ(c.treeDepth(16), 4);
}

TEST(WaferSpec, NumCsxBeyondTheSwarmXLimitIsAnError) {
    auto spec = loadWaferSpecFile(kPresets + "wse2.yaml");
    ASSERT_TRUE(spec.ok());
    EXPECT_TRUE(spec->checkSystems(192).ok());
    const Status s = spec->checkSystems(193);
    ASSERT_FALSE(s.ok());
    EXPECT_NE(s.error().message.find("SwarmX limit"), std::string::npos);
    EXPECT_FALSE(spec->checkSystems(0).ok());
}

TEST(WaferSpec, ConfigSectionsOverrideTheSpecsFigures) {
    config::Config cfg;
    cfg.wafer.spec = "teaching-16x16";
    cfg.wafer.overrides = {"grid_rows=32", "clock_ghz=2"};
    cfg.cluster.overrides = {"max_systems=64"};
    cfg.runconfig.numCsx = 32;
    auto spec = specForConfig(cfg);
    ASSERT_TRUE(spec.ok()) << spec.error().message;
    EXPECT_EQ(spec->gridRows, 32);
    EXPECT_EQ(spec->gridCols, 16);
    EXPECT_DOUBLE_EQ(spec->clockGhz, 2.0);
    EXPECT_EQ(spec->cluster.maxSystems, 64);

    cfg.cluster.overrides.clear();  // the teaching cluster connects 16 systems
    auto tooMany = specForConfig(cfg);
    ASSERT_FALSE(tooMany.ok());
    EXPECT_NE(tooMany.error().message.find("runconfig.num_csx"), std::string::npos);

    cfg.runconfig.numCsx = 1;
    cfg.wafer.overrides = {"grid_rows=32", "grid_row=8"};
    auto typo = specForConfig(cfg);
    ASSERT_FALSE(typo.ok());
    EXPECT_NE(typo.error().message.find("wafer.overrides[1] = \"grid_row=8\""), std::string::npos)
        << typo.error().message;
    EXPECT_NE(typo.error().message.find("allowed: name, grid_rows, grid_cols"), std::string::npos);

    cfg.wafer.overrides = {"grid_cols=0"};
    EXPECT_FALSE(specForConfig(cfg).ok());  // validated like a spec file
    cfg.wafer.overrides.clear();
    cfg.wafer.spec = "wse9";
    auto missing = specForConfig(cfg);
    ASSERT_FALSE(missing.ok());
    EXPECT_NE(missing.error().message.find("wafer.spec"), std::string::npos);
}

}  // namespace
}  // namespace ws::wafer
