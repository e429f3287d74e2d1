// SPDX-License-Identifier: GPL-3.0-or-later
// The emulator on Llama-family blocks (issue 33): RMSNorm, RoPE, SwiGLU's fused [gate | up]
// matmul, grouped-query attention's narrower K/V, absent biases, no wpe, ALiBi and an untied
// head each change the op list or an op's shape and cost as the parameter layout says; GPT-2's
// options keep GPT-2's ops; and a shape this build cannot train yet still predicts.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>

#include "engine/wafer/cycle_model.h"
#include "support/test_shapes.h"

namespace ws::wafer {
namespace {
using ws::testing::nanoShape;
using Shape = model::GptShape;

WaferSpec teaching() {
    auto s = loadWaferSpecFile(WAFER_PRESETS_DIR "/wafers/teaching-16x16.yaml");
    EXPECT_TRUE(s.ok()) << s.error().message;
    return *s;
}

// presets/llama-nano.yaml's shape: nano's sizes, 2 KV heads, SwiGLU 344, RMSNorm, rotary.
Shape llamaShape() {
    Shape s = nanoShape();
    s.ffn = 344;
    s.kvHeads = 2;
    s.position = Shape::Position::Rotary;
    s.norm = Shape::Norm::RmsNorm;
    s.mlp = Shape::Mlp::SwiGlu;
    s.qkvBias = s.attnProjBias = s.mlpBias = false;
    return s;
}

std::vector<std::string> names(const LayerOps& l) {
    std::vector<std::string> n;
    for (const auto& op : l.ops) n.push_back(op.name);
    return n;
}

const WaferOp& findOp(const LayerOps& l, const std::string& name) {
    for (const auto& op : l.ops)
        if (op.name == name) return op;
    throw std::runtime_error("no op " + name);
}

TEST(LlamaOps, GptTwoOptionsKeepGptTwoOps) {
    const WaferSpec spec = teaching();
    const Shape s = nanoShape();
    EXPECT_EQ(names(blockOps(s, 2, 16, Pass::Forward, spec, nullptr)),
              (std::vector<std::string>{"ln_1", "qkv", "attention", "attn_proj", "residual_1",
                                        "ln_2", "fc", "gelu", "fc_proj", "residual_2"}));
    EXPECT_EQ(names(headOps(s, 2, 16, Pass::Backward, spec)),
              (std::vector<std::string>{"cross_entropy.backward", "logits.dX", "logits.dW",
                                        "ln_f.backward"}));
    const LayerOps f = blockOps(s, 2, 16, Pass::Forward, spec, nullptr);
    EXPECT_EQ(findOp(f, "qkv").n, 3 * 128);
    EXPECT_EQ(findOp(f, "qkv").vectorOpsPerElement, 1);  // the bias add
    EXPECT_EQ(findOp(f, "attention").problemsPerColumnPanel, 1);
    EXPECT_EQ(embeddingOps(s, 2, 16, Pass::Forward, spec).weightValues, (256.0 + 128) * 128);
}

TEST(LlamaOps, ALlamaBlockRunsRmsNormRopeAndSwiGlu) {
    const WaferSpec spec = teaching();
    const Shape s = llamaShape();
    const LayerOps f = blockOps(s, 2, 16, Pass::Forward, spec, nullptr);
    EXPECT_EQ(names(f), (std::vector<std::string>{"rmsnorm_1", "qkv", "rope", "attention",
                                                  "attn_proj", "residual_1", "rmsnorm_2", "fc",
                                                  "swiglu", "fc_proj", "residual_2"}));
    const LayerOps b = blockOps(s, 2, 16, Pass::Backward, spec, nullptr);
    EXPECT_EQ(names(b),
              (std::vector<std::string>{"fc_proj.dX", "fc_proj.dW", "swiglu.backward", "fc.dX",
                                        "fc.dW", "rmsnorm_2.backward", "attn_proj.dX",
                                        "attn_proj.dW", "attention.backward", "rope.backward",
                                        "qkv.dX", "qkv.dW", "rmsnorm_1.backward"}));
    const int64_t M = 32, C = 128, hs = 32, Q = 4 * hs, K = 2 * hs, F = 344;
    // c_attn (C, Q + 2K): q for 4 heads, k and v for 2.
    EXPECT_EQ(findOp(f, "qkv").n, Q + 2 * K);
    EXPECT_EQ(findOp(f, "qkv").fmacsPerElement, C);
    EXPECT_EQ(findOp(f, "qkv").vectorOpsPerElement, 0);  // no bias
    // RoPE rotates every dim of the 4 query and 2 key heads.
    EXPECT_EQ(findOp(f, "rope").m, M);
    EXPECT_EQ(findOp(f, "rope").n, (4 + 2) * hs);
    // attn.c_proj (Q, C); c_fc (C, 2F) = [gate | up]; silu(gate)·up on (M, F); c_proj (F, C).
    EXPECT_EQ(findOp(f, "attn_proj").fmacsPerElement, Q);
    EXPECT_EQ(findOp(f, "fc").n, 2 * F);
    EXPECT_EQ(findOp(f, "swiglu").n, F);
    EXPECT_EQ(findOp(f, "fc_proj").fmacsPerElement, F);
    EXPECT_EQ(findOp(b, "fc.dX").fmacsPerElement, 2 * F);
    EXPECT_EQ(findOp(b, "fc.dW").n, 2 * F);
    EXPECT_EQ(findOp(b, "fc.dW").vectorOpsPerElement, 0);  // no bias gradient
    // Four query heads share two K/V panels.
    EXPECT_EQ(findOp(f, "attention").problemsPerColumnPanel, 2);
    // RMSNorm: no mean, no shift.
    EXPECT_LT(findOp(f, "rmsnorm_1").vectorOpsPerElement,
              findOp(blockOps(nanoShape(), 2, 16, Pass::Forward, spec, nullptr), "ln_1")
                  .vectorOpsPerElement);
}

// What streams is the parameter layout's: the block's slice, wte without wpe, the head's
// RMSNorm gain and its (V, C) matrix.
TEST(LlamaOps, StreamedValuesFollowTheParameterLayout) {
    const WaferSpec spec = teaching();
    Shape s = llamaShape();
    s.tiedEmbedding = false;
    const model::ParameterTable table(s);
    const auto& layers = table.layers();
    EXPECT_EQ(embeddingOps(s, 2, 16, Pass::Forward, spec).weightValues, double(layers[0].size));
    EXPECT_EQ(embeddingOps(s, 2, 16, Pass::Forward, spec).weightValues, 256.0 * 128);
    EXPECT_EQ(blockOps(s, 2, 16, Pass::Forward, spec, nullptr).weightValues,
              double(layers[1].size));
    EXPECT_EQ(headOps(s, 2, 16, Pass::Forward, spec).weightValues,
              double(layers[size_t(table.headLayer())].size));
    EXPECT_EQ(headOps(s, 2, 16, Pass::Backward, spec).gradientValues,
              double(layers[size_t(table.headLayer())].size));
}

// Grouped-query attention reads each K/V panel once for the query heads sharing it: fewer bytes
// down the columns than one panel per head, the same score work.
TEST(LlamaOps, GroupedQueryAttentionMovesLessKeyValueTraffic) {
    const WaferSpec spec = teaching();
    Shape mha = llamaShape();
    mha.kvHeads = 0;
    Shape gqa = llamaShape();
    gqa.kvHeads = 1;
    auto columnBytes = [&](const Shape& s) {
        LayerOps l = blockOps(s, 4, 64, Pass::Forward, spec, nullptr);
        EXPECT_TRUE(planLayer(l, spec).ok());
        const WaferOp& op = findOp(l, "attention");
        std::vector<double> rows(size_t(spec.gridRows), 0), cols(size_t(spec.gridCols), 0);
        addLinkBytes(op, rows, cols);
        return std::pair{std::accumulate(cols.begin(), cols.end(), 0.0), opFmacs(op)};
    };
    const auto [mhaBytes, mhaFmacs] = columnBytes(mha);
    const auto [gqaBytes, gqaFmacs] = columnBytes(gqa);
    EXPECT_EQ(mhaFmacs, gqaFmacs);
    EXPECT_LT(gqaBytes, mhaBytes);
    EXPECT_GT(gqaBytes, 0);
}

TEST(LlamaOps, AlibiAddsItsBiasToEveryScore) {
    const WaferSpec spec = teaching();
    Shape btlm = nanoShape();
    btlm.position = Shape::Position::Alibi;
    btlm.mlp = Shape::Mlp::SwiGlu;
    for (Pass pass : {Pass::Forward, Pass::Backward}) {
        const std::string name = pass == Pass::Forward ? "attention" : "attention.backward";
        const double plain =
            findOp(blockOps(nanoShape(), 2, 16, pass, spec, nullptr), name).vectorOpsPerElement;
        const LayerOps l = blockOps(btlm, 2, 16, pass, spec, nullptr);
        EXPECT_EQ(findOp(l, name).vectorOpsPerElement, plain + 2);
        const std::vector<std::string> n = names(l);
        EXPECT_EQ(std::count(n.begin(), n.end(), "rope"), 0);
    }
    // No position table to stream or add.
    EXPECT_EQ(embeddingOps(btlm, 2, 16, Pass::Forward, spec).weightValues, 256.0 * 128);
}

// A Llama shape predicts; a prediction refuses a shape whose block options break their own
// rules (KV heads that do not divide the heads, odd rotary dims), naming the key.
TEST(LlamaOps, LlamaShapesPredictAndBadOptionsAreRefused) {
    const WaferSpec spec = teaching();
    StepInput in;
    in.shape = llamaShape();
    in.batchPerSystem = 4;
    in.seqLen = 64;
    auto p = predictStep(spec, in, {.frames = true});
    ASSERT_TRUE(p.ok()) << p.error().message;
    EXPECT_GT(p->tokensPerS, 0);
    EXPECT_GT(p->mfu, 0);

    StepInput badGroups = in;
    badGroups.shape.kvHeads = 3;  // does not divide 4 heads
    auto g = predictStep(spec, badGroups, {});
    ASSERT_FALSE(g.ok());
    EXPECT_NE(g.error().message.find("num_kv_groups"), std::string::npos) << g.error().message;
    StepInput badRotary = in;
    badRotary.shape.rotaryDim = 7;
    auto r = predictStep(spec, badRotary, {});
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.error().message.find("rotary_dim"), std::string::npos) << r.error().message;
}

// The same step with fewer KV heads and no biases does less work: GQA's qkv is narrower.
TEST(LlamaOps, FewerKeyValueHeadsPredictLessWork) {
    const WaferSpec spec = teaching();
    StepInput in;
    in.batchPerSystem = 4;
    in.seqLen = 64;
    in.shape = llamaShape();
    in.shape.kvHeads = 0;
    auto mha = predictStep(spec, in, {.frames = false});
    in.shape.kvHeads = 1;
    auto gqa = predictStep(spec, in, {.frames = false});
    ASSERT_TRUE(mha.ok() && gqa.ok());
    EXPECT_LT(gqa->modelFlopsPerStep, mha->modelFlopsPerStep);
    EXPECT_LT(gqa->forwardS, mha->forwardS);
}

}  // namespace
}  // namespace ws::wafer
