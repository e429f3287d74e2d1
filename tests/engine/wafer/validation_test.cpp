// SPDX-License-Identifier: GPL-3.0-or-later
// The cycle model against the Cerebras-GPT paper's published claims on CS-2 (wse2 spec, its one
// fixed compute_efficiency and its contention model's one fixed swarmx_port_jitter, nothing
// tuned per case): weak scaling within 9% but not ideal (lost > 1%) to 16 systems,
// utilization within 8% across sizes relative to 111M, weight streaming hidden.
#include <gtest/gtest.h>

#include "engine/config/config_yaml.h"
#include "engine/model/model_facts.h"
#include "engine/model/parameters.h"
#include "engine/wafer/validation.h"

namespace ws::wafer {
namespace {

TEST(Validation, ReproducesTheCerebrasGptClaims) {
    auto spec = loadWaferSpecFile(WAFER_PRESETS_DIR "/wafers/wse2.yaml");
    ASSERT_TRUE(spec.ok()) << spec.error().message;
    auto rep = validateCerebrasGpt(*spec);
    ASSERT_TRUE(rep.ok()) << rep.error().message;
    ASSERT_EQ(rep->rows.size(), 7u);
    EXPECT_TRUE(rep->scalingOk) << "worst weak-scaling efficiency " << rep->worstScaling;
    EXPECT_TRUE(rep->hfuOk) << "worst HFU deviation " << rep->worstHfuDeviation;
    EXPECT_TRUE(rep->streamingOk);
    EXPECT_LT(rep->bestScalingAtMost, 0.99);
    EXPECT_EQ(rep->portJitter, spec->cluster.swarmxPortJitter);
    for (const auto& r : rep->rows) {
        EXPECT_GT(r.mfu1, 0.2) << r.model;
        EXPECT_LT(r.mfu1, 0.6) << r.model;
        // Weak scaling to 16 systems: linear within 9% (the paper) and not ideal (the links
        // lose more than 1%, cluster_links.h), every model; more systems never help more.
        ASSERT_EQ(r.efficiency.size(), rep->systems.size()) << r.model;
        EXPECT_EQ(r.efficiency.front(), 1.0) << r.model;
        EXPECT_GT(r.efficiency.back(), 0.91) << r.model;
        EXPECT_LT(r.efficiency.back(), 0.99) << r.model;
        for (size_t i = 1; i < r.efficiency.size(); ++i)
            EXPECT_LE(r.efficiency[i], r.efficiency[i - 1] + 1e-12)
                << r.model << " at " << rep->systems[i] << " systems";
    }
    // Every row says which activation plan it uses; the sizes that cannot keep their
    // activations recompute (their hardware FLOPs exceed the model's). (One test with the
    // claims above: the table takes about a minute.)
    for (const auto& r : rep->rows) {
        EXPECT_FALSE(r.strategy.empty()) << r.model;
        EXPECT_FALSE(r.planNote.empty()) << r.model;
        EXPECT_GE(r.hfu1, r.mfu1 - 1e-12) << r.model;
    }
    EXPECT_NE(rep->rows.back().strategy.find("recompute"), std::string::npos);
    EXPECT_GT(rep->rows.back().hfu1, rep->rows.back().mfu1);
}

// The AI Day deck's "fine-tune LLaMA 70B on 1B tokens in a day on a single chip" (~11,600
// tokens/s on one CS-3): the 70B-class GPT's prediction lands within 1.5x, by offloading or
// recomputing (micro-batching alone, one sequence a pass, gave ~1,950).
TEST(Validation, Llama70bClassOnOneCs3IsWithinOneAndAHalfOfThePublishedRate) {
    auto spec = loadWaferSpecFile(WAFER_PRESETS_DIR "/wafers/wse3.yaml");
    ASSERT_TRUE(spec.ok()) << spec.error().message;
    auto c = validateLlama70bClass(*spec);
    ASSERT_TRUE(c.ok()) << c.error().message;
    EXPECT_EQ(c->batch, 256);
    EXPECT_EQ(c->seqLen, 4096);
    EXPECT_NEAR(c->publishedTokensPerS, 11574, 1);
    EXPECT_GE(c->tokensPerS, c->publishedTokensPerS / 1.5) << c->planNote;
    EXPECT_LE(c->tokensPerS, c->publishedTokensPerS * 1.5) << c->planNote;
    EXPECT_TRUE(c->withinBound);
    EXPECT_NE(c->strategy.find("recompute"), std::string::npos) << c->strategy;
    EXPECT_GT(c->hfu, c->mfu);
}

// presets/llama-70b-class.yaml is the shape the check above predicts.
TEST(Validation, TheLlama70bClassPresetHasTheCheckedShape) {
    auto loaded = config::loadConfigFile(WAFER_PRESETS_DIR "/llama-70b-class.yaml", {});
    ASSERT_TRUE(loaded.ok()) << loaded.error().message;
    const auto& cfg = loaded->config;
    const auto shape = model::GptShape::fromConfig(cfg.model);
    const auto want = llama70bClassShape();
    EXPECT_EQ(shape.vocab, want.vocab);
    EXPECT_EQ(shape.channels, want.channels);
    EXPECT_EQ(shape.layers, want.layers);
    EXPECT_EQ(shape.heads, want.heads);
    EXPECT_EQ(shape.ffn, want.ffn);
    EXPECT_EQ(shape.maxPositions, want.maxPositions);
    EXPECT_EQ(cfg.trainInput.batchSize, kLlama70bBatch);
    EXPECT_EQ(cfg.trainInput.maxSequenceLength, kLlama70bSeqLen);
    EXPECT_EQ(model::streamedBytesPerWeight(shape), 2);
}

}  // namespace
}  // namespace ws::wafer
