// SPDX-License-Identifier: GPL-3.0-or-later
// The cycle model: hand-computable cycle counts, conservation of work over the cores, the
// schedule's time split adding up, stream- vs compute-bound layers, SwarmX depth, the errors
// raised before any work, and utilization frames.
#include <gtest/gtest.h>

#include <numeric>

#include "engine/wafer/cycle_model.h"
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

using ws::testing::nanoShape;

const WaferOp& findOp(const LayerOps& l, const std::string& name) {
    for (const auto& op : l.ops)
        if (op.name == name) return op;
    throw std::runtime_error("no op " + name);
}

TEST(CycleModel, MatmulCyclesAreTheTileOverFmacRate) {
    const WaferSpec spec = teaching();
    LayerOps block = blockOps(nanoShape(), 2, 64, Pass::Forward, spec, nullptr);
    ASSERT_TRUE(planLayer(block, spec).ok());
    const WaferOp& qkv = findOp(block, "qkv");  // X[128, 128] . W[128, 384] + bias
    // Busiest core: its tile x (K FMACs + 1 bias add) / (4 FMACs x efficiency 0.5).
    const double tile = double(qkv.mapping.m.block * qkv.mapping.n.block);
    EXPECT_DOUBLE_EQ(maxCoreCycles(qkv, spec), tile * (128 + 1) / (4 * 0.5));
    // Summed over the cores, the work is exactly the matmul's.
    double total = 0;
    for (int r = 0; r < 16; ++r)
        for (int c = 0; c < 16; ++c) total += coreCycles(qkv, r, c, spec);
    EXPECT_DOUBLE_EQ(total, 128.0 * 384 * (128 + 1) / (4 * 0.5));
}

TEST(CycleModel, FramesAgreeWithPerCoreCycles) {
    const WaferSpec spec = teaching();
    for (Pass pass : {Pass::Forward, Pass::Backward}) {
        LayerOps block = blockOps(nanoShape(), 64, 128, pass, spec, nullptr);  // chunked, folded
        ASSERT_TRUE(planLayer(block, spec).ok());
        const std::vector<float> busy = coreBusyCycles(block, spec);
        for (int r = 0; r < 16; ++r)
            for (int c = 0; c < 16; ++c) {
                double expected = 0;
                for (const auto& op : block.ops) expected += coreCycles(op, r, c, spec);
                EXPECT_NEAR(busy[size_t(r) * 16 + c], expected, 1e-5 * expected + 1e-3);
            }
    }
}

TEST(CycleModel, FabricCyclesAreTheBusiestLinkOverItsWidth) {
    const WaferSpec spec = teaching();
    LayerOps block = blockOps(nanoShape(), 2, 64, Pass::Forward, spec, nullptr);
    ASSERT_TRUE(planLayer(block, spec).ok());
    const WaferOp& fc = findOp(block, "fc");  // X panels of K = 128 16-bit values per row
    const double rowBytes = double(fc.mapping.m.block) * 128 * 2;
    const double colBytes = double(fc.mapping.n.block) * 128 * 2;
    EXPECT_DOUBLE_EQ(fabricCycles(fc, spec), std::max(rowBytes, colBytes) / 4);
    EXPECT_DOUBLE_EQ(fillCycles(spec), 32);  // 16 + 16 hops of one cycle
}

// Frozen layers (fine-tuning's frozen embeddings and blocks) stream no gradient out and get no
// update, as the streaming executor does; the others stream theirs as before.
TEST(CycleModel, FrozenLayersStreamNoGradientsOut) {
    StepInput all{nanoShape(), 8, 128, 1, nullptr};
    StepInput frozen = all;
    frozen.frozenLayers = {true, true, false, false, false, false};  // embeddings, h.0
    auto a = predictStep(teaching(), all, {.frames = false});
    auto f = predictStep(teaching(), frozen, {.frames = false});
    ASSERT_TRUE(a.ok() && f.ok());
    auto count = [](const StepPrediction& p, SpanKind kind, int layer) {
        int n = 0;
        for (const auto& sp : p.spans) n += sp.kind == kind && sp.layer == layer;
        return n;
    };
    for (int layer : {0, 1}) {
        EXPECT_EQ(count(*a, SpanKind::StreamOut, layer), 1);
        EXPECT_EQ(count(*f, SpanKind::StreamOut, layer), 0) << layer;
        EXPECT_EQ(count(*f, SpanKind::Update, layer), 0) << layer;
    }
    for (int layer = 2; layer <= 5; ++layer)
        EXPECT_EQ(count(*f, SpanKind::StreamOut, layer), 1) << layer;
    EXPECT_LT(f->gradientStreamS, a->gradientStreamS);
    EXPECT_LT(f->optimizerS, a->optimizerS);
}

TEST(CycleModel, TimeSplitAddsUpAndFramesAreFractions) {
    StepInput in{nanoShape(), 8, 128, 1, nullptr};
    auto p = predictStep(teaching(), in);
    ASSERT_TRUE(p.ok()) << p.error().message;
    EXPECT_EQ(p->layers.size(), size_t(2 * (4 + 2)));
    const auto& s = p->split;
    EXPECT_NEAR(s.compute + s.streaming + s.fabric + s.reduce + s.bubble, p->stepS,
                1e-9 * p->stepS);
    EXPECT_GE(p->stepS, p->forwardS + p->backwardS);
    EXPECT_GT(p->mfu, 0);
    EXPECT_LT(p->mfu, 1);
    EXPECT_DOUBLE_EQ(p->tokensPerS, 8.0 * 128 / p->stepS);
    ASSERT_EQ(p->frames.size(), 7u);
    for (const auto& f : p->frames) {
        EXPECT_EQ(f.rows, 16);
        EXPECT_EQ(f.cols, 16);
        for (float v : f.busy) {
            EXPECT_GE(v, 0.0f);
            EXPECT_LE(v, 1.0f + 1e-5f) << f.label;
        }
    }
    EXPECT_EQ(p->frames.back().label, "step");
    for (const auto& l : p->layers) {
        // Busy + stalls never exceed the layer's time; links carry the layer's traffic.
        EXPECT_LE(l.computeS + l.waitFabricS + l.waitWeightsS, l.timeS * (1 + 1e-9)) << l.layer;
        EXPECT_EQ(l.rowLinkBytes.size(), 16u);
        EXPECT_EQ(l.colLinkBytes.size(), 16u);
        EXPECT_GT(l.sramBytesPerCore, l.tileSramBytes);
    }
    double fcRowBytes = 0;
    for (double b : p->layers[1].rowLinkBytes) fcRowBytes = std::max(fcRowBytes, b);
    EXPECT_GT(fcRowBytes, 0);
    // Spans: stream-in, compute for every layer phase; stream-out and update in backward.
    int computeSpans = 0, updates = 0;
    for (const auto& sp : p->spans) {
        EXPECT_LE(sp.startS, sp.endS);
        computeSpans += sp.kind == SpanKind::Forward || sp.kind == SpanKind::Backward;
        updates += sp.kind == SpanKind::Update;
    }
    EXPECT_EQ(computeSpans, 12);
    EXPECT_EQ(updates, 6);
}

TEST(CycleModel, SmallBatchesAreBoundByTheWeightStream) {
    const WaferSpec spec = teaching();
    auto tiny = predictStep(spec, {nanoShape(), 1, 8, 1, nullptr}, {.frames = false});
    ASSERT_TRUE(tiny.ok()) << tiny.error().message;
    EXPECT_FALSE(tiny->weightStreamingHidden);
    EXPECT_EQ(tiny->layers[1].binding, Binding::WeightStream);  // h.0 forward
    EXPECT_GT(tiny->split.streaming, tiny->split.compute);
    // Prefetch hides the stream once a layer computes longer than its weights take to arrive:
    // each streamed weight must meet ~peak / I/O bandwidth / efficiency ~ 90k tokens here.
    auto big = predictStep(spec, {nanoShape(), 1024, 128, 1, nullptr}, {.frames = false});
    ASSERT_TRUE(big.ok()) << big.error().message;
    EXPECT_TRUE(big->weightStreamingHidden);
    EXPECT_NE(big->layers[1].binding, Binding::WeightStream);
}

// Issue 14: weights stream in at the run's width (an fp32 run's 4-byte weights take twice a bf16
// run's 2-byte ones; 0 keeps the spec's stream_bytes_per_value, 2); gradients out keep the spec's.
TEST(CycleModel, WeightStreamTimeFollowsTheBytesPerWeight) {
    const WaferSpec spec = teaching();
    ASSERT_EQ(spec.streamBytesPerValue, 2);
    StepInput in{nanoShape(), 1, 8, 1, nullptr};
    auto byDefault = predictStep(spec, in, {.frames = false});
    in.weightBytesPerValue = 2;
    auto bf16 = predictStep(spec, in, {.frames = false});
    in.weightBytesPerValue = 4;
    auto fp32 = predictStep(spec, in, {.frames = false});
    ASSERT_TRUE(byDefault.ok() && bf16.ok() && fp32.ok());
    ASSERT_EQ(fp32->layers.size(), bf16->layers.size());
    double in16 = 0, in32 = 0;
    for (size_t i = 0; i < bf16->layers.size(); ++i) {
        EXPECT_EQ(byDefault->layers[i].weightStreamS, bf16->layers[i].weightStreamS);
        EXPECT_DOUBLE_EQ(fp32->layers[i].weightStreamS, 2 * bf16->layers[i].weightStreamS);
        EXPECT_EQ(fp32->layers[i].gradStreamS, bf16->layers[i].gradStreamS);
        in16 += bf16->layers[i].weightStreamS;
        in32 += fp32->layers[i].weightStreamS;
    }
    const double io = spec.ioBytesPerS();
    EXPECT_NEAR(in16 * io / 2, in32 * io / 4, 1e-6 * in32 * io);  // the same weights
    EXPECT_GT(in16, 0);
    // This tiny batch is bound by the weight stream, so the fp32 step is slower.
    EXPECT_GT(fp32->stepS, bf16->stepS);
}

// Issue 17: wafer.weight_buffer_layers. Two slots or more plan the prefetching schedule (a third
// slot is not modelled, so it changes nothing); one slot serialises every stream-in with compute.
TEST(CycleModel, TwoOrMoreWeightSlotsKeepThePrefetchSchedule) {
    const WaferSpec spec = teaching();
    for (int batch : {1, 1024}) {  // stream-bound and compute-bound
        StepInput in{nanoShape(), batch, batch == 1 ? 8 : 128, 2, nullptr};
        auto byDefault = predictStep(spec, in, {.frames = false});
        ASSERT_TRUE(byDefault.ok()) << byDefault.error().message;
        for (int slots : {2, 3, 4}) {
            in.weightBufferLayers = slots;
            auto p = predictStep(spec, in, {.frames = false});
            ASSERT_TRUE(p.ok()) << p.error().message;
            EXPECT_EQ(p->stepS, byDefault->stepS) << slots;
            EXPECT_EQ(p->split.streaming, byDefault->split.streaming) << slots;
            ASSERT_EQ(p->spans.size(), byDefault->spans.size());
            for (size_t i = 0; i < p->spans.size(); ++i) {
                EXPECT_EQ(p->spans[i].startS, byDefault->spans[i].startS) << slots << " " << i;
                EXPECT_EQ(p->spans[i].endS, byDefault->spans[i].endS) << slots << " " << i;
            }
        }
    }
}

TEST(CycleModel, OneWeightSlotCostsStreamPlusComputePerLayerPhase) {
    const WaferSpec spec = teaching();
    for (int batch : {1, 1024}) {
        StepInput in{nanoShape(), batch, batch == 1 ? 8 : 128, 1, nullptr};
        auto two = predictStep(spec, in, {.frames = false});
        in.weightBufferLayers = 1;
        auto one = predictStep(spec, in, {.frames = false});
        ASSERT_TRUE(two.ok() && one.ok());
        // Each layer phase: wait for all of its weights (stream + SwarmX tree latency), then
        // compute (busy: compute + fabric excess + fill); the phases follow one another.
        const double tree = spec.cluster.treeDepth(1) * spec.cluster.swarmxHopLatencyUs * 1e-6;
        double expectedEnd = 0;
        for (const auto& l : one->layers) {
            expectedEnd += (l.weightStreamS > 0 ? l.weightStreamS + tree : 0.0);
            expectedEnd += l.computeS + l.fabricS;
            // No stream left to hide behind: the phase is its compute.
            EXPECT_NEAR(l.timeS, l.computeS + l.fabricS, 1e-9 * one->stepS) << l.layer;
        }
        double lastComputeEnd = 0;
        std::vector<TimelineSpan> streams, computes;
        for (const auto& sp : one->spans) {
            if (sp.kind == SpanKind::StreamIn) streams.push_back(sp);
            if (sp.kind == SpanKind::Forward || sp.kind == SpanKind::Backward) {
                computes.push_back(sp);
                lastComputeEnd = std::max(lastComputeEnd, sp.endS);
            }
        }
        EXPECT_NEAR(lastComputeEnd, expectedEnd, 1e-9 * expectedEnd) << batch;
        // No stream-in overlaps any compute: the one slot is either filling or being read.
        for (const auto& s : streams)
            for (const auto& c : computes)
                EXPECT_TRUE(s.endS <= c.startS + 1e-15 || c.endS <= s.startS + 1e-15)
                    << "layer " << s.layer << " streams during layer " << c.layer;
        // What prefetching hides is what one slot pays: the whole stream, even compute-bound.
        EXPECT_GT(one->stepS, two->stepS) << batch;
        EXPECT_GT(one->split.streaming, two->split.streaming) << batch;
        EXPECT_FALSE(one->weightStreamingHidden);
        EXPECT_EQ(one->layers[1].binding, Binding::WeightStream);
        // The parts still add up.
        const TimeSplit& t = one->split;
        EXPECT_NEAR(t.compute + t.streaming + t.fabric + t.reduce + t.bubble, one->stepS,
                    1e-9 * one->stepS);
    }
}

// Without lockstep jitter (cluster_links.h) more systems add only SwarmX's tree latency; with
// the shipped jitter this stream-bound nano step loses up to the lockstep factor, no more.
TEST(CycleModel, MoreSystemsAddTreeLatencyAndLockstep) {
    WaferSpec spec = teaching();
    spec.cluster.swarmxPortJitter = 0;
    auto one = predictStep(spec, {nanoShape(), 16, 128, 1, nullptr}, {.frames = false});
    auto sixteen = predictStep(spec, {nanoShape(), 16, 128, 16, nullptr}, {.frames = false});
    ASSERT_TRUE(one.ok() && sixteen.ok());
    EXPECT_EQ(sixteen->treeDepth, 2);
    EXPECT_GT(sixteen->stepS, one->stepS);
    EXPECT_NEAR(sixteen->tokensPerS / one->tokensPerS, 16.0, 16.0 * 0.09);
    const WaferSpec shipped = teaching();
    auto locked = predictStep(shipped, {nanoShape(), 16, 128, 16, nullptr}, {.frames = false});
    ASSERT_TRUE(locked.ok());
    EXPECT_GT(locked->lockstep, 1.0);
    EXPECT_LT(locked->tokensPerS, sixteen->tokensPerS);
    EXPECT_GE(locked->tokensPerS / one->tokensPerS, 16.0 / locked->lockstep * 0.99);
    int reduces = 0;
    for (const auto& sp : sixteen->spans) reduces += sp.kind == SpanKind::Reduce;
    EXPECT_EQ(reduces, 6);  // SwarmX reduces every layer's gradient once, over all systems
}

TEST(CycleModel, ErrorsComeBeforeAnyWork) {
    WaferSpec spec = teaching();
    auto tooMany = predictStep(spec, {nanoShape(), 1, 8, 17, nullptr});
    ASSERT_FALSE(tooMany.ok());
    EXPECT_NE(tooMany.error().message.find("SwarmX limit"), std::string::npos);
    spec.sramBytesPerCore = 64;
    auto noRoom = predictStep(spec, {nanoShape(), 1, 8, 1, nullptr});
    ASSERT_FALSE(noRoom.ok());
    EXPECT_NE(noRoom.error().message.find("cannot fit its tile"), std::string::npos);
    spec = teaching();
    EXPECT_FALSE(predictStep(spec, {nanoShape(), 1, 256, 1, nullptr}).ok());  // T > positions
    spec.gridRows = 0;
    EXPECT_FALSE(predictStep(spec, {nanoShape(), 1, 8, 1, nullptr}).ok());
}

TEST(CycleModel, TooManyRowsForSramAreChunkedNotRefused) {
    WaferSpec spec = teaching();
    auto p = predictStep(spec, {nanoShape(), 64, 128, 1, nullptr}, {.frames = false});
    ASSERT_TRUE(p.ok()) << p.error().message;
    int64_t maxChunks = 1;
    for (const auto& l : p->layers)
        for (const auto& op : l.ops) maxChunks = std::max(maxChunks, op.chunks);
    EXPECT_GT(maxChunks, 1);  // 8192 tokens x 256 logits do not fit one tile per core
    for (const auto& l : p->layers)
        EXPECT_LE(l.tileSramBytes, kTileSramShare * double(spec.sramBytesPerCore));
}

TEST(CycleModel, ClippingMovesTheUpdatesAfterTheLastGradient) {
    const WaferSpec spec = teaching();
    StepInput in{nanoShape(), 16, 128, 2, nullptr};
    auto beside = predictStep(spec, in, {.frames = false});
    in.updatesAfterNorm = true;
    auto after = predictStep(spec, in, {.frames = false});
    ASSERT_TRUE(beside.ok() && after.ok());
    double lastReduceEnd = 0, firstUpdateBeside = 1e9, firstUpdateAfter = 1e9;
    for (const auto& s : after->spans) {
        if (s.kind == SpanKind::Reduce) lastReduceEnd = std::max(lastReduceEnd, s.endS);
        if (s.kind == SpanKind::Update) firstUpdateAfter = std::min(firstUpdateAfter, s.startS);
    }
    for (const auto& s : beside->spans)
        if (s.kind == SpanKind::Update) firstUpdateBeside = std::min(firstUpdateBeside, s.startS);
    EXPECT_LT(firstUpdateBeside, lastReduceEnd);  // without clipping: beside the backward
    EXPECT_GE(firstUpdateAfter, lastReduceEnd);   // with clipping: once every gradient is in
    EXPECT_GT(after->stepS, beside->stepS);
    EXPECT_DOUBLE_EQ(after->optimizerS, beside->optimizerS);  // the same work, later
}

TEST(CycleModel, MicroBatchesStreamWeightsPerPassAndUpdateOnce) {
    const WaferSpec spec = teaching();
    StepInput whole{nanoShape(), 64, 128, 1, nullptr};
    StepInput micro = whole;
    micro.microBatch = 16;
    auto a = predictStep(spec, whole, {.frames = false});
    auto b = predictStep(spec, micro, {.frames = false});
    ASSERT_TRUE(a.ok() && b.ok()) << (a.ok() ? b.error().message : a.error().message);
    EXPECT_EQ(b->microBatch, 16);
    EXPECT_EQ(b->layers.size(), 4 * a->layers.size());
    int streamOuts = 0, updates = 0, streamIns = 0;
    for (const auto& s : b->spans) {
        streamOuts += s.kind == SpanKind::StreamOut;
        updates += s.kind == SpanKind::Update;
        streamIns += s.kind == SpanKind::StreamIn;
    }
    EXPECT_EQ(streamOuts, 4 * 6);   // every micro-batch's gradients leave the wafer
    EXPECT_EQ(updates, 6);          // MemoryX updates each layer once
    EXPECT_EQ(streamIns, 4 * 11);   // weights in for every pass (embeddings' backward needs none)
    EXPECT_GT(b->stepS, a->stepS);  // four times the weight traffic for the same work
    EXPECT_NEAR(b->forwardS + b->backwardS + b->split.bubble, b->stepS, 0.02 * b->stepS);
    EXPECT_LT(b->activations.storedBytes, a->activations.storedBytes);
    micro.microBatch = 48;  // does not divide 64
    EXPECT_FALSE(predictStep(spec, micro).ok());
    // auto: the largest divisor of the batch whose activations fit the SRAM.
    const int fit = largestFittingMicroBatch(spec, nanoShape(), 64, 128);
    EXPECT_EQ(64 % fit, 0);
    EXPECT_TRUE(activationFit(spec, nanoShape(), fit, 128).fits);
    if (fit < 64) {
        int next = fit + 1;
        while (64 % next) ++next;
        EXPECT_FALSE(activationFit(spec, nanoShape(), next, 128).fits);
    }
}

TEST(Utilization, DownsampleAveragesToTheDisplaySize) {
    const int R = 750, C = 994;
    std::vector<float> busy(size_t(R) * C);
    for (int r = 0; r < R; ++r)
        for (int c = 0; c < C; ++c) busy[size_t(r) * C + c] = (r + c) % 2 ? 1.0f : 0.0f;
    const UtilizationFrame f = downsample("x", busy, R, C, 256, 256);
    EXPECT_EQ(f.rows, 256);
    EXPECT_EQ(f.cols, 256);
    EXPECT_NEAR(f.mean, 0.5, 1e-3);
    EXPECT_EQ(f.min, 0.0);
    EXPECT_EQ(f.max, 1.0);
    const double displayMean =
        std::accumulate(f.busy.begin(), f.busy.end(), 0.0) / double(f.busy.size());
    EXPECT_NEAR(displayMean, 0.5, 0.02);
}

TEST(ActivationFit, CountsWhatBackwardKeeps) {
    const WaferSpec spec = teaching();
    const ActivationFit f = activationFit(spec, nanoShape(), 2, 64);
    // 34 bytes per token and channel per block + the embedding output.
    EXPECT_DOUBLE_EQ(f.storedBytes, 2.0 * 64 * 128 * (34 * 4 + 2));
    EXPECT_DOUBLE_EQ(f.availableBytes, 256.0 * 49152);
    EXPECT_TRUE(f.fits);
    EXPECT_GE(f.maxSequences, 2);
    EXPECT_FALSE(activationFit(spec, nanoShape(), 64, 128).fits);
}

// A layer phase's frame is over its compute window (its ops back to back), not over its span:
// on the teaching wafer a small block waits ~98 % of its phase for weights, and over the span
// every core would read ~1 % whatever its matrices do. The window is stated in the frame, no
// core exceeds it, and busy x window is the core's real busy time; the step's frame stays over
// the whole step.
TEST(CycleModel, PhaseFramesAreOverTheComputeWindow) {
    model::GptShape shape{
        .vocab = 256, .channels = 64, .layers = 2, .heads = 2, .ffn = 256, .maxPositions = 64};
    StepInput in{shape, 8, 64, 1, nullptr};
    in.weightBytesPerValue = 4;
    auto p = predictStep(teaching(), in);
    ASSERT_TRUE(p.ok()) << p.error().message;
    const UtilizationFrame* block = p->frameFor(1, false);
    ASSERT_NE(block, nullptr);
    EXPECT_EQ(block->window, UtilizationFrame::Window::Compute);
    const LayerTiming* timing = nullptr;
    for (const auto& l : p->layers)
        if (l.layer == "h.0" && l.pass == Pass::Forward) timing = &l;
    ASSERT_NE(timing, nullptr);
    // The window: the phase's ops back to back (each max(compute, fabric) + fill).
    double opsS = 0;
    for (const auto& op : timing->ops) opsS += op.timeS;
    EXPECT_NEAR(block->windowS, opsS, 1e-12);
    EXPECT_LT(block->windowS, 0.05 * timing->timeS);  // the phase is mostly waiting here
    EXPECT_GT(block->mean, 0.5);                      // so the window shows the cores' load
    EXPECT_LE(block->max, 1.0 + 1e-6);
    // busy x window = the core's busy cycles over the phase's ops.
    LayerOps ops = blockOps(shape, 8, 64, Pass::Forward, teaching(), nullptr);
    ASSERT_TRUE(planLayer(ops, teaching()).ok());
    const std::vector<float> cycles = coreBusyCycles(ops, teaching());
    const double clock = teaching().clockHz();
    for (size_t j = 0; j < cycles.size(); j += 37)
        EXPECT_NEAR(block->busy[j] * block->windowS * clock, cycles[j], 1e-4 * cycles[j] + 1);
    // Over the phase's span the same core would be far less busy: the layer's mean says so.
    EXPECT_LT(timing->meanBusy, 0.1 * block->mean);
    // The step's frame: over the whole step.
    const UtilizationFrame* step = p->frameFor(-1, false);
    ASSERT_NE(step, nullptr);
    EXPECT_EQ(step->window, UtilizationFrame::Window::Step);
    EXPECT_DOUBLE_EQ(step->windowS, p->stepS);
    EXPECT_LT(step->mean, 0.05);
}

}  // namespace
}  // namespace ws::wafer
