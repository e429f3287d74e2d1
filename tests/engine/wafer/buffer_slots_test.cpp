// The weight buffer's slots read off the emulated schedule (issue 17): with two slots the next
// layer streams into the free slot while one computes; with one slot nothing streams in while a
// layer computes; backward phases stream their gradients out; never more layers than slots.
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

}  // namespace
}  // namespace ws::wafer
