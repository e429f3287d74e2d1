// SPDX-License-Identifier: GPL-3.0-or-later
// Parameter layout (names, shapes, contiguous tensors and layer slices covering the buffer),
// initialization statistics, shape validation and the FLOP count.
#include "engine/model/parameters.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "support/test_shapes.h"

namespace ws::model {
namespace {

GptShape gpt2Small() {
    config::ModelConfig m;  // the defaults are GPT-2 small
    return GptShape::fromConfig(m);
}

void expectContiguousCover(const ParameterTable& table) {
    size_t at = 0;
    for (const TensorSlice& t : table.tensors()) {
        EXPECT_EQ(t.offset, at) << t.name;
        size_t product = 1;
        for (int64_t d : t.shape) product *= size_t(d);
        EXPECT_EQ(t.size, product) << t.name;
        EXPECT_EQ(t.decay, t.shape.size() == 2) << t.name;
        at += t.size;
    }
    EXPECT_EQ(at, table.totalSize());
    size_t layerAt = 0, tensorAt = 0;
    for (size_t li = 0; li < table.layers().size(); ++li) {
        const LayerSlice& layer = table.layers()[li];
        EXPECT_EQ(layer.offset, layerAt) << layer.name;
        EXPECT_EQ(layer.firstTensor, tensorAt) << layer.name;
        size_t sum = 0;
        for (size_t i = 0; i < layer.tensorCount; ++i) {
            const TensorSlice& t = table.tensors()[layer.firstTensor + i];
            EXPECT_EQ(t.layerIndex, int(li)) << t.name;
            EXPECT_EQ(t.offset, layer.offset + sum) << t.name;
            sum += t.size;
        }
        EXPECT_EQ(layer.size, sum) << layer.name;
        layerAt += layer.size;
        tensorAt += layer.tensorCount;
    }
    EXPECT_EQ(layerAt, table.totalSize());
    EXPECT_EQ(tensorAt, table.tensors().size());
}

TEST(ParameterTableTest, Gpt2SmallLayoutMatchesHuggingFace) {
    const ParameterTable table(gpt2Small());
    EXPECT_EQ(table.totalSize(), 124439808u);  // GPT-2 small's published parameter count
    ASSERT_EQ(table.layers().size(), 14u);
    EXPECT_EQ(table.layers()[0].name, "embeddings");
    EXPECT_EQ(table.layers()[1].name, "h.0");
    EXPECT_EQ(table.layers()[12].name, "h.11");
    EXPECT_EQ(table.layers()[13].name, "head");
    EXPECT_EQ(table.headLayer(), 13);
    const std::vector<std::string> blockNames = {
        "h.5.ln_1.weight",      "h.5.ln_1.bias",          "h.5.attn.c_attn.weight",
        "h.5.attn.c_attn.bias", "h.5.attn.c_proj.weight", "h.5.attn.c_proj.bias",
        "h.5.ln_2.weight",      "h.5.ln_2.bias",          "h.5.mlp.c_fc.weight",
        "h.5.mlp.c_fc.bias",    "h.5.mlp.c_proj.weight",  "h.5.mlp.c_proj.bias"};
    const LayerSlice& h5 = table.layers()[size_t(ParameterTable::blockLayer(5))];
    ASSERT_EQ(h5.tensorCount, 12u);
    const BlockOffsets off = blockOffsets(table.shape());
    EXPECT_EQ(off.size, h5.size);
    for (size_t i = 0; i < 12; ++i)
        EXPECT_EQ(table.tensors()[h5.firstTensor + i].name, blockNames[i]);
    EXPECT_EQ(table.find("h.5.attn.c_attn.weight")->shape, (std::vector<int64_t>{768, 2304}));
    EXPECT_EQ(table.find("h.5.attn.c_attn.weight")->offset, h5.offset + off.qkvw);
    EXPECT_EQ(table.find("h.5.mlp.c_proj.weight")->shape, (std::vector<int64_t>{3072, 768}));
    EXPECT_EQ(table.find("h.5.mlp.c_proj.weight")->offset, h5.offset + off.fcprojw);
    EXPECT_EQ(table.find("h.5.mlp.c_proj.bias")->offset, h5.offset + off.fcprojb);
    EXPECT_EQ(table.find("wte.weight")->shape, (std::vector<int64_t>{50257, 768}));
    EXPECT_EQ(table.find("wpe.weight")->shape, (std::vector<int64_t>{1024, 768}));
    EXPECT_EQ(table.find("lm_head.weight"), nullptr);  // tied
    EXPECT_EQ(table.find("h.12.ln_1.weight"), nullptr);
    EXPECT_FALSE(table.find("ln_f.bias")->decay);
    EXPECT_TRUE(table.find("wpe.weight")->decay);
    expectContiguousCover(table);
}

// An MoE block: the shared part up to ln_2, the router, then each expert contiguous; dense blocks
// (not every n-th) keep GPT-2's MLP; streamUnits tiles each block exactly.
TEST(ParameterTableTest, MoeBlocksHoldRouterAndContiguousExperts) {
    config::ModelConfig m;
    m.vocabSize = 50;
    m.hiddenSize = 8;
    m.numHeads = 2;
    m.filterSize = 12;
    m.numHiddenLayers = 3;
    m.maxPositionEmbeddings = 16;
    m.moe = config::MoeConfig{.numExperts = 3, .topK = 2, .moeLayerFrequency = 2};
    const GptShape s = GptShape::fromConfig(m);
    ASSERT_TRUE(s.validate(2, 4).ok());
    EXPECT_TRUE(s.isMoeBlock(0));
    EXPECT_FALSE(s.isMoeBlock(1));
    EXPECT_TRUE(s.isMoeBlock(2));
    const ParameterTable table(s);
    expectContiguousCover(table);
    const int64_t C = 8, F = 12;
    const BlockOffsets moe = blockOffsets(s, 0), dense = blockOffsets(s, 1);
    EXPECT_EQ(dense.experts, 0);
    EXPECT_EQ(dense.size, blockOffsets(s).size);
    EXPECT_EQ(table.layers()[2].size, dense.size);
    EXPECT_EQ(moe.experts, 3);
    EXPECT_EQ(table.layers()[1].size, moe.size);
    EXPECT_EQ(table.layers()[3].size, moe.size);
    EXPECT_EQ(table.find("h.1.mlp.c_fc.weight")->offset, table.layers()[2].offset + dense.fcw);
    EXPECT_EQ(table.find("h.0.mlp.c_fc.weight"), nullptr);
    const size_t h2 = table.layers()[3].offset;
    EXPECT_EQ(table.find("h.2.mlp.router.weight")->shape, (std::vector<int64_t>{C, 3}));
    EXPECT_EQ(table.find("h.2.mlp.router.weight")->offset, h2 + moe.router);
    for (int e = 0; e < 3; ++e) {
        const std::string x = "h.2.mlp.experts." + std::to_string(e) + ".";
        EXPECT_EQ(table.find(x + "c_fc.weight")->offset, h2 + moe.fcw + moe.expert(e));
        EXPECT_EQ(table.find(x + "c_fc.weight")->shape, (std::vector<int64_t>{C, F}));
        EXPECT_EQ(table.find(x + "c_fc.bias")->offset, h2 + moe.fcb + moe.expert(e));
        EXPECT_EQ(table.find(x + "c_proj.weight")->offset, h2 + moe.fcprojw + moe.expert(e));
        EXPECT_EQ(table.find(x + "c_proj.weight")->shape, (std::vector<int64_t>{F, C}));
        EXPECT_EQ(table.find(x + "c_proj.bias")->offset, h2 + moe.fcprojb + moe.expert(e));
    }
    EXPECT_EQ(moe.expertStride, size_t(C * F + F + F * C + C));

    const std::vector<StreamUnit> units = table.streamUnits(2);
    ASSERT_EQ(units.size(), 4u);
    EXPECT_EQ(units[0].name, "h.2.shared");
    EXPECT_EQ(units[0].expert, -1);
    EXPECT_EQ(units[1].name, "h.2.mlp.experts.0");
    EXPECT_EQ(units[3].expert, 2);
    size_t at = 0;
    for (const StreamUnit& u : units) {
        EXPECT_EQ(u.offsetInBlock, at) << u.name;
        EXPECT_EQ(u.offset, h2 + at) << u.name;
        at += u.size;
    }
    EXPECT_EQ(at, moe.size);
    EXPECT_EQ(units[1].offset, table.find("h.2.mlp.experts.0.c_fc.weight")->offset);
    EXPECT_EQ(units[2].size, moe.expertStride);
    const std::vector<StreamUnit> denseUnits = table.streamUnits(1);
    ASSERT_EQ(denseUnits.size(), 1u);
    EXPECT_EQ(denseUnits[0].name, "h.1");
    EXPECT_EQ(denseUnits[0].size, dense.size);
    // Expert output projections get the residual-output init, the router the hidden one.
    std::vector<float> params(table.totalSize());
    initParameters(table, m, 7, params.data());
    EXPECT_EQ(params[table.find("h.0.mlp.experts.1.c_fc.bias")->offset], 0.0f);
}

// μP: each expert scales like the dense MLP (c_fc LR / m_d, c_proj LR / m_ffn and its init / sqrt
// (m_ffn) like mlp.c_proj), the router like c_fc (its fan-in is the width).
TEST(ParameterTableTest, MupScalesExpertsLikeTheDenseMlp) {
    config::ModelConfig m;
    m.vocabSize = 50;
    m.hiddenSize = 64;
    m.numHeads = 2;
    m.filterSize = 256;
    m.numHiddenLayers = 2;
    m.maxPositionEmbeddings = 16;
    m.mupBaseHiddenSize = 16;
    m.mupBaseFilterSize = 32;
    m.moe = config::MoeConfig{.numExperts = 2, .topK = 1, .moeLayerFrequency = 2};
    const ParameterTable table(GptShape::fromConfig(m));
    EXPECT_EQ(table.find("h.0.mlp.router.weight")->lrScale, 1.0 / 4);
    EXPECT_EQ(table.find("h.0.mlp.experts.1.c_fc.weight")->lrScale,
              table.find("h.1.mlp.c_fc.weight")->lrScale);
    EXPECT_EQ(table.find("h.0.mlp.experts.1.c_proj.weight")->lrScale, 1.0 / 8);
    EXPECT_EQ(table.find("h.0.mlp.experts.1.c_proj.weight")->lrScale,
              table.find("h.1.mlp.c_proj.weight")->lrScale);
    std::vector<float> p(table.totalSize());
    initParameters(table, m, 3, p.data());
    auto rms = [&](const char* name) {
        const TensorSlice* t = table.find(name);
        double sum = 0;
        for (size_t i = 0; i < t->size; ++i) sum += double(p[t->offset + i]) * p[t->offset + i];
        return std::sqrt(sum / double(t->size));
    };
    EXPECT_NEAR(rms("h.0.mlp.experts.0.c_proj.weight") / rms("h.1.mlp.c_proj.weight"), 1.0, 0.05);
    EXPECT_NEAR(rms("h.0.mlp.experts.0.c_fc.weight") / rms("h.1.mlp.c_fc.weight"), 1.0, 0.05);
}

TEST(ParameterTableTest, UntiedHeadAddsLmHeadLast) {
    GptShape s = gpt2Small();
    s.tiedEmbedding = false;
    s.layers = 2;
    const ParameterTable table(s);
    const TensorSlice* head = table.find("lm_head.weight");
    ASSERT_NE(head, nullptr);
    EXPECT_EQ(head->shape, (std::vector<int64_t>{50257, 768}));
    EXPECT_EQ(head->offset + head->size, table.totalSize());
    EXPECT_EQ(head->layerIndex, table.headLayer());
    EXPECT_EQ(table.layers().back().tensorCount, 3u);
    expectContiguousCover(table);
}

struct Stats {
    double mean = 0, std = 0, min = 1e30, max = -1e30;
};
Stats statsOf(const float* x, size_t n) {
    Stats s;
    for (size_t i = 0; i < n; ++i) {
        s.mean += x[i];
        s.min = std::min(s.min, double(x[i]));
        s.max = std::max(s.max, double(x[i]));
    }
    s.mean /= double(n);
    for (size_t i = 0; i < n; ++i) s.std += (x[i] - s.mean) * (x[i] - s.mean);
    s.std = std::sqrt(s.std / double(n));
    return s;
}

// Standard deviation of N(0, sigma) truncated to [-k sigma, k sigma].
double truncatedStd(double sigma, double k) {
    const double pdf = std::exp(-0.5 * k * k) / std::sqrt(2 * M_PI);
    const double mass = std::erf(k / std::sqrt(2.0));
    return sigma * std::sqrt(1.0 - 2.0 * k * pdf / mass);
}

TEST(InitTest, StatisticsFollowTheInitializers) {
    config::ModelConfig cfg = ws::testing::modelConfig(1000, 128, 8, 4, 512, 256);
    cfg.embeddingInitializer = {"normal", 0.0, 0.05, -1, 1};
    cfg.initializer = {"truncated_normal", 0.0, 0.02, -0.04, 0.04};
    const GptShape shape = GptShape::fromConfig(cfg);
    const ParameterTable table(shape);
    std::vector<float> params(table.totalSize(), -7.0f);
    initParameters(table, cfg, 1234, params.data());

    const TensorSlice* qkv = table.find("h.3.attn.c_attn.weight");
    const Stats a = statsOf(params.data() + qkv->offset, qkv->size);
    EXPECT_NEAR(a.mean, 0.0, 3e-4);
    EXPECT_NEAR(a.std, truncatedStd(0.02, 2.0), 2e-4);  // 0.02 truncated at 2 sigma: 0.0176
    EXPECT_GE(a.min, -0.04);
    EXPECT_LE(a.max, 0.04);
    EXPECT_LT(a.min, -0.039);  // the tails are actually reached
    // c_proj: std and bounds scaled by 1/sqrt(2 L) = 1/4.
    for (const char* name : {"h.3.attn.c_proj.weight", "h.7.mlp.c_proj.weight"}) {
        const TensorSlice* proj = table.find(name);
        const Stats p = statsOf(params.data() + proj->offset, proj->size);
        EXPECT_NEAR(p.std, truncatedStd(0.02 / 4, 2.0), 1e-4) << name;
        EXPECT_GE(p.min, -0.01) << name;
        EXPECT_LE(p.max, 0.01) << name;
    }
    const TensorSlice* wte = table.find("wte.weight");
    const Stats e = statsOf(params.data() + wte->offset, wte->size);
    EXPECT_NEAR(e.std, 0.05, 5e-4);  // plain normal: configured std
    const Stats fc = statsOf(params.data() + table.find("h.0.mlp.c_fc.weight")->offset,
                             table.find("h.0.mlp.c_fc.weight")->size);
    EXPECT_NEAR(fc.std, truncatedStd(0.02, 2.0), 2e-4);
    for (const TensorSlice& t : table.tensors()) {
        const bool isLnWeight =
            t.name.find("ln_") != std::string::npos && t.name.ends_with(".weight");
        if (t.shape.size() == 1) {
            const float expected = isLnWeight ? 1.0f : 0.0f;
            for (size_t i = 0; i < t.size; ++i) ASSERT_EQ(params[t.offset + i], expected) << t.name;
        }
    }
    // Every element was written.
    EXPECT_EQ(std::count(params.begin(), params.end(), -7.0f), 0);
}

TEST(InitTest, SeedDeterminesWeightsAndExplicitOutputInitializerWins) {
    config::ModelConfig cfg = ws::testing::modelConfig(50, 16, 2, 2, 64, 8);
    const ParameterTable table(GptShape::fromConfig(cfg));
    std::vector<float> a(table.totalSize()), b(table.totalSize()), c(table.totalSize());
    initParameters(table, cfg, 7, a.data());
    initParameters(table, cfg, 7, b.data());
    initParameters(table, cfg, 8, c.data());
    EXPECT_EQ(a, b);
    EXPECT_NE(a, c);
    // Pinned values for seed 7: a change of sampler (which would change every run's initial
    // weights, breaking reproducibility claims) must be deliberate.
    EXPECT_FLOAT_EQ(a[0], 0.00724265771f);
    EXPECT_FLOAT_EQ(a[1], -0.0166892558f);
    EXPECT_FLOAT_EQ(a[table.find("h.1.attn.c_attn.weight")->offset], -0.036314182f);

    cfg.outputLayerInitializer = config::InitializerConfig{"normal", 1.0, 0.0, 0, 0};
    initParameters(table, cfg, 7, c.data());
    const TensorSlice* proj = table.find("h.1.attn.c_proj.weight");
    for (size_t i = 0; i < proj->size; ++i) ASSERT_EQ(c[proj->offset + i], 1.0f);
    const TensorSlice* qkv = table.find("h.1.attn.c_attn.weight");
    EXPECT_TRUE(std::equal(a.begin() + ptrdiff_t(qkv->offset),
                           a.begin() + ptrdiff_t(qkv->offset + qkv->size),
                           c.begin() + ptrdiff_t(qkv->offset)));
}

TEST(InitTest, TruncationFarFromTheMeanTerminatesInsideTheBounds) {
    config::ModelConfig cfg = ws::testing::modelConfig(10, 4, 1, 1, 8, 4);
    cfg.initializer = {"truncated_normal", 0.0, 0.02, 5.0, 6.0};  // unreachable interval
    const ParameterTable table(GptShape::fromConfig(cfg));
    std::vector<float> p(table.totalSize());
    initParameters(table, cfg, 1, p.data());
    const TensorSlice* qkv = table.find("h.0.attn.c_attn.weight");
    for (size_t i = 0; i < qkv->size; ++i) ASSERT_EQ(p[qkv->offset + i], 5.0f);
}

TEST(GptShapeTest, ValidateNamesTheKey) {
    GptShape s = gpt2Small();
    EXPECT_TRUE(s.validate(4, 256).ok());
    s.heads = 7;
    const Status bad = s.validate();
    ASSERT_FALSE(bad.ok());
    EXPECT_NE(bad.error().message.find("num_heads"), std::string::npos);
    s = gpt2Small();
    const Status tooLong = s.validate(1, 2048);
    ASSERT_FALSE(tooLong.ok());
    EXPECT_NE(tooLong.error().message.find("max_position_embeddings"), std::string::npos);
    s.dropout = 1.0;
    EXPECT_FALSE(s.validate().ok());
    s = gpt2Small();
    s.channels = 0;
    EXPECT_NE(s.validate().error().message.find("hidden_size"), std::string::npos);
}

TEST(GptShapeTest, FromConfigAndFlops) {
    config::ModelConfig cfg;
    cfg.mixedPrecision = true;
    cfg.shareEmbeddingWeights = false;
    cfg.dropoutRate = 0.1;
    const GptShape s = GptShape::fromConfig(cfg);
    EXPECT_TRUE(s.bf16);
    EXPECT_FALSE(s.tiedEmbedding);
    EXPECT_EQ(s.dropout, 0.1);
    EXPECT_EQ(s.headSize(), 64);
    const GptShape small = gpt2Small();
    const double N = 124439808.0;
    EXPECT_DOUBLE_EQ(trainingFlopsPerStep(small, 4, 256), (6 * N + 6.0 * 12 * 768 * 256) * 4 * 256);
    EXPECT_EQ(parameterCount(small), 124439808u);
}

// SmolLM-135M (HF config: 576 x 30, 9 heads, 3 KV heads, MLP 1536, vocab 49152, tied, RMSNorm,
// rotary, no biases): its published parameter count, 134,515,008, and the layout that count
// comes from.
GptShape smolLm135m() {
    config::ModelConfig m;
    m.vocabSize = 49152;
    m.hiddenSize = 576;
    m.numHiddenLayers = 30;
    m.numHeads = 9;
    m.filterSize = 1536;
    m.maxPositionEmbeddings = 2048;
    m.positionEmbeddingType = "rotary";
    m.normType = "rmsnorm";
    m.nonlinearity = "swiglu";
    m.attentionModule = "multiquery_attention";
    m.extraAttentionParams.numKvGroups = 3;
    m.useProjectionBiasInAttention = m.useFfnBiasInAttention = m.useFfnBias = false;
    return GptShape::fromConfig(m);
}

TEST(ParameterTableTest, LlamaBlocksDropWhatTheOptionsLeaveOut) {
    const GptShape shape = smolLm135m();
    EXPECT_EQ(shape.headSize(), 64);
    EXPECT_EQ(shape.qkvWidth(), 576 + 2 * 192);
    EXPECT_EQ(shape.mlpInWidth(), 2 * 1536);
    EXPECT_FALSE(shape.gpt2Blocks());
    const ParameterTable table(shape);
    expectContiguousCover(table);
    EXPECT_EQ(table.totalSize(), 134515008u);
    EXPECT_EQ(table.find("wpe.weight"), nullptr);
    EXPECT_EQ(table.find("h.0.ln_1.bias"), nullptr);
    EXPECT_EQ(table.find("h.0.attn.c_attn.bias"), nullptr);
    EXPECT_EQ(table.find("ln_f.bias"), nullptr);
    ASSERT_NE(table.find("h.29.attn.c_attn.weight"), nullptr);
    EXPECT_EQ(table.find("h.29.attn.c_attn.weight")->shape, (std::vector<int64_t>{576, 960}));
    EXPECT_EQ(table.find("h.29.mlp.c_fc.weight")->shape, (std::vector<int64_t>{576, 3072}));
    EXPECT_EQ(table.find("h.29.mlp.c_proj.weight")->shape, (std::vector<int64_t>{1536, 576}));
    const BlockOffsets o = blockOffsets(shape);
    EXPECT_EQ(o.ln1b, BlockOffsets::kAbsent);
    EXPECT_EQ(o.fcprojb, BlockOffsets::kAbsent);
    EXPECT_EQ(o.size, table.layers()[1].size);
    EXPECT_EQ(o.fcprojw + size_t(1536) * 576, o.size);
    const float* base = nullptr;
    EXPECT_EQ(BlockOffsets::at(base, o.qkvb), nullptr);

    // Qwen2: q/k/v biases only.
    GptShape qwen = shape;
    qwen.qkvBias = true;
    const ParameterTable withBias(qwen);
    expectContiguousCover(withBias);
    ASSERT_NE(withBias.find("h.0.attn.c_attn.bias"), nullptr);
    EXPECT_EQ(withBias.find("h.0.attn.c_attn.bias")->shape, (std::vector<int64_t>{960}));
    EXPECT_EQ(withBias.find("h.0.attn.c_proj.bias"), nullptr);
    EXPECT_EQ(withBias.totalSize(), table.totalSize() + 30u * 960u);
}

TEST(GptShapeTest, FromConfigReadsTheBlockOptions) {
    config::ModelConfig m;
    m.positionEmbeddingType = "rotary";
    m.ropeTheta = 500000.0;
    m.posScalingFactor = 32.0;
    m.posScalingType = "llama3";
    m.attentionInnerDim = 1024;  // 12 heads of 85 would not do; of the inner dim: no
    m.numHeads = 16;
    const GptShape s = GptShape::fromConfig(m);
    EXPECT_EQ(s.position, GptShape::Position::Rotary);
    EXPECT_EQ(s.headSize(), 64);
    EXPECT_EQ(s.qWidth(), 1024);
    EXPECT_EQ(s.rotaryDims(), 64);
    EXPECT_EQ(s.ropeScaling, GptShape::RopeScaling::Llama3);
    EXPECT_EQ(s.ropeFactor, 32.0);
    EXPECT_EQ(s.ropeOriginalMaxPositions, 8192);  // Llama 3.1's, the default
    m.posScalingType = "linear";
    m.posScalingFactor = 1.0;
    EXPECT_EQ(GptShape::fromConfig(m).ropeScaling, GptShape::RopeScaling::None);
    m.posScalingFactor = 4.0;
    EXPECT_EQ(GptShape::fromConfig(m).ropeScaling, GptShape::RopeScaling::Linear);
    // GPT-2's defaults keep GPT-2's blocks.
    EXPECT_TRUE(GptShape::fromConfig(config::ModelConfig{}).gpt2Blocks());
}

}  // namespace
}  // namespace ws::model
