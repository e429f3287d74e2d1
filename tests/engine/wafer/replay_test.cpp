// SPDX-License-Identifier: GPL-3.0-or-later
// Slow-motion replay of one emulated step (issue 17): the spans running at t, the layer phase
// under the cursor (or the weights the wafer waits for), every link's bytes so far and rate (the
// bytes reach each span's own at the step's end, and recorded bytes replace planned ones), the
// pace mapping wall time on screen to emulated time and the animation's frames, and the edges:
// t before the step, after it, and an empty replay.
#include <gtest/gtest.h>

#include <cmath>

#include "engine/model/parameters.h"
#include "engine/wafer/replay.h"
#include "support/test_shapes.h"

namespace ws::wafer {
namespace {
using streaming::SpanKind;

WaferSpec teaching() {
    auto s = loadWaferSpecFile(std::string(WAFER_PRESETS_DIR) + "/wafers/teaching-16x16.yaml");
    EXPECT_TRUE(s.ok()) << s.error().message;
    return *s;
}

// batch 1 x 8 tokens: bound by the weight stream; batch 64 x 128: closer to compute-bound.
std::shared_ptr<const StepPrediction> predict(int systems, int batch = 1, int slots = 2) {
    StepInput in{ws::testing::nanoShape(), batch, batch == 1 ? 8 : 128, systems, nullptr};
    in.weightBufferLayers = slots;
    auto p = predictStep(teaching(), in);
    EXPECT_TRUE(p.ok()) << p.error().message;
    return std::make_shared<const StepPrediction>(std::move(p).value());
}

const TimelineSpan* find(const StepPrediction& p, SpanKind kind, int layer, int system = 0) {
    for (const auto& s : p.spans)
        if (s.kind == kind && s.layer == layer && s.system == system) return &s;
    return nullptr;
}

double io() {
    return teaching().ioBytesPerS();
}

// The bytes the replay gives span `span` of its schedule.
double bytesOf(const StepReplay& r, const TimelineSpan* span) {
    return r.spanBytes()[size_t(span - r.prediction()->spans.data())];
}

TEST(Replay, ActiveSpansAndThePhaseUnderTheCursor) {
    const auto p = predict(1);
    const StepReplay replay(p, io());
    ASSERT_EQ(replay.spans().size(), p->spans.size());
    EXPECT_DOUBLE_EQ(replay.durationS(), p->stepS);
    EXPECT_EQ(replay.numBlocks(), p->forwardFrame.empty() ? 0 : int(p->forwardFrame.size()) - 2);
    // The middle of block 1's forward: that phase computes, its frame is the heatmap's.
    const TimelineSpan* f1 = find(*p, SpanKind::Forward, 1);
    ASSERT_TRUE(f1);
    const double mid = 0.5 * (f1->startS + f1->endS);
    const ReplayState st = replay.stateAt(mid);
    EXPECT_EQ(st.phase.activity, WaferActivity::Computing);
    EXPECT_EQ(st.phase.layer, 1);
    EXPECT_FALSE(st.phase.backward);
    EXPECT_NEAR(st.phase.computedFraction, 0.5, 1e-9);
    EXPECT_EQ(st.phase.frame, p->forwardFrame[1]);
    EXPECT_EQ(&p->frames[size_t(st.phase.frame)], p->frameFor(1, false));
    // Every span listed as running holds t, and every span holding t is listed.
    size_t holding = 0;
    for (const auto& s : replay.spans()) holding += s.startS <= mid && mid < s.endS;
    EXPECT_EQ(st.activeSpans.size(), holding);
    bool computeListed = false;
    for (size_t i : st.activeSpans) {
        const TimelineSpan& s = replay.spans()[i];
        EXPECT_LE(s.startS, mid);
        EXPECT_LT(mid, s.endS);
        computeListed = computeListed || (&s - replay.spans().data() == f1 - p->spans.data());
    }
    EXPECT_TRUE(computeListed);
    // The next phase is block 2's forward; the buffer holds block 1 computing.
    EXPECT_EQ(st.phase.nextLayer, 2);
    bool computing = false;
    for (const auto& slot : st.buffer.slotStates)
        computing = computing || (slot.activity == SlotActivity::Computing && slot.layer == 1);
    EXPECT_TRUE(computing);
    const std::string line = describeReplayState(st, 1, replay.numBlocks());
    EXPECT_EQ(line.rfind("h.0 forward on system 0", 0), 0u) << line;

    // A backward phase: its frame is the backward one.
    const TimelineSpan* b1 = find(*p, SpanKind::Backward, 1);
    ASSERT_TRUE(b1);
    const ReplayState back = replay.stateAt(0.5 * (b1->startS + b1->endS));
    EXPECT_TRUE(back.phase.backward);
    EXPECT_EQ(back.phase.frame, p->backwardFrame[1]);
}

// One weight slot: a layer streams in only after the one before has computed, so between
// compute spans the wafer waits for weights; the heatmap keeps the last computed phase.
TEST(Replay, BetweenPhasesTheWaferWaitsForTheNextWeights) {
    const auto p = predict(1, 1, 1);
    const StepReplay replay(p, io());
    const TimelineSpan* f1 = find(*p, SpanKind::Forward, 1);
    const TimelineSpan* f2 = find(*p, SpanKind::Forward, 2);
    ASSERT_TRUE(f1 && f2);
    ASSERT_GT(f2->startS, f1->endS);  // a gap: h.1's weights stream in after h.0 computed
    const ReplayState st = replay.stateAt(0.5 * (f1->endS + f2->startS));
    EXPECT_EQ(st.phase.activity, WaferActivity::WaitingForWeights);
    EXPECT_EQ(st.phase.layer, 1);  // last computed
    EXPECT_EQ(st.phase.frame, p->forwardFrame[1]);
    EXPECT_EQ(st.phase.nextLayer, 2);
    EXPECT_GT(st.phase.nextStreamedFraction, 0.0);
    EXPECT_LT(st.phase.nextStreamedFraction, 1.0);
    EXPECT_TRUE(st.weightsIn.active());
    EXPECT_EQ(st.weightsIn.layer, 2);
    const std::string line = describeReplayState(st, 1, replay.numBlocks());
    EXPECT_NE(line.find("waits for the weights of h.1 (forward)"), std::string::npos) << line;
    // Before the first compute: nothing computed yet, the embeddings' weights awaited.
    const ReplayState start = replay.stateAt(0);
    EXPECT_EQ(start.phase.activity, WaferActivity::WaitingForWeights);
    EXPECT_EQ(start.phase.layer, -1);
    EXPECT_EQ(start.phase.frame, -1);
    EXPECT_EQ(start.phase.nextLayer, 0);
}

// Bytes on every link: zero at the start, each span's own at the end, half of a lone span's
// at its middle with the rate bytes / duration; SwarmX sends MemoryX one reduced copy.
TEST(Replay, BytesInFlightSumToTheSpansBytes) {
    const int N = 4;
    const auto p = predict(N, 64);
    const StepReplay replay(p, io());
    double weights = 0, perSystemIn = 0, perSystemOut = 0, reduced = 0;
    for (size_t i = 0; i < p->spans.size(); ++i) {
        const TimelineSpan& s = p->spans[i];
        const double bytes = replay.spanBytes()[i];
        if (s.kind == SpanKind::StreamIn && s.system == 0) weights += bytes;
        if (s.kind == SpanKind::StreamIn && s.system == 1) perSystemIn += bytes;
        if (s.kind == SpanKind::StreamOut && s.system == 1) perSystemOut += bytes;
        if (s.kind == SpanKind::Reduce) reduced += bytes / N;
    }
    ASSERT_GT(weights, 0);
    // A block's planned weights are its parameters at the spec's 2 bytes a value, each visit.
    const model::ParameterTable table(ws::testing::nanoShape());
    const double blockBytes = 2.0 * double(table.layers()[1].size);
    const double streamed = bytesOf(replay, find(*p, SpanKind::StreamIn, 1));
    EXPECT_NEAR(streamed, blockBytes, 0.02 * blockBytes);
    ASSERT_GT(perSystemOut, 0);
    EXPECT_DOUBLE_EQ(reduced, perSystemOut);  // the reduced gradients: one system's worth

    const ReplayState start = replay.stateAt(0);
    EXPECT_EQ(start.weightsIn.bytesSoFar, 0);
    EXPECT_EQ(start.reducedOut.bytesSoFar, 0);
    const ReplayState end = replay.stateAt(replay.durationS());
    EXPECT_NEAR(end.weightsIn.bytesSoFar, weights, 1e-6 * weights);
    EXPECT_NEAR(end.weightsIn.totalBytes, weights, 1e-6 * weights);
    ASSERT_EQ(end.broadcast.size(), size_t(N));
    EXPECT_NEAR(end.broadcast[1].bytesSoFar, perSystemIn, 1e-6 * perSystemIn);
    EXPECT_NEAR(end.gradientsOut[1].bytesSoFar, perSystemOut, 1e-6 * perSystemOut);
    EXPECT_NEAR(end.reducedOut.bytesSoFar, reduced, 1e-6 * reduced);
    EXPECT_FALSE(end.weightsIn.active());
    EXPECT_TRUE(end.activeSpans.empty());
    EXPECT_EQ(end.updatesDone, end.updatesPlanned);
    EXPECT_GT(end.updatesPlanned, 0);

    // The embeddings' stream-in runs alone at the step's start: half its bytes at its middle.
    const TimelineSpan* in0 = find(*p, SpanKind::StreamIn, 0);
    ASSERT_TRUE(in0 && in0->endS > in0->startS && in0->startS == 0);
    const double in0Bytes = bytesOf(replay, in0);
    const ReplayState mid = replay.stateAt(0.5 * in0->endS);
    EXPECT_NEAR(mid.weightsIn.bytesSoFar, 0.5 * in0Bytes, 1e-6 * in0Bytes);
    EXPECT_NEAR(mid.weightsIn.bytesPerS, in0Bytes / (in0->endS - in0->startS),
                1e-6 * in0Bytes / in0->endS);
    EXPECT_EQ(mid.weightsIn.layer, 0);
    for (int s = 0; s < N; ++s) EXPECT_TRUE(mid.broadcast[size_t(s)].active());
    // Bytes so far never fall as t grows.
    double previous = -1;
    for (int i = 0; i <= 100; ++i) {
        const double so = replay.stateAt(replay.durationS() * i / 100).gradientsOut[0].bytesSoFar;
        EXPECT_GE(so, previous);
        previous = so;
    }
}

// A recorded step's bytes (an fp32 run's 4-byte weights) replace the planned ones.
TEST(Replay, RecordedBytesReplaceThePlannedOnes) {
    const auto p = predict(1);
    const StepReplay planned(p, io());
    std::vector<SpanBytes> recorded;
    double weights = 0;
    for (size_t i = 0; i < p->spans.size(); ++i) {
        const TimelineSpan& t = p->spans[i];
        SpanBytes s{t.system, t.micro, t.layer, t.kind, false, 0};
        if (t.kind == SpanKind::StreamIn) {
            s.backwardPass = t.backwardPass;  // the executor marks the pass on stream-ins only
            s.bytes = 2 * planned.spanBytes()[i];
            if (t.system == 0) weights += s.bytes;
        } else if (t.kind == SpanKind::StreamOut) {
            s.bytes = 1000;
        }
        recorded.push_back(s);
    }
    ASSERT_GT(weights, 0);
    const StepReplay replay(p, io(), recorded);
    const ReplayState end = replay.stateAt(replay.durationS());
    EXPECT_NEAR(end.weightsIn.bytesSoFar, weights, 1e-6 * weights);
    int outs = 0;
    for (const auto& s : p->spans) outs += s.kind == SpanKind::StreamOut;
    EXPECT_NEAR(end.gradientsOut[0].bytesSoFar, 1000.0 * outs, 1e-6);
    EXPECT_NEAR(end.reducedOut.bytesSoFar, 1000.0 * outs, 1e-6);  // one system: no reduce
}

TEST(Replay, TimeIsClampedToTheStepAndAnEmptyReplayIsEmpty) {
    const auto p = predict(2);
    const StepReplay replay(p, io());
    const ReplayState before = replay.stateAt(-1.0);
    EXPECT_EQ(before.timeS, 0);
    EXPECT_EQ(before.weightsIn.bytesSoFar, 0);
    const ReplayState after = replay.stateAt(replay.durationS() * 10);
    EXPECT_DOUBLE_EQ(after.timeS, replay.durationS());
    EXPECT_EQ(after.phase.activity, WaferActivity::Idle);
    EXPECT_EQ(after.updatesDone, after.updatesPlanned);
    EXPECT_EQ(replay.stateAt(std::nan("")).timeS, 0);

    const StepReplay none(nullptr);
    EXPECT_EQ(none.durationS(), 0);
    const ReplayState e = none.stateAt(1.0);
    EXPECT_EQ(e.timeS, 0);
    EXPECT_TRUE(e.activeSpans.empty());
    EXPECT_EQ(e.phase.layer, -1);
    EXPECT_EQ(e.phase.frame, -1);
    EXPECT_EQ(describeReplayState(e, 1, 0), "nothing scheduled");
    StepPrediction empty;
    const StepReplay blank(std::make_shared<const StepPrediction>(empty));
    EXPECT_EQ(blank.stateAt(0.5).phase.activity, WaferActivity::Idle);
}

TEST(Replay, PaceMapsWallTimeToEmulatedTime) {
    // "1 emulated µs = 20 ms on screen".
    const ReplayPace slow = ReplayPace::of(1e-6, 0.020);
    EXPECT_DOUBLE_EQ(slow.emulatedPerWallS(), 5e-5);
    EXPECT_NEAR(slow.advance(0, 0.020, 1.0), 1e-6, 1e-18);
    EXPECT_NEAR(slow.advance(3e-6, 1.0, 1.0), 3e-6 + 5e-5, 1e-15);
    EXPECT_DOUBLE_EQ(slow.advance(0.9, 1e6, 1.0), 1.0);  // stops at the step's end
    EXPECT_DOUBLE_EQ(slow.advance(0.5, -1, 1.0), 0.5);   // time never runs backwards
    EXPECT_NEAR(slow.wallSeconds(25.79e-3), 25.79e-3 / 5e-5, 1e-9);
    // The whole step in 10 s, whatever its length.
    const ReplayPace whole = ReplayPace::wholeStepIn(25.79e-3, 10);
    EXPECT_NEAR(whole.wallSeconds(25.79e-3), 10, 1e-12);
    // Frames of an animation: 10 s at 30 fps is 300 intervals, so 301 frames, the last at the end.
    EXPECT_EQ(whole.frameCount(25.79e-3, 30), 301);
    EXPECT_EQ(whole.frameTime(0, 25.79e-3, 30), 0);
    EXPECT_NEAR(whole.frameTime(150, 25.79e-3, 30), 0.5 * 25.79e-3, 1e-15);
    EXPECT_DOUBLE_EQ(whole.frameTime(300, 25.79e-3, 30), 25.79e-3);
    EXPECT_DOUBLE_EQ(whole.frameTime(400, 25.79e-3, 30), 25.79e-3);
    // A frozen pace (bad input) moves nothing and has one frame.
    const ReplayPace frozen = ReplayPace::of(0, 1);
    EXPECT_EQ(frozen.advance(0.1, 5, 1), 0.1);
    EXPECT_TRUE(std::isinf(frozen.wallSeconds(1)));
    EXPECT_EQ(frozen.frameCount(1, 30), 1);
}

}  // namespace
}  // namespace ws::wafer
