// SPDX-License-Identifier: GPL-3.0-or-later
// The coord check: configs per width (SP drops the μP keys, heads grow with width, the filter
// ratio is kept), its clear errors, the slope verdict on synthetic points, and a reduced real run
// of presets/mup-base.yaml in which SP's activations grow with width and μP's do not.
#include "engine/mup/coord_check.h"

#include <gtest/gtest.h>

#include <cmath>

#include "engine/config/config_yaml.h"
#include "support/temp_dir.h"

namespace ws::mup {
namespace {

config::Config preset(const std::vector<std::string>& overrides = {}) {
    auto loaded =
        config::loadConfigFile(std::string(WAFER_PRESETS_DIR) + "/mup-base.yaml", overrides);
    EXPECT_TRUE(loaded.ok()) << (loaded.ok() ? "" : loaded.error().message);
    return loaded->config;
}

TEST(CoordCheckConfig, WidthsGrowHeadsAndKeepTheFilterRatio) {
    const config::Config base = preset();
    auto mup = configForWidth(base, 128, Parametrization::Mup);
    ASSERT_TRUE(mup.ok()) << mup.error().message;
    EXPECT_EQ(mup->model.hiddenSize, 128);
    EXPECT_EQ(mup->model.numHeads, 8);  // head size 16 as in the base
    EXPECT_EQ(mup->model.filterSize, 512);
    EXPECT_EQ(mup->model.mupBaseHiddenSize, 32);
    EXPECT_EQ(mup->model.mupBaseFilterSize, 128);
    EXPECT_EQ(mup->model.embeddingsScale, 10.0);

    auto sp = configForWidth(base, 128, Parametrization::Standard);
    ASSERT_TRUE(sp.ok());
    EXPECT_FALSE(sp->model.mupEnabled());
    EXPECT_EQ(sp->model.mupBaseFilterSize, 0);
    EXPECT_EQ(sp->model.embeddingsScale, 1.0);
    EXPECT_FALSE(sp->model.scaleQkDotByD);
    // Same base hyperparameters otherwise.
    EXPECT_EQ(sp->model.initializer, mup->model.initializer);
    EXPECT_EQ(sp->optimizer, mup->optimizer);
}

TEST(CoordCheckConfig, BadWidthsSayWhatToChange) {
    const config::Config base = preset();
    auto notMultiple = configForWidth(base, 40, Parametrization::Mup);
    ASSERT_FALSE(notMultiple.ok());
    EXPECT_EQ(notMultiple.error().message,
              "width 40 is not a multiple of the head size 16 (model.hidden_size / "
              "model.num_heads); the coord check keeps the head size and grows the number of "
              "heads, so use multiples of 16 such as 32 or 48");
    auto belowBase = configForWidth(base, 16, Parametrization::Mup);
    ASSERT_FALSE(belowBase.ok());
    EXPECT_EQ(belowBase.error().message,
              "width 16 is below model.mup_base_hidden_size (32): muP widens a base model, so "
              "every width must be at least 32; drop the width or lower the base");
    EXPECT_TRUE(configForWidth(base, 16, Parametrization::Standard).ok());

    CoordCheckOptions options;
    options.widths = {64};
    EXPECT_FALSE(checkCoordCheck(base, options).ok());
    options.widths = {32, 64, 32};
    EXPECT_FALSE(checkCoordCheck(base, options).ok());
    options.widths = {32, 64};
    EXPECT_TRUE(checkCoordCheck(base, options).ok());

    config::Config sp = base;
    sp.model.mupBaseHiddenSize = 0;
    sp.model.mupBaseFilterSize = 0;
    const Status noMup = checkCoordCheck(sp, options);
    ASSERT_FALSE(noMup.ok());
    EXPECT_NE(noMup.error().message.find("muP off"), std::string::npos);
}

// Points with mean |act| = c * width^slope for every layer and step.
std::vector<CoordPoint> syntheticPoints(Parametrization p, double slope, double logitSlope) {
    std::vector<CoordPoint> points;
    for (int width : {32, 64, 128, 256})
        for (int step = 1; step <= 2; ++step)
            for (std::string_view layer : kLayerTypes)
                points.push_back(
                    {p, width, step, layer,
                     0.7 * std::pow(double(width), layer == "output_logits" ? logitSlope : slope)});
    return points;
}

TEST(CoordCheckVerdict, SlopesAreFittedPerLayerAndStep) {
    std::vector<CoordPoint> points = syntheticPoints(Parametrization::Standard, 1.0, 0.5);
    const auto mup = syntheticPoints(Parametrization::Mup, 0.0, -0.5);
    points.insert(points.end(), mup.begin(), mup.end());
    const CoordCheckResult r = judge(points, 0.3);
    ASSERT_EQ(r.slopes.size(), 2u * 2u * std::size(kLayerTypes));
    for (const CoordSlope& s : r.slopes) {
        const double expected = s.parametrization == Parametrization::Standard
                                    ? (s.layer == "output_logits" ? 0.5 : 1.0)
                                    : (s.layer == "output_logits" ? -0.5 : 0.0);
        EXPECT_NEAR(s.slope, expected, 1e-12) << s.layer;
    }
    // μP's shrinking logits (width^-1/2 at init) are allowed; SP's growth is reported.
    EXPECT_TRUE(r.pass);
    EXPECT_NEAR(r.worstSpSlope, 1.0, 1e-12);
}

TEST(CoordCheckVerdict, GrowthOrVanishingOrNaNFails) {
    EXPECT_FALSE(judge(syntheticPoints(Parametrization::Mup, 0.0, 0.4), 0.3).pass);   // logits grow
    EXPECT_FALSE(judge(syntheticPoints(Parametrization::Mup, -0.4, 0.0), 0.3).pass);  // vanish
    EXPECT_TRUE(judge(syntheticPoints(Parametrization::Mup, 0.2, 0.2), 0.3).pass);
    auto diverged = syntheticPoints(Parametrization::Mup, 0.0, 0.0);
    diverged[5].meanAbs = NAN;
    const CoordCheckResult r = judge(diverged, 0.3);
    EXPECT_FALSE(r.pass);
    EXPECT_TRUE(std::isnan(r.worstMupSlope));
}

// Reduced: 3 widths, 4 steps, short sequences. The figures of the full preset run are in the
// coord_check.h comment and the README.
void expectStandardGrowsAndMupStaysFlat(std::vector<std::string> overrides) {
    ws::testing::TempDir tmp("coord");
    overrides.insert(overrides.end(),
                     {"train_input.max_sequence_length=32", "train_input.batch_size=4"});
    const config::Config base = preset(overrides);
    CoordCheckOptions options;
    options.widths = {32, 64, 128};
    options.steps = 4;
    options.cacheDir = tmp.path();
    int runs = 0;
    auto result = runCoordCheck(base, options, [&](int done, int total, const std::string&) {
        runs = done;
        EXPECT_EQ(total, 6);
    });
    ASSERT_TRUE(result.ok()) << result.error().message;
    EXPECT_EQ(runs, 6);
    EXPECT_EQ(result->points.size(), 2u * 3u * 4u * std::size(kLayerTypes));
    auto slope = [&](Parametrization p, int step, std::string_view layer) -> double {
        for (const CoordSlope& s : result->slopes)
            if (s.parametrization == p && s.step == step && s.layer == layer) return s.slope;
        ADD_FAILURE() << "no slope for " << layer;
        return NAN;
    };
    // SP: attention scores and the residual stream grow about like width, logits like sqrt.
    EXPECT_GT(slope(Parametrization::Standard, 1, "attn_logits"), 0.8);
    EXPECT_GT(slope(Parametrization::Standard, 4, "block_output"), 0.8);
    EXPECT_GT(slope(Parametrization::Standard, 1, "output_logits"), 0.4);
    // μP: flat, but for the logits' designed width^-1/2 at init.
    for (int step = 1; step <= 4; ++step) {
        for (std::string_view layer : {"embedding", "attn_logits", "block_output"})
            EXPECT_LT(std::abs(slope(Parametrization::Mup, step, layer)), 0.15) << layer << step;
    }
    EXPECT_NEAR(slope(Parametrization::Mup, 1, "output_logits"), -0.5, 0.1);
    EXPECT_TRUE(result->pass);
    EXPECT_GT(result->worstSpSlope, 0.8);
}

TEST(CoordCheckRun, StandardGrowsWithWidthMupStaysFlat) {
    expectStandardGrowsAndMupStaysFlat({});
}

// μP's width scaling must survive bf16 rounding: the same verdict with oneDNN bf16 matmuls.
TEST(CoordCheckRun, Bf16ModeGivesTheSameVerdict) {
    expectStandardGrowsAndMupStaysFlat({"model.mixed_precision=true", "model.fp16_type=bfloat16"});
}

}  // namespace
}  // namespace ws::mup
