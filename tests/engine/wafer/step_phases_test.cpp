// SPDX-License-Identifier: GPL-3.0-or-later
// The cycle model's four phases, each on its own (cycle_model.h): the plan of a dense, an MoE
// and a recomputing step (its kinds and what each block maps to), the schedule's micro-batch
// order, the simulated timeline on a hand-made plan (hand-computed times for two weight slots
// and one) and its stream-before-compute invariants on real plans, and the accounting's FLOPs,
// MFU and time split against their closed forms.
#include <gtest/gtest.h>

#include <algorithm>
#include <tuple>

#include "engine/model/parameters.h"
#include "engine/wafer/step_accounting.h"
#include "engine/wafer/step_plan.h"
#include "engine/wafer/step_schedule.h"
#include "engine/wafer/step_simulation.h"
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

// gpt-nano with an MoE block every other block (blocks 0 and 2), 4 experts, top-1.
model::GptShape moeShape() {
    model::GptShape s = nanoShape();
    s.numExperts = 4;
    s.topK = 1;
    s.moeEvery = 2;
    return s;
}

bool hasExpertOps(const PlannedLayer& p) {
    for (const auto& op : p.ops.ops)
        if (op.expert >= 0) return true;
    return false;
}

// ---- plan ----

TEST(StepPlanPhase, DenseBlocksShareOneKind) {
    StepInput in{nanoShape(), 8, 128, 1, nullptr};
    auto plan = planStep(teaching(), in, false);
    ASSERT_TRUE(plan.ok()) << plan.error().message;
    EXPECT_EQ(plan->kindLabels,
              (std::vector<std::string>{"embeddings forward", "head forward", "head backward",
                                        "embeddings backward", "h forward", "h backward"}));
    EXPECT_EQ(plan->blockKindOf, (std::vector<int>{0, 0, 0, 0}));
    EXPECT_EQ(plan->firstRecompute, 6);
    for (int l = 0; l < 4; ++l) {
        EXPECT_EQ(plan->blockKind(l, false), StepPlan::kFirstBlock);
        EXPECT_EQ(plan->blockKind(l, true), StepPlan::kFirstBlock + 1);
    }
    EXPECT_EQ(plan->microBatch, 8);
    EXPECT_EQ(plan->micros, 1);
    EXPECT_FALSE(plan->uniformRouting);
    for (const auto& tokens : plan->expertTokens) EXPECT_TRUE(tokens.empty());
    for (const auto& kind : plan->kinds) {
        EXPECT_FALSE(hasExpertOps(kind));
        EXPECT_TRUE(kind.coreBusyCycles.empty());  // no frames asked for
    }
    EXPECT_EQ(plan->kinds[StepPlan::kFirstBlock].ops.pass, Pass::Forward);
    EXPECT_EQ(plan->kinds[StepPlan::kFirstBlock + 1].ops.pass, Pass::Backward);
}

TEST(StepPlanPhase, MoeBlocksAreAKindOfTheirOwnWithTheUniformSplit) {
    StepInput in{moeShape(), 8, 128, 1, nullptr};
    in.microBatch = 4;
    auto plan = planStep(teaching(), in, true);
    ASSERT_TRUE(plan.ok()) << plan.error().message;
    ASSERT_EQ(plan->kinds.size(), 8u);
    EXPECT_EQ(plan->kindLabels[4], "MoE blocks forward");
    EXPECT_EQ(plan->kindLabels[6], "dense blocks forward");
    EXPECT_EQ(plan->blockKindOf, (std::vector<int>{0, 1, 0, 1}));
    EXPECT_TRUE(hasExpertOps(plan->kinds[4]));
    EXPECT_TRUE(hasExpertOps(plan->kinds[5]));
    EXPECT_FALSE(hasExpertOps(plan->kinds[6]));
    // Uniform: one micro-batch's 4 x 128 tokens, top-1, over 4 experts.
    EXPECT_TRUE(plan->uniformRouting);
    EXPECT_EQ(plan->expertTokens[0], (std::vector<int64_t>{128, 128, 128, 128}));
    EXPECT_TRUE(plan->expertTokens[1].empty());
    for (const auto& kind : plan->kinds)
        EXPECT_EQ(kind.coreBusyCycles.size(), 16u * 16u);  // frames asked for
}

TEST(StepPlanPhase, BlocksRoutedDifferentlyArePlannedEachOnItsOwn) {
    StepInput in{moeShape(), 8, 128, 1, nullptr};
    in.expertTokens = {{600, 200, 124, 100}, {}, {256, 256, 256, 256}, {}};
    auto plan = planStep(teaching(), in, false);
    ASSERT_TRUE(plan.ok()) << plan.error().message;
    EXPECT_EQ(plan->blockKindOf, (std::vector<int>{0, 1, 2, 1}));
    EXPECT_EQ(plan->kindLabels[4], "h.0 forward");
    EXPECT_EQ(plan->kindLabels[6], "dense blocks forward");
    EXPECT_EQ(plan->kindLabels[8], "h.2 forward");
    EXPECT_FALSE(plan->uniformRouting);
    EXPECT_EQ(plan->expertTokens[0], in.expertTokens[0]);
    // The busier routing takes longer: its MLP follows its busiest expert (600 tokens vs 256).
    EXPECT_GT(plan->kinds[4].busyCycles, plan->kinds[8].busyCycles);
}

TEST(StepPlanPhase, ExpertChainsRunSideBySide) {
    StepInput in{moeShape(), 8, 128, 1, nullptr};
    in.expertTokens = {{600, 200, 124, 100}, {}, {}, {}};
    auto plan = planStep(teaching(), in, false);
    ASSERT_TRUE(plan.ok()) << plan.error().message;
    const PlannedLayer& moe = plan->kinds[size_t(plan->blockKind(0, false))];
    // Ops outside the experts' run add up; the run lasts its slowest expert's chain.
    double outside = 0, sumAll = 0;
    std::vector<double> chain(4, 0.0);
    for (const auto& t : moe.timings) {
        sumAll += opBusyCycles(t);
        if (t.expert < 0)
            outside += opBusyCycles(t);
        else
            chain[size_t(t.expert)] += opBusyCycles(t);
    }
    const double slowest = *std::max_element(chain.begin(), chain.end());
    EXPECT_GT(slowest, 0);
    EXPECT_DOUBLE_EQ(moe.busyCycles, outside + slowest);
    EXPECT_LT(moe.busyCycles, sumAll);
    EXPECT_DOUBLE_EQ(chain[0], slowest);  // the expert with 600 tokens
}

TEST(StepPlanPhase, RecomputedBackwardsAreKindsAfterTheOthers) {
    StepInput in{nanoShape(), 8, 128, 1, nullptr};
    in.blockActivations.assign(4, BlockActivation::Keep);
    in.blockActivations[0] = BlockActivation::Recompute;
    auto plan = planStep(teaching(), in, false);
    ASSERT_TRUE(plan.ok()) << plan.error().message;
    ASSERT_EQ(plan->kinds.size(), 7u);
    EXPECT_EQ(plan->firstRecompute, 6);
    EXPECT_EQ(plan->kindLabels[6], "h backward (recompute)");
    EXPECT_EQ(plan->blockKind(0, true), 6);
    EXPECT_EQ(plan->blockKind(1, true), 5);
    EXPECT_EQ(plan->blockKind(0, false), 4);
    const auto& ops = plan->kinds[6].ops.ops;
    ASSERT_FALSE(ops.empty());
    EXPECT_TRUE(isRecomputeOp(ops.front()));
    EXPECT_FALSE(isRecomputeOp(ops.back()));
    // The recomputed backward is the forward's work, then the backward's.
    EXPECT_DOUBLE_EQ(plan->kinds[6].busyCycles,
                     plan->kinds[4].busyCycles + plan->kinds[5].busyCycles);
}

TEST(StepPlanPhase, BadInputFailsBeforeAnyPlanning) {
    const WaferSpec spec = teaching();
    StepInput in{nanoShape(), 8, 128, 1, nullptr};
    in.microBatch = 3;
    auto plan = planStep(spec, in, false);
    ASSERT_FALSE(plan.ok());
    EXPECT_NE(plan.error().message.find("does not divide"), std::string::npos);
    in.microBatch = 0;
    in.blockActivations = {BlockActivation::Keep};
    plan = planStep(spec, in, false);
    ASSERT_FALSE(plan.ok());
    EXPECT_NE(plan.error().message.find("1 entries for 4 blocks"), std::string::npos);
    StepInput moe{moeShape(), 8, 128, 1, nullptr};
    moe.expertTokens = {{1, 2, 3}, {}, {}, {}};
    plan = planStep(spec, moe, false);
    ASSERT_FALSE(plan.ok());
    EXPECT_NE(plan.error().message.find("3 expert token counts for 4 experts"), std::string::npos);
}

// ---- schedule ----

TEST(StepSchedulePhase, EachMicroBatchRunsForwardThenBackwardInReverse) {
    StepInput in{nanoShape(), 8, 128, 1, nullptr};
    in.microBatch = 4;
    auto plan = planStep(teaching(), in, false);
    ASSERT_TRUE(plan.ok()) << plan.error().message;
    const auto order = scheduleStep(in.shape, *plan);
    // embeddings, h.0..h.3, head forward; head, h.3..h.0, embeddings backward; per micro-batch.
    const std::vector<int> layers = {0, 1, 2, 3, 4, 5, 5, 4, 3, 2, 1, 0};
    ASSERT_EQ(order.size(), 2 * layers.size());
    for (size_t i = 0; i < order.size(); ++i) {
        const PhaseVisit& v = order[i];
        const size_t j = i % layers.size();
        EXPECT_EQ(v.layerIndex, layers[j]) << i;
        EXPECT_EQ(v.micro, int(i / layers.size())) << i;
        EXPECT_EQ(v.lastMicro, i >= layers.size()) << i;
        const bool backward = j >= 6;
        EXPECT_EQ(plan->kinds[size_t(v.kind)].ops.pass, backward ? Pass::Backward : Pass::Forward)
            << i;
        EXPECT_EQ(v.offloadBytes, 0.0);
    }
    EXPECT_EQ(order[0].kind, StepPlan::kEmbeddingsForward);
    EXPECT_EQ(order[5].kind, StepPlan::kHeadForward);
    EXPECT_EQ(order[6].kind, StepPlan::kHeadBackward);
    EXPECT_EQ(order[11].kind, StepPlan::kEmbeddingsBackward);
    EXPECT_EQ(order[1].layer, "h.0");
    EXPECT_EQ(order[7].layer, "h.3");
}

TEST(StepSchedulePhase, LoraLeavesOutTheEmbeddingsBackwardAndOffloadCarriesBytes) {
    StepInput in{nanoShape(), 8, 128, 1, nullptr};
    in.shape.loraRank = 4;
    in.shape.loraScale = 1;
    in.shape.loraTargets = {true, true, true, true};
    in.blockActivations = {BlockActivation::Offload, BlockActivation::Keep, BlockActivation::Keep,
                           BlockActivation::Keep};
    auto plan = planStep(teaching(), in, false);
    ASSERT_TRUE(plan.ok()) << plan.error().message;
    const auto order = scheduleStep(in.shape, *plan);
    ASSERT_EQ(order.size(), 11u);
    EXPECT_EQ(order.back().layer, "h.0");
    const double bytes = blockOffloadBytes(in.shape, 8.0 * 128, BlockActivation::Offload);
    EXPECT_GT(bytes, 0);
    EXPECT_EQ(order[1].offloadBytes, bytes);   // h.0 forward: out after it
    EXPECT_EQ(order[10].offloadBytes, bytes);  // h.0 backward: back in before it
    EXPECT_EQ(order[2].offloadBytes, 0.0);
}

// ---- simulate ----

// A hand-made plan of forward phases with given stream and compute seconds on `spec`, and the
// order that visits each once (no gradients, so no reduce or update).
struct HandPlan {
    StepPlan plan;
    std::vector<PhaseVisit> order;
};

HandPlan handPlan(const WaferSpec& spec, const std::vector<std::pair<double, double>>& phases) {
    HandPlan h;
    h.plan.batchPerSystem = h.plan.microBatch = 1;
    h.plan.micros = 1;
    h.plan.seqLen = 1;
    for (size_t k = 0; k < phases.size(); ++k) {
        PlannedLayer p;
        p.ops.pass = Pass::Forward;
        p.ops.weightValues = phases[k].first * spec.ioBytesPerS() / spec.streamBytesPerValue;
        p.busyCycles = p.computeCycles = phases[k].second * spec.clockHz();
        h.plan.kinds.push_back(p);
        h.order.push_back({int(k), "h." + std::to_string(k), int(k) + 1, 0, true});
    }
    return h;
}

TEST(StepSimulationPhase, HandComputedTimelineWithTwoSlotsAndOne) {
    const WaferSpec spec = teaching();
    const double fill = fillCycles(spec) / spec.clockHz();
    // (stream s, compute s): compute-bound, stream-bound, compute-bound.
    const HandPlan h = handPlan(spec, {{1e-3, 3e-3}, {5e-3, 1e-3}, {1e-3, 2e-3}});
    StepInput in{nanoShape(), 1, 1, 1, nullptr};
    const StepTimeline two = simulateStep(spec, in, h.plan, h.order);
    ASSERT_EQ(two.phases.size(), 3u);
    const double eps = 1e-12;
    // Two slots: a phase computes as its weights arrive, behind the phase before.
    EXPECT_NEAR(two.phases[0].computeStart, 0, eps);
    EXPECT_NEAR(two.phases[0].computeEnd, 3e-3, eps);
    EXPECT_NEAR(two.phases[1].inStart, 1e-3, eps);  // right after the first stream
    EXPECT_NEAR(two.phases[1].computeStart, 3e-3, eps);
    EXPECT_NEAR(two.phases[1].computeEnd, 6e-3 + fill, eps);  // its stream ends at 6 ms
    EXPECT_NEAR(two.phases[2].inStart, 6e-3, eps);
    EXPECT_NEAR(two.phases[2].computeEnd, 8e-3 + fill, eps);
    EXPECT_NEAR(two.stepS, 8e-3 + fill, eps);
    EXPECT_EQ(two.layers[0].binding, Binding::Compute);
    EXPECT_EQ(two.layers[1].binding, Binding::WeightStream);
    EXPECT_EQ(two.layers[2].binding, Binding::Compute);

    // One slot: each phase streams, then computes.
    in.weightBufferLayers = 1;
    const StepTimeline one = simulateStep(spec, in, h.plan, h.order);
    EXPECT_NEAR(one.phases[0].computeStart, 1e-3, eps);
    EXPECT_NEAR(one.phases[1].inStart, 4e-3, eps);
    EXPECT_NEAR(one.phases[1].computeStart, 9e-3, eps);
    EXPECT_NEAR(one.phases[2].computeStart, 11e-3, eps);
    EXPECT_NEAR(one.stepS, 13e-3, eps);
    EXPECT_NEAR(one.forwardS, 12e-3, eps);  // from the first compute's start
    for (const auto& l : one.layers) EXPECT_EQ(l.binding, Binding::WeightStream);
}

// For every phase of a real step: its weights start to arrive before it computes; with two
// slots it ends no earlier than they are all in (plus the fill), with one it starts after;
// phases compute one after another; an update ends no earlier than its gradients' reduce.
void expectStreamBeforeCompute(const StepInput& in, const std::string& what) {
    const WaferSpec spec = teaching();
    auto plan = planStep(spec, in, false);
    ASSERT_TRUE(plan.ok()) << plan.error().message;
    const auto order = scheduleStep(in.shape, *plan);
    const StepTimeline t = simulateStep(spec, in, *plan, order);
    const double fill = fillCycles(spec) / spec.clockHz();
    auto key = [](const TimelineSpan& s) { return std::tuple{s.micro, s.layer, s.backwardPass}; };
    int streamed = 0;
    for (size_t i = 0; i < order.size(); ++i) {
        const PhaseWindow& w = t.phases[i];
        if (i) {
            EXPECT_GE(w.computeStart, t.phases[i - 1].computeEnd) << what << " phase " << i;
        }
        const bool backward = plan->kinds[size_t(order[i].kind)].ops.pass == Pass::Backward;
        const auto visit = std::tuple{order[i].micro, order[i].layerIndex, backward};
        double firstIn = 1e300, lastIn = -1;
        for (const auto& s : t.spans)
            if (s.kind == SpanKind::StreamIn && key(s) == visit) {
                firstIn = std::min(firstIn, s.startS);
                lastIn = std::max(lastIn, s.endS);
            }
        if (lastIn < 0) continue;
        ++streamed;
        EXPECT_LE(firstIn, w.computeStart) << what << " phase " << i;
        if (in.weightBufferLayers == 1) {
            EXPECT_GE(w.computeStart, lastIn) << what << " phase " << i;
        } else {
            EXPECT_GE(w.computeEnd, lastIn + fill - 1e-15) << what << " phase " << i;
        }
    }
    // Every phase that has weights to stream was checked.
    int withWeights = 0;
    for (const auto& v : order) withWeights += plan->kinds[size_t(v.kind)].ops.weightValues > 0;
    EXPECT_EQ(streamed, withWeights) << what;
    EXPECT_GE(streamed, int(order.size()) - plan->micros) << what;
    for (const auto& u : t.sharedSpans) {
        if (u.kind != SpanKind::Update) continue;
        for (const auto& r : t.sharedSpans)
            if (r.kind == SpanKind::Reduce && r.layer == u.layer && r.micro == u.micro) {
                EXPECT_GE(u.endS, r.endS - 1e-15) << what << " layer " << u.layer;
            }
    }
    EXPECT_GE(t.stepS, t.phases.back().computeEnd);
}

TEST(StepSimulationPhase, WeightsStreamBeforeTheirLayerComputes) {
    StepInput in{nanoShape(), 8, 128, 4, nullptr};
    expectStreamBeforeCompute(in, "nano x4");
    in.weightBufferLayers = 1;
    expectStreamBeforeCompute(in, "one slot");
    in.weightBufferLayers = 2;
    in.microBatch = 2;
    in.updatesAfterNorm = true;
    expectStreamBeforeCompute(in, "micro-batches, clipping");
    StepInput moe{moeShape(), 8, 128, 2, nullptr};
    expectStreamBeforeCompute(moe, "moe");
    moe.blockActivations = {BlockActivation::Offload, BlockActivation::RecomputeOffload,
                            BlockActivation::Recompute, BlockActivation::Keep};
    expectStreamBeforeCompute(moe, "moe, offload and recompute");
}

// ---- account ----

TEST(StepAccountingPhase, FlopsAndMfuAreTheClosedForms) {
    const WaferSpec spec = teaching();
    StepInput in{nanoShape(), 8, 128, 4, nullptr};
    auto plan = planStep(spec, in, false);
    ASSERT_TRUE(plan.ok()) << plan.error().message;
    const auto order = scheduleStep(in.shape, *plan);
    // A hand-made timeline: accounting takes the step's length as given.
    StepTimeline t = simulateStep(spec, in, *plan, order);
    t.stepS = 0.5;
    const StepPrediction p = accountStep(spec, in, *plan, order, t);
    const auto& S = in.shape;
    const double N = double(model::parameterCount(S));
    const double B = 8, T = 128, systems = 4;
    const double flops = (6 * N + 6.0 * S.layers * S.channels * T) * B * T * systems;
    EXPECT_DOUBLE_EQ(p.modelFlopsPerStep, flops);
    EXPECT_DOUBLE_EQ(p.hardwareFlopsPerStep, flops);  // nothing recomputed
    EXPECT_DOUBLE_EQ(p.mfu, flops / (0.5 * spec.peakFlopsPerS() * systems));
    EXPECT_DOUBLE_EQ(p.tokensPerS, B * T * systems / 0.5);
    EXPECT_DOUBLE_EQ(p.samplesPerS, B * systems / 0.5);
    EXPECT_EQ(p.spans.size(), t.spans.size() * 4 + t.sharedSpans.size());
}

TEST(StepAccountingPhase, RecomputeAddsTheForwardsFmacsToHardwareFlops) {
    const WaferSpec spec = teaching();
    StepInput in{nanoShape(), 8, 128, 2, nullptr};
    in.microBatch = 4;
    in.blockActivations = {BlockActivation::Recompute, BlockActivation::Recompute,
                           BlockActivation::Keep, BlockActivation::Keep};
    auto plan = planStep(spec, in, false);
    ASSERT_TRUE(plan.ok()) << plan.error().message;
    const auto order = scheduleStep(in.shape, *plan);
    const StepPrediction p =
        accountStep(spec, in, *plan, order, simulateStep(spec, in, *plan, order));
    double forwardFmacs = 0;
    for (const auto& t : plan->kinds[StepPlan::kFirstBlock].timings) forwardFmacs += t.fmacs;
    // Two recomputed blocks, two micro-batches each.
    EXPECT_DOUBLE_EQ(p.recomputeFmacsPerStep, forwardFmacs * 2 * 2);
    EXPECT_DOUBLE_EQ(p.hardwareFlopsPerStep, p.modelFlopsPerStep + 2 * forwardFmacs * 4 * 2);
    EXPECT_GT(p.hfu, p.mfu);
}

TEST(StepAccountingPhase, TimeSplitOfAHandMadeTimeline) {
    const WaferSpec spec = teaching();
    const double clock = spec.clockHz();
    // Three phases of 1 ms busy: the first waits 2 ms for its stream, a 1 ms gap before the
    // third, and the step ends 0.5 ms after the last compute.
    HandPlan h = handPlan(spec, {{0, 1e-3}, {0, 1e-3}, {0, 1e-3}});
    StepInput in{nanoShape(), 1, 1, 1, nullptr};
    StepTimeline t;
    t.phases = {{0, 0, 2e-3, 3e-3, 0}, {0, 0, 3e-3, 4e-3, 0}, {0, 0, 5e-3, 6e-3, 0}};
    t.stepS = 6.5e-3;
    bool hidden = true;
    const TimeSplit s = splitStepTime(in, h.plan, h.order, t, clock, &hidden);
    EXPECT_NEAR(s.compute, 3e-3, 1e-15);
    EXPECT_NEAR(s.fabric, 0, 1e-15);
    EXPECT_NEAR(s.streaming, 1e-3, 1e-15);
    EXPECT_NEAR(s.bubble, 2.5e-3, 1e-15);
    EXPECT_EQ(s.reduce, 0);
    EXPECT_NEAR(s.compute + s.streaming + s.fabric + s.reduce + s.bubble, t.stepS, 1e-15);
    EXPECT_TRUE(hidden);  // two slots: a gap before a phase is not its own stream's wait
    in.weightBufferLayers = 1;
    splitStepTime(in, h.plan, h.order, t, clock, &hidden);
    EXPECT_FALSE(hidden);  // one slot: the gap is the third phase waiting for its weights
}

}  // namespace
}  // namespace ws::wafer
