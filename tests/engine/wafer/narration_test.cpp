// SPDX-License-Identifier: GPL-3.0-or-later
// The teacher's one-line narration of the emulated schedule (issue 17): the sentences for each
// kind of span, what is in flight beside a layer phase (the prefetch into the other slot with
// two slots, nothing with one), a moment spent waiting for weights, and several systems.
#include <gtest/gtest.h>

#include <algorithm>

#include "engine/wafer/buffer_slots.h"
#include "engine/wafer/narration.h"
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
StepPrediction predict(int slots, int batch, int systems = 1) {
    StepInput in{ws::testing::nanoShape(), batch, batch == 1 ? 8 : 128, systems, nullptr};
    in.weightBufferLayers = slots;
    auto p = predictStep(teaching(), in, {.frames = false});
    EXPECT_TRUE(p.ok()) << p.error().message;
    return *p;
}

NarrationContext nano(int systems = 1, int slots = 2) {
    return {.numBlocks = 4,
            .numSystems = systems,
            .cores = 256,
            .microBatches = 1,
            .bufferSlots = slots};
}

bool contains(const std::string& text, const std::string& part) {
    return text.find(part) != std::string::npos;
}

TEST(Narration, LayerNamesFollowTheParameterNames) {
    EXPECT_EQ(layerName(0, 4), "embeddings");
    EXPECT_EQ(layerName(1, 4), "h.0");
    EXPECT_EQ(layerName(4, 4), "h.3");
    EXPECT_EQ(layerName(5, 4), "head");
}

TEST(Narration, EachKindOfSpanHasItsSentence) {
    NarrationContext c = nano();
    c.microBatches = 4;
    const TimelineSpan forward{0, 0, 2, SpanKind::Forward, false, 0, 1};
    InFlight prefetch;
    prefetch.streamingIn = {3};
    EXPECT_EQ(narrateSpan(forward, c, prefetch),
              "h.1 forward (micro-batch 1 of 4): the 256 cores multiply this micro-batch's "
              "activations by h.1's weights, streamed in from MemoryX; h.2's weights stream "
              "into the other buffer slot");
    c.microBatches = 1;
    EXPECT_EQ(narrateSpan({0, 0, 2, SpanKind::Backward, true, 0, 1}, c),
              "h.1 backward: gradients for h.1 computed and streamed out to MemoryX");
    EXPECT_EQ(narrateSpan({-1, 0, 2, SpanKind::Update, false, 0, 1}, c),
              "MemoryX updates h.1 with AdamW");
    EXPECT_EQ(narrateSpan({0, 0, 3, SpanKind::StreamIn, false, 0, 1}, c),
              "h.2's weights stream in from MemoryX");
    EXPECT_EQ(narrateSpan({0, 0, 0, SpanKind::StreamOut, true, 0, 1}, c),
              "embeddings' gradients stream out to MemoryX");
    c.numSystems = 4;
    EXPECT_EQ(narrateSpan({-1, 0, 2, SpanKind::Reduce, false, 0, 1}, c),
              "SwarmX sums the 4 systems' gradients for h.1");
    EXPECT_EQ(narrateSpan({0, 0, 5, SpanKind::StreamIn, true, 0, 1}, c),
              "SwarmX broadcasts head's weights from MemoryX to the 4 systems for its "
              "backward pass");
    c.optimizer = "SGD";
    EXPECT_EQ(narrateSpan({-1, 0, 5, SpanKind::Update, false, 0, 1}, c),
              "MemoryX updates head with SGD");
}

TEST(Narration, TwoSlotsNameTheLayerPrefetchingBesideThePhase) {
    const StepPrediction p = predict(2, 1024);
    const std::string line = narratePhase(p, 2, false, 0, nano());
    EXPECT_TRUE(contains(line,
                         "h.1 forward: the 256 cores multiply the batch's activations by "
                         "h.1's weights, streamed in from MemoryX"))
        << line;
    EXPECT_TRUE(contains(line, "; h.2's weights stream into the other buffer slot")) << line;
    // The backward pass streams the next-lower layer in while the layer's own gradients
    // stream out (its own stream-out is said in the main clause, not repeated).
    const std::string back = narratePhase(p, 3, true, 0, nano());
    EXPECT_TRUE(contains(back, "h.2 backward: gradients for h.2 computed")) << back;
    EXPECT_FALSE(contains(back, "h.2's gradients stream out")) << back;
    EXPECT_EQ(narratePhase(p, 99, false, 0, nano()), "");
}

TEST(Narration, OneSlotStreamsNothingBesideThePhase) {
    const StepPrediction p = predict(1, 1024);
    const std::string line = narratePhase(p, 2, false, 0, nano(1, 1));
    EXPECT_TRUE(contains(line, "with one buffer slot, nothing streams in meanwhile")) << line;
    EXPECT_FALSE(contains(line, "stream into")) << line;
}

TEST(Narration, AStreamBoundStepIsMostlyWaitingForWeights) {
    // Bound by the weight stream (the 16 x 16 wafer, one sequence of 8 tokens): the cores
    // compute each layer's weights as they arrive, and wait for the rest most of the time.
    const StepPrediction p = predict(2, 1);
    int waiting = 0, computing = 0;
    for (int i = 0; i < 200; ++i) {
        const std::string line = narrateMoment(p, p.stepS * (i + 0.5) / 200, nano());
        ASSERT_FALSE(line.empty()) << i;
        waiting += line.rfind("waiting: ", 0) == 0;
        computing += line.rfind("h.", 0) == 0 || line.rfind("embeddings ", 0) == 0 ||
                     line.rfind("head ", 0) == 0;
    }
    EXPECT_GT(waiting, 150);
    EXPECT_EQ(computing, 0);  // every "h.1 forward" said is inside a "waiting: ... (h.1 forward"
    EXPECT_TRUE(contains(narrateMoment(p, 1e-12, nano()),
                         "waiting: embeddings' weights are still streaming in (embeddings "
                         "forward: the cores compute each part as it arrives)"));
    const std::string phase = narratePhase(p, 2, false, 0, nano());
    EXPECT_TRUE(contains(phase, "; the cores wait for the weights 99% of the phase")) << phase;
    // h.2's stream starts as h.1's last weights are in, a fill latency (ns) before h.1's phase
    // ends (the I/O is busy with h.1's until then): it is not said to stream in beside it.
    EXPECT_FALSE(contains(phase, "stream into")) << phase;
    TimelineSpan touching = *std::find_if(p.spans.begin(), p.spans.end(), [](const auto& s) {
        return s.system == 0 && s.layer == 2 && s.kind == SpanKind::Forward;
    });
    StepPrediction nudged = p;  // the next stream starting a rounding error early
    for (auto& s : nudged.spans)
        if (s.system == 0 && s.layer == 3 && s.kind == SpanKind::StreamIn && !s.backwardPass)
            s.startS = touching.endS - 0.02 * (touching.endS - touching.startS);
    EXPECT_EQ(inFlightDuring(nudged, touching, nano()).streamingIn, std::vector<int>{3});
    // Compute-bound, the same moments are phases, not waiting.
    const StepPrediction busy = predict(2, 1024);
    const std::string mid = narrateMoment(busy, phaseMidpoint(busy, 2, false), nano());
    EXPECT_EQ(mid.rfind("h.1 forward: ", 0), 0u) << mid;
    EXPECT_FALSE(contains(mid, "wait")) << mid;
    EXPECT_EQ(narrateMoment(p, p.stepS * 2, nano()), "");
}

TEST(Narration, TheLastWorkOfTheStepIsAnUpdateInMemoryX) {
    const StepPrediction p = predict(2, 1024);
    const std::string line = narrateMoment(p, p.stepS * (1 - 1e-9), nano());
    EXPECT_EQ(line.rfind("MemoryX updates ", 0), 0u) << line;
}

TEST(Narration, SeveralSystemsComputeTheSameLayerEach) {
    const StepPrediction p = predict(2, 1024, 4);
    const std::string line = narratePhase(p, 2, false, 0, nano(4));
    EXPECT_TRUE(contains(line, "on each of the 4 systems, the 256 cores multiply")) << line;
    EXPECT_TRUE(contains(line, "broadcast from MemoryX by SwarmX")) << line;
}

TEST(Narration, APredictionImpliesItsContextAndItsLastPhase) {
    StepInput in{ws::testing::nanoShape(), 4, 128, 2, nullptr};
    in.microBatch = 2;
    in.weightBufferLayers = 1;
    auto p = predictStep(teaching(), in);
    ASSERT_TRUE(p.ok()) << p.error().message;
    const NarrationContext c = narrationContext(*p);
    EXPECT_EQ(c.numBlocks, 4);
    EXPECT_EQ(c.numSystems, 2);
    EXPECT_EQ(c.cores, 256);
    EXPECT_EQ(c.microBatches, 2);
    EXPECT_EQ(c.bufferSlots, 1);
    // The backward pass ends at the embeddings, of the last micro-batch.
    const TimelineSpan* last = lastPhase(*p);
    ASSERT_NE(last, nullptr);
    EXPECT_EQ(last->layer, 0);
    EXPECT_EQ(last->kind, SpanKind::Backward);
    EXPECT_EQ(last->micro, 1);
    EXPECT_EQ(lastPhase(StepPrediction{}), nullptr);
}

}  // namespace
}  // namespace ws::wafer
