// SPDX-License-Identifier: GPL-3.0-or-later
// LoRA in the model (GptShape::loraRank, issue 16): the adapter tensors' place in the table,
// initialisation that leaves the base's values and so (B = 0) its logits and loss exactly as
// they were, in fp32 and bf16, and the whole adapted model's gradient against finite
// differences with adapter dropout.
#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <numeric>
#include <vector>

#include "engine/model/gpt.h"
#include "engine/model/random.h"
#include "gradcheck.h"
#include "support/test_shapes.h"

namespace ws::model {
namespace {

using testing::expectGradientMatches;
using ws::testing::gptShape;
using ws::testing::modelConfigOf;

GptShape withLora(GptShape s, int rank, std::vector<std::string> targets, double dropout) {
    s.applyLora(config::LoraConfig{
        .rank = rank, .alpha = 2.0 * rank, .dropout = dropout, .targets = std::move(targets)});
    return s;
}

std::vector<int32_t> tokens(int n, int vocab, uint64_t seed) {
    std::vector<int32_t> ids(static_cast<size_t>(n));
    for (int i = 0; i < n; ++i) ids[size_t(i)] = int32_t(rng::bits(seed, uint64_t(i)) % vocab);
    return ids;
}

TEST(LoraModel, AdaptersEndEachBlockInTargetOrder) {
    const GptShape s =
        withLora(gptShape(11, 8, 2, 2, 32, 8), 3, {"mlp.c_proj", "c_attn", "c_fc"}, 0.0);
    EXPECT_EQ(s.loraScale, 2.0);
    const ParameterTable table(s), base(gptShape(11, 8, 2, 2, 32, 8));
    EXPECT_EQ(table.tensors().size(), base.tensors().size() + 2 * 6);
    EXPECT_EQ(table.totalSize(), base.totalSize() + 2 * 3 * ((8 + 24) + (8 + 32) + (32 + 8)));
    const LayerSlice& h1 = table.layers()[size_t(ParameterTable::blockLayer(1))];
    std::vector<std::string> names;
    for (size_t t = h1.firstTensor + 12; t < h1.firstTensor + h1.tensorCount; ++t)
        names.push_back(table.tensors()[t].name);
    EXPECT_EQ(names, (std::vector<std::string>{
                         "h.1.attn.c_attn.lora_A.weight", "h.1.attn.c_attn.lora_B.weight",
                         "h.1.mlp.c_fc.lora_A.weight", "h.1.mlp.c_fc.lora_B.weight",
                         "h.1.mlp.c_proj.lora_A.weight", "h.1.mlp.c_proj.lora_B.weight"}));
    const TensorSlice* fcA = table.find("h.0.mlp.c_fc.lora_A.weight");
    const TensorSlice* fcB = table.find("h.0.mlp.c_fc.lora_B.weight");
    const TensorSlice* projB = table.find("h.1.mlp.c_proj.lora_B.weight");
    ASSERT_TRUE(fcA && fcB && projB);
    EXPECT_EQ(fcA->shape, (std::vector<int64_t>{8, 3}));
    EXPECT_EQ(fcB->shape, (std::vector<int64_t>{3, 32}));
    const BlockOffsets o = blockOffsets(s);
    EXPECT_EQ(o.size, h1.size);
    EXPECT_EQ(h1.offset + o.loraB[3], projB->offset);
    EXPECT_EQ(o.loraA[1], 0u);  // attn.c_proj not adapted
}

// With B = 0 the adapted model is the base: same base values from the same seed, and the same
// logits and loss bit for bit, in training mode with dropout everywhere, fp32 and bf16.
TEST(LoraModel, ZeroBGivesTheBasesLogitsAndLossBitForBit) {
    for (bool bf16 : {false, true}) {
        GptShape baseShape = gptShape(37, 16, 2, 2, 32, 16);
        baseShape.dropout = 0.1;
        baseShape.bf16 = bf16;
        const GptShape adapted =
            withLora(baseShape, 4, {"c_attn", "attn.c_proj", "c_fc", "mlp.c_proj"}, 0.2);
        const ParameterTable baseTable(baseShape), table(adapted);
        std::vector<float> baseParams(baseTable.totalSize()), params(table.totalSize());
        const config::ModelConfig model = modelConfigOf(baseShape);
        initParameters(baseTable, model, 9, baseParams.data());
        initParameters(table, model, 9, params.data());
        for (const TensorSlice& t : baseTable.tensors()) {
            const TensorSlice* same = table.find(t.name);
            ASSERT_NE(same, nullptr) << t.name;
            EXPECT_EQ(std::memcmp(baseParams.data() + t.offset, params.data() + same->offset,
                                  t.size * sizeof(float)),
                      0)
                << t.name;
        }
        double aNorm = 0;
        for (const TensorSlice& t : table.tensors()) {
            if (t.name.find("lora_B") != std::string::npos) {
                for (size_t i = 0; i < t.size; ++i) EXPECT_EQ(params[t.offset + i], 0.0f);
            }
            if (t.name.find("lora_A") != std::string::npos) {
                for (size_t i = 0; i < t.size; ++i) aNorm += std::abs(params[t.offset + i]);
            }
        }
        EXPECT_GT(aNorm, 0.0);
        const int B = 2, T = 12;
        const auto in = tokens(B * T, 37, 3), tg = tokens(B * T, 37, 4);
        Gpt<float> base(baseShape, B, T), lora(adapted, B, T);
        const float baseLoss = base.forward(baseParams.data(), in.data(), tg.data(), true, 77);
        const float loraLoss = lora.forward(params.data(), in.data(), tg.data(), true, 77);
        EXPECT_EQ(std::memcmp(&baseLoss, &loraLoss, sizeof(float)), 0)
            << baseLoss << " vs " << loraLoss << (bf16 ? " (bf16)" : " (fp32)");
        EXPECT_EQ(std::memcmp(base.activation("logits"), lora.activation("logits"),
                              size_t(B) * T * 37 * sizeof(float)),
                  0)
            << (bf16 ? "bf16" : "fp32");
    }
}

void checkAdaptedGradient(double loraDropout, std::vector<std::string> targets) {
    GptShape s = withLora(ws::testing::gradcheckShape(true), 2, std::move(targets), loraDropout);
    s.dropout = 0.1;
    const int B = 2, T = 5;
    const ParameterTable table(s);
    std::vector<float> init(table.totalSize());
    config::ModelConfig model = modelConfigOf(s);
    model.initializer = {"normal", 0.0, 0.3, -1, 1};
    model.embeddingInitializer = {"normal", 0.0, 0.3, -1, 1};
    initParameters(table, model, 5, init.data());
    std::vector<double> params(init.begin(), init.end());
    for (const TensorSlice& t : table.tensors())  // B away from 0, so A gets a gradient too
        if (t.name.find("lora_B") != std::string::npos)
            for (size_t i = 0; i < t.size; ++i)
                params[t.offset + i] = 0.3 * rng::standardNormal(17, t.offset + i);
    Gpt<double> gpt(s, B, T);
    const auto in = tokens(B * T, s.vocab, 1), tg = tokens(B * T, s.vocab, 2);
    const std::function<double()> loss = [&] {
        return gpt.forward(params.data(), in.data(), tg.data(), true, 31);
    };
    loss();
    std::vector<double> grads(params.size(), 0.0);
    gpt.backward(params.data(), grads.data());
    for (const TensorSlice& t : table.tensors()) {
        if (t.name.find("lora_") == std::string::npos) continue;
        double norm = 0;
        for (size_t i = 0; i < t.size; ++i) norm += std::abs(grads[t.offset + i]);
        EXPECT_GT(norm, 0.0) << t.name;
    }
    // Every parameter, listed (GCC 12 warns about the inlined default-list path otherwise).
    std::vector<size_t> all(params.size());
    std::iota(all.begin(), all.end(), size_t{0});
    expectGradientMatches(params, grads, loss, "dparams", std::move(all));
}

TEST(LoraModel, WholeAdaptedModelGradientMatchesFiniteDifferences) {
    checkAdaptedGradient(0.0, {"c_attn", "attn.c_proj", "c_fc", "mlp.c_proj"});
}

TEST(LoraModel, WholeAdaptedModelGradientWithAdapterDropout) {
    checkAdaptedGradient(0.25, {"c_attn", "mlp.c_proj"});
}

}  // namespace
}  // namespace ws::model
