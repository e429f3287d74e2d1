// SPDX-License-Identifier: GPL-3.0-or-later
// Variable sequence length on the emulated wafer (attention_span.h): attention problems of the
// packed pieces' length L instead of the row length T. The causal score pairs of a row of T
// tokens go from T(T+1)/2 to (T/L)·L(L+1)/2, so attention's work falls by (L+1)/(T+1) exactly,
// on the cores and in the step, while every per-token op keeps its cost.
#include <gtest/gtest.h>

#include "engine/wafer/attention_span.h"
#include "engine/wafer/cycle_model.h"
#include "support/test_shapes.h"

namespace ws::wafer {
namespace {

const std::string kPresets = WAFER_PRESETS_DIR "/wafers/";

WaferSpec teaching() {
    auto s = loadWaferSpecFile(kPresets + "teaching-16x16.yaml");
    EXPECT_TRUE(s.ok()) << s.error().message;
    return *s;
}

const WaferOp& findOp(const LayerOps& l, const std::string& name) {
    for (const auto& op : l.ops)
        if (op.name == name) return op;
    throw std::runtime_error("no op " + name);
}

double totalCoreCycles(const WaferOp& op, const WaferSpec& spec) {
    double total = 0;
    for (int r = 0; r < spec.gridRows; ++r)
        for (int c = 0; c < spec.gridCols; ++c) total += coreCycles(op, r, c, spec);
    return total;
}

TEST(AttentionSpan, PackedAttentionWorkFallsByTheCausalPairRatio) {
    const WaferSpec spec = teaching();
    const int B = 4, T = 128, L = 32;
    for (Pass pass : {Pass::Forward, Pass::Backward}) {
        const std::string name = pass == Pass::Forward ? "attention" : "attention.backward";
        LayerOps dense = blockOps(ws::testing::nanoShape(), B, T, pass, spec, nullptr);
        LayerOps packed = withAttentionLength(dense, L);
        ASSERT_TRUE(planLayer(dense, spec).ok());
        ASSERT_TRUE(planLayer(packed, spec).ok());
        const double d = totalCoreCycles(findOp(dense, name), spec);
        const double p = totalCoreCycles(findOp(packed, name), spec);
        EXPECT_NEAR(p / d, double(L + 1) / double(T + 1), 1e-12) << name;
        // The per-token ops are untouched.
        ASSERT_EQ(dense.ops.size(), packed.ops.size());
        for (size_t i = 0; i < dense.ops.size(); ++i) {
            if (dense.ops[i].layout == TileLayout::Causal) continue;
            EXPECT_EQ(totalCoreCycles(dense.ops[i], spec), totalCoreCycles(packed.ops[i], spec))
                << dense.ops[i].name;
        }
    }
    // Length 0 or T leaves the ops as they are.
    LayerOps dense = blockOps(ws::testing::nanoShape(), B, T, Pass::Forward, spec, nullptr);
    EXPECT_EQ(findOp(withAttentionLength(dense, 0), "attention").period, T);
    EXPECT_EQ(findOp(withAttentionLength(dense, T), "attention").period, T);
}

double attentionSeconds(const StepPrediction& p) {
    double total = 0;
    for (const auto& layer : p.layers)
        for (const auto& op : layer.ops)
            if (op.name.rfind("attention", 0) == 0) total += op.timeS;
    return total;
}

TEST(AttentionSpan, EmulatedStepChargesAttentionAtTheRealLengths) {
    // The teaching wafer with a 100x weight link and MemoryX (as presets/teaching-sparsity.yaml):
    // compute sets the step time, as for a large model on a real system.
    WaferSpec spec = teaching();
    spec.ioGbPerS *= 100;
    spec.cluster.memoryxUpdateGparamsPerS *= 100;
    // Long rows (1024 tokens) so attention is a large share of the step and compute binds it.
    model::GptShape shape = ws::testing::nanoShape();
    shape.maxPositions = 1024;
    StepInput in{shape, 4, 1024, 1, nullptr};
    auto dense = predictStep(spec, in, {.frames = false});
    ASSERT_TRUE(dense.ok()) << dense.error().message;
    in.attentionLength = 256;  // e.g. four documents of 256 tokens in each row
    auto packed = predictStep(spec, in, {.frames = false});
    ASSERT_TRUE(packed.ok()) << packed.error().message;
    const double ratio = attentionSeconds(*packed) / attentionSeconds(*dense);
    // The work falls by 257/1025; the busiest core and the fill latency follow it closely.
    RecordProperty("attention_time_ratio", ::testing::PrintToString(ratio));
    const double work = 257.0 / 1025.0;
    EXPECT_LT(ratio, work * 1.2);
    EXPECT_GT(ratio, work * 0.8);
    EXPECT_LT(packed->stepS, dense->stepS);
    EXPECT_GT(packed->tokensPerS, dense->tokensPerS);
}

}  // namespace
}  // namespace ws::wafer
