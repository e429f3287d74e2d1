// SPDX-License-Identifier: GPL-3.0-or-later
// The activation planner (activation_plan.h).
#include "engine/wafer/activation_plan.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <optional>

#include "engine/core/units.h"
#include "engine/wafer/cluster_links.h"

namespace ws::wafer {

namespace {

// keep+recompute micro-batches timed by the cycle model (the roofline's best few).
constexpr size_t kMixedShortlist = 3;
// Step times this close count as equal (see planActivations).
constexpr double kPlanTolerance = 0.01;

std::vector<int> divisorsDescending(int b) {
    std::vector<int> out;
    for (int d = b; d >= 1; --d)
        if (b % d == 0) out.push_back(d);
    return out;
}

ActivationCounts all(int L, BlockActivation a) {
    ActivationCounts c;
    switch (a) {
        case BlockActivation::Keep:
            c.keep = L;
            break;
        case BlockActivation::Offload:
            c.offload = L;
            break;
        case BlockActivation::Recompute:
            c.recompute = L;
            break;
        case BlockActivation::RecomputeOffload:
            c.recomputeOffload = L;
            break;
    }
    return c;
}

// keep+recompute at one micro-batch: as many blocks keep as SRAM allows; the others recompute
// from inputs kept on the wafer, or from inputs offloaded when even those do not fit. No value
// when no block can keep (the pure recompute families cover that).
std::optional<ActivationCounts> keepAndRecompute(const model::GptShape& s, double tokens,
                                                 double available) {
    const int L = s.layers;
    const double A = blockStoredBytes(s, tokens), X = blockCheckpointBytes(s, tokens);
    // The peak is the forward's end, X (head input) + k A + (L - k) X, and once the kept blocks
    // are freed (L - k) X + A (activation_memory.h)
    const double k1 = std::floor((available - X - L * X) / (A - X));
    if (k1 >= 1 && (L - 1) * X + A <= available) {
        ActivationCounts c;
        c.keep = int(std::min<double>(k1, L - 1));
        c.recompute = L - c.keep;
        return c;
    }
    // Offloaded inputs: X + k A at the forward's end; A + 2 X (two inputs in flight) later
    const double k2 = std::floor((available - X) / A);
    if (k2 >= 1 && A + 2 * X <= available) {
        ActivationCounts c;
        c.keep = int(std::min<double>(k2, L - 1));
        c.recomputeOffload = L - c.keep;
        return c;
    }
    return std::nullopt;
}

// A roofline estimate of a step (only to choose keep+recompute's micro-batch; the cycle model
// times every candidate): per layer phase the longest of its compute at the spec's FMAC rate and
// efficiency, its inbound bytes (weights, offloaded activations) and its outbound offload.
struct Roofline {
    double blockF = 0, blockB = 0, headF = 0, headB = 0;  // seconds per micro-batch
    double blockWeightsS = 0, headWeightsS = 0, embWeightsS = 0;
};

Roofline roofline(const WaferSpec& spec, const StepInput& in, int mb) {
    const double rate =
        double(spec.cores()) * spec.fmacsPerCycle * spec.computeEfficiency * spec.clockHz();
    const double wbpv =
        in.weightBytesPerValue > 0 ? in.weightBytesPerValue : double(spec.streamBytesPerValue);
    auto seconds = [&](const LayerOps& ops) {
        double f = 0;
        for (const auto& op : ops.ops) f += opFmacs(op);
        return f / rate;
    };
    Roofline r;
    const auto& S = in.shape;
    const LayerOps bf = blockOps(S, mb, in.seqLen, Pass::Forward, spec, in.sparsity);
    r.blockF = seconds(bf);
    r.blockB = seconds(blockOps(S, mb, in.seqLen, Pass::Backward, spec, in.sparsity));
    const LayerOps hf = headOps(S, mb, in.seqLen, Pass::Forward, spec);
    r.headF = seconds(hf);
    r.headB = seconds(headOps(S, mb, in.seqLen, Pass::Backward, spec));
    // Weights move at SwarmX's rate for the run's system count (cluster_links.h).
    const double io = clusterRates(spec, in.numSystems).swarmxBytesPerS;
    r.blockWeightsS = bf.weightValues * wbpv / io;
    r.headWeightsS = hf.weightValues * wbpv / io;
    r.embWeightsS = embeddingOps(S, mb, in.seqLen, Pass::Forward, spec).weightValues * wbpv / io;
    return r;
}

double estimateStepS(const WaferSpec& spec, const StepInput& in, int mb,
                     const ActivationCounts& c) {
    const Roofline r = roofline(spec, in, mb);
    const double io = clusterRates(spec, in.numSystems).offloadBytesPerS;
    const double tokens = double(mb) * in.seqLen;
    double micro =
        r.embWeightsS + std::max(r.headF, r.headWeightsS) + std::max(r.headB, r.headWeightsS);
    auto blocks = [&](int n, BlockActivation a) {
        if (n == 0) return 0.0;
        const double off = blockOffloadBytes(in.shape, tokens, a) / io;
        const bool rec = a == BlockActivation::Recompute || a == BlockActivation::RecomputeOffload;
        const double forward = std::max({r.blockF, r.blockWeightsS, off});
        const double backward = std::max(r.blockB + (rec ? r.blockF : 0.0), r.blockWeightsS + off);
        return n * (forward + backward);
    };
    micro += blocks(c.keep, BlockActivation::Keep) + blocks(c.offload, BlockActivation::Offload) +
             blocks(c.recompute, BlockActivation::Recompute) +
             blocks(c.recomputeOffload, BlockActivation::RecomputeOffload);
    return micro * double(in.batchPerSystem / mb);
}

// A candidate the cycle model will time: a strategy, its micro-batch and per-block choices.
struct Choice {
    std::string strategy;
    int mb;
    ActivationCounts counts;
};

// The candidates that fit the SRAM and MemoryX: each uniform strategy at its largest fitting
// micro-batch, and keep+recompute at the micro-batches the roofline estimate likes best (the
// estimate only shortlists; the cycle model times them).
std::vector<Choice> shortlist(const WaferSpec& spec, const StepInput& base, double availableBytes,
                              double stateBytes) {
    const auto& S = base.shape;
    const int B = base.batchPerSystem, T = base.seqLen, L = S.layers;
    const std::vector<int> divisors = divisorsDescending(B);
    const double memoryx = spec.cluster.memoryxBytes;
    auto fitsAt = [&](int mb, const ActivationCounts& c) {
        const double tokens = double(mb) * T;
        const double resident = c.allKeep() ? activationFit(spec, S, mb, T).storedBytes
                                            : residentActivationBytes(S, tokens, c);
        return resident <= availableBytes &&
               stateBytes + offloadBytesPerMicroBatch(S, tokens, c) <= memoryx;
    };
    std::vector<Choice> choices;
    auto largest = [&](const char* name, BlockActivation a) {
        for (int mb : divisors)
            if (fitsAt(mb, all(L, a))) {
                choices.push_back({name, mb, all(L, a)});
                return;
            }
    };
    largest("micro-batching", BlockActivation::Keep);
    largest("recompute", BlockActivation::Recompute);
    largest("offload", BlockActivation::Offload);
    largest("recompute+offload", BlockActivation::RecomputeOffload);
    std::vector<std::pair<double, Choice>> mixed;
    for (int mb : divisors) {
        const auto c = keepAndRecompute(S, double(mb) * T, availableBytes);
        if (!c || !fitsAt(mb, *c)) continue;
        mixed.push_back(
            {estimateStepS(spec, base, mb, *c),
             Choice{c->recomputeOffload > 0 ? "keep+recompute+offload" : "keep+recompute", mb,
                    *c}});
    }
    std::stable_sort(mixed.begin(), mixed.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    for (size_t i = 0; i < mixed.size() && i < kMixedShortlist; ++i)
        choices.push_back(mixed[i].second);
    return choices;
}

// Every candidate timed by the cycle model into plan.considered; the index of the winner (-1:
// none). Within kPlanTolerance of the fastest, a plan whose weight streaming hides behind compute
// wins over one bound by the MemoryX link (the fastest of those): the link is modelled at its
// nominal line rate, so a link-bound plan's time is the optimistic end of its range.
Result<int> timeCandidates(const WaferSpec& spec, const StepInput& base,
                           const std::vector<Choice>& choices, ActivationPlan& plan) {
    const auto& S = base.shape;
    const int T = base.seqLen;
    const PredictOptions noFrames{.frames = false};
    int best = -1;
    for (const auto& ch : choices) {
        StepInput in = base;
        in.microBatch = ch.mb;
        in.blockActivations =
            ch.counts.allKeep() ? std::vector<BlockActivation>{} : blockActivationsFor(ch.counts);
        auto p = predictStep(spec, in, noFrames);
        if (!p.ok()) return p.error();
        const double tokens = double(ch.mb) * T;
        plan.considered.push_back({ch.strategy, ch.mb, ch.counts,
                                   ch.counts.allKeep()
                                       ? activationFit(spec, S, ch.mb, T).storedBytes
                                       : residentActivationBytes(S, tokens, ch.counts),
                                   p->stepS, p->weightStreamingHidden, p->split.streaming});
        if (best < 0 || p->stepS < plan.considered[size_t(best)].stepS)
            best = int(plan.considered.size()) - 1;
    }
    if (best >= 0 && !plan.considered[size_t(best)].streamingHidden) {
        const double limit = plan.considered[size_t(best)].stepS * (1 + kPlanTolerance);
        int hidden = -1;
        for (size_t i = 0; i < plan.considered.size(); ++i) {
            const auto& c = plan.considered[i];
            if (c.streamingHidden && c.stepS <= limit &&
                (hidden < 0 || c.stepS < plan.considered[size_t(hidden)].stepS))
                hidden = int(i);
        }
        if (hidden >= 0) best = hidden;
    }
    return best;
}

// The plan's note: what it keeps, where, how fast, and the others it beat.
std::string winnerNote(const WaferSpec& spec, const StepInput& base, const ActivationPlan& plan,
                       int best, double storedBytes) {
    const auto& S = base.shape;
    const int T = base.seqLen;
    const ActivationCandidate& win = plan.considered[size_t(best)];
    std::string others;
    if (plan.considered.front().strategy != "micro-batching")
        others = fmt::format("micro-batching cannot fit (one sequence keeps {})",
                             formatBytes(activationFit(spec, S, 1, T).storedBytes));
    for (size_t i = 0; i < plan.considered.size(); ++i) {
        if (int(i) == best) continue;
        const auto& c = plan.considered[i];
        others +=
            fmt::format("{}{} {:.4g} s (mb {}{})", others.empty() ? "" : ", ", c.strategy, c.stepS,
                        c.microBatch, c.streamingHidden ? "" : ", weight streaming exposed");
    }
    return fmt::format(
        "{} for backward do not fit {} of SRAM: {} ({}), micro-batches of {}, {} resident{}: "
        "{:.4g} s a step{}",
        formatBytes(storedBytes), formatBytes(plan.availableBytes), win.strategy,
        describeCounts(win.counts), win.microBatch, formatBytes(win.residentBytes),
        plan.offloadBytesPerMicroBatch > 0
            ? fmt::format(", {} to MemoryX per micro-batch",
                          formatBytes(plan.offloadBytesPerMicroBatch))
            : std::string(),
        win.stepS, others.empty() ? std::string() : "; vs " + others);
}

}  // namespace

Result<ActivationPlan> planActivations(const WaferSpec& spec, const StepInput& base,
                                       double availableBytes) {
    if (Status s = base.shape.validate(); !s.ok()) return s.error();
    if (base.batchPerSystem < 1 || base.seqLen < 1)
        return Error{fmt::format("batch per system ({}) and sequence length ({}) must be >= 1",
                                 base.batchPerSystem, base.seqLen)};
    const auto& S = base.shape;
    const int B = base.batchPerSystem, T = base.seqLen, L = S.layers;
    ActivationPlan plan;
    const ActivationFit whole = activationFit(spec, S, B, T);
    plan.availableBytes = availableBytes > 0 ? availableBytes : whole.availableBytes;
    plan.storedBytes = whole.storedBytes;
    const double params = double(model::ParameterTable(S).totalSize());
    const double stateBytes = 16 * params;  // fp32 weight, gradient accumulator, AdamW m and v

    // The whole batch fits: nothing to decide (today's prediction, untouched).
    if (whole.storedBytes <= plan.availableBytes) {
        plan.strategy = "fits";
        plan.microBatch = B;
        plan.counts = all(L, BlockActivation::Keep);
        plan.fits = true;
        plan.residentBytes = whole.storedBytes;
        plan.memoryxBytesNeeded = stateBytes;
        plan.note =
            fmt::format("activations fit: the whole batch keeps {} for backward in {} of SRAM",
                        formatBytes(whole.storedBytes), formatBytes(plan.availableBytes));
        return plan;
    }

    const std::vector<Choice> choices = shortlist(spec, base, plan.availableBytes, stateBytes);
    auto timed = timeCandidates(spec, base, choices, plan);
    if (!timed.ok()) return timed.error();
    const int best = *timed;
    if (best < 0) {
        // Nothing fits, not even one sequence recomputing with its inputs in MemoryX.
        plan.strategy = "none fits";
        plan.microBatch = largestFittingMicroBatch(spec, S, B, T, plan.availableBytes);
        plan.counts = all(L, BlockActivation::Keep);
        plan.residentBytes = activationFit(spec, S, plan.microBatch, T).storedBytes;
        plan.memoryxBytesNeeded = stateBytes;
        plan.note = fmt::format(
            "activations do not fit in any way: even one sequence recomputing every block from "
            "inputs in MemoryX needs more than the {} of SRAM; micro-batches of {} assumed "
            "resident anyway",
            formatBytes(plan.availableBytes), plan.microBatch);
        return plan;
    }
    const ActivationCandidate& win = plan.considered[size_t(best)];
    plan.strategy = win.strategy;
    plan.microBatch = win.microBatch;
    plan.counts = win.counts;
    plan.blockActivations =
        win.counts.allKeep() ? std::vector<BlockActivation>{} : blockActivationsFor(win.counts);
    plan.fits = true;
    plan.residentBytes = win.residentBytes;
    const double tokens = double(win.microBatch) * T;
    plan.offloadBytesPerMicroBatch = offloadBytesPerMicroBatch(S, tokens, win.counts);
    plan.memoryxBytesNeeded = stateBytes + plan.offloadBytesPerMicroBatch;
    plan.note = winnerNote(spec, base, plan, best, whole.storedBytes);
    return plan;
}

void applyActivationPlan(const ActivationPlan& plan, StepInput& in) {
    in.microBatch = plan.microBatch;
    in.blockActivations = plan.blockActivations;
    in.activationPlanNote = plan.note;
}

std::string shortStrategy(const ActivationPlan& plan) {
    if (plan.strategy == "fits") return "fits";
    if (plan.strategy == "micro-batching") return fmt::format("micro-batch {}", plan.microBatch);
    return fmt::format("{} mb {}", plan.strategy, plan.microBatch);
}

}  // namespace ws::wafer
