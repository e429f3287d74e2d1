// SPDX-License-Identifier: GPL-3.0-or-later
// The account phase of the cycle model (step_accounting.h).
#include "engine/wafer/step_accounting.h"

#include <fmt/format.h>

#include <algorithm>
#include <utility>

#include "engine/model/model_facts.h"

namespace ws::wafer {

TimeSplit splitStepTime(const StepInput& in, const StepPlan& plan,
                        const std::vector<PhaseVisit>& order, const StepTimeline& timeline,
                        double clock, bool* hidden) {
    const auto& ph = timeline.phases;
    const size_t n = order.size();
    const bool oneSlot = in.weightBufferLayers == 1;
    TimeSplit split;
    split.bubble = ph[0].computeStart;
    bool streamingHidden = true;
    for (size_t i = 0; i < n; ++i) {
        const PlannedLayer& p = plan.kinds[size_t(order[i].kind)];
        const double busyS = p.busyCycles / clock;
        const double excess = (ph[i].computeEnd - ph[i].computeStart) - busyS;
        const double gap = i ? ph[i].computeStart - ph[i - 1].computeEnd : 0.0;
        split.compute += p.computeCycles / clock;
        split.fabric += busyS - p.computeCycles / clock;
        // The embeddings' forward stream is the iteration boundary: nothing earlier can hide it.
        if (i == 0)
            split.bubble += excess;
        else
            split.streaming += excess + gap;
        const double waited = oneSlot ? gap : 0.0;  // one slot: the gap is the layer's stream
        if (!StepPlan::isEmbedding(order[i].kind) && excess + waited > 1e-3 * busyS)
            streamingHidden = false;
    }
    const double lastEnd = ph[n - 1].computeEnd;
    const double tail = timeline.stepS - lastEnd;
    split.reduce = std::clamp(timeline.lastReduceEnd - lastEnd, 0.0, tail);
    if (in.numSystems == 1) split.reduce = 0;
    split.bubble += tail - split.reduce;
    if (hidden) *hidden = streamingHidden;
    return split;
}

namespace {

// LoRA: the adapter products of one block's forward and backward, and the whole step's.
void accountAdapters(StepPrediction& out, const StepInput& in, const StepPlan& plan, double clock) {
    const auto& S = in.shape;
    const int L = S.layers, micros = plan.micros;
    out.loraRank = S.loraRank;
    for (int backward = 0; backward < 2; ++backward) {
        double seconds = 0;
        for (const auto& op : plan.kinds[size_t(plan.blockKind(0, backward == 1))].timings) {
            if (!op.adapter) continue;
            seconds += opBusyCycles(op) / clock;
            out.adapterFmacsPerStep += op.fmacs * L * micros;
        }
        (backward ? out.adapterBackwardS : out.adapterForwardS) = seconds;
    }
    out.adapterS = (out.adapterForwardS + out.adapterBackwardS) * L * micros;
}

// Activation offload and recompute: what they cost (zero without a plan).
void accountActivations(StepPrediction& out, const WaferSpec& spec, const StepInput& in,
                        const StepPlan& plan, const std::vector<PhaseVisit>& order) {
    const auto& S = in.shape;
    const auto& acts = plan.blockActivations;
    const double clock = spec.clockHz();
    out.blockActivations = acts;
    out.activationPlan = in.activationPlanNote;
    if (acts.empty()) return;
    const double tokens = double(plan.microBatch) * plan.seqLen;
    const ActivationCounts counts = countsOf(acts);
    out.residentActivationBytes = residentActivationBytes(S, tokens, counts);
    out.offloadBytesPerStep = offloadBytesPerMicroBatch(S, tokens, counts) * plan.micros;
    out.offloadS = 2 * out.offloadBytesPerStep / clusterRates(spec, in.numSystems).offloadBytesPerS;
    if (!plan.anyRecompute()) return;
    for (const auto& visit : order) {
        if (visit.kind < plan.firstRecompute) continue;
        const PlannedLayer& p = plan.kinds[size_t(visit.kind)];
        for (size_t k = 0; k < p.ops.ops.size(); ++k) {
            if (!isRecomputeOp(p.ops.ops[k])) continue;
            const OpTiming& op = p.timings[k];
            out.recomputeFmacsPerStep += op.fmacs;
            out.recomputeS += opBusyCycles(op) / clock;
        }
    }
}

// Every system runs the same schedule (data parallel, same per-system batch); SwarmX reduces
// and MemoryX updates once for all of them.
template <typename Span>
std::vector<Span> everySystem(const std::vector<Span>& systemZero, int systems, size_t extra = 0) {
    std::vector<Span> all;
    all.reserve(systemZero.size() * size_t(systems) + extra);
    for (int sys = 0; sys < systems; ++sys)
        for (auto s : systemZero) {
            s.system = sys;
            all.push_back(s);
        }
    return all;
}

}  // namespace

std::vector<LinkLoad> linkLoads(const WaferSpec& spec, const StepTimeline& t) {
    const ClusterSpec& c = spec.cluster;
    const ClusterRates& r = t.rates;
    const int N = r.systems, lanes = c.linksPerSystem;
    const double link = c.linkGbitPerS * 1e9 / 8;
    const double wait = N > 1 ? t.lockstepWaitS : 0.0;
    const double stepS = std::max(t.stepS, 1e-30);
    std::vector<LinkLoad> out;
    auto add = [&](std::string name, int count, double capacity, double down, double up,
                   double waitS) {
        LinkLoad l{std::move(name), count, capacity, down, up, 0, waitS};
        l.utilization = std::max(down, up) / (capacity * stepS);
        out.push_back(std::move(l));
    };
    // Each system's lanes carry its weights and gradients, and its own offloaded activations
    // (one system: its wafer's I/O is the whole path, cluster_links.h).
    add("system links", N * lanes, N > 1 ? link : r.lineBytesPerS / lanes,
        (t.weightBytesIn + t.offloadBytes) / lanes, (t.gradientBytesOut + t.offloadBytes) / lanes,
        wait);
    if (N > 1) {
        // Above the systems every link carries the one broadcast and the reduced gradients.
        const int fan = std::max(2, c.swarmxFanOut);
        int level = 0;
        for (int64_t nodes = (N + fan - 1) / fan; nodes > 1; nodes = (nodes + fan - 1) / fan)
            add(fmt::format("SwarmX level {} uplinks", ++level), int(nodes) * lanes, link,
                t.weightBytesIn / lanes, t.gradientBytesOut / lanes, wait);
        add("MemoryX link", lanes, link, t.weightBytesIn / lanes, t.gradientBytesOut / lanes, wait);
    }
    // MemoryX's servers: the broadcast root, the reduce root and every system's activations.
    add("MemoryX servers", 1,
        N > 1 ? c.memoryxGbPerS * 1e9 : std::max(c.memoryxGbPerS * 1e9, r.lineBytesPerS),
        t.weightBytesIn + N * t.offloadBytes, t.gradientBytesOut + N * t.offloadBytes, 0);
    // The job's share of the fabric, against everything on its tree's links (both ways).
    if (N > 1) {
        const double fabricBytes =
            double(r.treeLinks) * (t.weightBytesIn + t.gradientBytesOut) + 2.0 * N * t.offloadBytes;
        add("fabric (job's share)", 1, r.fabricBytesPerS * 2.0 * r.treeLinks, fabricBytes, 0, 0);
        out.back().utilization = fabricBytes / (out.back().capacityBytesPerS * stepS);
    }
    add("host input", 1, c.hostInputGbPerS * 1e9, N * t.inputBytes, 0, t.inputWaitS);
    return out;
}

StepPrediction accountStep(const WaferSpec& spec, const StepInput& in, const StepPlan& plan,
                           const std::vector<PhaseVisit>& order, StepTimeline timeline,
                           double lineRateStepS) {
    const auto& S = in.shape;
    const int B = plan.batchPerSystem, T = plan.seqLen, N = in.numSystems;
    const double clock = spec.clockHz();
    StepPrediction out;
    out.waferName = spec.name;
    out.numSystems = N;
    out.treeDepth = timeline.treeDepth;
    out.batchPerSystem = B;
    out.microBatch = plan.microBatch;
    out.seqLen = T;
    out.weightBufferLayers = std::max(1, in.weightBufferLayers);
    out.stepS = timeline.stepS;
    out.forwardS = timeline.forwardS;
    out.backwardS = timeline.backwardS;
    out.gradientStreamS = timeline.gradientStreamS;
    out.reduceS = timeline.reduceS;
    out.optimizerS = timeline.optimizerS;
    out.split = splitStepTime(in, plan, order, timeline, clock, &out.weightStreamingHidden);
    // Lockstep's share of the link waits, taken out of them (the parts still add up).
    if (lineRateStepS >= 0) {
        double left = std::max(0.0, timeline.stepS - lineRateStepS);
        for (double* part : {&out.split.streaming, &out.split.bubble, &out.split.reduce}) {
            const double taken = std::min(left, *part);
            *part -= taken;
            out.split.queueing += taken;
            left -= taken;
        }
    }
    out.bubbleS = out.split.bubble;
    out.lockstep = timeline.rates.lockstep;
    out.swarmxBytesPerS = timeline.rates.swarmxBytesPerS;
    out.linkBinding = timeline.rates.binding;
    out.links = linkLoads(spec, timeline);

    out.modelFlopsPerStep = (S.hasLora() ? model::stepTrainingFlopsPerToken(S, T) * B * T
                                         : model::trainingFlopsPerStep(S, B, T)) *
                            N;
    if (S.hasLora()) accountAdapters(out, in, plan, clock);
    accountActivations(out, spec, in, plan, order);
    out.hardwareFlopsPerStep = out.modelFlopsPerStep + 2 * out.recomputeFmacsPerStep * N;
    out.hfu = out.hardwareFlopsPerStep / (out.stepS * spec.peakFlopsPerS() * N);
    out.activationSpans = everySystem(timeline.activationSpans, N);
    out.tokensPerS = double(B) * T * N / out.stepS;
    out.samplesPerS = double(B) * N / out.stepS;
    out.mfu = out.modelFlopsPerStep / (out.stepS * spec.peakFlopsPerS() * N);
    out.activations = activationFit(spec, S, plan.microBatch, T);
    if (S.hasMoe()) {
        out.expertTokens = plan.expertTokens;
        out.uniformRouting = plan.uniformRouting;
        out.moeExperts = S.numExperts;
        out.moeTopK = S.topK;
        out.expertRegions = expertRegions(S.numExperts, spec);
    }
    out.spans = everySystem(timeline.spans, N, timeline.sharedSpans.size());
    out.spans.insert(out.spans.end(), timeline.sharedSpans.begin(), timeline.sharedSpans.end());

    out.layers = std::move(timeline.layers);
    // Mean busy per layer (from the op-level maxima: the exact per-core mean needs the frames).
    for (size_t i = 0; i < order.size(); ++i) {
        const PlannedLayer& p = plan.kinds[size_t(order[i].kind)];
        if (p.coreBusyCycles.empty()) continue;
        double sum = 0;
        for (float v : p.coreBusyCycles) sum += v;
        const PhaseWindow& w = timeline.phases[i];
        out.layers[i].meanBusy =
            sum / double(p.coreBusyCycles.size()) / ((w.computeEnd - w.computeStart) * clock);
    }
    return out;
}

void addUtilizationFrames(StepPrediction& out, const WaferSpec& spec, const StepPlan& plan,
                          const std::vector<PhaseVisit>& order, const PredictOptions& opt) {
    const int R = spec.gridRows, C = spec.gridCols;
    const double clock = spec.clockHz();
    const auto& kinds = plan.kinds;
    const size_t K = kinds.size();
    std::vector<double> kindCount(K, 0.0);
    for (const auto& visit : order) kindCount[size_t(visit.kind)] += 1;
    std::vector<float> stepBusy(size_t(R) * C, 0.0f);
    for (size_t k = 0; k < K; ++k) {
        const auto& cyc = kinds[k].coreBusyCycles;
        // Over the phase's compute window (its ops back to back), not its span: a layer bound
        // by its weight stream would otherwise show as a uniform ~1 % whatever its matrices do
        // (the waiting is the time split's and the timeline's to show). The window is the same
        // for every visit of a kind, and no core exceeds it (an op lasts at least its busiest
        // core's cycles).
        const double windowCycles = kinds[k].busyCycles;
        std::vector<float> busy(cyc.size());
        for (size_t j = 0; j < cyc.size(); ++j) {
            busy[j] = windowCycles > 0 ? float(cyc[j] / windowCycles) : 0.0f;
            stepBusy[j] += float(cyc[j] * kindCount[k]);
        }
        out.frames.push_back(
            downsample(plan.kindLabels[k], busy, R, C, opt.displayRows, opt.displayCols));
        out.frames.back().window = UtilizationFrame::Window::Compute;
        out.frames.back().windowS = windowCycles / clock;
    }
    // LoRA: the adapter products of a block's pass alone, over their own time.
    if (out.loraRank > 0) {
        for (int backward = 0; backward < 2; ++backward) {
            const PlannedLayer& block = kinds[size_t(plan.blockKind(0, backward == 1))];
            std::vector<float> busy(size_t(R) * C, 0.0f);
            for (const auto& op : block.ops.ops)
                if (op.adapter) addCoreCycles(op, spec, busy);
            const double spanCycles =
                (backward ? out.adapterBackwardS : out.adapterForwardS) * clock;
            for (auto& v : busy) v = spanCycles > 0 ? float(v / spanCycles) : 0.0f;
            (backward ? out.adapterBackwardFrame : out.adapterForwardFrame) =
                int(out.frames.size());
            out.frames.push_back(
                downsample(backward ? "LoRA adapters backward" : "LoRA adapters forward", busy, R,
                           C, opt.displayRows, opt.displayCols));
            out.frames.back().window = UtilizationFrame::Window::Adapters;
            out.frames.back().windowS = spanCycles / clock;
        }
    }
    const double stepCycles = out.stepS * clock;
    for (auto& v : stepBusy) v = float(v / stepCycles);
    out.frames.push_back(downsample("step", stepBusy, R, C, opt.displayRows, opt.displayCols));
    out.frames.back().window = UtilizationFrame::Window::Step;
    out.frames.back().windowS = out.stepS;
    const int L = int(plan.blockKindOf.size());
    out.forwardFrame.assign(size_t(L + 2), -1);
    out.backwardFrame.assign(size_t(L + 2), -1);
    for (const auto& visit : order) {
        const bool backward = kinds[size_t(visit.kind)].ops.pass == Pass::Backward;
        (backward ? out.backwardFrame : out.forwardFrame)[size_t(visit.layerIndex)] = visit.kind;
    }
}

}  // namespace ws::wafer
