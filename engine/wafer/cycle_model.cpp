// The cycle model and the step schedule (cycle_model.h).
#include "engine/wafer/cycle_model.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>

#include "engine/model/model_facts.h"
#include "engine/wafer/attention_span.h"

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
    // MoE: a run of consecutive expert ops runs at once, one chain per expert on its own cores;
    // the run lasts its slowest chain (busy, compute and fabric parts taken from that chain).
    struct Chain {
        double busy = 0, compute = 0, fabric = 0;
    };
    std::vector<Chain> chains;
    auto endRun = [&] {
        const Chain* slowest = nullptr;
        for (const auto& c : chains)
            if (!slowest || c.busy > slowest->busy) slowest = &c;
        if (slowest) {
            p.busyCycles += slowest->busy;
            p.computeCycles += slowest->compute;
            p.fabricCycles += slowest->fabric;
        }
        chains.clear();
    };
    for (const auto& op : ops.ops) {
        OpTiming t;
        t.name = op.name;
        t.computeCycles = maxCoreCycles(op, spec);
        t.fabricCycles = fabricCycles(op, spec);
        t.fillCycles = double(op.chunks) * fill;
        t.chunks = op.chunks;
        t.folds = op.mapping.folds;
        t.adapter = op.adapter;
        t.expert = op.expert;
        t.region = op.region;
        t.fmacs = opFmacs(op);
        t.m = op.chunks > 1 ? op.chunkRows : op.m;
        t.n = op.n;
        t.mapping = op.mapping;
        const double busy = std::max(t.computeCycles, t.fabricCycles) + t.fillCycles;
        const double fabric = std::max(0.0, t.fabricCycles - t.computeCycles) + t.fillCycles;
        if (op.expert >= 0) {
            if (chains.size() <= size_t(op.expert)) chains.resize(size_t(op.expert) + 1);
            Chain& c = chains[size_t(op.expert)];
            c.busy += busy;
            c.compute += t.computeCycles;
            c.fabric += fabric;
        } else {
            endRun();
            p.busyCycles += busy;
            p.computeCycles += t.computeCycles;
            p.fabricCycles += fabric;
        }
        p.tileSram = std::max(p.tileSram, tileSramBytes(op, op.mapping));
        p.timings.push_back(std::move(t));
    }
    endRun();
    if (frames) {
        p.coreBusyCycles = coreBusyCycles(ops, spec);
        p.rowLinkBytes.assign(size_t(spec.gridRows), 0.0);
        p.colLinkBytes.assign(size_t(spec.gridCols), 0.0);
        for (const auto& op : ops.ops) addLinkBytes(op, p.rowLinkBytes, p.colLinkBytes);
    }
    p.ops = std::move(ops);
    return p;
}

// Each op's start and length within its phase (OpTiming::startS): one after another, a run of
// expert ops at once with each expert's ops in order.
void scheduleOps(std::vector<OpTiming>& ops, double clock) {
    double opStart = 0, runStart = 0;
    std::vector<double> chainEnd;
    auto endRun = [&] {
        for (double e : chainEnd) opStart = std::max(opStart, e);
        chainEnd.clear();
    };
    for (auto& op : ops) {
        op.timeS = (std::max(op.computeCycles, op.fabricCycles) + op.fillCycles) / clock;
        if (op.expert < 0) {
            endRun();
            op.startS = opStart;
            opStart += op.timeS;
            continue;
        }
        if (chainEnd.empty()) runStart = opStart;
        if (chainEnd.size() <= size_t(op.expert)) chainEnd.resize(size_t(op.expert) + 1, runStart);
        op.startS = chainEnd[size_t(op.expert)];
        chainEnd[size_t(op.expert)] += op.timeS;
    }
    endRun();
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
    // Each expert owns a rectangle of at least one core.
    if (S.hasMoe() && int64_t(S.numExperts) > int64_t(spec.gridRows) * spec.gridCols)
        return Error{fmt::format(
            "model.moe.num_experts = {} exceeds the {} x {} cores of {}: each expert needs a "
            "core of its own; use fewer experts or a larger wafer (wafer.spec)",
            S.numExperts, spec.gridRows, spec.gridCols, spec.name)};

    // Plan each distinct layer phase once: every block is the same on the wafer unless blocks
    // carry their own sparsity or MoE routing; then each distinct block is planned on its own.
    const bool perBlock = !in.perBlockSparsity.empty();
    if (perBlock && int(in.perBlockSparsity.size()) != L)
        return Error{fmt::format("per-block sparsity has {} entries for {} blocks",
                                 in.perBlockSparsity.size(), L)};
    if (!in.expertTokens.empty() && int(in.expertTokens.size()) != L)
        return Error{fmt::format("expert token counts have {} entries for {} blocks",
                                 in.expertTokens.size(), L)};
    // MoE: each block's routing (a dense block's empty), the given counts or the uniform split.
    std::vector<std::optional<ExpertLoad>> loads(static_cast<size_t>(L));
    std::vector<std::vector<int64_t>> mappedTokens(static_cast<size_t>(L));
    bool uniform = false;
    for (int l = 0; l < L && S.hasMoe(); ++l) {
        if (!S.isMoeBlock(l)) continue;
        const auto* given = in.expertTokens.empty() ? nullptr : &in.expertTokens[size_t(l)];
        if (given && !given->empty()) {
            if (int(given->size()) != S.numExperts)
                return Error{fmt::format("block {}: {} expert token counts for {} experts", l,
                                         given->size(), S.numExperts)};
            loads[size_t(l)] = ExpertLoad{S.topK, *given};
        } else {
            loads[size_t(l)] = uniformExpertLoad(S.numExperts, S.topK, int64_t(mb) * T);
            uniform = true;
        }
        mappedTokens[size_t(l)] = loads[size_t(l)]->tokens;
    }
    std::vector<PlannedLayer> kinds;
    std::vector<std::string> kindLabels;
    auto addKind = [&](LayerOps ops, std::string label) -> Status {
        auto p = plan(std::move(ops), spec, opt.frames);
        if (!p.ok()) return p.error();
        kinds.push_back(std::move(*p));
        kindLabels.push_back(std::move(label));
        return {};
    };
    const int embF = 0, headF = 1, headB = 2, embB = 3, firstBlock = 4;
    Status planned = addKind(embeddingOps(S, mb, T, Pass::Forward, spec), "embeddings forward");
    if (planned.ok()) planned = addKind(headOps(S, mb, T, Pass::Forward, spec), "head forward");
    if (planned.ok()) planned = addKind(headOps(S, mb, T, Pass::Backward, spec), "head backward");
    if (planned.ok())
        planned = addKind(embeddingOps(S, mb, T, Pass::Backward, spec), "embeddings backward");
    // Blocks with the same sparsity and routing share a kind (forward at firstBlock + 2i,
    // backward after it).
    std::vector<int> blockKindOf(size_t(L), 0);
    std::map<std::pair<int, std::vector<int64_t>>, int> distinct;  // (sparsity, tokens) -> i
    std::vector<std::vector<int>> blocksOfKind;
    for (int l = 0; l < L; ++l) {
        const auto key = std::pair{perBlock ? l : -1, loads[size_t(l)] ? loads[size_t(l)]->tokens
                                                                       : std::vector<int64_t>{-1}};
        const auto [it, fresh] = distinct.emplace(key, int(blocksOfKind.size()));
        if (fresh) blocksOfKind.emplace_back();
        blocksOfKind[size_t(it->second)].push_back(l);
        blockKindOf[size_t(l)] = it->second;
    }
    for (size_t k = 0; k < blocksOfKind.size() && planned.ok(); ++k) {
        const int l = blocksOfKind[k].front();
        const BlockSparsity* sp = perBlock ? &in.perBlockSparsity[size_t(l)] : in.sparsity;
        const ExpertLoad* moe = loads[size_t(l)] ? &*loads[size_t(l)] : nullptr;
        std::string name = "h";
        if (perBlock || (blocksOfKind[k].size() == 1 && blocksOfKind.size() > 1))
            name = fmt::format("h.{}", l);
        else if (blocksOfKind.size() > 1)
            name = moe ? "MoE blocks" : "dense blocks";
        const int span = in.attentionLength;  // packed documents / short sequences (VSL)
        planned =
            addKind(withAttentionLength(blockOps(S, mb, T, Pass::Forward, spec, sp, moe), span),
                    name + " forward");
        if (planned.ok())
            planned = addKind(
                withAttentionLength(blockOps(S, mb, T, Pass::Backward, spec, sp, moe), span),
                name + " backward");
    }
    if (!planned.ok()) return planned.error();
    // Activation offload and recompute (activation_memory.h): a recomputed block's backward phase
    // is its own kind (its forward ops again, then its backward), planned after all the others so
    // the kinds (and frames) above keep their indices.
    const auto& acts = in.blockActivations;
    if (!acts.empty() && int(acts.size()) != L)
        return Error{
            fmt::format("block activations have {} entries for {} blocks", acts.size(), L)};
    auto activationOf = [&](int block) {
        return acts.empty() ? BlockActivation::Keep : acts[size_t(block)];
    };
    auto recomputes = [&](int block) {
        const BlockActivation a = activationOf(block);
        return a == BlockActivation::Recompute || a == BlockActivation::RecomputeOffload;
    };
    bool anyRecompute = false;
    for (int l = 0; l < L; ++l) anyRecompute = anyRecompute || recomputes(l);
    const int firstRecompute = int(kinds.size());
    for (size_t k = 0; k < blocksOfKind.size() && anyRecompute && planned.ok(); ++k) {
        const int l = blocksOfKind[k].front();
        const BlockSparsity* sp = perBlock ? &in.perBlockSparsity[size_t(l)] : in.sparsity;
        const ExpertLoad* moe = loads[size_t(l)] ? &*loads[size_t(l)] : nullptr;
        const std::string name = blocksOfKind.size() > 1 ? fmt::format("h.{}", l) : "h";
        planned = addKind(
            withAttentionLength(recomputeBlockOps(S, mb, T, spec, sp, moe), in.attentionLength),
            name + " backward (recompute)");
    }
    if (!planned.ok()) return planned.error();
    auto blockKind = [&](int block, bool backward) {
        if (backward && recomputes(block)) return firstRecompute + blockKindOf[size_t(block)];
        return firstBlock + 2 * blockKindOf[size_t(block)] + (backward ? 1 : 0);
    };

    // Execution order of layer phases.
    // With micro-batches every micro-batch streams the weights in again for its forward and
    // backward; gradients stream out (and SwarmX reduces them) every micro-batch, MemoryX
    // accumulates them and updates once, after the last.
    struct Step {
        int kind;
        std::string layer;
        int layerIndex;  // ParameterTable numbering
        int micro;
        bool lastMicro;
        double offloadBytes = 0;  // activations out after this forward / in before this backward
    };
    std::vector<Step> order;
    for (int u = 0; u < micros; ++u) {
        const bool last = u + 1 == micros;
        order.push_back({embF, "embeddings", 0, u, last});
        const double tokens = double(mb) * T;
        for (int l = 0; l < L; ++l)
            order.push_back({blockKind(l, false), fmt::format("h.{}", l), l + 1, u, last,
                             blockOffloadBytes(S, tokens, activationOf(l))});
        order.push_back({headF, "head", L + 1, u, last});
        order.push_back({headB, "head", L + 1, u, last});
        for (int l = L - 1; l >= 0; --l)
            order.push_back({blockKind(l, true), fmt::format("h.{}", l), l + 1, u, last,
                             blockOffloadBytes(S, tokens, activationOf(l))});
        // LoRA: the frozen embeddings need no gradient, so their backward is not scheduled.
        if (!S.hasLora()) order.push_back({embB, "embeddings", 0, u, last});
    }
    auto isEmbedding = [&](int kind) { return kind == embF || kind == embB; };

    StepPrediction out;
    out.waferName = spec.name;
    out.numSystems = in.numSystems;
    out.treeDepth = spec.cluster.treeDepth(in.numSystems);
    out.batchPerSystem = B;
    out.microBatch = mb;
    out.seqLen = T;
    out.weightBufferLayers = std::max(1, in.weightBufferLayers);
    const double clock = spec.clockHz();
    const double io = spec.ioBytesPerS();
    const double bpv = spec.streamBytesPerValue;  // gradients out
    const double weightBpv = in.weightBytesPerValue > 0 ? in.weightBytesPerValue : bpv;
    const double treeLatency = out.treeDepth * spec.cluster.swarmxHopLatencyUs * 1e-6;
    const double updateRate = spec.cluster.memoryxUpdateGparamsPerS * 1e9;

    const double storedPerCore =
        (acts.empty() ? activationFit(spec, S, mb, T).storedBytes
                      : residentActivationBytes(S, double(mb) * T, countsOf(acts))) /
        double(spec.cores());
    const size_t n = order.size();
    const bool oneSlot = in.weightBufferLayers == 1;
    std::vector<double> inStart(n), inEnd(n), compStart(n), compEnd(n);
    std::vector<double> drainEnd(n, 0.0);  // end of the offload after phase i (0: none)
    std::vector<ActivationSpan> activationSpans;
    double outEnd = 0, updEnd = 0, lastReduceEnd = 0;
    std::vector<std::pair<size_t, double>> deferredUpdates;  // (order index, update seconds)
    using streaming::SpanKind;
    std::vector<TimelineSpan> spans, sharedSpans;  // per system / SwarmX and MemoryX
    auto span = [&](SpanKind k, const Step& st, Pass pass, double a, double b) {
        const bool shared = k == SpanKind::Reduce || k == SpanKind::Update;
        (shared ? sharedSpans : spans)
            .push_back({shared ? -1 : 0, st.micro, st.layerIndex, k, pass == Pass::Backward, a, b});
    };
    // A transfer of a layer's weights or gradients: an MoE block's moves as units, its shared
    // part then each expert, one after another, each taking its share of [a, b).
    const double expertValues = 2.0 * S.channels * S.ffn + S.ffn + S.channels;
    auto transferSpans = [&](SpanKind k, const Step& st, Pass pass, double a, double b) {
        const int block = st.layerIndex - 1;
        const bool moe = block >= 0 && block < L && S.isMoeBlock(block);
        if (!moe) return span(k, st, pass, a, b);
        const double total = moeBlockValues(S, S.numExperts);
        double at = a;
        for (int e = -1; e < S.numExperts; ++e) {
            const double share =
                (e < 0 ? total - S.numExperts * expertValues : expertValues) / total;
            const double end = e + 1 == S.numExperts ? b : at + share * (b - a);
            span(k, st, pass, at, end);
            auto& added = (k == SpanKind::Reduce ? sharedSpans : spans).back();
            added.expert = e;
            added.share = share;
            at = end;
        }
    };
    for (size_t i = 0; i < n; ++i) {
        const PlannedLayer& p = kinds[size_t(order[i].kind)];
        const Pass pass = p.ops.pass;
        const double streamS = p.ops.weightValues * weightBpv / io;
        const double busyS = p.busyCycles / clock;
        const double fillS = fillCycles(spec) / clock;
        // Offloaded activations (activation_memory.h): back in ahead of a backward phase's
        // weights, out behind a forward phase on the outbound link.
        const double actS = order[i].offloadBytes / io;
        const double actInS = pass == Pass::Backward ? actS : 0.0;
        const double actOutS = pass == Pass::Forward ? actS : 0.0;
        if (!oneSlot) {
            // Two weight buffers: layer i streams once layer i-1's stream ended and layer i-2's
            // compute freed its buffer; it computes as its weights arrive.
            inStart[i] = std::max(i ? inEnd[i - 1] : 0.0, i >= 2 ? compEnd[i - 2] : 0.0);
            if (actInS > 0) {
                inEnd[i] = inStart[i] + actInS + streamS + treeLatency;
                compStart[i] =
                    std::max(i ? compEnd[i - 1] : 0.0, inStart[i] + actInS + treeLatency);
            } else {
                inEnd[i] = inStart[i] + (streamS > 0 ? streamS + treeLatency : 0);
                compStart[i] = std::max(i ? compEnd[i - 1] : 0.0,
                                        inStart[i] + (streamS > 0 ? treeLatency : 0));
            }
            if (i >= 2 && drainEnd[i - 2] > 0)
                compStart[i] = std::max(compStart[i], drainEnd[i - 2]);
            compEnd[i] = std::max(compStart[i] + busyS, streamS > 0 ? inEnd[i] + fillS : 0.0);
        } else {
            // One buffer: the slot is free once layer i-1 has computed; layer i computes once
            // its weights are all in.
            inStart[i] = i ? std::max(inEnd[i - 1], compEnd[i - 1]) : 0.0;
            inEnd[i] =
                inStart[i] + (streamS > 0 || actInS > 0 ? actInS + streamS + treeLatency : 0);
            compStart[i] = std::max(i ? compEnd[i - 1] : 0.0, inEnd[i]);
            if (i >= 2 && drainEnd[i - 2] > 0)
                compStart[i] = std::max(compStart[i], drainEnd[i - 2]);
            compEnd[i] = compStart[i] + busyS;
        }
        if (actInS > 0)
            activationSpans.push_back({0, order[i].micro, order[i].layerIndex, false,
                                       order[i].offloadBytes, inStart[i], inStart[i] + actInS});
        if (actOutS > 0) {
            // Streams out as the forward produces it, behind what the outbound link carries.
            const double oStart = std::max(outEnd, compStart[i]);
            outEnd = std::max(oStart + actOutS, compEnd[i]);
            drainEnd[i] = outEnd;
            activationSpans.push_back({0, order[i].micro, order[i].layerIndex, true,
                                       order[i].offloadBytes, oStart, outEnd});
        }
        if (streamS > 0)
            transferSpans(SpanKind::StreamIn, order[i], pass, inStart[i] + actInS, inEnd[i]);
        span(pass == Pass::Forward ? SpanKind::Forward : SpanKind::Backward, order[i], pass,
             compStart[i], compEnd[i]);

        LayerTiming t;
        t.layer = order[i].layer;
        t.pass = pass;
        t.computeS = p.computeCycles / clock;
        t.fabricS = (p.busyCycles - p.computeCycles) / clock;
        for (const auto& op : p.timings) t.fillS += op.fillCycles / clock;
        t.weightStreamS = streamS;
        t.timeS = compEnd[i] - compStart[i];
        // One slot: the layer waited out its whole stream before computing.
        const double waitedS = oneSlot ? compStart[i] - (i ? compEnd[i - 1] : 0.0) : 0.0;
        t.binding = compEnd[i] > compStart[i] + busyS + 1e-15 || waitedS > 0
                        ? Binding::WeightStream
                        : (t.fabricS > t.computeS ? Binding::Fabric : Binding::Compute);
        t.tileSramBytes = p.tileSram;
        t.sramBytesPerCore = p.tileSram + storedPerCore;
        t.waitFabricS = t.fabricS;
        t.waitWeightsS = std::max(0.0, t.timeS - busyS);  // one slot: the wait is before
        t.rowLinkBytes = p.rowLinkBytes;
        t.colLinkBytes = p.colLinkBytes;
        t.ops = p.timings;
        scheduleOps(t.ops, clock);

        const bool frozen = size_t(order[i].layerIndex) < in.frozenLayers.size() &&
                            in.frozenLayers[size_t(order[i].layerIndex)];
        if (p.ops.gradientValues > 0 && !frozen) {
            const double gradS = p.ops.gradientValues * bpv / io;
            t.gradStreamS = gradS;
            const double oStart = std::max(outEnd, compStart[i]);
            outEnd = std::max(oStart + gradS, compEnd[i]);
            transferSpans(SpanKind::StreamOut, order[i], pass, oStart, outEnd);
            const double reduceEnd = outEnd + treeLatency;
            if (in.numSystems > 1)
                transferSpans(SpanKind::Reduce, order[i], pass, oStart, reduceEnd);
            lastReduceEnd = reduceEnd;
            out.gradientStreamS += gradS;
            out.reduceS += treeLatency;
            if (order[i].lastMicro) {
                const double uS = p.ops.gradientValues / updateRate;
                out.optimizerS += uS;
                if (in.updatesAfterNorm) {
                    deferredUpdates.push_back({i, uS});
                } else {
                    const double uStart = std::max(updEnd, oStart + treeLatency);
                    updEnd = std::max(uStart + uS, reduceEnd);
                    span(SpanKind::Update, order[i], pass, uStart, updEnd);
                }
            }
        }
        out.layers.push_back(std::move(t));
    }
    // Global-norm clipping: the norm needs every layer's gradient, so MemoryX updates the
    // layers one after another once the last reduce has landed.
    for (const auto& [i, uS] : deferredUpdates) {
        const double uStart = std::max(updEnd, lastReduceEnd);
        updEnd = uStart + uS;
        span(SpanKind::Update, order[i], Pass::Backward, uStart, updEnd);
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
        const double waited = oneSlot ? gap : 0.0;  // one slot: the gap is the layer's stream
        if (!isEmbedding(order[i].kind) && excess + waited > 1e-3 * busyS)
            out.weightStreamingHidden = false;
        out.layers[i].meanBusy = 0;
    }
    const double tail = out.stepS - compEnd[n - 1];
    split.reduce = std::clamp(lastReduceEnd - compEnd[n - 1], 0.0, tail);
    if (in.numSystems == 1) split.reduce = 0;
    split.bubble += tail - split.reduce;
    out.bubbleS = split.bubble;

    out.modelFlopsPerStep = (S.hasLora() ? model::stepTrainingFlopsPerToken(S, T) * B * T
                                         : model::trainingFlopsPerStep(S, B, T)) *
                            in.numSystems;
    if (S.hasLora()) {
        out.loraRank = S.loraRank;
        for (int backward = 0; backward < 2; ++backward) {
            double seconds = 0;
            for (const auto& op : kinds[size_t(blockKind(0, backward == 1))].timings) {
                if (!op.adapter) continue;
                seconds += (std::max(op.computeCycles, op.fabricCycles) + op.fillCycles) / clock;
                out.adapterFmacsPerStep += op.fmacs * L * micros;
            }
            (backward ? out.adapterBackwardS : out.adapterForwardS) = seconds;
        }
        out.adapterS = (out.adapterForwardS + out.adapterBackwardS) * L * micros;
    }
    // Activation offload and recompute: what they cost (zero without a plan).
    out.blockActivations = acts;
    out.activationPlan = in.activationPlanNote;
    if (!acts.empty()) {
        const ActivationCounts counts = countsOf(acts);
        out.residentActivationBytes = residentActivationBytes(S, double(mb) * T, counts);
        out.offloadBytesPerStep = offloadBytesPerMicroBatch(S, double(mb) * T, counts) * micros;
        out.offloadS = 2 * out.offloadBytesPerStep / io;
        if (anyRecompute) {
            for (size_t i = 0; i < n; ++i) {
                if (order[i].kind < firstRecompute) continue;
                const PlannedLayer& p = kinds[size_t(order[i].kind)];
                for (size_t k = 0; k < p.ops.ops.size(); ++k) {
                    if (!isRecomputeOp(p.ops.ops[k])) continue;
                    const OpTiming& op = p.timings[k];
                    out.recomputeFmacsPerStep += op.fmacs;
                    out.recomputeS +=
                        (std::max(op.computeCycles, op.fabricCycles) + op.fillCycles) / clock;
                }
            }
        }
    }
    out.hardwareFlopsPerStep =
        out.modelFlopsPerStep + 2 * out.recomputeFmacsPerStep * in.numSystems;
    out.hfu = out.hardwareFlopsPerStep / (out.stepS * spec.peakFlopsPerS() * in.numSystems);
    out.activationSpans.reserve(activationSpans.size() * size_t(in.numSystems));
    for (int sys = 0; sys < in.numSystems; ++sys)
        for (auto s : activationSpans) {
            s.system = sys;
            out.activationSpans.push_back(s);
        }
    out.tokensPerS = double(B) * T * in.numSystems / out.stepS;
    out.samplesPerS = double(B) * in.numSystems / out.stepS;
    out.mfu = out.modelFlopsPerStep / (out.stepS * spec.peakFlopsPerS() * in.numSystems);
    out.activations = activationFit(spec, S, mb, T);
    if (S.hasMoe()) {
        out.expertTokens = std::move(mappedTokens);
        out.uniformRouting = uniform;
        out.moeExperts = S.numExperts;
        out.moeTopK = S.topK;
        out.expertRegions = expertRegions(S.numExperts, spec);
    }

    // Every system runs the same schedule (data parallel, same per-system batch); SwarmX
    // reduces and MemoryX updates once for all of them.
    out.spans.reserve(spans.size() * size_t(in.numSystems) + sharedSpans.size());
    for (int sys = 0; sys < in.numSystems; ++sys)
        for (auto s : spans) {
            s.system = sys;
            out.spans.push_back(s);
        }
    out.spans.insert(out.spans.end(), sharedSpans.begin(), sharedSpans.end());

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
        const size_t K = kinds.size();
        std::vector<double> kindCount(K, 0.0);
        for (size_t i = 0; i < n; ++i) kindCount[size_t(order[i].kind)] += 1;
        std::vector<float> stepBusy(size_t(R) * C, 0.0f);
        for (size_t k = 0; k < K; ++k) {
            const auto& cyc = kinds[k].coreBusyCycles;
            // Over the phase's compute window (its ops back to back), not its span: a layer
            // bound by its weight stream would otherwise show as a uniform ~1 % whatever its
            // matrices do (the waiting is the time split's and the timeline's to show). The
            // window is the same for every visit of a kind, and no core exceeds it (an op lasts
            // at least its busiest core's cycles).
            const double windowCycles = kinds[k].busyCycles;
            std::vector<float> busy(cyc.size());
            for (size_t j = 0; j < cyc.size(); ++j) {
                busy[j] = windowCycles > 0 ? float(cyc[j] / windowCycles) : 0.0f;
                stepBusy[j] += float(cyc[j] * kindCount[k]);
            }
            out.frames.push_back(
                downsample(kindLabels[k], busy, R, C, opt.displayRows, opt.displayCols));
            out.frames.back().window = UtilizationFrame::Window::Compute;
            out.frames.back().windowS = windowCycles / clock;
        }
        // LoRA: the adapter products of a block's pass alone, over their own time.
        if (S.hasLora()) {
            for (int backward = 0; backward < 2; ++backward) {
                const PlannedLayer& block = kinds[size_t(blockKind(0, backward == 1))];
                std::vector<float> busy(size_t(R) * C, 0.0f);
                for (const auto& op : block.ops.ops)
                    if (op.adapter) addCoreCycles(op, spec, busy);
                const double spanCycles =
                    (backward ? out.adapterBackwardS : out.adapterForwardS) * clock;
                for (auto& v : busy) v = spanCycles > 0 ? float(v / spanCycles) : 0.0f;
                (backward ? out.adapterBackwardFrame : out.adapterForwardFrame) =
                    int(out.frames.size());
                out.frames.push_back(
                    downsample(backward ? "LoRA adapters backward" : "LoRA adapters forward", busy,
                               R, C, opt.displayRows, opt.displayCols));
                out.frames.back().window = UtilizationFrame::Window::Adapters;
                out.frames.back().windowS = spanCycles / clock;
            }
        }
        const double stepCycles = out.stepS * clock;
        for (auto& v : stepBusy) v = float(v / stepCycles);
        out.frames.push_back(downsample("step", stepBusy, R, C, opt.displayRows, opt.displayCols));
        out.frames.back().window = UtilizationFrame::Window::Step;
        out.frames.back().windowS = out.stepS;
        out.forwardFrame.assign(size_t(L + 2), -1);
        out.backwardFrame.assign(size_t(L + 2), -1);
        for (const auto& st : order) {
            const bool backward = kinds[size_t(st.kind)].ops.pass == Pass::Backward;
            (backward ? out.backwardFrame : out.forwardFrame)[size_t(st.layerIndex)] = st.kind;
        }
    }
    return out;
}

const UtilizationFrame* StepPrediction::adapterFrame(bool backward) const {
    const int index = backward ? adapterBackwardFrame : adapterForwardFrame;
    return index >= 0 && size_t(index) < frames.size() ? &frames[size_t(index)] : nullptr;
}

const UtilizationFrame* StepPrediction::frameFor(int layer, bool backward) const {
    if (frames.empty()) return nullptr;
    if (layer < 0) return &frames.back();
    const auto& index = backward ? backwardFrame : forwardFrame;
    if (size_t(layer) >= index.size() || index[size_t(layer)] < 0) return nullptr;
    return &frames[size_t(index[size_t(layer)])];
}

}  // namespace ws::wafer
