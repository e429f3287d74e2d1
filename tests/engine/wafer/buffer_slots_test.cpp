// SPDX-License-Identifier: GPL-3.0-or-later
// The weight buffer's slots read off the emulated schedule (issue 17): with two slots the next
// layer streams into the free slot while one computes; with one slot nothing streams in while a
// layer computes; backward phases stream their gradients out; never more layers than slots.
// The same from any spans (bufferStateOf, issue 31): the executor's real ones, whose loader
// fills the free slot with the next layer while this one computes.
#include <gtest/gtest.h>

#include <algorithm>

#include "engine/wafer/buffer_slots.h"
#include "support/test_shapes.h"

namespace ws::wafer {
namespace {
using streaming::SpanKind;

WaferSpec teaching() {
    auto s = loadWaferSpecFile(std::string(WAFER_PRESETS_DIR) + "/wafers/teaching-16x16.yaml");
    EXPECT_TRUE(s.ok()) << s.error().message;
    return *s;
}

// batch 1 x 8 tokens: bound by the weight stream; 1024 x 128: by compute.
StepPrediction predict(int slots, int batch = 1) {
    StepInput in{ws::testing::nanoShape(), batch, batch == 1 ? 8 : 128, 1, nullptr};
    in.weightBufferLayers = slots;
    auto p = predictStep(teaching(), in, {.frames = false});
    EXPECT_TRUE(p.ok()) << p.error().message;
    return *p;
}

int occupied(const BufferState& b) {
    int n = 0;
    for (const auto& s : b.slotStates) n += s.activity != SlotActivity::Empty;
    return n;
}

TEST(BufferSlots, TwoSlotsPrefetchTheNextLayerDuringCompute) {
    const StepPrediction p = predict(2, 1024);
    ASSERT_EQ(p.weightBufferLayers, 2);
    // Block 1's forward: block 1 computes in one slot; block 2 has streamed into the other
    // (compute-bound: its weights are in before block 1 is done) and waits.
    const double t = phaseMidpoint(p, 1, false);
    ASSERT_GE(t, 0);
    const BufferState b = bufferStateAt(p, t);
    ASSERT_EQ(b.slotStates.size(), 2u);
    int computing = -1, arriving = -1;
    for (const auto& s : b.slotStates) {
        if (s.activity == SlotActivity::Computing) computing = s.layer;
        if (s.activity == SlotActivity::StreamingIn || s.activity == SlotActivity::Waiting)
            arriving = s.layer;
    }
    EXPECT_EQ(computing, 1);
    EXPECT_EQ(arriving, 2);
    EXPECT_TRUE(b.streamingOut.empty());  // forward: no gradients yet
    // Bound by the stream, a layer computes as its own weights arrive, and the next one's
    // stream waits for the link.
    const StepPrediction s = predict(2);
    const BufferState w = bufferStateAt(s, phaseMidpoint(s, 1, false));
    EXPECT_EQ(w.slotStates[1].activity, SlotActivity::Computing);
    EXPECT_EQ(w.slotStates[1].layer, 1);
    EXPECT_LT(w.slotStates[1].streamedFraction, 1.0);
    EXPECT_EQ(w.slotStates[0].activity, SlotActivity::Empty);
}

TEST(BufferSlots, OneSlotHoldsOnlyTheComputingLayer) {
    const StepPrediction p = predict(1);
    ASSERT_EQ(p.weightBufferLayers, 1);
    for (int layer = 0; layer <= 3; ++layer) {
        const BufferState b = bufferStateAt(p, phaseMidpoint(p, layer, false));
        ASSERT_EQ(b.slotStates.size(), 1u);
        EXPECT_EQ(b.slotStates[0].activity, SlotActivity::Computing) << layer;
        EXPECT_EQ(b.slotStates[0].layer, layer);
        EXPECT_EQ(b.slotStates[0].streamedFraction,
                  1.0);  // all its weights were in before it began
    }
    // Between two phases the one slot is filling with the next layer.
    for (const auto& s : p.spans) {
        if (s.system != 0 || s.kind != SpanKind::StreamIn || s.layer != 2 || s.backwardPass)
            continue;
        const BufferState b = bufferStateAt(p, 0.5 * (s.startS + s.endS));
        EXPECT_EQ(b.slotStates[0].activity, SlotActivity::StreamingIn);
        EXPECT_EQ(b.slotStates[0].layer, 2);
        EXPECT_NEAR(b.slotStates[0].streamedFraction, 0.5, 1e-9);
    }
}

TEST(BufferSlots, NeverMoreLayersThanSlotsAndGradientsStreamOutInBackward) {
    for (int slots : {1, 2}) {
        const StepPrediction p = predict(slots, 1024);
        for (double t = 0; t < p.stepS; t += p.stepS / 997)
            EXPECT_LE(occupied(bufferStateAt(p, t)), slots);
        const BufferState back = bufferStateAt(p, phaseMidpoint(p, 2, true));
        EXPECT_NE(std::find(back.streamingOut.begin(), back.streamingOut.end(), 2),
                  back.streamingOut.end())
            << slots;
    }
}

// Real spans as the executor's ring makes them (WeightStreamer: visit j streams into slot j % k
// once visit j - k is released): 4 forward visits, stream 1 s, compute 2 s.
std::vector<TimelineSpan> executorSpans(int slots) {
    std::vector<TimelineSpan> spans;
    std::vector<double> released;
    double linkFree = 0, computeFree = 0;
    for (int j = 0; j < 4; ++j) {
        const double slotFree = j >= slots ? released[size_t(j - slots)] : 0.0;
        const double in = std::max(linkFree, slotFree);
        linkFree = in + 1.0;
        spans.push_back({0, 0, j, SpanKind::StreamIn, false, in, in + 1.0});
        const double start = std::max(in + 1.0, computeFree);
        spans.push_back({0, 0, j, SpanKind::Forward, false, start, start + 2.0});
        computeFree = start + 2.0;
        released.push_back(computeFree);
    }
    return spans;
}

TEST(BufferSlots, TheExecutorsSpansShowTheNextLayerInWhileOneComputes) {
    const std::vector<TimelineSpan> two = executorSpans(2);
    // Layer 1 computes in [3, 5]; layer 2 streamed into layer 0's slot once layer 0 was
    // released (at 3) and is in by 4, waiting: two layers on the wafer at once.
    const BufferState b = bufferStateOf(two, 2, 4.0);
    ASSERT_EQ(b.slotStates.size(), 2u);
    EXPECT_EQ(occupied(b), 2);
    EXPECT_EQ(b.slotStates[1].activity, SlotActivity::Computing);
    EXPECT_EQ(b.slotStates[1].layer, 1);
    EXPECT_EQ(b.slotStates[0].layer, 2);
    EXPECT_TRUE(b.slotStates[0].activity == SlotActivity::Waiting ||
                b.slotStates[0].activity == SlotActivity::StreamingIn);
    // One slot: the next layer streams only once this one is released.
    const std::vector<TimelineSpan> one = executorSpans(1);
    for (const TimelineSpan& s : one) {
        if (s.kind != SpanKind::Forward) continue;
        const BufferState at = bufferStateOf(one, 1, 0.5 * (s.startS + s.endS));
        EXPECT_EQ(occupied(at), 1);
        EXPECT_EQ(at.slotStates[0].layer, s.layer);
        EXPECT_EQ(at.slotStates[0].activity, SlotActivity::Computing);
    }
    // A paused run: layer 2 is in but not computed yet; it holds its slot, waiting.
    std::vector<TimelineSpan> paused(two.begin(), two.begin() + 5);  // up to layer 2's stream
    ASSERT_EQ(paused.back().kind, SpanKind::StreamIn);
    const BufferState waiting = bufferStateOf(paused, 2, 4.999);
    EXPECT_EQ(occupied(waiting), 2);
    EXPECT_EQ(waiting.slotStates[0].layer, 2);
    EXPECT_EQ(waiting.slotStates[0].activity, SlotActivity::Waiting);
    // Another system's spans are not this one's.
    EXPECT_EQ(occupied(bufferStateOf(two, 2, 4.0, 1)), 0);
}

}  // namespace
}  // namespace ws::wafer
