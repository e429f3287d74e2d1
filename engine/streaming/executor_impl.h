// SPDX-License-Identifier: GPL-3.0-or-later
// StreamingExecutor::Impl: the executor's state and machinery, private to engine/streaming and
// shared by its three files: executor.cpp (construction and the step), executor_reduce.cpp (a
// layer's gradient from the systems through SwarmX into MemoryX, and its update there) and
// executor_moe.cpp (an MoE block's stream units and the tokens its experts computed).
// Thread-safety: as StreamingExecutor (executor.h): each system's worker writes only its own
// entries; the gradient path runs on MemoryX's queue.
#pragma once

#include <chrono>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "engine/streaming/executor.h"
#include "engine/streaming/rank_tree.h"
#include "engine/streaming/weight_streamer.h"
#include "engine/streaming/workers.h"

namespace ws::streaming {
using Clock = std::chrono::steady_clock;

struct StreamingExecutor::Impl {
    const model::ParameterTable& table;
    const StreamingOptions options;
    int T = 0;
    int perSystem = 0;  // sequences per system per step
    int micro = 0;      // sequences per micro-batch
    int micros = 1;
    MemoryX* memoryx;             // ranks holding a MemoryX shard only (rank 0 alone unsharded)
    optim::Optimizer* optimizer;  // the same ranks: over their shard's local offsets
    SpanSink sink;
    const ShardPlan& plan;
    size_t base = 0;  // the global offset of this rank's MemoryX (0 unsharded)
    // Across processes: the job and this rank's systems (all of them in one process).
    comm::Comm* comm = nullptr;  // null when this process computes every system
    comm::SystemRange mine;
    std::vector<size_t> systemsPerRank;
    // The gradient reduce across processes (rank_tree.h): one plan per rank whose MemoryX
    // holds layers (the tree's root), made on first use; node buffers reused layer to layer.
    std::vector<std::unique_ptr<RankReducePlan>> reducePlans;  // (ranks)
    std::vector<std::vector<float>> nodeBuffers;
    std::vector<float> packedLeaves;
    int64_t linkBytesThisStep = 0;  // sent to this rank's parents (MemoryX's thread)
    Clock::time_point epoch = Clock::now();

    std::vector<std::unique_ptr<model::Gpt<float>>> gpts;  // per local system, (micro, T)
    // Per local system, (P) in the parameters' layout; only the trainable pieces are ever
    // written or read (the memory of frozen tensors is never touched, so never committed).
    std::vector<std::unique_ptr<float[]>> grads;
    // (layers) the parts of each layer that train, with their offsets in the Trainable layout
    // of the whole model (optim::trainablePieces over every parameter's group): the only
    // gradients that leave the systems, are reduced and reach MemoryX.
    std::vector<std::vector<optim::TrainablePiece>> layerPieces;
    std::vector<size_t> layerTrainable;  // (layers) how many of each layer's parameters train
    size_t stateBase = 0;     // this rank's MemoryX shard's first gradient, in the model's layout
    bool fullLayout = false;  // this MemoryX keeps gradients for every parameter (Full layout)
    std::vector<double> losses;  // per local system, summed over micros
    // MoE: per local system, summed over micros, the load-balancing loss; and per local system,
    // per block (a dense block's empty), the tokens each expert computed in this step
    // (model::Gpt::expertTokenCounts after each MoE block's forward, summed over micro-batches).
    // Each system's worker writes only its own.
    std::vector<double> lbLosses;
    std::vector<std::vector<std::vector<int64_t>>> expertTokens;
    const int32_t* positionIds = nullptr;  // (B,T) setPositionIds; null: dense rows
    std::unique_ptr<WeightStreamer> streamer;
    SystemWorkers workers;
    SerialQueue memoryxQueue;
    std::vector<float> reduceScratch;
    std::vector<optim::BufferRange> layerRanges;  // (layers) each layer's slice, for its norm

    std::mutex statsMutex;
    StreamingStats stats;
    std::vector<Span> stepSpans;     // this step's stream-in and compute spans, for overlap stats
    std::vector<Span> spansForRoot;  // a rank other than 0: its spans not yet sent to rank 0

    // The step's MoE figures over this process's systems (StepResult).
    void moeStats(StepResult& result) const;

    // The phases of a step (executor.cpp), in order: the visit order the streamer loads, the
    // totals reset, every visit streamed in and computed (forward, then backward with each
    // layer's gradient posted to MemoryX's queue), and the losses gathered.
    struct StepInput {
        int64_t step = 0;
        const int32_t* inputs = nullptr;   // (B,T) the global batch
        const int32_t* targets = nullptr;  // (B,T)
        double lr = 0.0;
        int64_t updateCount = 0;
        uint64_t dropoutSeed = 0;
        bool clip = false;  // updates wait for the global gradient norm
    };
    std::vector<WeightVisit> stepVisits() const;
    void resetStepTotals();
    // Each system's loss denominator for the step's targets (the global batch, (B,T)); returns
    // the global batch's trained-target count G.
    int64_t setLossDenominators(const int32_t* targets);
    // False when hooks.cancel stopped the step before MemoryX changed (the streamer and the queue
    // are then idle). On an exception both are left idle before it propagates.
    bool streamLayers(const StepInput& in, const StepHooks& hooks, size_t visitCount);
    void forwardLayer(const StepInput& in, int m, int layerIndex, int visit);
    void zeroGradients();
    void backwardLayer(const StepInput& in, int m, int layerIndex, int visit);
    // Acquire and release visits [from, count) so the streamer's loader runs to the end.
    void drainVisits(int from, size_t count);
    std::vector<double> gatherLosses();  // (N) on rank 0; this process's systems elsewhere

    Impl(const model::ParameterTable& t, const StreamingOptions& o, MemoryX* mx,
         optim::Optimizer* opt, SpanSink s, const ShardPlan& p)
        : table(t),
          options(o),
          memoryx(mx),
          optimizer(opt),
          sink(std::move(s)),
          plan(p),
          comm(o.comm && o.comm->size() > 1 ? o.comm : nullptr),
          mine(comm ? comm::systemsOfRank(o.systems, comm->size(), comm->rank())
                    : comm::SystemRange{0, o.systems}),
          workers(mine.count) {
        if (comm) {
            for (int r = 0; r < comm->size(); ++r)
                systemsPerRank.push_back(
                    size_t(comm::systemsOfRank(o.systems, comm->size(), r).count));
            reducePlans.resize(size_t(comm->size()));
        }
        if (mx && comm && plan.shards() > 1) base = plan.begin(comm->rank());
    }

    // The tree a layer owned by `owner` is reduced in.
    const RankReducePlan& reducePlanFor(int owner) {
        auto& p = reducePlans[size_t(owner)];
        if (!p)
            p = std::make_unique<RankReducePlan>(options.systems, comm->size(), owner,
                                                 options.reduceFanIn);
        return *p;
    }
    bool root() const { return !comm || comm->rank() == 0; }
    int rank() const { return comm ? comm->rank() : 0; }
    bool sharded() const { return comm && plan.shards() > 1; }
    // The rank whose MemoryX holds a layer (rank 0 unsharded).
    int ownerOf(int layerIndex) const { return sharded() ? plan.ownerOfLayer(layerIndex) : 0; }

    double now() const { return std::chrono::duration<double>(Clock::now() - epoch).count(); }

    void report(Span span) {
        if (comm) span.rank = comm->rank();
        const bool timed = span.kind == SpanKind::StreamIn || span.kind == SpanKind::Forward ||
                           span.kind == SpanKind::Backward || span.kind == SpanKind::StreamOut;
        const bool forRoot = comm && !root();
        if (timed || forRoot) {
            std::lock_guard lock(statsMutex);
            if (timed) stepSpans.push_back(span);
            if (forRoot) spansForRoot.push_back(span);
        }
        if (sink) sink(span);
    }
    // Sends this rank's spans of the step to rank 0, which hands them to its sink on its own
    // clock (a point-to-point exchange every rank makes after each step that was not cancelled).
    void forwardSpansToRoot();

    const model::LayerSlice& layer(int index) const { return table.layers()[size_t(index)]; }
    int headIndex() const { return table.headLayer(); }
    size_t wteOffset() const { return table.find("wte.weight")->offset; }
    size_t wteSize() const { return table.find("wte.weight")->size; }

    // System s's copy of visit v's weights: fp32, or bf16 bits in bf16 mode.
    model::LayerWeights<float> weightsOnWafer(int v, int s) const {
        if (streamer->bf16()) return model::LayerWeights<float>::packed(streamer->packedSlot(v, s));
        return streamer->slot(v, s);
    }

    // An MoE block's stream units (its shared part, then each expert: they tile its slice in
    // order); empty for every other layer, which moves whole.
    std::vector<model::StreamUnit> unitsOf(int layerIndex) const;

    // What a visit needs on the wafer: the layer's own weights (an MoE block's unit by unit),
    // plus wte for a tied head.
    std::vector<std::pair<size_t, size_t>> piecesFor(int layerIndex, bool forward,
                                                     std::vector<int>* pieceExpert = nullptr) const;
    WeightVisit visitFor(int layerIndex, bool forward, int m) const {
        WeightVisit visit{layerIndex, forward, m, {}, {}, {}};
        visit.pieces = piecesFor(layerIndex, forward, &visit.pieceExpert);
        if (sharded())
            for (const auto& piece : visit.pieces) visit.roots.push_back(plan.ownerOf(piece.first));
        return visit;
    }

    void countExperts(int ls, int block, const model::Gpt<float>& gpt);
    // The step's tokens per expert over this process's systems; across processes every rank's,
    // summed on rank 0 (a collective: every rank calls it). Empty for a dense model.
    std::vector<std::vector<int64_t>> stepExpertTokens();

    // A layer's trainable pieces cut at its stream units' bounds, grouped per unit (one group,
    // tagged -1, for a layer that moves whole): what leaves the systems as one transfer each.
    std::vector<std::pair<int, std::vector<optim::TrainablePiece>>> gradientUnits(
        int layerIndex) const;

    // Where a trainable piece's reduced gradient goes in this rank's MemoryX.
    float* gradientOut(const optim::TrainablePiece& piece) const {
        return memoryx->gradients() +
               (fullLayout ? piece.offset - base : piece.stateOffset - stateBase);
    }
    // System ls's gradient of a layer's trainable pieces, packed into `out` (count floats).
    void packPieces(int ls, const std::vector<optim::TrainablePiece>& pieces, float* out) const;

    // Stream one layer's gradient out of every system (fp32, in bf16 mode too: see executor.h)
    // and reduce it into MemoryX; on the last micro-batch also average and (without clipping)
    // update the layer. Runs on MemoryX's thread. Across processes the ranks reduce it in a tree
    // rooted at the layer's MemoryX rank (treeReduceAcrossRanks). Only the layer's trainable
    // pieces stream out (a frozen layer's none: the caller does not call this for it), packed
    // back to back: each element is summed in the same tree as before, so the bits are the same.
    void reduceLayer(int64_t step, int m, int layerIndex, bool last, bool updateNow, double lr,
                     int64_t updateCount);

    // Sum the systems' slices (count floats each) into out: = on the first micro-batch, += after,
    // averaged after the last.
    void reduceSlice(const std::vector<const float*>& inputs, int m, size_t count, float* out,
                     bool last);

    // This rank's part of the tree reduce of a layer's `count` trainable gradients: its systems'
    // slices and its children's nodes summed as far as SwarmX's tree allows, then sent to its
    // parent. Returns the root's children on the owner (pointers into this rank's buffers),
    // nothing elsewhere.
    std::vector<const float*> treeReduceAcrossRanks(int layerIndex, size_t count);

    // The owner's last part: the root's children summed into MemoryX.
    void reduceInto(int64_t step, int m, int layerIndex, const std::vector<const float*>& inputs,
                    size_t count, float* out, bool last, bool contiguous);

    void updateLayer(int64_t step, int layerIndex, double lr, double scale, int64_t updateCount);

    void accountOverlap();
};

}  // namespace ws::streaming
