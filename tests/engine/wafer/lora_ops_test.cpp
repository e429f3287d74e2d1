// SPDX-License-Identifier: GPL-3.0-or-later
// The emulator on a LoRA run (issue 16): the adapter products x·A, u·B and their four backward
// products are wafer ops with the multiply-adds of their shapes, mapped onto the cores like the
// base matmuls; the frozen base forms no weight gradient (qkv.dW ... logits.dW, the embeddings'
// scatter) and streams out only the adapters' gradients; the step's time, MFU count and frames
// include the adapters. Without LoRA (or rank 0) the op lists are today's, op for op.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>

#include "engine/model/model_facts.h"
#include "engine/wafer/cycle_model.h"
#include "support/test_shapes.h"

namespace ws::wafer {
namespace {
using streaming::SpanKind;
using ws::testing::nanoShape;

const std::string kPresets = WAFER_PRESETS_DIR "/wafers/";

WaferSpec teaching() {
    auto s = loadWaferSpecFile(kPresets + "teaching-16x16.yaml");
    EXPECT_TRUE(s.ok()) << s.error().message;
    return *s;
}

model::GptShape loraShape(int rank, std::vector<std::string> targets, double dropout = 0.0) {
    model::GptShape s = nanoShape();
    s.applyLora(config::LoraConfig{
        .rank = rank, .alpha = 2.0 * rank, .dropout = dropout, .targets = std::move(targets)});
    return s;
}

const std::vector<std::string> kAllTargets = {"c_attn", "attn.c_proj", "c_fc", "mlp.c_proj"};

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

bool hasOp(const LayerOps& l, const std::string& name) {
    return std::any_of(l.ops.begin(), l.ops.end(),
                       [&](const WaferOp& op) { return op.name == name; });
}

// Without adapters the op lists are exactly those the emulator had before LoRA.
TEST(LoraOps, WithoutAdaptersTheOpsAreUnchanged) {
    const WaferSpec spec = teaching();
    model::GptShape rankZero = nanoShape();
    rankZero.applyLora(config::LoraConfig{.rank = 0});
    for (const model::GptShape& s : {nanoShape(), rankZero}) {
        EXPECT_FALSE(s.hasLora());
        const LayerOps fwd = blockOps(s, 2, 64, Pass::Forward, spec, nullptr);
        const LayerOps bwd = blockOps(s, 2, 64, Pass::Backward, spec, nullptr);
        EXPECT_EQ(names(fwd),
                  (std::vector<std::string>{"ln_1", "qkv", "attention", "attn_proj", "residual_1",
                                            "ln_2", "fc", "gelu", "fc_proj", "residual_2"}));
        EXPECT_EQ(names(bwd), (std::vector<std::string>{
                                  "fc_proj.dX", "fc_proj.dW", "gelu.backward", "fc.dX", "fc.dW",
                                  "ln_2.backward", "attn_proj.dX", "attn_proj.dW",
                                  "attention.backward", "qkv.dX", "qkv.dW", "ln_1.backward"}));
        EXPECT_EQ(bwd.gradientValues, double(model::blockOffsets(s).size));
        EXPECT_EQ(names(headOps(s, 2, 64, Pass::Backward, spec)),
                  (std::vector<std::string>{"cross_entropy.backward", "logits.dX", "logits.dW",
                                            "ln_f.backward"}));
        EXPECT_EQ(names(embeddingOps(s, 2, 64, Pass::Backward, spec)),
                  std::vector<std::string>{"lookup.backward"});
        for (const auto& op : bwd.ops) EXPECT_FALSE(op.adapter);
    }
    // And the predicted step is the same number for both.
    auto plain = predictStep(spec, {nanoShape(), 8, 128, 1, nullptr}, {.frames = false});
    auto zero = predictStep(spec, {rankZero, 8, 128, 1, nullptr}, {.frames = false});
    ASSERT_TRUE(plain.ok() && zero.ok());
    EXPECT_EQ(plain->stepS, zero->stepS);
    EXPECT_EQ(plain->modelFlopsPerStep, model::trainingFlopsPerStep(nanoShape(), 8, 128));
    EXPECT_EQ(plain->loraRank, 0);
    EXPECT_EQ(plain->adapterS, 0);
    EXPECT_EQ(plain->adapterForwardFrame, -1);
}

TEST(LoraOps, AdapterProductsHaveTheFlopsOfTheirShapes) {
    const WaferSpec spec = teaching();
    const int R = 4;
    const model::GptShape s = loraShape(R, kAllTargets);
    const int64_t M = 2 * 64, C = s.channels, F = s.ffn;
    LayerOps fwd = blockOps(s, 2, 64, Pass::Forward, spec, nullptr);
    LayerOps bwd = blockOps(s, 2, 64, Pass::Backward, spec, nullptr);
    // Each adapter right after its base op: forward x·A then u·B.
    EXPECT_EQ(names(fwd), (std::vector<std::string>{
                              "ln_1", "qkv", "qkv.lora_A", "qkv.lora_B", "attention", "attn_proj",
                              "attn_proj.lora_A", "attn_proj.lora_B", "residual_1", "ln_2", "fc",
                              "fc.lora_A", "fc.lora_B", "gelu", "fc_proj", "fc_proj.lora_A",
                              "fc_proj.lora_B", "residual_2"}));
    // (IN, OUT) of qkv, attn_proj, fc, fc_proj.
    const std::vector<std::pair<std::string, std::pair<int64_t, int64_t>>> linears = {
        {"qkv", {C, 3 * C}}, {"attn_proj", {C, C}}, {"fc", {C, F}}, {"fc_proj", {F, C}}};
    double inPlusOut = 0;
    for (const auto& [base, io] : linears) {
        const auto [in, out] = io;
        inPlusOut += double(in + out);
        // Forward: u = x·A is (M, R) over k = IN; u·B is (M, OUT) over k = R.
        EXPECT_EQ(opFmacs(findOp(fwd, base + ".lora_A")), double(M * R * in)) << base;
        EXPECT_EQ(opFmacs(findOp(fwd, base + ".lora_B")), double(M * out * R)) << base;
        // Backward: dB = uᵀ·dY, du = dY·Bᵀ, dA = xᵀ·du, dX += du·Aᵀ.
        EXPECT_EQ(opFmacs(findOp(bwd, base + ".lora_B.dW")), double(M * R * out)) << base;
        EXPECT_EQ(opFmacs(findOp(bwd, base + ".lora_B.dX")), double(M * R * out)) << base;
        EXPECT_EQ(opFmacs(findOp(bwd, base + ".lora_A.dW")), double(M * in * R)) << base;
        EXPECT_EQ(opFmacs(findOp(bwd, base + ".lora_A.dX")), double(M * in * R)) << base;
        EXPECT_TRUE(findOp(fwd, base + ".lora_A").adapter);
        EXPECT_TRUE(findOp(bwd, base + ".lora_A.dX").adapter);
        EXPECT_FALSE(findOp(fwd, base).adapter);
    }
    double fwdAdapter = 0, bwdAdapter = 0;
    for (const auto& op : fwd.ops) fwdAdapter += op.adapter ? opFmacs(op) : 0;
    for (const auto& op : bwd.ops) bwdAdapter += op.adapter ? opFmacs(op) : 0;
    EXPECT_EQ(fwdAdapter, double(M) * R * inPlusOut);
    EXPECT_EQ(bwdAdapter, 2 * double(M) * R * inPlusOut);
    // Mapped onto the cores like the base matmuls: summed over the cores, a product's cycles
    // are its whole work (multiply-adds and vector ops) over the cores' rate.
    ASSERT_TRUE(planLayer(fwd, spec).ok());
    for (const std::string name : {"qkv.lora_A", "qkv.lora_B"}) {
        const WaferOp& op = findOp(fwd, name);
        double total = 0;
        for (int r = 0; r < 16; ++r)
            for (int c = 0; c < 16; ++c) total += coreCycles(op, r, c, spec);
        const double work = double(op.m) * double(op.n) *
                            (op.fmacsPerElement + op.vectorOpsPerElement) /
                            (spec.fmacsPerCycle * spec.computeEfficiency);
        EXPECT_NEAR(total, work, 1e-9 * work) << name;
        EXPECT_GT(maxCoreCycles(op, spec), 0) << name;
    }
}

TEST(LoraOps, OnlyTheChosenTargetsGetAdapters) {
    const WaferSpec spec = teaching();
    const model::GptShape s = loraShape(8, {"c_attn"});
    const LayerOps fwd = blockOps(s, 2, 64, Pass::Forward, spec, nullptr);
    const LayerOps bwd = blockOps(s, 2, 64, Pass::Backward, spec, nullptr);
    int adapters = 0;
    for (const auto& op : fwd.ops) adapters += op.adapter;
    for (const auto& op : bwd.ops) adapters += op.adapter;
    EXPECT_EQ(adapters, 6);
    EXPECT_TRUE(hasOp(fwd, "qkv.lora_A"));
    EXPECT_FALSE(hasOp(fwd, "fc.lora_A"));
    // Only c_attn's adapters stream their gradients out: 8 x (C + 3C) values per block.
    EXPECT_EQ(bwd.gradientValues, 8.0 * (128 + 3 * 128));
}

TEST(LoraOps, TheFrozenBaseFormsNoWeightGradient) {
    const WaferSpec spec = teaching();
    const model::GptShape s = loraShape(4, kAllTargets);
    const LayerOps bwd = blockOps(s, 2, 64, Pass::Backward, spec, nullptr);
    for (const std::string base : {"qkv", "attn_proj", "fc", "fc_proj"}) {
        EXPECT_FALSE(hasOp(bwd, base + ".dW")) << base;
        EXPECT_TRUE(hasOp(bwd, base + ".dX")) << base;  // the input gradient still flows
    }
    EXPECT_TRUE(hasOp(bwd, "attention.backward"));
    config::LoraConfig lora{.rank = 4, .targets = kAllTargets};
    EXPECT_EQ(bwd.gradientValues, double(model::loraAdapterParameters(lora, s)) / double(s.layers));
    EXPECT_EQ(bwd.weightValues, double(model::blockOffsets(s).size));  // base + adapters stream in
    const LayerOps head = headOps(s, 2, 64, Pass::Backward, spec);
    EXPECT_FALSE(hasOp(head, "logits.dW"));
    EXPECT_TRUE(hasOp(head, "logits.dX"));
    EXPECT_EQ(head.gradientValues, 0);
    const LayerOps emb = embeddingOps(s, 2, 64, Pass::Backward, spec);
    EXPECT_TRUE(emb.ops.empty());
    EXPECT_EQ(emb.gradientValues, 0);
}

TEST(LoraOps, TheStepIncludesTheAdaptersAndSkipsTheFrozenGradients) {
    const WaferSpec spec = teaching();
    const int R = 8;
    const model::GptShape lora = loraShape(R, kAllTargets);
    const int B = 8, T = 128, L = lora.layers;
    auto full = predictStep(spec, {nanoShape(), B, T, 1, nullptr});
    auto adapted = predictStep(spec, {lora, B, T, 1, nullptr});
    ASSERT_TRUE(full.ok() && adapted.ok()) << adapted.error().message;
    // The adapters' time is counted in the step, and their ops carry their timing.
    EXPECT_EQ(adapted->loraRank, R);
    EXPECT_GT(adapted->adapterForwardS, 0);
    EXPECT_GT(adapted->adapterBackwardS, adapted->adapterForwardS);
    EXPECT_DOUBLE_EQ(adapted->adapterS, L * (adapted->adapterForwardS + adapted->adapterBackwardS));
    double opAdapterS = 0, fmacs = 0;
    for (const auto& layer : adapted->layers) {
        double end = 0;
        for (const auto& op : layer.ops) {
            EXPECT_NEAR(op.startS, end, 1e-15);
            end = op.startS + op.timeS;
            if (op.adapter) {
                opAdapterS += op.timeS;
                fmacs += op.fmacs;
            }
        }
        EXPECT_LE(end, layer.timeS * (1 + 1e-9)) << layer.layer;
    }
    EXPECT_NEAR(opAdapterS, adapted->adapterS, 1e-12);
    const double perBlock = double(B) * T * R * (4.0 * 128 + 2 * 128 + 2 * (128 + 512));
    EXPECT_DOUBLE_EQ(fmacs, 3 * perBlock * L);
    EXPECT_DOUBLE_EQ(adapted->adapterFmacsPerStep, 3 * perBlock * L);
    // The backward no longer forms the base's weight gradients: less wafer compute than a full
    // step's; the forward does x·A and u·B on top of the base's.
    auto computeS = [](const StepPrediction& p, Pass pass) {
        double sum = 0;
        for (const auto& l : p.layers) sum += l.pass == pass ? l.computeS : 0.0;
        return sum;
    };
    EXPECT_LT(computeS(*adapted, Pass::Backward), computeS(*full, Pass::Backward));
    EXPECT_GT(computeS(*adapted, Pass::Forward), computeS(*full, Pass::Forward));
    EXPECT_DOUBLE_EQ(adapted->modelFlopsPerStep, model::stepTrainingFlopsPerToken(lora, T) * B * T);
    // Schedule: no embeddings backward; only the blocks' adapters stream out and update.
    int streamOuts = 0, updates = 0;
    for (const auto& sp : adapted->spans) {
        EXPECT_FALSE(sp.layer == 0 && sp.kind == SpanKind::Backward);
        if (sp.kind == SpanKind::StreamOut) {
            ++streamOuts;
            EXPECT_TRUE(sp.layer >= 1 && sp.layer <= L) << sp.layer;
        }
        updates += sp.kind == SpanKind::Update;
    }
    EXPECT_EQ(streamOuts, L);
    EXPECT_EQ(updates, L);
    // MemoryX updates only the adapters.
    config::LoraConfig cfg{.rank = R, .targets = kAllTargets};
    EXPECT_NEAR(adapted->optimizerS,
                double(model::loraAdapterParameters(cfg, lora)) /
                    (spec.cluster.memoryxUpdateGparamsPerS * 1e9),
                1e-15);
    // The adapters' own frames: busy fractions over their own time, before the step's frame.
    const UtilizationFrame* fwdFrame = adapted->adapterFrame(false);
    const UtilizationFrame* bwdFrame = adapted->adapterFrame(true);
    ASSERT_TRUE(fwdFrame && bwdFrame);
    EXPECT_EQ(fwdFrame->label, "LoRA adapters forward");
    EXPECT_EQ(adapted->frames.back().label, "step");
    for (const auto* f : {fwdFrame, bwdFrame}) {
        EXPECT_GT(f->max, 0);
        for (float v : f->busy) EXPECT_LE(v, 1.0f + 1e-5f) << f->label;
    }
    EXPECT_EQ(full->adapterFrame(false), nullptr);
    EXPECT_EQ(adapted->frameFor(0, true), nullptr);  // no embeddings backward to show
}

TEST(LoraOps, AdapterDropoutCostsOneOpPerInput) {
    const WaferSpec spec = teaching();
    const LayerOps plain = blockOps(loraShape(4, {"c_fc"}), 2, 64, Pass::Forward, spec, nullptr);
    const LayerOps dropped =
        blockOps(loraShape(4, {"c_fc"}, 0.1), 2, 64, Pass::Forward, spec, nullptr);
    EXPECT_EQ(findOp(plain, "fc.lora_A").vectorOpsPerElement, 0);
    // C = 128 inputs per row masked, counted on the 4 outputs per row.
    EXPECT_EQ(findOp(dropped, "fc.lora_A").vectorOpsPerElement, 128.0 / 4);
}

TEST(LoraOps, StepFlopsCountForwardAndInputGradientOfTheBase) {
    const model::GptShape base = nanoShape();
    const model::GptShape lora = loraShape(8, kAllTargets);
    const double N = double(model::parameterCount(base));
    const double adapters = double(model::parameterCount(lora)) - N;
    const double attention = 6.0 * base.layers * base.channels * 128;
    EXPECT_EQ(model::stepTrainingFlopsPerToken(base, 128), 6 * N + attention);
    EXPECT_EQ(model::stepTrainingFlopsPerToken(lora, 128), 4 * N + 6 * adapters + attention);
}

// Issue 33: Llama's separate projections ride on the fused ops as slices: q_proj, k_proj and
// v_proj after qkv (k and v as wide as GQA's K/V heads), gate_proj and up_proj after fc, o_proj
// and down_proj as attn_proj's and fc_proj's adapters; each product has its slice's shape, and
// the trained values streamed out are the adapters' alone.
TEST(LoraOps, LlamaSlicesRideOnTheFusedOpsWithTheirOwnWidths) {
    const WaferSpec spec = teaching();
    model::GptShape s = nanoShape();  // C 128, 4 heads
    s.position = model::GptShape::Position::Rotary;
    s.norm = model::GptShape::Norm::RmsNorm;
    s.mlp = model::GptShape::Mlp::SwiGlu;
    s.kvHeads = 2;  // K = 64
    s.qkvBias = s.attnProjBias = s.mlpBias = false;
    const int R = 4;
    s.applyLora(config::LoraConfig{
        .rank = R,
        .alpha = 8,
        .targets = {"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"}});
    ASSERT_TRUE(s.validate().ok());
    const int64_t M = 2 * 64, C = 128, K = 64, F = s.ffn;
    LayerOps fwd = blockOps(s, 2, 64, Pass::Forward, spec, nullptr);
    LayerOps bwd = blockOps(s, 2, 64, Pass::Backward, spec, nullptr);
    const std::vector<std::string> all = names(fwd);
    auto after = [&](const std::string& a, const std::string& b) {
        return std::find(all.begin(), all.end(), a) < std::find(all.begin(), all.end(), b);
    };
    EXPECT_TRUE(after("qkv", "qkv.q_proj.lora_A"));
    EXPECT_TRUE(after("qkv.q_proj.lora_B", "qkv.k_proj.lora_A"));
    EXPECT_TRUE(after("qkv.v_proj.lora_B", "attention"));
    EXPECT_TRUE(after("fc", "fc.gate_proj.lora_A"));
    EXPECT_TRUE(after("fc.gate_proj.lora_B", "fc.up_proj.lora_A"));
    EXPECT_TRUE(after("fc.up_proj.lora_B", "swiglu"));
    EXPECT_TRUE(hasOp(fwd, "attn_proj.lora_B"));  // o_proj
    EXPECT_TRUE(hasOp(fwd, "fc_proj.lora_A"));    // down_proj
    EXPECT_FALSE(hasOp(fwd, "qkv.lora_A"));       // no whole-c_attn adapter
    const std::vector<std::pair<std::string, std::pair<int64_t, int64_t>>> slices = {
        {"qkv.q_proj", {C, C}},   {"qkv.k_proj", {C, K}}, {"qkv.v_proj", {C, K}},
        {"fc.gate_proj", {C, F}}, {"fc.up_proj", {C, F}}, {"attn_proj", {C, C}},
        {"fc_proj", {F, C}}};
    double inPlusOut = 0;
    for (const auto& [name, io] : slices) {
        const auto [in, out] = io;
        inPlusOut += double(in + out);
        EXPECT_EQ(opFmacs(findOp(fwd, name + ".lora_A")), double(M * R * in)) << name;
        EXPECT_EQ(opFmacs(findOp(fwd, name + ".lora_B")), double(M * out * R)) << name;
        EXPECT_EQ(opFmacs(findOp(bwd, name + ".lora_B.dW")), double(M * R * out)) << name;
        EXPECT_EQ(opFmacs(findOp(bwd, name + ".lora_A.dX")), double(M * in * R)) << name;
        EXPECT_TRUE(findOp(bwd, name + ".lora_A.dW").adapter) << name;
    }
    EXPECT_FALSE(hasOp(bwd, "qkv.dW"));  // the base is frozen
    EXPECT_EQ(bwd.gradientValues, double(R) * inPlusOut);
    ASSERT_TRUE(planLayer(fwd, spec).ok());
    ASSERT_TRUE(planLayer(bwd, spec).ok());
}

}  // namespace
}  // namespace ws::wafer
