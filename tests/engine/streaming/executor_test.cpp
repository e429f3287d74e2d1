// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/streaming/executor.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <mutex>
#include <new>

#include "engine/model/model_facts.h"
#include "engine/model/parameters.h"
#include "streaming_test_util.h"

namespace ws::streaming {
namespace {
using namespace testing;

struct Trajectory {
    std::vector<float> weights;
    std::vector<double> losses;
    std::vector<double> norms;
};

constexpr int kB = 8, kT = 8, kSteps = 4;

Trajectory trainPlain(const model::GptShape& shape, double maxNorm) {
    model::ParameterTable table(shape);
    config::ModelConfig mc;
    std::vector<float> params(table.totalSize()), grads(table.totalSize());
    model::initParameters(table, mc, 42, params.data());
    optim::Optimizer opt(adamw(maxNorm), groupsOf(table), table.totalSize());
    model::Gpt<float> gpt(shape, kB, kT);
    Trajectory t;
    std::vector<int32_t> in, out;
    for (int step = 0; step < kSteps; ++step) {
        batch(step, kB, kT, shape.vocab, in, out);
        std::fill(grads.begin(), grads.end(), 0.0f);
        const float loss = gpt.forward(params.data(), in.data(), out.data(), true, 0);
        // The executor reports the cross-entropy alone (an MoE model trains on it plus the
        // load-balancing loss, which it reports apart).
        t.losses.push_back(shape.hasMoe() ? gpt.lastCrossEntropy() : loss);
        gpt.backward(params.data(), grads.data());
        const double norm = optim::globalNorm(grads.data(), grads.size());
        t.norms.push_back(norm);
        opt.update(params.data(), grads.data(), 1e-2, optim::clipFactor(norm, maxNorm), step + 1);
    }
    t.weights = params;
    return t;
}

Trajectory trainStreamed(const model::GptShape& shape, double maxNorm, StreamingOptions options,
                         StreamingStats* stats = nullptr, std::vector<Span>* spans = nullptr) {
    model::ParameterTable table(shape);
    config::ModelConfig mc;
    const auto oc = adamw(maxNorm);
    auto mx = MemoryX::create(config::MemoryXConfig{}, table.totalSize(),
                              optim::Optimizer::stateCopies(oc), largestLayerSize(table));
    EXPECT_TRUE(mx.ok());
    model::initParameters(table, mc, 42, (*mx)->weights());
    optim::Optimizer opt(oc, groupsOf(table), table.totalSize(), (*mx)->optimizerState());
    std::mutex spansMutex;
    SpanSink sink;
    if (spans) {
        sink = [&](const Span& s) {
            std::lock_guard lock(spansMutex);
            spans->push_back(s);
        };
    }
    StreamingExecutor exec(shape, kB, kT, options, **mx, opt, sink);
    Trajectory t;
    std::vector<int32_t> in, out;
    for (int step = 0; step < kSteps; ++step) {
        batch(step, kB, kT, shape.vocab, in, out);
        const auto r = exec.step(step, in.data(), out.data(), 1e-2, maxNorm, step + 1, 0);
        t.losses.push_back(r.loss);
        t.norms.push_back(r.gradNorm);
    }
    t.weights.assign((*mx)->weights(), (*mx)->weights() + table.totalSize());
    if (stats) *stats = exec.stats();
    return t;
}

class StreamedEqualsPlain : public ::testing::TestWithParam<std::tuple<bool, double, int>> {};

TEST_P(StreamedEqualsPlain, BitForBitWithOneSystem) {
    const auto [tied, maxNorm, bufferLayers] = GetParam();
    const auto shape = streamingShape(tied);
    const auto plain = trainPlain(shape, maxNorm);
    StreamingOptions options;
    options.weightBufferLayers = bufferLayers;
    const auto streamed = trainStreamed(shape, maxNorm, options);
    EXPECT_EQ(streamed.losses, plain.losses);
    EXPECT_EQ(streamed.norms, plain.norms);
    ASSERT_EQ(streamed.weights.size(), plain.weights.size());
    EXPECT_TRUE(streamed.weights == plain.weights) << "weights differ";
}

INSTANTIATE_TEST_SUITE_P(TiedClipBuffer, StreamedEqualsPlain,
                         ::testing::Combine(::testing::Bool(), ::testing::Values(0.0, 0.5),
                                            ::testing::Values(1, 2, 3)));

// μP: the multipliers live in the shape and the per-layer LRs in the optimizer groups, which the
// streamed update applies per layer; still bit-for-bit the plain step.
model::GptShape mupShape(bool tied) {
    model::GptShape s = streamingShape(tied);
    s.mup = true;
    s.widthMult = 4.0;  // a 16-wide model on a base of 4
    s.ffnWidthMult = 2.0;
    s.embeddingsScale = 10.0;
    s.outputLogitsScale = 1.0 / 4.0;
    s.scaleQkDotByD = true;
    return s;
}

TEST(StreamingExecutor, MupStreamedEqualsPlainBitForBit) {
    for (const bool tied : {true, false}) {
        const auto shape = mupShape(tied);
        ASSERT_EQ(model::ParameterTable(shape).find("h.0.mlp.c_proj.weight")->lrScale, 0.5);
        const auto plain = trainPlain(shape, 0.5);
        StreamingOptions options;
        const auto streamed = trainStreamed(shape, 0.5, options);
        EXPECT_EQ(streamed.losses, plain.losses);
        EXPECT_EQ(streamed.norms, plain.norms);
        EXPECT_TRUE(streamed.weights == plain.weights) << "weights differ";
        // and μP really changed the run
        EXPECT_NE(plain.losses, trainPlain(streamingShape(tied), 0.5).losses);
    }
}

// bf16 mode (oneDNN bf16 matmuls): streaming still changes no bit of plain training.
TEST(StreamingExecutor, Bf16StreamedEqualsPlainBitForBit) {
    for (const bool tied : {true, false}) {
        model::GptShape shape = streamingShape(tied);
        shape.bf16 = true;
        const auto plain = trainPlain(shape, 0.5);
        StreamingOptions options;
        const auto streamed = trainStreamed(shape, 0.5, options);
        EXPECT_EQ(streamed.losses, plain.losses);
        EXPECT_EQ(streamed.norms, plain.norms);
        EXPECT_TRUE(streamed.weights == plain.weights) << "weights differ";
        EXPECT_NE(plain.losses, trainPlain(streamingShape(tied), 0.5).losses)
            << "bf16 had no effect";
    }
}

// Several systems (or micro-batches) compute the same mean gradient summed in another order.
// float32 sums of a few terms differ by a few ulp per step; over 4 Adam steps at lr 1e-2 the
// weights may drift by ~1e-6 relative, far below the 1e-4 that a wrong shard or scale would give
// (each of those changes weights by about lr = 1e-2).
// Sizes first: a run that lost steps or weights must not pass by comparing only its prefix.
void expectClose(const Trajectory& a, const Trajectory& b) {
    ASSERT_EQ(a.losses.size(), b.losses.size()) << "the runs took different numbers of steps";
    ASSERT_EQ(a.norms.size(), b.norms.size()) << "the runs reported different numbers of norms";
    ASSERT_EQ(a.weights.size(), b.weights.size()) << "the runs have different weight counts";
    ASSERT_FALSE(a.weights.empty()) << "no weights to compare";
    for (size_t i = 0; i < a.losses.size(); ++i) EXPECT_NEAR(a.losses[i], b.losses[i], 1e-5);
    double worst = 0.0;
    for (size_t i = 0; i < a.weights.size(); ++i) {
        worst = std::max(worst, double(std::abs(a.weights[i] - b.weights[i])));
    }
    EXPECT_LT(worst, 1e-4);
}

TEST(StreamingExecutor, FourSystemsMatchOneSystem) {
    const auto shape = streamingShape();
    StreamingOptions one, four;
    four.systems = 4;
    expectClose(trainStreamed(shape, 0.5, one), trainStreamed(shape, 0.5, four));
}

TEST(StreamingExecutor, MicroBatchesMatchOneBigBatch) {
    const auto shape = streamingShape(false);
    StreamingOptions whole, micro;
    micro.microBatch = 2;  // 4 micro-batches of 2 sequences
    expectClose(trainStreamed(shape, 0.0, whole), trainStreamed(shape, 0.0, micro));
    StreamingOptions mixed;
    mixed.systems = 2;
    mixed.microBatch = 2;  // 2 systems x 2 micro-batches
    expectClose(trainStreamed(shape, 0.5, whole), trainStreamed(shape, 0.5, mixed));
}

TEST(StreamingExecutor, WaferNeverHoldsMoreThanItsBuffer) {
    const auto shape = streamingShape();
    for (int k : {1, 2, 3}) {
        StreamingOptions options;
        options.weightBufferLayers = k;
        options.systems = 2;
        StreamingStats stats;
        trainStreamed(shape, 0.0, options, &stats);
        EXPECT_LE(stats.maxResidentLayers, k);
        EXPECT_GE(stats.maxResidentLayers, 1);
    }
    // With double buffering the loader really runs ahead: two layers were on the wafer at once.
    StreamingOptions doubleBuffer;
    StreamingStats stats;
    trainStreamed(shape, 0.0, doubleBuffer, &stats);
    EXPECT_EQ(stats.maxResidentLayers, 2);
}

TEST(StreamingExecutor, ReportsEverySpanWithBytes) {
    const auto shape = streamingShape();
    StreamingOptions options;
    options.systems = 2;
    std::vector<Span> spans;
    StreamingStats stats;
    trainStreamed(shape, 0.5, options, &stats, &spans);
    const model::ParameterTable table(shape);
    const int layers = int(table.layers().size());  // embeddings, 3 blocks, head
    auto count = [&](SpanKind kind) {
        return std::count_if(spans.begin(), spans.end(),
                             [&](const Span& s) { return s.kind == kind; });
    };
    // Per step and system: every layer forward and backward; weights stream in for every visit
    // but the embedding backward (it needs no weights); one reduce and one update per layer.
    EXPECT_EQ(count(SpanKind::Forward), kSteps * 2 * layers);
    EXPECT_EQ(count(SpanKind::Backward), kSteps * 2 * layers);
    EXPECT_EQ(count(SpanKind::StreamIn), kSteps * 2 * (2 * layers - 1));
    EXPECT_EQ(count(SpanKind::StreamOut), kSteps * 2 * layers);
    EXPECT_EQ(count(SpanKind::Reduce), kSteps * layers);
    EXPECT_EQ(count(SpanKind::Update), kSteps * layers);
    for (const auto& s : spans) {
        EXPECT_LE(s.start, s.end);
        if (s.kind == SpanKind::StreamIn || s.kind == SpanKind::Reduce) {
            EXPECT_GT(s.bytes, 0);
        }
    }
    // Every weight byte that streamed in is accounted: twice per step per system, plus the tied
    // head's second copy of wte, minus the embedding backward.
    const auto wte = int64_t(table.find("wte.weight")->size * sizeof(float));
    const auto emb = int64_t(table.layers()[0].size * sizeof(float));
    const int64_t perStep = 2 * int64_t(table.totalSize() * sizeof(float)) + 2 * wte - emb;
    EXPECT_EQ(stats.bytesStreamedIn, kSteps * 2 * perStep);
}

// The wall-time figures (what a run across processes reports as compute versus sending
// gradients out) are the spans' durations, summed over the systems: compute is the forward and
// backward spans, gradients out the stream-out spans, weights in the stream-in spans.
TEST(StreamingExecutor, WallTimesAreTheSpansDurations) {
    const auto shape = streamingShape();
    StreamingOptions options;
    options.systems = 2;
    std::vector<Span> spans;
    StreamingStats stats;
    trainStreamed(shape, 0.5, options, &stats, &spans);
    double compute = 0.0, out = 0.0, in = 0.0;
    for (const auto& s : spans) {
        const double d = s.end - s.start;
        if (s.kind == SpanKind::Forward || s.kind == SpanKind::Backward) compute += d;
        if (s.kind == SpanKind::StreamOut) out += d;
        if (s.kind == SpanKind::StreamIn) in += d;
    }
    EXPECT_GT(compute, 0.0);
    // Summed in another order than the executor's: equal up to rounding.
    EXPECT_NEAR(stats.computeSec, compute, 1e-9 * compute + 1e-12);
    EXPECT_NEAR(stats.streamOutSec, out, 1e-9 * out + 1e-12);
    EXPECT_NEAR(stats.streamInSec, in, 1e-9 * in + 1e-12);
    // Sending gradients out is not compute: the stream-in overlap (hidden share) still counts
    // compute spans only.
    EXPECT_LE(stats.streamInHiddenSec, stats.streamInSec);
}

// bf16 mode streams each weight as 2 bytes (converted once from MemoryX's fp32 masters), fp32
// mode as 4: every weight figure of a bf16 run is exactly half the fp32 run's, and matches the
// sizes the wafer fit and the config facts use (model_facts.h). The vectors (LayerNorm, biases)
// stream as bf16 too, so this holds for every byte streamed in, not only the matrices.
// Gradients stream out fp32 in both modes.
TEST(StreamingExecutor, Bf16HalvesTheWaferBufferAndTheBytesStreamedIn) {
    for (const bool tied : {true, false}) {
        model::GptShape shape = streamingShape(tied);
        const model::ParameterTable table(shape);
        StreamingOptions options;
        options.systems = 2;
        std::vector<Span> spans32, spans16;
        StreamingStats fp32, bf16;
        trainStreamed(shape, 0.5, options, &fp32, &spans32);
        shape.bf16 = true;
        trainStreamed(shape, 0.5, options, &bf16, &spans16);

        EXPECT_EQ(fp32.bytesPerWeight, 4);
        EXPECT_EQ(bf16.bytesPerWeight, 2);
        const int64_t perPass = model::streamedWeightsPerPass(table);  // one system, fwd + bwd
        EXPECT_EQ(fp32.bytesStreamedIn, kSteps * 2 * perPass * 4);
        EXPECT_EQ(bf16.bytesStreamedIn, kSteps * 2 * perPass * 2);
        // The buffer: two slots of the largest visit; with double buffering its peak is the two
        // largest consecutive visits, whatever they are, in both runs.
        const auto largest = int64_t(model::largestStreamedVisit(table));
        EXPECT_EQ(fp32.waferBufferBytes, 2 * largest * 4);
        EXPECT_EQ(bf16.waferBufferBytes, 2 * largest * 2);
        EXPECT_EQ(fp32.peakWaferBufferBytes, 2 * bf16.peakWaferBufferBytes);
        EXPECT_GT(bf16.peakWaferBufferBytes, largest * 2);  // two layers really were resident
        EXPECT_LE(bf16.peakWaferBufferBytes, bf16.waferBufferBytes);
        EXPECT_EQ(bf16.bytesStreamedOut, fp32.bytesStreamedOut);  // fp32 gradients out
        EXPECT_EQ(fp32.bytesStreamedOut, kSteps * 2 * int64_t(table.totalSize()) * 4);

        // Every published StreamIn span carries the halved bytes.
        auto streamIn = [](const std::vector<Span>& spans) {
            std::vector<int64_t> bytes;
            for (const auto& sp : spans)
                if (sp.kind == SpanKind::StreamIn) bytes.push_back(sp.bytes);
            std::sort(bytes.begin(), bytes.end());
            return bytes;
        };
        const auto in32 = streamIn(spans32), in16 = streamIn(spans16);
        ASSERT_EQ(in32.size(), in16.size());
        ASSERT_FALSE(in16.empty());
        for (size_t i = 0; i < in16.size(); ++i) EXPECT_EQ(in32[i], 2 * in16[i]);
    }
}

// Several systems receive the same bf16 bits (converted once, then broadcast): four systems
// train like one, within the summation-order tolerance of the fp32 test above.
TEST(StreamingExecutor, Bf16FourSystemsMatchOneSystem) {
    model::GptShape shape = streamingShape();
    shape.bf16 = true;
    StreamingOptions one, four;
    four.systems = 4;
    expectClose(trainStreamed(shape, 0.5, one), trainStreamed(shape, 0.5, four));
}

// Llama-family blocks (rotary, RMSNorm, SwiGLU, 2 KV heads for 2 query heads' worth of
// groups, no biases, no wpe) stream like GPT-2's: bit for bit the plain step in fp32 and bf16,
// and four systems train like one.
model::GptShape llamaStreamingShape(bool tied) {
    model::GptShape s = streamingShape(tied);
    s.position = model::GptShape::Position::Rotary;
    s.norm = model::GptShape::Norm::RmsNorm;
    s.mlp = model::GptShape::Mlp::SwiGlu;
    s.kvHeads = 1;  // streamingShape has 2 heads: multi-query
    s.qkvBias = s.attnProjBias = s.mlpBias = false;
    return s;
}

TEST(StreamingExecutor, LlamaBlocksStreamedEqualPlainBitForBit) {
    for (const bool bf16 : {false, true}) {
        for (const bool tied : {true, false}) {
            model::GptShape shape = llamaStreamingShape(tied);
            shape.bf16 = bf16;
            const auto plain = trainPlain(shape, 0.5);
            StreamingOptions options;
            const auto streamed = trainStreamed(shape, 0.5, options);
            EXPECT_EQ(streamed.losses, plain.losses);
            EXPECT_EQ(streamed.norms, plain.norms);
            EXPECT_TRUE(streamed.weights == plain.weights) << "weights differ";
        }
    }
    StreamingOptions one, four;
    four.systems = 4;
    const auto shape = llamaStreamingShape(true);
    expectClose(trainStreamed(shape, 0.5, one), trainStreamed(shape, 0.5, four));
}

// Issue 33: PEFT's Llama targets on a multi-query Llama: the slice adapters (q/k/v_proj on the
// fused c_attn, gate/up_proj on c_fc) and o/down_proj, with adapter dropout, stream like any
// tensor: bit for bit the plain step in fp32 and bf16, and four systems match one (without
// dropout).
TEST(StreamingExecutor, LlamaLoraSlicesStreamedEqualPlainBitForBit) {
    auto adapted = [](bool bf16, double dropout = 0.1) {
        model::GptShape s = llamaStreamingShape(true);
        s.bf16 = bf16;
        s.applyLora(config::LoraConfig{.rank = 2,
                                       .alpha = 4,
                                       .dropout = dropout,
                                       .targets = {"q_proj", "k_proj", "v_proj", "o_proj",
                                                   "gate_proj", "up_proj", "down_proj"}});
        return s;
    };
    for (const bool bf16 : {false, true}) {
        const model::GptShape shape = adapted(bf16);
        ASSERT_TRUE(shape.validate(kB, kT).ok());
        const auto plain = trainPlain(shape, 0.5);
        const auto streamed = trainStreamed(shape, 0.5, StreamingOptions{});
        EXPECT_EQ(streamed.losses, plain.losses) << (bf16 ? "bf16" : "fp32");
        EXPECT_EQ(streamed.norms, plain.norms);
        EXPECT_TRUE(streamed.weights == plain.weights) << "weights differ";
    }
    StreamingOptions one, four;
    four.systems = 4;
    // Without adapter dropout: each system after the first draws its dropout masks from a key of
    // its own (executor.cpp), so with dropout several systems take another (equally valid)
    // trajectory, as GPT-2's LoRA and dropout do.
    expectClose(trainStreamed(adapted(false, 0.0), 0.5, one),
                trainStreamed(adapted(false, 0.0), 0.5, four));
}

// A fresh RAM MemoryX with an executor around it, for the cancel tests.
struct Rig {
    model::ParameterTable table{streamingShape()};
    std::unique_ptr<MemoryX> mx;
    std::unique_ptr<optim::Optimizer> opt;
    std::unique_ptr<StreamingExecutor> exec;
    std::vector<int32_t> in, out;
    explicit Rig(double maxNorm, int micro = 0) {
        mx = std::move(MemoryX::create({}, table.totalSize(), 2, largestLayerSize(table))).value();
        config::ModelConfig mc;
        model::initParameters(table, mc, 42, mx->weights());
        opt = std::make_unique<optim::Optimizer>(adamw(maxNorm), groupsOf(table), table.totalSize(),
                                                 mx->optimizerState());
        StreamingOptions o;
        o.microBatch = micro;
        exec = std::make_unique<StreamingExecutor>(streamingShape(), kB, kT, o, *mx, *opt);
        batch(0, kB, kT, streamingShape().vocab, in, out);
    }
    std::vector<float> snapshot() const {
        // Weights and both Adam moments (gradients are scratch and may change).
        const size_t P = table.totalSize();
        std::vector<float> s(mx->weights(), mx->weights() + P);
        s.insert(s.end(), mx->weights() + 2 * P, mx->weights() + 4 * P);
        return s;
    }
};

TEST(StreamingExecutor, CancelBeforeAnyUpdateLeavesMemoryXUntouched) {
    for (double maxNorm : {0.0, 0.5}) {
        for (int cancelAt : {0, 3, 7}) {  // layer boundary at which the stop arrives
            Rig rig(maxNorm);
            const auto before = rig.snapshot();
            std::atomic<bool> cancel{false};
            int calls = 0;
            StepHooks hooks;
            hooks.cancel = &cancel;
            hooks.pausePoint = [&] {
                if (calls++ == cancelAt) cancel = true;
            };
            const auto r =
                rig.exec->step(0, rig.in.data(), rig.out.data(), 1e-2, maxNorm, 1, 0, hooks);
            // Without clipping, updates start with the backward pass (boundary 5 of 10): a stop
            // arriving later lets the step finish.
            const bool expectCancel = maxNorm > 0 || cancelAt < 5;
            EXPECT_EQ(r.cancelled, expectCancel) << maxNorm << " " << cancelAt;
            if (expectCancel) {
                EXPECT_TRUE(rig.snapshot() == before);
            } else {
                EXPECT_FALSE(rig.snapshot() == before);
            }
            // The executor is reusable after a cancelled step and gives the uncancelled result.
            Rig fresh(maxNorm);
            const auto a = rig.exec->step(0, rig.in.data(), rig.out.data(), 1e-2, maxNorm, 1, 0);
            const auto b =
                fresh.exec->step(0, fresh.in.data(), fresh.out.data(), 1e-2, maxNorm, 1, 0);
            if (expectCancel) {
                EXPECT_EQ(a.loss, b.loss);
                EXPECT_TRUE(rig.snapshot() == fresh.snapshot());
            }
        }
    }
}

// An allocation failing inside a step (between layers, or inside a layer's compute while its
// weights are on the wafer) reaches the caller; the weight loader is not left waiting, and the
// executor steps on afterwards exactly like a fresh one (the failure came before any update).
TEST(StreamingExecutor, AnExceptionInsideAStepReachesTheCallerAndTheExecutorStaysUsable) {
    for (const bool insideLayer : {false, true}) {
        Rig rig(0.0);
        bool armed = true;
        StreamingExecutor exec(
            streamingShape(), kB, kT, StreamingOptions{}, *rig.mx, *rig.opt, [&](const Span& span) {
                if (armed && insideLayer && span.kind == SpanKind::Forward && span.layer == 2)
                    throw std::bad_alloc();
            });
        int calls = 0;
        StepHooks hooks;
        hooks.pausePoint = [&] {
            if (armed && !insideLayer && calls++ == 3) throw std::bad_alloc();
        };
        EXPECT_THROW(exec.step(0, rig.in.data(), rig.out.data(), 1e-2, 0.0, 1, 0, hooks),
                     std::bad_alloc)
            << insideLayer;
        armed = false;
        Rig fresh(0.0);
        const auto a = exec.step(0, rig.in.data(), rig.out.data(), 1e-2, 0.0, 1, 0);
        const auto b = fresh.exec->step(0, fresh.in.data(), fresh.out.data(), 1e-2, 0.0, 1, 0);
        EXPECT_EQ(a.loss, b.loss) << insideLayer;
        EXPECT_TRUE(rig.snapshot() == fresh.snapshot()) << insideLayer;
    }
}

TEST(StreamingExecutor, PausePointSitsBetweenEveryLayer) {
    Rig rig(0.0, 4);  // two micro-batches
    int calls = 0;
    StepHooks hooks;
    hooks.pausePoint = [&] { ++calls; };
    rig.exec->step(0, rig.in.data(), rig.out.data(), 1e-2, 0.0, 1, 0, hooks);
    EXPECT_EQ(calls, 2 * 2 * int(rig.table.layers().size()));
}

// Mixture of experts: a 3-block model whose blocks 0 and 2 are MoE (3 experts, top-2).
model::GptShape moeShape(bool tied) {
    model::GptShape s = streamingShape(tied);
    s.numExperts = 3;
    s.topK = 2;
    s.moeEvery = 2;
    return s;
}

// An MoE block streams in as its shared part then each expert, each its own transfer and span
// (Span::expert) with that unit's bytes; its gradient streams out and is reduced unit by unit;
// a dense block and the other layers move whole. MemoryX holds every expert; the bytes are the
// dense accounting's (every weight in twice a step), and the wafer buffer stays two slots of
// the largest layer.
TEST(StreamingExecutor, MoeBlocksStreamAsSharedPartThenEachExpert) {
    const auto shape = moeShape(true);
    const model::ParameterTable table(shape);
    StreamingOptions options;
    options.systems = 2;
    std::vector<Span> spans;
    StreamingStats stats;
    trainStreamed(shape, 0.5, options, &stats, &spans);
    const int E = shape.numExperts;
    for (int layer = 1; layer <= shape.layers; ++layer) {
        const bool moe = shape.isMoeBlock(layer - 1);
        std::vector<int64_t> unitBytes;
        if (moe)
            for (const auto& u : table.streamUnits(layer - 1))
                unitBytes.push_back(int64_t(u.size * sizeof(float)));
        else
            unitBytes.push_back(int64_t(table.layers()[size_t(layer)].size * sizeof(float)));
        ASSERT_EQ(unitBytes.size(), size_t(moe ? E + 1 : 1));
        for (const SpanKind kind : {SpanKind::StreamIn, SpanKind::StreamOut, SpanKind::Reduce}) {
            // Step 0, system 0 (-1 for the reduce), the forward visit's stream-in.
            std::vector<const Span*> units;
            for (const auto& sp : spans)
                if (sp.step == 0 && sp.layer == layer && sp.kind == kind &&
                    sp.system == (kind == SpanKind::Reduce ? -1 : 0) && !sp.backwardPass)
                    units.push_back(&sp);
            std::sort(units.begin(), units.end(),
                      [](const Span* a, const Span* b) { return a->start < b->start; });
            ASSERT_EQ(units.size(), unitBytes.size()) << spanKindName(kind) << " layer " << layer;
            for (size_t u = 0; u < units.size(); ++u) {
                EXPECT_EQ(units[u]->expert, moe ? int(u) - 1 : -1);
                const int64_t perSystem = kind == SpanKind::Reduce ? 2 : 1;
                EXPECT_EQ(units[u]->bytes, unitBytes[u] * perSystem)
                    << spanKindName(kind) << " layer " << layer << " unit " << u;
            }
        }
    }
    const int64_t perPass = model::streamedWeightsPerPass(table);
    EXPECT_EQ(stats.bytesStreamedIn, kSteps * 2 * perPass * 4);
    EXPECT_EQ(stats.bytesStreamedOut, kSteps * 2 * int64_t(table.totalSize()) * 4);
    EXPECT_EQ(stats.maxResidentLayers, 2);
    EXPECT_EQ(stats.waferBufferBytes, 2 * int64_t(model::largestStreamedVisit(table)) * 4);
    EXPECT_LE(stats.peakWaferBufferBytes, stats.waferBufferBytes);
}

// Streamed MoE training gives the plain step's weights bit for bit (one system, with and
// without clipping, one to three weight slots), and several systems or micro-batches the same
// mean gradient within the summation-order tolerance.
TEST(StreamingExecutor, MoeStreamedEqualsPlainBitForBit) {
    for (const bool tied : {true, false}) {
        const auto shape = moeShape(tied);
        for (const double maxNorm : {0.0, 0.5}) {
            const auto plain = trainPlain(shape, maxNorm);
            for (const int slots : {1, 2, 3}) {
                StreamingOptions options;
                options.weightBufferLayers = slots;
                const auto streamed = trainStreamed(shape, maxNorm, options);
                EXPECT_EQ(streamed.losses, plain.losses) << tied << maxNorm << slots;
                EXPECT_EQ(streamed.norms, plain.norms);
                EXPECT_TRUE(streamed.weights == plain.weights) << "weights differ";
            }
        }
    }
    StreamingOptions one, mixed;
    mixed.systems = 2;
    mixed.microBatch = 2;
    expectClose(trainStreamed(moeShape(true), 0.5, one), trainStreamed(moeShape(true), 0.5, mixed));
}

// The step reports the tokens each expert computed, summed over systems and micro-batches: the
// plain forward's counts over the whole batch (without a capacity factor a token's experts do
// not depend on how the batch is split); dense blocks report none.
TEST(StreamingExecutor, MoeStepReportsTheTokensEachExpertComputed) {
    const auto shape = moeShape(true);
    model::ParameterTable table(shape);
    config::ModelConfig mc;
    std::vector<float> params(table.totalSize());
    model::initParameters(table, mc, 42, params.data());
    model::Gpt<float> plain(shape, kB, kT);
    std::vector<int32_t> in, out;
    batch(0, kB, kT, shape.vocab, in, out);
    plain.forward(params.data(), in.data(), out.data(), true, 0);

    const auto oc = adamw(0.0);
    auto mx = MemoryX::create(config::MemoryXConfig{}, table.totalSize(),
                              optim::Optimizer::stateCopies(oc), largestLayerSize(table));
    ASSERT_TRUE(mx.ok());
    std::copy(params.begin(), params.end(), (*mx)->weights());
    optim::Optimizer opt(oc, groupsOf(table), table.totalSize(), (*mx)->optimizerState());
    StreamingOptions options;
    options.systems = 2;
    options.microBatch = 2;  // 2 systems x 2 micro-batches
    StreamingExecutor exec(shape, kB, kT, options, **mx, opt);
    const auto r = exec.step(0, in.data(), out.data(), 1e-2, 0.0, 1, 0);
    ASSERT_EQ(int(r.expertTokens.size()), shape.layers);
    for (int b = 0; b < shape.layers; ++b) {
        if (!shape.isMoeBlock(b)) {
            EXPECT_TRUE(r.expertTokens[size_t(b)].empty());
            continue;
        }
        const auto& counts = plain.expertTokenCounts(b);
        ASSERT_EQ(r.expertTokens[size_t(b)].size(), counts.size());
        int64_t sum = 0;
        for (size_t e = 0; e < counts.size(); ++e) {
            EXPECT_EQ(r.expertTokens[size_t(b)][e], counts[e]) << "block " << b << " expert " << e;
            sum += r.expertTokens[size_t(b)][e];
        }
        EXPECT_EQ(sum, int64_t(kB) * kT * shape.topK);
    }
    // A dense model reports nothing.
    Rig dense(0.0);
    EXPECT_TRUE(dense.exec->step(0, dense.in.data(), dense.out.data(), 1e-2, 0.0, 1, 0)
                    .expertTokens.empty());
}

TEST(Activations, BytesPerSequenceMatchTheModel) {
    // Dense, MoE, and LoRA (whose adapters keep dropout(x)·A per target) shapes: what the fit
    // counts is what the model allocates.
    model::GptShape lora = streamingShape(true);
    lora.applyLora(config::LoraConfig{.rank = 2, .targets = {"c_attn", "c_fc"}});
    for (const auto& shape : {streamingShape(true), streamingShape(false), moeShape(true), lora}) {
        model::Gpt<float> gpt(shape, 1, 12);
        const auto& last = gpt.activationSlices().back();
        EXPECT_EQ(activationBytesPerSequence(shape, 12),
                  int64_t((last.offset + last.size) * sizeof(float)));
        // Linear in the batch: one sequence's bytes times B.
        model::Gpt<float> three(shape, 3, 12);
        const auto& end = three.activationSlices().back();
        EXPECT_EQ(3 * activationBytesPerSequence(shape, 12),
                  int64_t((end.offset + end.size) * sizeof(float)));
    }
}

}  // namespace
}  // namespace ws::streaming
