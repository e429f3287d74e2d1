// SPDX-License-Identifier: GPL-3.0-or-later
// Activation offload and recompute on the emulated wafer: the byte accounting, the cycle model's
// charges (exactly the recomputed forward ops' work, exactly the documented bytes on the MemoryX
// link, in spans of their own at the right times), and the planner's choice (a batch that fits
// is left alone bit for bit; one that does not gets recompute or offload when micro-batching
// alone is slower).
#include <gtest/gtest.h>

#include <algorithm>

#include "engine/wafer/activation_plan.h"
#include "support/test_shapes.h"

namespace ws::wafer {
namespace {

WaferSpec teaching() {
    auto s = loadWaferSpecFile(WAFER_PRESETS_DIR "/wafers/teaching-16x16.yaml");
    EXPECT_TRUE(s.ok()) << s.error().message;
    return *s;
}

// A small GPT whose 16-sequence batch keeps 4 x 34 x C x T + 2 x C x T bytes a sequence.
StepInput smallStep() {
    StepInput in;
    in.shape = ws::testing::gptShape(64, 32, 4, 2, 128, 32);
    in.batchPerSystem = 16;
    in.seqLen = 32;
    return in;
}

double blockForwardFmacs(const StepInput& in, int mb, const WaferSpec& spec) {
    double f = 0;
    for (const auto& op : blockOps(in.shape, mb, in.seqLen, Pass::Forward, spec, nullptr).ops)
        f += opFmacs(op);
    return f;
}

double opsFmacs(const StepPrediction& p) {
    double f = 0;
    for (const auto& l : p.layers)
        for (const auto& op : l.ops) f += op.fmacs;
    return f;
}

TEST(ActivationMemory, AllKeepIsTheStoredActivations) {
    const auto in = smallStep();
    const auto spec = teaching();
    const double tokens = double(in.batchPerSystem) * in.seqLen;
    ActivationCounts keep;
    keep.keep = in.shape.layers;
    EXPECT_DOUBLE_EQ(residentActivationBytes(in.shape, tokens, keep),
                     activationFit(spec, in.shape, in.batchPerSystem, in.seqLen).storedBytes);
    // Recompute keeps the inputs plus one recomputed block; offload two blocks in flight.
    const double C = in.shape.channels, L = in.shape.layers;
    ActivationCounts rec;
    rec.recompute = in.shape.layers;
    EXPECT_DOUBLE_EQ(residentActivationBytes(in.shape, tokens, rec), (2 * L + 34) * C * tokens);
    ActivationCounts off;
    off.offload = in.shape.layers;
    EXPECT_DOUBLE_EQ(residentActivationBytes(in.shape, tokens, off), 68 * C * tokens);
    EXPECT_EQ(countsOf(blockActivationsFor(rec)), rec);
}

TEST(ActivationPlan, RecomputeAddsExactlyTheForwardFlopsOfTheRecomputedBlocks) {
    const auto spec = teaching();
    StepInput in = smallStep();
    in.microBatch = 8;
    auto keep = predictStep(spec, in, {.frames = false});
    ASSERT_TRUE(keep.ok()) << keep.error().message;
    in.blockActivations = {BlockActivation::Recompute, BlockActivation::RecomputeOffload,
                           BlockActivation::Keep, BlockActivation::Keep};
    auto rec = predictStep(spec, in, {.frames = false});
    ASSERT_TRUE(rec.ok()) << rec.error().message;
    const int micros = in.batchPerSystem / in.microBatch;
    const double expected = 2 * micros * blockForwardFmacs(in, in.microBatch, spec);
    EXPECT_DOUBLE_EQ(rec->recomputeFmacsPerStep, expected);
    EXPECT_NEAR(opsFmacs(*rec) - opsFmacs(*keep), expected, 1e-9 * expected);
    EXPECT_DOUBLE_EQ(rec->hardwareFlopsPerStep, rec->modelFlopsPerStep + 2 * expected);
    EXPECT_DOUBLE_EQ(rec->modelFlopsPerStep, keep->modelFlopsPerStep);
    EXPECT_GT(rec->stepS, keep->stepS);  // the recomputed forward takes wafer time
    EXPECT_GT(rec->recomputeS, 0);
    // The recomputed blocks' backward phases carry the forward ops first.
    int recomputedPhases = 0;
    for (const auto& l : rec->layers)
        if (!l.ops.empty() && l.ops.front().name.rfind("recompute.", 0) == 0) ++recomputedPhases;
    EXPECT_EQ(recomputedPhases, 2 * micros);
}

TEST(ActivationPlan, OffloadMovesTheDocumentedBytesOutAfterForwardAndInBeforeBackward) {
    const auto spec = teaching();
    StepInput in = smallStep();
    in.microBatch = 4;
    in.numSystems = 2;
    in.blockActivations = {BlockActivation::Offload, BlockActivation::RecomputeOffload,
                           BlockActivation::Keep, BlockActivation::Offload};
    auto p = predictStep(spec, in, {.frames = false});
    ASSERT_TRUE(p.ok()) << p.error().message;
    const double M = double(in.microBatch) * in.seqLen, C = in.shape.channels;
    const int micros = in.batchPerSystem / in.microBatch;
    const double perMicro = 2 * 34 * C * M + 2 * C * M;  // two blocks' A, one block's X
    EXPECT_DOUBLE_EQ(p->offloadBytesPerStep, perMicro * micros);
    double out = 0, back = 0;
    for (const auto& s : p->activationSpans) {
        if (s.system != 0) continue;
        (s.toMemoryX ? out : back) += s.bytes;
        EXPECT_DOUBLE_EQ(s.bytes, s.layer == 2 ? 2 * C * M : 34 * C * M) << s.layer;
        EXPECT_GE(s.endS, s.startS);
        // Out during or after the block's forward; back in before its backward computes.
        for (const auto& t : p->spans) {
            if (t.system != 0 || t.micro != s.micro || t.layer != s.layer) continue;
            if (s.toMemoryX && t.kind == streaming::SpanKind::Forward) {
                EXPECT_GE(s.startS, t.startS);
            }
            if (!s.toMemoryX && t.kind == streaming::SpanKind::Backward) {
                EXPECT_LE(s.endS, t.startS + 1e-12);
            }
        }
    }
    EXPECT_DOUBLE_EQ(out, p->offloadBytesPerStep);
    EXPECT_DOUBLE_EQ(back, p->offloadBytesPerStep);
    EXPECT_EQ(p->activationSpans.size(), size_t(2 * 3 * 2 * micros));  // systems x blocks x ways
    // Both systems' activations share MemoryX's servers (cluster_links.h): each gets half.
    EXPECT_DOUBLE_EQ(p->offloadS, 2 * p->offloadBytesPerStep /
                                      std::min(spec.ioBytesPerS(),
                                               spec.cluster.memoryxGbPerS * 1e9 / in.numSystems));
    EXPECT_EQ(in.numSystems, 2);
}

TEST(ActivationPlan, ABatchThatFitsIsLeftAloneBitForBit) {
    const auto spec = teaching();
    StepInput in = smallStep();
    in.batchPerSystem = 2;
    auto plan = planActivations(spec, in);
    ASSERT_TRUE(plan.ok()) << plan.error().message;
    EXPECT_EQ(plan->strategy, "fits");
    EXPECT_EQ(plan->microBatch, 2);
    EXPECT_TRUE(plan->blockActivations.empty());
    EXPECT_TRUE(plan->considered.empty());  // nothing timed
    auto before = predictStep(spec, in);
    StepInput planned = in;
    applyActivationPlan(*plan, planned);
    auto after = predictStep(spec, planned);
    ASSERT_TRUE(before.ok() && after.ok());
    EXPECT_EQ(before->stepS, after->stepS);
    EXPECT_EQ(before->mfu, after->mfu);
    EXPECT_EQ(before->hfu, before->mfu);
    ASSERT_EQ(before->spans.size(), after->spans.size());
    for (size_t i = 0; i < before->spans.size(); ++i) {
        EXPECT_EQ(before->spans[i].startS, after->spans[i].startS);
        EXPECT_EQ(before->spans[i].endS, after->spans[i].endS);
    }
    ASSERT_EQ(before->frames.size(), after->frames.size());
    EXPECT_TRUE(after->activationSpans.empty());
    EXPECT_EQ(after->recomputeFmacsPerStep, 0);
}

TEST(ActivationPlan, PicksRecomputeOrOffloadWhenMicroBatchingAloneIsSlower) {
    const auto spec = teaching();
    StepInput in = smallStep();
    // SRAM for two sequences' activations: micro-batching needs eight passes, each streaming all
    // the weights again; recompute fits far more sequences a pass.
    const double perSequence = activationFit(spec, in.shape, 1, in.seqLen).storedBytes;
    auto plan = planActivations(spec, in, 2.5 * perSequence);
    ASSERT_TRUE(plan.ok()) << plan.error().message;
    ASSERT_FALSE(plan->considered.empty());
    const auto& micro = plan->considered.front();
    ASSERT_EQ(micro.strategy, "micro-batching");
    EXPECT_EQ(micro.microBatch, 2);
    EXPECT_NE(plan->strategy, "micro-batching");
    EXPECT_GT(plan->counts.recomputed() + plan->counts.offloaded(), 0);
    EXPECT_GT(plan->microBatch, 2);
    EXPECT_LE(plan->residentBytes, 2.5 * perSequence);
    double chosen = 0;
    for (const auto& c : plan->considered)
        if (c.strategy == plan->strategy && c.microBatch == plan->microBatch) chosen = c.stepS;
    EXPECT_LT(chosen, micro.stepS);
    EXPECT_NE(plan->note.find(plan->strategy), std::string::npos);
    // The same plan again: deterministic.
    auto again = planActivations(spec, in, 2.5 * perSequence);
    ASSERT_TRUE(again.ok());
    EXPECT_EQ(again->note, plan->note);
    // The prediction with the plan carries its note and a resident figure that fits.
    StepInput planned = in;
    applyActivationPlan(*plan, planned);
    auto p = predictStep(spec, planned, {.frames = false});
    ASSERT_TRUE(p.ok());
    EXPECT_EQ(p->activationPlan, plan->note);
    EXPECT_DOUBLE_EQ(p->stepS, chosen);
}

TEST(ActivationPlan, WrongNumberOfBlockEntriesIsAnError) {
    StepInput in = smallStep();
    in.blockActivations = {BlockActivation::Recompute};
    auto p = predictStep(teaching(), in, {.frames = false});
    ASSERT_FALSE(p.ok());
    EXPECT_NE(p.error().message.find("block activations have 1 entries for 4 blocks"),
              std::string::npos);
}

}  // namespace
}  // namespace ws::wafer
