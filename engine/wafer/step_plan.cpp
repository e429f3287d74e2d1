// SPDX-License-Identifier: GPL-3.0-or-later
// The plan phase of the cycle model (step_plan.h).
#include "engine/wafer/step_plan.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <optional>
#include <utility>

#include "engine/wafer/attention_span.h"

namespace ws::wafer {

Result<PlannedLayer> planLayerPhase(LayerOps ops, const WaferSpec& spec, bool frames) {
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
        t.columnParts = op.columnParts;
        t.mapping = op.mapping;
        const double busy = opBusyCycles(t);
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

BlockActivation StepPlan::activationOf(int block) const {
    return blockActivations.empty() ? BlockActivation::Keep : blockActivations[size_t(block)];
}

bool StepPlan::recomputes(int block) const {
    const BlockActivation a = activationOf(block);
    return a == BlockActivation::Recompute || a == BlockActivation::RecomputeOffload;
}

bool StepPlan::anyRecompute() const {
    for (int l = 0; l < int(blockKindOf.size()); ++l)
        if (recomputes(l)) return true;
    return false;
}

int StepPlan::blockKind(int block, bool backward) const {
    if (backward && recomputes(block)) return firstRecompute + blockKindOf[size_t(block)];
    return kFirstBlock + 2 * blockKindOf[size_t(block)] + (backward ? 1 : 0);
}

namespace {

// The checks that need no planning, in the order the errors are reported.
Status checkStepInput(const WaferSpec& spec, const StepInput& in) {
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
    const int B = in.batchPerSystem, L = in.shape.layers;
    const int mb = in.microBatch > 0 ? in.microBatch : B;
    if (B % mb != 0)
        return Error{fmt::format(
            "micro-batch {} does not divide the batch per system {}; choose a divisor", mb, B)};
    // Each expert owns a rectangle of at least one core.
    const auto& S = in.shape;
    if (S.hasMoe() && int64_t(S.numExperts) > int64_t(spec.gridRows) * spec.gridCols)
        return Error{fmt::format(
            "model.moe.num_experts = {} exceeds the {} x {} cores of {}: each expert needs a "
            "core of its own; use fewer experts or a larger wafer (wafer.spec)",
            S.numExperts, spec.gridRows, spec.gridCols, spec.name)};
    if (!in.perBlockSparsity.empty() && int(in.perBlockSparsity.size()) != L)
        return Error{fmt::format("per-block sparsity has {} entries for {} blocks",
                                 in.perBlockSparsity.size(), L)};
    if (!in.expertTokens.empty() && int(in.expertTokens.size()) != L)
        return Error{fmt::format("expert token counts have {} entries for {} blocks",
                                 in.expertTokens.size(), L)};
    return {};
}

// MoE: each block's routing (a dense block's empty), the given counts or the uniform split of
// the micro-batch's tokens; sets plan.expertTokens and plan.uniformRouting.
Result<std::vector<std::optional<ExpertLoad>>> routeExperts(const StepInput& in, StepPlan& plan) {
    const auto& S = in.shape;
    const int L = S.layers;
    std::vector<std::optional<ExpertLoad>> loads(static_cast<size_t>(L));
    plan.expertTokens.assign(static_cast<size_t>(L), {});
    for (int l = 0; l < L && S.hasMoe(); ++l) {
        if (!S.isMoeBlock(l)) continue;
        const auto* given = in.expertTokens.empty() ? nullptr : &in.expertTokens[size_t(l)];
        if (given && !given->empty()) {
            if (int(given->size()) != S.numExperts)
                return Error{fmt::format("block {}: {} expert token counts for {} experts", l,
                                         given->size(), S.numExperts)};
            loads[size_t(l)] = ExpertLoad{S.topK, *given};
        } else {
            loads[size_t(l)] =
                uniformExpertLoad(S.numExperts, S.topK, int64_t(plan.microBatch) * plan.seqLen);
            plan.uniformRouting = true;
        }
        plan.expertTokens[size_t(l)] = loads[size_t(l)]->tokens;
    }
    return loads;
}

// Blocks with the same sparsity and routing share a kind: the blocks of each distinct kind, in
// order of first appearance; sets plan.blockKindOf.
std::vector<std::vector<int>> groupBlocks(const StepInput& in,
                                          const std::vector<std::optional<ExpertLoad>>& loads,
                                          StepPlan& plan) {
    const bool perBlock = !in.perBlockSparsity.empty();
    const int L = in.shape.layers;
    plan.blockKindOf.assign(size_t(L), 0);
    std::map<std::pair<int, std::vector<int64_t>>, int> distinct;  // (sparsity, tokens) -> i
    std::vector<std::vector<int>> blocksOfKind;
    for (int l = 0; l < L; ++l) {
        const auto key = std::pair{perBlock ? l : -1, loads[size_t(l)] ? loads[size_t(l)]->tokens
                                                                       : std::vector<int64_t>{-1}};
        const auto [it, fresh] = distinct.emplace(key, int(blocksOfKind.size()));
        if (fresh) blocksOfKind.emplace_back();
        blocksOfKind[size_t(it->second)].push_back(l);
        plan.blockKindOf[size_t(l)] = it->second;
    }
    return blocksOfKind;
}

// Plans every kind (see the header for the numbering).
Status planKinds(const WaferSpec& spec, const StepInput& in, bool frames,
                 const std::vector<std::optional<ExpertLoad>>& loads,
                 const std::vector<std::vector<int>>& blocksOfKind, StepPlan& plan) {
    const auto& S = in.shape;
    const int mb = plan.microBatch, T = plan.seqLen;
    const bool perBlock = !in.perBlockSparsity.empty();
    auto addKind = [&](LayerOps ops, std::string label) -> Status {
        auto p = planLayerPhase(std::move(ops), spec, frames);
        if (!p.ok()) return p.error();
        plan.kinds.push_back(std::move(*p));
        plan.kindLabels.push_back(std::move(label));
        return {};
    };
    Status planned = addKind(embeddingOps(S, mb, T, Pass::Forward, spec), "embeddings forward");
    if (planned.ok()) planned = addKind(headOps(S, mb, T, Pass::Forward, spec), "head forward");
    if (planned.ok()) planned = addKind(headOps(S, mb, T, Pass::Backward, spec), "head backward");
    if (planned.ok())
        planned = addKind(embeddingOps(S, mb, T, Pass::Backward, spec), "embeddings backward");
    const int span = in.attentionLength;  // packed documents / short sequences (VSL)
    for (size_t k = 0; k < blocksOfKind.size() && planned.ok(); ++k) {
        const int l = blocksOfKind[k].front();
        const BlockSparsity* sp = perBlock ? &in.perBlockSparsity[size_t(l)] : in.sparsity;
        const ExpertLoad* moe = loads[size_t(l)] ? &*loads[size_t(l)] : nullptr;
        std::string name = "h";
        if (perBlock || (blocksOfKind[k].size() == 1 && blocksOfKind.size() > 1))
            name = fmt::format("h.{}", l);
        else if (blocksOfKind.size() > 1)
            name = moe ? "MoE blocks" : "dense blocks";
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
    if (!acts.empty() && int(acts.size()) != S.layers)
        return Error{
            fmt::format("block activations have {} entries for {} blocks", acts.size(), S.layers)};
    plan.blockActivations = acts;
    plan.firstRecompute = int(plan.kinds.size());
    const bool anyRecompute = plan.anyRecompute();
    for (size_t k = 0; k < blocksOfKind.size() && anyRecompute && planned.ok(); ++k) {
        const int l = blocksOfKind[k].front();
        const BlockSparsity* sp = perBlock ? &in.perBlockSparsity[size_t(l)] : in.sparsity;
        const ExpertLoad* moe = loads[size_t(l)] ? &*loads[size_t(l)] : nullptr;
        const std::string name = blocksOfKind.size() > 1 ? fmt::format("h.{}", l) : "h";
        planned = addKind(withAttentionLength(recomputeBlockOps(S, mb, T, spec, sp, moe), span),
                          name + " backward (recompute)");
    }
    return planned;
}

}  // namespace

Result<StepPlan> planStep(const WaferSpec& spec, const StepInput& in, bool frames) {
    if (Status s = checkStepInput(spec, in); !s.ok()) return s.error();
    StepPlan plan;
    plan.batchPerSystem = in.batchPerSystem;
    plan.microBatch = in.microBatch > 0 ? in.microBatch : in.batchPerSystem;
    plan.micros = plan.batchPerSystem / plan.microBatch;
    plan.seqLen = in.seqLen;
    auto loads = routeExperts(in, plan);
    if (!loads.ok()) return loads.error();
    const auto blocksOfKind = groupBlocks(in, *loads, plan);
    if (Status s = planKinds(spec, in, frames, *loads, blocksOfKind, plan); !s.ok())
        return s.error();
    return plan;
}

}  // namespace ws::wafer
