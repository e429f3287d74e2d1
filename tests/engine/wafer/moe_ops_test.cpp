// SPDX-License-Identifier: GPL-3.0-or-later
// Mixture of experts on the emulated wafer (layer_ops.h, cycle_model.h): the experts' fixed,
// equal rectangles of the grid; the router's and every expert's matmuls, each expert's mapped
// with the tokens it really got; an idle expert's cores idle; the MLP's time following the
// busiest expert (the experts run side by side, so the MAX of the tokens per expert sets it,
// not their sum); the uniform split the planner assumes without a run; and an MoE block's
// weights and gradients moving as units (shared part, then each expert) on the schedule.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>

#include "engine/model/parameters.h"
#include "engine/wafer/buffer_slots.h"
#include "engine/wafer/cycle_model.h"
#include "engine/wafer/emulated_time.h"
#include "support/test_shapes.h"

namespace ws::wafer {
namespace {
using streaming::SpanKind;

const std::string kPresets = WAFER_PRESETS_DIR "/wafers/";

WaferSpec teaching() {
    auto s = loadWaferSpecFile(kPresets + "teaching-16x16.yaml");
    EXPECT_TRUE(s.ok()) << s.error().message;
    return *s;
}

model::GptShape moeShape(int experts, int topK, int every = 1) {
    model::GptShape s = ws::testing::nanoShape();
    s.numExperts = experts;
    s.topK = topK;
    s.moeEvery = every;
    return s;
}

constexpr int kB = 2, kT = 64;  // M = 128 tokens a pass

// Busy cycles of the cores of `r` (R x C row-major `busy`): their mean.
double regionMean(const std::vector<float>& busy, const CoreRegion& r, int cols) {
    double sum = 0;
    for (int i = r.row0; i < r.row0 + r.rows; ++i)
        for (int j = r.col0; j < r.col0 + r.cols; ++j) sum += busy[size_t(i) * cols + j];
    return sum / (double(r.rows) * r.cols);
}

TEST(MoeWafer, ExpertRegionsTileTheGridWithoutOverlap) {
    const WaferSpec spec = teaching();
    // Every count up to the 256 cores: 5, 7, 11, 13 ... once left the last columns empty, 10,
    // 15, 20 ... the last rows (a region outside the grid, read as the whole wafer).
    for (int experts = 1; experts <= spec.cores(); ++experts) {
        const auto regions = expertRegions(experts, spec);
        ASSERT_EQ(int(regions.size()), experts);
        std::vector<int> owner(size_t(spec.cores()), -1);
        for (int e = 0; e < experts; ++e) {
            const CoreRegion& r = regions[size_t(e)];
            ASSERT_GT(r.rows, 0) << experts << " experts, expert " << e;
            ASSERT_GT(r.cols, 0) << experts << " experts, expert " << e;
            ASSERT_LE(r.row0 + r.rows, spec.gridRows) << experts << " experts, expert " << e;
            ASSERT_LE(r.col0 + r.cols, spec.gridCols) << experts << " experts, expert " << e;
            for (int i = r.row0; i < r.row0 + r.rows; ++i)
                for (int j = r.col0; j < r.col0 + r.cols; ++j) {
                    EXPECT_EQ(owner[size_t(i) * spec.gridCols + j], -1) << "overlap";
                    owner[size_t(i) * spec.gridCols + j] = e;
                }
        }
    }
    // More experts than cores: single cores, shared, all on the grid.
    for (const auto& r : expertRegions(300, spec)) {
        EXPECT_EQ(r.rows * r.cols, 1);
        EXPECT_LT(r.row0, spec.gridRows);
        EXPECT_LT(r.col0, spec.gridCols);
    }
    // A power of two splits 16 x 16 into equal, near-square rectangles.
    for (const auto& r : expertRegions(4, spec)) EXPECT_EQ(r.rows * r.cols, 64);
    for (const auto& r : expertRegions(8, spec)) EXPECT_EQ(r.rows * r.cols, 32);
}

TEST(MoeWafer, MoeBlockRunsTheRouterAndEachExpertOnItsOwnCores) {
    const WaferSpec spec = teaching();
    const auto s = moeShape(4, 2);
    const ExpertLoad load{2, {100, 60, 96, 0}};  // 256 = M x k; expert 3 got nothing
    for (const Pass pass : {Pass::Forward, Pass::Backward}) {
        LayerOps block = blockOps(s, kB, kT, pass, spec, nullptr, &load);
        ASSERT_TRUE(planLayer(block, spec).ok());
        const auto regions = expertRegions(4, spec);
        double expertFmacs = 0;
        bool router = false;
        for (const auto& op : block.ops) {
            router = router || op.name == (pass == Pass::Forward ? "router" : "router.dW");
            EXPECT_NE(op.name, "fc") << "a dense MLP op in an MoE block";
            if (op.expert < 0) {
                EXPECT_TRUE(op.region.whole()) << op.name;
                continue;
            }
            EXPECT_NE(op.expert, 3) << "the idle expert has no ops: " << op.name;
            EXPECT_EQ(op.region.row0, regions[size_t(op.expert)].row0);
            EXPECT_EQ(op.region.col0, regions[size_t(op.expert)].col0);
            EXPECT_EQ(op.m, load.tokens[size_t(op.expert)]) << op.name;
            expertFmacs += opFmacs(op);
        }
        EXPECT_TRUE(router);
        // The experts' matmuls are the dense MLP's work over the routed tokens: 2 (forward) or
        // 4 (backward: dX and dW of both) products of tokens x C x F.
        const double perToken = double(s.channels) * s.ffn + double(s.ffn) * s.channels;
        const double routed = 100 + 60 + 96;
        EXPECT_DOUBLE_EQ(expertFmacs, (pass == Pass::Forward ? 1 : 2) * routed * perToken);
        EXPECT_EQ(block.weightValues, moeBlockValues(s, 4));
    }
}

TEST(MoeWafer, WeightValuesAreTheParameterTablesMoeBlock) {
    for (int every : {1, 2}) {
        const auto s = moeShape(4, 1, every);
        const model::ParameterTable table(s);
        EXPECT_EQ(moeBlockValues(s, 4), double(table.layers()[1].size));  // block 0 is MoE
        if (every == 2) {
            EXPECT_EQ(double(model::blockOffsets(s).size), double(table.layers()[2].size));
        }
    }
}

// The core of it: skewed routing leaves the lightly loaded experts' cores partly idle and an
// expert without tokens wholly idle in the MLP; the heatmap's frame shows it.
TEST(MoeWafer, SkewedRoutingLowersTheBusyFractionOfTheLightExpertsCores) {
    const WaferSpec spec = teaching();
    const auto s = moeShape(4, 1);
    const auto regions = expertRegions(4, spec);
    const ExpertLoad skewed{1, {80, 32, 16, 0}};
    LayerOps block = blockOps(s, kB, kT, Pass::Forward, spec, nullptr, &skewed);
    ASSERT_TRUE(planLayer(block, spec).ok());
    // The experts' ops alone: busy in proportion to the tokens, the idle expert's cores at 0.
    std::vector<float> experts(size_t(spec.cores()), 0.0f);
    for (const auto& op : block.ops)
        if (op.expert >= 0) addCoreCycles(op, spec, experts);
    const double e0 = regionMean(experts, regions[0], spec.gridCols);
    const double e1 = regionMean(experts, regions[1], spec.gridCols);
    const double e2 = regionMean(experts, regions[2], spec.gridCols);
    EXPECT_GT(e0, e1);
    EXPECT_GT(e1, e2);
    EXPECT_GT(e2, 0.0);
    EXPECT_EQ(regionMean(experts, regions[3], spec.gridCols), 0.0);
    // Per core, the op's own count (coreCycles) agrees with the grid pass.
    for (const auto& op : block.ops) {
        if (op.expert != 0) continue;
        std::vector<float> one(size_t(spec.cores()), 0.0f);
        addCoreCycles(op, spec, one);
        for (int r = 0; r < spec.gridRows; ++r)
            for (int c = 0; c < spec.gridCols; ++c)
                EXPECT_NEAR(one[size_t(r) * spec.gridCols + c], coreCycles(op, r, c, spec),
                            1e-3 * (1 + coreCycles(op, r, c, spec)));
    }
    // In the block's utilization frame (prediction with these counts for every block), the idle
    // expert's cores are less busy than the busiest expert's.
    StepInput in;
    in.shape = s;
    in.batchPerSystem = kB;
    in.seqLen = kT;
    in.expertTokens.assign(size_t(s.layers), skewed.tokens);
    const auto p = predictStep(spec, in);
    ASSERT_TRUE(p.ok()) << p.error().message;
    EXPECT_FALSE(p->uniformRouting);
    const UtilizationFrame* frame = p->frameFor(1, false);
    ASSERT_NE(frame, nullptr);
    ASSERT_EQ(frame->rows, spec.gridRows);  // full resolution on the teaching wafer
    const double busiest = regionMean(frame->busy, regions[0], spec.gridCols);
    const double idle = regionMean(frame->busy, regions[3], spec.gridCols);
    EXPECT_LT(idle, 0.8 * busiest) << "the idle expert's cores should stand out";
}

// The experts run side by side, so the MoE block's time follows its busiest expert: the same
// maximum gives the same block time whatever the others got; an even split of the same tokens
// is faster, and its cores are busier on average.
TEST(MoeWafer, MlpTimeFollowsTheBusiestExpertNotTheSum) {
    const WaferSpec spec = teaching();
    const auto s = moeShape(4, 2);
    auto predict = [&](std::vector<int64_t> tokens) {
        StepInput in;
        in.shape = s;
        in.batchPerSystem = kB;
        in.seqLen = kT;
        in.expertTokens.assign(size_t(s.layers), tokens);
        auto p = predictStep(spec, in);
        EXPECT_TRUE(p.ok()) << p.error().message;
        return *p;
    };
    auto blockBusy = [](const StepPrediction& p, Pass pass) {
        for (const auto& l : p.layers)
            if (l.layer == "h.0" && l.pass == pass) return l.computeS + l.fabricS;
        return -1.0;
    };
    // Over the block's compute window (the frame's), so a stream-bound step does not hide it.
    auto blockMeanBusy = [](const StepPrediction& p) { return p.frameFor(1, false)->mean; };
    const auto twoHot = predict({128, 128, 0, 0});
    const auto spread = predict({128, 0, 64, 64});  // same busiest expert, same sum
    const auto even = predict({64, 64, 64, 64});
    for (const Pass pass : {Pass::Forward, Pass::Backward}) {
        EXPECT_DOUBLE_EQ(blockBusy(twoHot, pass), blockBusy(spread, pass));
        EXPECT_LT(blockBusy(even, pass), blockBusy(twoHot, pass));
    }
    EXPECT_LE(even.stepS, twoHot.stepS);  // (equal when the weight stream binds)
    EXPECT_GT(blockMeanBusy(even), blockMeanBusy(twoHot));
    // Per op: the experts' ops of one run start together (side by side), not one after another.
    for (const auto& l : twoHot.layers) {
        if (l.layer != "h.0" || l.pass != Pass::Forward) continue;
        double fc0 = -1, fc1 = -1;
        for (const auto& op : l.ops) {
            if (op.name == "expert.0.fc") fc0 = op.startS;
            if (op.name == "expert.1.fc") fc1 = op.startS;
        }
        EXPECT_GE(fc0, 0);
        EXPECT_DOUBLE_EQ(fc0, fc1);
    }
}

TEST(MoeWafer, WithoutARunThePlannerAssumesUniformRouting) {
    const WaferSpec spec = teaching();
    const auto s = moeShape(4, 2, 2);  // blocks 0 and 2 of nano's are MoE
    StepInput in;
    in.shape = s;
    in.batchPerSystem = kB;
    in.seqLen = kT;
    const auto p = predictStep(spec, in);
    ASSERT_TRUE(p.ok()) << p.error().message;
    EXPECT_TRUE(p->uniformRouting);
    EXPECT_EQ(p->moeExperts, 4);
    EXPECT_EQ(p->moeTopK, 2);
    ASSERT_EQ(int(p->expertTokens.size()), s.layers);
    for (int b = 0; b < s.layers; ++b) {
        if (!s.isMoeBlock(b)) {
            EXPECT_TRUE(p->expertTokens[size_t(b)].empty());
            continue;
        }
        EXPECT_EQ(p->expertTokens[size_t(b)], (std::vector<int64_t>{64, 64, 64, 64}));
    }
    // The same as giving the uniform counts explicitly.
    StepInput given = in;
    given.expertTokens.assign(size_t(s.layers), {});
    for (int b = 0; b < s.layers; ++b)
        if (s.isMoeBlock(b)) given.expertTokens[size_t(b)] = {64, 64, 64, 64};
    const auto q = predictStep(spec, given);
    ASSERT_TRUE(q.ok());
    EXPECT_DOUBLE_EQ(q->stepS, p->stepS);
    EXPECT_FALSE(q->uniformRouting);
}

TEST(MoeWafer, BadCountsAreRefusedNamingTheBlock) {
    const WaferSpec spec = teaching();
    StepInput in;
    in.shape = moeShape(4, 1);
    in.batchPerSystem = kB;
    in.seqLen = kT;
    in.expertTokens.assign(size_t(in.shape.layers), {1, 2, 3});  // 3 counts for 4 experts
    const auto p = predictStep(spec, in);
    ASSERT_FALSE(p.ok());
    EXPECT_NE(p.error().message.find("block 0"), std::string::npos) << p.error().message;
    in.expertTokens.resize(1);
    EXPECT_FALSE(predictStep(spec, in).ok());
}

// Expert counts that do not tile the grid evenly plan without a crash (5 once divided by zero in
// the mapping, 10 wrote past the heatmap's cells), every expert busy on its own cores; more
// experts than cores are refused naming the key and the wafer.
TEST(MoeWafer, AnyExpertCountUpToTheCoresPlans) {
    const WaferSpec spec = teaching();
    for (int experts : {3, 5, 7, 10, 15, 20, 33, 256}) {
        StepInput in;
        in.shape = moeShape(experts, 1);
        in.batchPerSystem = kB;
        in.seqLen = kT;
        const auto p = predictStep(spec, in);
        ASSERT_TRUE(p.ok()) << experts << " experts: " << p.error().message;
        ASSERT_EQ(int(p->expertRegions.size()), experts);
        const auto* frame = p->frameFor(1, false);  // h.0 forward
        ASSERT_TRUE(frame);
        ASSERT_EQ(int(frame->busy.size()), spec.cores());
        for (const auto& r : p->expertRegions) {
            double busiest = 0;
            for (int i = r.row0; i < r.row0 + r.rows; ++i)
                for (int j = r.col0; j < r.col0 + r.cols; ++j)
                    busiest = std::max(busiest, double(frame->busy[size_t(i * spec.gridCols + j)]));
            EXPECT_GT(busiest, 0.0) << experts << " experts: an expert's cores never work";
        }
    }
    StepInput in;
    in.shape = moeShape(257, 1);
    in.batchPerSystem = kB;
    in.seqLen = kT;
    const auto p = predictStep(spec, in);
    ASSERT_FALSE(p.ok());
    EXPECT_NE(p.error().message.find("model.moe.num_experts = 257"), std::string::npos)
        << p.error().message;
    EXPECT_NE(p.error().message.find("wafer.spec"), std::string::npos) << p.error().message;
}

// An MoE block's weights stream in as units and its gradients out the same way; the units split
// the layer's stream in order, sized by their values, and SpanClock gives each real unit span
// its own emulated time.
TEST(MoeWafer, MoeBlocksStreamAsSharedPartThenEachExpert) {
    const WaferSpec spec = teaching();
    const auto s = moeShape(4, 1, 2);
    StepInput in;
    in.shape = s;
    in.batchPerSystem = kB;
    in.seqLen = kT;
    const auto p = predictStep(spec, in, {.frames = false});
    ASSERT_TRUE(p.ok()) << p.error().message;
    for (const SpanKind kind : {SpanKind::StreamIn, SpanKind::StreamOut}) {
        for (int layer : {1, 2}) {  // h.0 is MoE, h.1 dense
            std::vector<TimelineSpan> units;
            for (const auto& t : p->spans)
                if (t.kind == kind && t.layer == layer && !t.backwardPass && t.system == 0)
                    units.push_back(t);
            if (kind == SpanKind::StreamOut) {  // gradients leave in the backward phase
                units.clear();
                for (const auto& t : p->spans)
                    if (t.kind == kind && t.layer == layer && t.system == 0) units.push_back(t);
            }
            if (layer == 2) {
                ASSERT_EQ(units.size(), 1u);
                EXPECT_EQ(units[0].expert, -1);
                continue;
            }
            ASSERT_EQ(units.size(), 5u) << streaming::spanKindName(kind);
            double share = 0;
            for (size_t u = 0; u < units.size(); ++u) {
                EXPECT_EQ(units[u].expert, int(u) - 1);
                if (u > 0) {
                    EXPECT_DOUBLE_EQ(units[u].startS, units[u - 1].endS);
                }
                share += units[u].share;
            }
            EXPECT_NEAR(share, 1.0, 1e-12);
            const double expert = 2.0 * s.channels * s.ffn + s.ffn + s.channels;
            EXPECT_NEAR(units[1].share, expert / moeBlockValues(s, 4), 1e-12);
        }
    }
    // A real stream-in span of expert 2 of h.0 gets that unit's emulated time.
    const auto shared = std::make_shared<const StepPrediction>(*p);
    SpanClock clock(shared);
    streaming::Span real{0, 0, 0, 1, SpanKind::StreamIn, 0, 0.0, 0.0, false};
    real.expert = 2;
    ASSERT_TRUE(clock.attach(real));
    for (const auto& t : p->spans)
        if (t.kind == SpanKind::StreamIn && t.layer == 1 && t.expert == 2 && !t.backwardPass &&
            t.system == 0) {
            EXPECT_DOUBLE_EQ(real.emuStart, t.startS);
            EXPECT_DOUBLE_EQ(real.emuEnd, t.endS);
        }
    // A clock started at a later step and time (an MoE run's next step) shifts by that origin.
    SpanClock later(shared, 5, 100.0);
    EXPECT_DOUBLE_EQ(later.stepStart(5), 100.0);
    EXPECT_DOUBLE_EQ(later.stepStart(6), 100.0 + p->stepS);
}

// The weight buffer sees an MoE block's units as one visit in one slot: while expert 1's weights
// stream in, h.0's forward visit holds slot 1 (visit 1 of a 2-slot ring), part-way in.
TEST(MoeWafer, AnMoeBlocksUnitsShareOneBufferSlot) {
    const WaferSpec spec = teaching();
    StepInput in;
    in.shape = moeShape(4, 1);
    in.batchPerSystem = kB;
    in.seqLen = kT;
    const auto p = predictStep(spec, in, {.frames = false});
    ASSERT_TRUE(p.ok()) << p.error().message;
    const TimelineSpan* unit = nullptr;
    for (const auto& t : p->spans)
        if (t.system == 0 && t.kind == SpanKind::StreamIn && t.layer == 1 && !t.backwardPass &&
            t.expert == 1)
            unit = &t;
    ASSERT_NE(unit, nullptr);
    const BufferState state = bufferStateAt(*p, 0.5 * (unit->startS + unit->endS));
    ASSERT_EQ(state.slotStates.size(), 2u);
    EXPECT_EQ(state.slotStates[1].layer, 1);
    // (with two slots a layer computes as its weights arrive)
    EXPECT_NE(state.slotStates[1].activity, SlotActivity::Empty);
    EXPECT_NE(state.slotStates[0].layer, 1);
    EXPECT_GT(state.slotStates[1].streamedFraction, unit->share);
    EXPECT_LT(state.slotStates[1].streamedFraction, 1.0);
}

}  // namespace
}  // namespace ws::wafer
