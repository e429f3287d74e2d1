// The cycle model and the step schedule (cycle_model.h).
#include "engine/wafer/cycle_model.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace ws::wafer {

const char* bindingName(Binding b) {
    switch (b) {
        case Binding::Compute:
            return "compute";
        case Binding::Fabric:
            return "fabric";
        case Binding::WeightStream:
            return "weight stream";
    }
    return "?";
}

const char* spanKindName(SpanKind k) {
    switch (k) {
        case SpanKind::StreamIn:
            return "stream_in";
        case SpanKind::Compute:
            return "compute";
        case SpanKind::StreamOut:
            return "stream_out";
        case SpanKind::Reduce:
            return "reduce";
        case SpanKind::Update:
            return "update";
    }
    return "?";
}

namespace {

// Korthikanti et al. 2022 ("Reducing Activation Recomputation"): a block keeps ~34 * C bytes
// per token in 16 bits for its backward, without the attention-score terms (scores are
// recomputed, flash-style, as our attention op does).
constexpr double kStoredBytesPerTokenChannel = 34;

// One layer phase, planned: its ops' times and (optionally) every core's busy cycles.
struct PlannedLayer {
    LayerOps ops;
    double busyCycles = 0;     // sum over ops of max(compute, fabric) + fill
    double computeCycles = 0;  // sum over ops of compute
    double fabricCycles = 0;   // sum over ops of fabric excess + fill
    double tileSram = 0;
    std::vector<OpTiming> timings;
    std::vector<float> coreBusyCycles;  // R x C, when frames are asked for
    std::vector<double> rowLinkBytes, colLinkBytes;
};

Result<PlannedLayer> plan(LayerOps ops, const WaferSpec& spec, bool frames) {
    PlannedLayer p;
    if (Status s = planLayer(ops, spec); !s.ok()) return s.error();
    const double fill = fillCycles(spec);
    for (const auto& op : ops.ops) {
        OpTiming t;
        t.name = op.name;
        t.computeCycles = maxCoreCycles(op, spec);
        t.fabricCycles = fabricCycles(op, spec);
        t.fillCycles = double(op.chunks) * fill;
        t.chunks = op.chunks;
        t.folds = op.mapping.folds;
        p.busyCycles += std::max(t.computeCycles, t.fabricCycles) + t.fillCycles;
        p.computeCycles += t.computeCycles;
        p.fabricCycles += std::max(0.0, t.fabricCycles - t.computeCycles) + t.fillCycles;
        p.tileSram = std::max(p.tileSram, tileSramBytes(op, op.mapping));
        p.timings.push_back(std::move(t));
    }
    if (frames) {
        p.coreBusyCycles = coreBusyCycles(ops, spec);
        p.rowLinkBytes.assign(size_t(spec.gridRows), 0.0);
        p.colLinkBytes.assign(size_t(spec.gridCols), 0.0);
        for (const auto& op : ops.ops) addLinkBytes(op, p.rowLinkBytes, p.colLinkBytes);
    }
    p.ops = std::move(ops);
    return p;
}

}  // namespace

int largestFittingMicroBatch(const WaferSpec& spec, const model::GptShape& shape, int batch,
                             int seqLen, double availableBytes) {
    for (int mb = batch; mb > 1; --mb) {
        if (batch % mb != 0) continue;
        ActivationFit f = activationFit(spec, shape, mb, seqLen);
        if (f.storedBytes <= (availableBytes > 0 ? availableBytes : f.availableBytes)) return mb;
    }
    return 1;
}

std::vector<float> coreBusyCycles(const LayerOps& planned, const WaferSpec& spec) {
    const int R = spec.gridRows, C = spec.gridCols;
    std::vector<float> busy(size_t(R) * C, 0.0f);
    for (const auto& op : planned.ops) addCoreCycles(op, spec, busy);
    return busy;
}

ActivationFit activationFit(const WaferSpec& spec, const model::GptShape& s, int batch,
                            int seqLen) {
    ActivationFit f;
    const double tokens = double(batch) * seqLen;
    const double perSequence =
        double(seqLen) * s.channels * (kStoredBytesPerTokenChannel * s.layers + 2.0);
    f.storedBytes = perSequence * batch;
    f.minimalBytes = tokens * s.channels * 2.0 * (s.layers + 1);
    f.availableBytes = double(spec.cores()) * double(spec.sramBytesPerCore);
    f.fits = f.storedBytes <= f.availableBytes;
    f.fitsWithRecompute = f.minimalBytes <= f.availableBytes;
    f.maxSequences = int(std::min(1e9, std::floor(f.availableBytes / perSequence)));
    return f;
}

Result<StepPrediction> predictStep(const WaferSpec& spec, const StepInput& in,
                                   const PredictOptions& opt) {
    if (Status s = spec.validate(); !s.ok()) return s.error();
    if (Status s = spec.checkSystems(in.numSystems); !s.ok()) return s.error();
    if (Status s = in.shape.validate(); !s.ok()) return s.error();
    if (in.batchPerSystem < 1 || in.seqLen < 1)
        return Error{fmt::format("batch per system ({}) and sequence length ({}) must be >= 1",
                                 in.batchPerSystem, in.seqLen)};
    if (in.seqLen > in.shape.maxPositions)
        return Error{
            fmt::format("sequence length {} exceeds model.max_position_embeddings = {}; lower "
                        "train_input.max_sequence_length or raise the positions",
                        in.seqLen, in.shape.maxPositions)};
    const auto& S = in.shape;
    const int B = in.batchPerSystem, T = in.seqLen, L = S.layers;
    const int mb = in.microBatch > 0 ? in.microBatch : B;  // sequences per wafer pass
    if (B % mb != 0)
        return Error{fmt::format(
            "micro-batch {} does not divide the batch per system {}; choose a divisor", mb, B)};
    const int micros = B / mb;

    // Plan the six distinct layer phases once (every block is the same on the wafer).
    enum { EmbF, BlockF, HeadF, HeadB, BlockB, EmbB, Kinds };
    std::vector<PlannedLayer> kinds;
    const LayerOps defs[Kinds] = {embeddingOps(S, mb, T, Pass::Forward, spec),
                                  blockOps(S, mb, T, Pass::Forward, spec, in.sparsity),
                                  headOps(S, mb, T, Pass::Forward, spec),
                                  headOps(S, mb, T, Pass::Backward, spec),
                                  blockOps(S, mb, T, Pass::Backward, spec, in.sparsity),
                                  embeddingOps(S, mb, T, Pass::Backward, spec)};
    for (const auto& d : defs) {
        auto p = plan(d, spec, opt.frames);
        if (!p.ok()) return p.error();
        kinds.push_back(std::move(*p));
    }

    // Execution order of layer phases.
    // With micro-batches every micro-batch streams the weights in again for its forward and
    // backward; gradients stream out (and SwarmX reduces them) every micro-batch, MemoryX
    // accumulates them and updates once, after the last.
    struct Step {
        int kind;
        std::string layer;
        bool lastMicro;
    };
    std::vector<Step> order;
    for (int u = 0; u < micros; ++u) {
        const bool last = u + 1 == micros;
        order.push_back({EmbF, "embeddings", last});
        for (int l = 0; l < L; ++l) order.push_back({BlockF, fmt::format("h.{}", l), last});
        order.push_back({HeadF, "head", last});
        order.push_back({HeadB, "head", last});
        for (int l = L - 1; l >= 0; --l) order.push_back({BlockB, fmt::format("h.{}", l), last});
        order.push_back({EmbB, "embeddings", last});
    }

    StepPrediction out;
    out.waferName = spec.name;
    out.numSystems = in.numSystems;
    out.treeDepth = spec.cluster.treeDepth(in.numSystems);
    out.batchPerSystem = B;
    out.microBatch = mb;
    out.seqLen = T;
    const double clock = spec.clockHz();
    const double io = spec.ioBytesPerS();
    const double bpv = spec.streamBytesPerValue;
    const double treeLatency = out.treeDepth * spec.cluster.swarmxHopLatencyUs * 1e-6;
    const double updateRate = spec.cluster.memoryxUpdateGparamsPerS * 1e9;

    const double storedPerCore = activationFit(spec, S, mb, T).storedBytes / double(spec.cores());
    const size_t n = order.size();
    std::vector<double> inStart(n), inEnd(n), compStart(n), compEnd(n);
    double outEnd = 0, updEnd = 0, lastReduceEnd = 0;
    std::vector<TimelineSpan> spans;
    auto span = [&](SpanKind k, const std::string& layer, Pass pass, double a, double b) {
        spans.push_back({0, k, layer, pass, a, b});
    };
    for (size_t i = 0; i < n; ++i) {
        const PlannedLayer& p = kinds[size_t(order[i].kind)];
        const Pass pass = p.ops.pass;
        const double streamS = p.ops.weightValues * bpv / io;
        // Two weight buffers: layer i streams once layer i-1's stream ended and layer i-2's
        // compute freed its buffer.
        inStart[i] = std::max(i ? inEnd[i - 1] : 0.0, i >= 2 ? compEnd[i - 2] : 0.0);
        inEnd[i] = inStart[i] + (streamS > 0 ? streamS + treeLatency : 0);
        const double busyS = p.busyCycles / clock;
        const double fillS = fillCycles(spec) / clock;
        compStart[i] =
            std::max(i ? compEnd[i - 1] : 0.0, inStart[i] + (streamS > 0 ? treeLatency : 0));
        compEnd[i] = std::max(compStart[i] + busyS, streamS > 0 ? inEnd[i] + fillS : 0.0);
        if (streamS > 0) span(SpanKind::StreamIn, order[i].layer, pass, inStart[i], inEnd[i]);
        span(SpanKind::Compute, order[i].layer, pass, compStart[i], compEnd[i]);

        LayerTiming t;
        t.layer = order[i].layer;
        t.pass = pass;
        t.computeS = p.computeCycles / clock;
        t.fabricS = (p.busyCycles - p.computeCycles) / clock;
        for (const auto& op : p.timings) t.fillS += op.fillCycles / clock;
        t.weightStreamS = streamS;
        t.timeS = compEnd[i] - compStart[i];
        t.binding = compEnd[i] > compStart[i] + busyS + 1e-15
                        ? Binding::WeightStream
                        : (t.fabricS > t.computeS ? Binding::Fabric : Binding::Compute);
        t.tileSramBytes = p.tileSram;
        t.sramBytesPerCore = p.tileSram + storedPerCore;
        t.waitFabricS = t.fabricS;
        t.waitWeightsS = std::max(0.0, t.timeS - busyS);
        t.rowLinkBytes = p.rowLinkBytes;
        t.colLinkBytes = p.colLinkBytes;
        t.ops = p.timings;

        if (p.ops.gradientValues > 0) {
            const double gradS = p.ops.gradientValues * bpv / io;
            t.gradStreamS = gradS;
            const double oStart = std::max(outEnd, compStart[i]);
            outEnd = std::max(oStart + gradS, compEnd[i]);
            span(SpanKind::StreamOut, order[i].layer, pass, oStart, outEnd);
            const double reduceEnd = outEnd + treeLatency;
            if (in.numSystems > 1) span(SpanKind::Reduce, order[i].layer, pass, oStart, reduceEnd);
            lastReduceEnd = reduceEnd;
            out.gradientStreamS += gradS;
            out.reduceS += treeLatency;
            if (order[i].lastMicro) {
                const double uS = p.ops.gradientValues / updateRate;
                const double uStart = std::max(updEnd, oStart + treeLatency);
                updEnd = std::max(uStart + uS, reduceEnd);
                span(SpanKind::Update, order[i].layer, pass, uStart, updEnd);
                out.optimizerS += uS;
            }
        }
        out.layers.push_back(std::move(t));
    }
    out.stepS = std::max(updEnd, compEnd[n - 1]);
    // Wafer time per pass: each phase from the end of the one before (its wait included).
    for (size_t i = 0; i < n; ++i) {
        const double d = compEnd[i] - (i ? compEnd[i - 1] : compStart[0]);
        (kinds[size_t(order[i].kind)].ops.pass == Pass::Forward ? out.forwardS : out.backwardS) +=
            d;
    }

    // Where the time goes: walk the wafer's compute spans; the parts add up to stepS.
    TimeSplit& split = out.split;
    split.bubble = compStart[0];
    out.weightStreamingHidden = true;
    for (size_t i = 0; i < n; ++i) {
        const PlannedLayer& p = kinds[size_t(order[i].kind)];
        const double busyS = p.busyCycles / clock;
        const double excess = (compEnd[i] - compStart[i]) - busyS;
        const double gap = i ? compStart[i] - compEnd[i - 1] : 0.0;
        split.compute += p.computeCycles / clock;
        split.fabric += busyS - p.computeCycles / clock;
        // The embeddings' forward stream is the iteration boundary: nothing earlier can hide it.
        if (i == 0)
            split.bubble += excess;
        else
            split.streaming += excess + gap;
        if (order[i].kind != EmbF && order[i].kind != EmbB && excess > 1e-3 * busyS)
            out.weightStreamingHidden = false;
        out.layers[i].meanBusy = 0;
    }
    const double tail = out.stepS - compEnd[n - 1];
    split.reduce = std::clamp(lastReduceEnd - compEnd[n - 1], 0.0, tail);
    if (in.numSystems == 1) split.reduce = 0;
    split.bubble += tail - split.reduce;
    out.bubbleS = split.bubble;

    out.modelFlopsPerStep = model::trainingFlopsPerStep(S, B, T) * in.numSystems;
    out.tokensPerS = double(B) * T * in.numSystems / out.stepS;
    out.samplesPerS = double(B) * in.numSystems / out.stepS;
    out.mfu = out.modelFlopsPerStep / (out.stepS * spec.peakFlopsPerS() * in.numSystems);
    out.activations = activationFit(spec, S, mb, T);

    // Every system runs the same schedule (data parallel, same per-system batch).
    out.spans.reserve(spans.size() * size_t(in.numSystems));
    for (int sys = 0; sys < in.numSystems; ++sys)
        for (auto s : spans) {
            s.system = sys;
            out.spans.push_back(std::move(s));
        }

    // Mean busy per layer (from the op-level maxima: the exact per-core mean needs the frames).
    for (size_t i = 0; i < n; ++i) {
        const PlannedLayer& p = kinds[size_t(order[i].kind)];
        if (!p.coreBusyCycles.empty()) {
            double sum = 0;
            for (float v : p.coreBusyCycles) sum += v;
            out.layers[i].meanBusy =
                sum / double(p.coreBusyCycles.size()) / ((compEnd[i] - compStart[i]) * clock);
        }
    }

    if (opt.frames) {
        const int R = spec.gridRows, C = spec.gridCols;
        // A kind's span is the same for every block but the first/last; use the layers' mean.
        const char* labels[Kinds] = {"embeddings forward", "h forward",  "head forward",
                                     "head backward",      "h backward", "embeddings backward"};
        std::vector<double> kindSpan(Kinds, 0.0), kindCount(Kinds, 0.0);
        for (size_t i = 0; i < n; ++i) {
            kindSpan[size_t(order[i].kind)] += compEnd[i] - compStart[i];
            kindCount[size_t(order[i].kind)] += 1;
        }
        std::vector<float> stepBusy(size_t(R) * C, 0.0f);
        for (int k = 0; k < Kinds; ++k) {
            const auto& cyc = kinds[size_t(k)].coreBusyCycles;
            const double spanCycles = kindSpan[size_t(k)] / kindCount[size_t(k)] * clock;
            std::vector<float> busy(cyc.size());
            for (size_t j = 0; j < cyc.size(); ++j) {
                busy[j] = spanCycles > 0 ? float(cyc[j] / spanCycles) : 0.0f;
                stepBusy[j] += float(cyc[j] * kindCount[size_t(k)]);
            }
            out.frames.push_back(
                downsample(labels[k], busy, R, C, opt.displayRows, opt.displayCols));
        }
        const double stepCycles = out.stepS * clock;
        for (auto& v : stepBusy) v = float(v / stepCycles);
        out.frames.push_back(downsample("step", stepBusy, R, C, opt.displayRows, opt.displayCols));
    }
    return out;
}

}  // namespace ws::wafer
