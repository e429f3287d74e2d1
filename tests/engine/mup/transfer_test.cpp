// SPDX-License-Identifier: GPL-3.0-or-later
// μTransfer config generation: the target config carries the proxy's optimum and the μP fields
// (base width = proxy width, LR = the proxy's best, init std and embedding multiplier), keeps
// the head size and filter ratio, survives a YAML round trip, and bad requests name the problem.
#include "engine/mup/transfer.h"

#include <gtest/gtest.h>

#include <cmath>

#include "engine/config/config_yaml.h"

namespace ws::mup {
namespace {

config::Config proxyConfig() {
    auto loaded = config::loadConfigFile(
        WAFER_PRESETS_DIR "/mup-sweep.yaml",
        {"model.hidden_size=32", "model.num_heads=2", "model.filter_size=128",
         "model.mup_base_hidden_size=32", "model.mup_base_filter_size=128",
         "model.embeddings_scale=10.0", "model.scale_qk_dot_by_d=true"});
    EXPECT_TRUE(loaded.ok()) << (loaded.ok() ? "" : loaded.error().message);
    return loaded->config;
}

TEST(MupTransfer, TargetConfigCarriesTheProxyOptimumAndTheMupFields) {
    TransferRequest r;
    r.proxy = proxyConfig();
    r.proxyHiddenSize = 32;
    r.baseLearningRate = std::exp2(-8);
    r.initStd = 0.05;
    r.embeddingsScale = 12.0;
    r.targetHiddenSize = 1024;
    r.targetLayers = 6;
    auto target = makeTransferConfig(r);
    ASSERT_TRUE(target.ok()) << target.error().message;
    const config::ModelConfig& m = target->model;
    EXPECT_EQ(m.hiddenSize, 1024);
    EXPECT_EQ(m.numHeads, 64);  // head size 16 as in the proxy
    EXPECT_EQ(m.filterSize, 4096);
    EXPECT_EQ(m.numHiddenLayers, 6);
    EXPECT_EQ(m.mupBaseHiddenSize, 32);
    EXPECT_EQ(m.mupBaseFilterSize, 128);
    EXPECT_DOUBLE_EQ(m.embeddingsScale, 12.0);
    EXPECT_TRUE(m.scaleQkDotByD);
    EXPECT_DOUBLE_EQ(m.initializer.std, 0.05);
    EXPECT_DOUBLE_EQ(m.initializer.b, 0.1);  // ±2σ stays ±2σ
    EXPECT_DOUBLE_EQ(m.embeddingInitializer.std, 0.05);
    EXPECT_FALSE(target->sweep.has_value());
    // The learning rate is the proxy's, as a constant rate; written and read back unchanged.
    const std::string yaml = config::saveConfigYaml(*target);
    EXPECT_NE(yaml.find("mup_base_hidden_size: 32"), std::string::npos);
    auto back = config::parseConfig(yaml, "target.yaml", {});
    ASSERT_TRUE(back.ok()) << back.error().message;
    EXPECT_EQ(back->config, *target);
    auto reference = *target;
    ASSERT_TRUE(config::applyOverride(reference, "optimizer.learning_rate=0.00390625").ok());
    EXPECT_EQ(reference.optimizer, target->optimizer);
}

TEST(MupTransfer, DefaultsKeepTheProxyValuesAndDepth) {
    TransferRequest r;
    r.proxy = proxyConfig();
    r.proxyHiddenSize = 32;
    r.baseLearningRate = 0.001;
    r.targetHiddenSize = 256;
    auto target = makeTransferConfig(r);
    ASSERT_TRUE(target.ok()) << target.error().message;
    EXPECT_EQ(target->model.numHiddenLayers, r.proxy.model.numHiddenLayers);
    EXPECT_DOUBLE_EQ(target->model.initializer.std, r.proxy.model.initializer.std);
    EXPECT_DOUBLE_EQ(target->model.embeddingsScale, 10.0);
}

TEST(MupTransfer, BadRequestsNameTheProblem) {
    TransferRequest r;
    r.proxy = proxyConfig();
    r.proxyHiddenSize = 64;
    r.baseLearningRate = 0.001;
    r.targetHiddenSize = 32;
    auto narrower = makeTransferConfig(r);
    ASSERT_FALSE(narrower.ok());
    EXPECT_NE(narrower.error().message.find("narrower"), std::string::npos);
    r.targetHiddenSize = 1000;  // not a multiple of head size 16
    auto odd = makeTransferConfig(r);
    ASSERT_FALSE(odd.ok());
    EXPECT_NE(odd.error().message.find("head size 16"), std::string::npos);
    r.targetHiddenSize = 512;
    r.baseLearningRate = -1.0;
    auto badLr = makeTransferConfig(r);
    ASSERT_FALSE(badLr.ok());
    EXPECT_NE(badLr.error().message.find("learning rate"), std::string::npos);
}

}  // namespace
}  // namespace ws::mup
