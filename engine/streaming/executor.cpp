#include "engine/streaming/executor.h"

#include <algorithm>
#include <cassert>
#include <chrono>
#include <cmath>
#include <cstring>
#include <mutex>
#include <new>
#include <string>

#include "engine/core/kill_points.h"
#include "engine/model/random.h"
#include "engine/streaming/swarmx.h"
#include "engine/streaming/weight_streamer.h"
#include "engine/streaming/workers.h"

namespace ws::streaming {
using Clock = std::chrono::steady_clock;

namespace {

// Total length of the intersection of [a0,a1) with a sorted, disjoint list of intervals.
double overlap(double a0, double a1, const std::vector<std::pair<double, double>>& busy) {
    double total = 0.0;
    for (const auto& [b0, b1] : busy) total += std::max(0.0, std::min(a1, b1) - std::max(a0, b0));
    return total;
}
// What the exception being handled says.
std::string currentExceptionText() {
    try {
        throw;
    } catch (const std::bad_alloc&) {
        return "out of memory";
    } catch (const std::exception& e) {
        return e.what();
    } catch (...) {
        return "unknown error";
    }
}

}  // namespace

size_t largestLayerSize(const model::ParameterTable& table) {
    size_t largest = 0;
    for (const auto& layer : table.layers()) largest = std::max(largest, layer.size);
    return largest;
}

int64_t activationBytesPerSequence(const model::GptShape& s, int T) {
    // Mirrors Gpt's activation table: per block ln_1, its mean/rstd, qkv, the softmax statistics
    // (max and sum per head), attention output, residual, ln_2 with mean/rstd, c_fc, gelu,
    // residual; then ln_f, logits, loss terms.
    const int64_t C = s.channels, F = s.ffn, V = s.vocab, NH = s.heads;
    const int64_t perTokenBlock = C + 2 + 3 * C + 2 * NH + C + C + C + 2 + F + F + C;
    int64_t perToken = C + s.layers * perTokenBlock + C + 2 + V + 2;
    // An MoE block keeps router probabilities (E) and gates (k), and per kept assignment c_fc,
    // gelu (F each) and the expert's output (C), instead of c_fc and gelu.
    for (int l = 0; l < s.layers; ++l)
        if (s.isMoeBlock(l)) perToken += s.numExperts + s.topK + s.topK * (2 * F + C) - 2 * F;
    return perToken * T * int64_t(sizeof(float));
}

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
    // The gradient gather. With more than four systems, each group of four that one rank
    // computes whole (SwarmX's first tree level) is summed there and sent as one slice
    // (reduceGroup: the same bits); the other systems' slices are sent as they are.
    struct GroupPlan {
        int first = 0, size = 0;  // systems [first, first + size)
        bool summedByOwner = false;
    };
    std::vector<GroupPlan> groups;      // (ceil(N / 4)) when N > 4, else empty
    std::vector<size_t> slicesPerRank;  // slices each rank sends per layer
    std::vector<float> gathered, sendBuffer, groupSums;
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
    std::vector<Span> stepSpans;  // this step's stream-in and compute spans, for overlap stats

    // The step's MoE figures over this process's systems (StepResult).
    void moeStats(StepResult& result) const {
        if (expertTokens.empty()) return;
        double lb = 0.0;
        for (double x : lbLosses) lb += x;
        result.loadBalancingLoss = lb / double(lbLosses.size() * size_t(micros));
    }

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
        if (comm) planGather();
        if (mx && comm && plan.shards() > 1) base = plan.begin(comm->rank());
    }

    void planGather() {
        const int N = options.systems, P = comm->size();
        std::vector<int> owner(static_cast<size_t>(N));
        for (int r = 0; r < P; ++r) {
            const auto range = comm::systemsOfRank(N, P, r);
            systemsPerRank.push_back(size_t(range.count));
            for (int s = range.first; s < range.first + range.count; ++s) owner[size_t(s)] = r;
        }
        slicesPerRank.assign(systemsPerRank.begin(), systemsPerRank.end());
        if (N <= 4) return;  // the root sums the systems directly: nothing to sum on the way
        for (int first = 0; first < N; first += 4) {
            GroupPlan g{first, std::min(4, N - first), false};
            g.summedByOwner =
                g.size > 1 && owner[size_t(first)] == owner[size_t(first + g.size - 1)];
            if (g.summedByOwner) slicesPerRank[size_t(owner[size_t(first)])] -= size_t(g.size - 1);
            groups.push_back(g);
        }
    }

    const GroupPlan* groupStartingAt(int s) const {
        if (groups.empty() || s % 4 != 0) return nullptr;
        return &groups[size_t(s / 4)];
    }
    bool root() const { return !comm || comm->rank() == 0; }
    int rank() const { return comm ? comm->rank() : 0; }
    bool sharded() const { return comm && plan.shards() > 1; }
    // The rank whose MemoryX holds a layer (rank 0 unsharded).
    int ownerOf(int layerIndex) const { return sharded() ? plan.ownerOfLayer(layerIndex) : 0; }

    double now() const { return std::chrono::duration<double>(Clock::now() - epoch).count(); }

    void report(Span span) {
        if (comm) span.rank = comm->rank();
        if (span.kind == SpanKind::StreamIn || span.kind == SpanKind::Forward ||
            span.kind == SpanKind::Backward) {
            std::lock_guard lock(statsMutex);
            stepSpans.push_back(span);
        }
        if (sink) sink(span);
    }

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
    std::vector<model::StreamUnit> unitsOf(int layerIndex) const {
        const int block = layerIndex - 1;
        if (block < 0 || block >= table.shape().layers || !table.shape().isMoeBlock(block))
            return {};
        return table.streamUnits(block);
    }

    // What a visit needs on the wafer: the layer's own weights (an MoE block's unit by unit),
    // plus wte for a tied head.
    std::vector<std::pair<size_t, size_t>> piecesFor(
        int layerIndex, bool forward, std::vector<int>* pieceExpert = nullptr) const {
        const auto& l = layer(layerIndex);
        if (layerIndex == model::ParameterTable::embeddingLayer() && !forward) return {};
        const auto units = unitsOf(layerIndex);
        if (!units.empty()) {
            std::vector<std::pair<size_t, size_t>> pieces;
            for (const auto& u : units) {
                pieces.push_back({u.offset, u.size});
                if (pieceExpert) pieceExpert->push_back(u.expert);
            }
            return pieces;
        }
        std::vector<std::pair<size_t, size_t>> pieces = {{l.offset, l.size}};
        if (layerIndex == headIndex() && table.shape().tiedEmbedding) {
            pieces.push_back({wteOffset(), wteSize()});
        }
        return pieces;
    }
    WeightVisit visitFor(int layerIndex, bool forward, int m) const {
        WeightVisit visit{layerIndex, forward, m, {}, {}, {}};
        visit.pieces = piecesFor(layerIndex, forward, &visit.pieceExpert);
        if (sharded())
            for (const auto& piece : visit.pieces) visit.roots.push_back(plan.ownerOf(piece.first));
        return visit;
    }

    void countExperts(int ls, int block, const model::Gpt<float>& gpt) {
        const auto& counts = gpt.expertTokenCounts(block);
        auto& sum = expertTokens[size_t(ls)][size_t(block)];
        if (sum.size() < counts.size()) sum.resize(counts.size(), 0);
        for (size_t e = 0; e < counts.size(); ++e) sum[e] += counts[e];
    }
    // The step's tokens per expert over this process's systems; across processes every rank's,
    // summed on rank 0 (a collective: every rank calls it). Empty for a dense model.
    std::vector<std::vector<int64_t>> stepExpertTokens() {
        if (!table.shape().hasMoe() || expertTokens.empty()) return {};
        std::vector<std::vector<int64_t>> sum = expertTokens[0];
        for (size_t ls = 1; ls < expertTokens.size(); ++ls)
            for (size_t b = 0; b < sum.size(); ++b)
                for (size_t e = 0; e < sum[b].size(); ++e) sum[b][e] += expertTokens[ls][b][e];
        if (!comm) return sum;
        std::vector<int64_t> flat;
        for (const auto& b : sum) flat.insert(flat.end(), b.begin(), b.end());
        const size_t bytes = flat.size() * sizeof(int64_t);
        std::vector<int64_t> all(flat.size() * size_t(comm->size()));
        comm->gather(comm::Channel::Gradients, flat.data(), bytes, all.data(),
                     std::vector<size_t>(size_t(comm->size()), bytes), 0);
        if (!root()) return {};
        for (int r = 1; r < comm->size(); ++r) {
            size_t at = size_t(r) * flat.size();
            for (auto& b : sum)
                for (auto& v : b) v += all[at++];
        }
        return sum;
    }

    // A layer's trainable pieces cut at its stream units' bounds, grouped per unit (one group,
    // tagged -1, for a layer that moves whole): what leaves the systems as one transfer each.
    std::vector<std::pair<int, std::vector<optim::TrainablePiece>>> gradientUnits(
        int layerIndex) const {
        const auto& pieces = layerPieces[size_t(layerIndex)];
        const auto units = unitsOf(layerIndex);
        if (units.empty()) return {{-1, pieces}};
        std::vector<std::pair<int, std::vector<optim::TrainablePiece>>> out;
        for (const auto& u : units) {
            std::vector<optim::TrainablePiece> clipped;
            for (const auto& p : pieces) {
                const size_t a = std::max(p.offset, u.offset);
                const size_t b = std::min(p.offset + p.size, u.offset + u.size);
                if (a < b) clipped.push_back({a, p.stateOffset + (a - p.offset), b - a});
            }
            if (!clipped.empty()) out.push_back({u.expert, std::move(clipped)});
        }
        return out;
    }

    // Where a trainable piece's reduced gradient goes in this rank's MemoryX.
    float* gradientOut(const optim::TrainablePiece& piece) const {
        return memoryx->gradients() +
               (fullLayout ? piece.offset - base : piece.stateOffset - stateBase);
    }
    // System ls's gradient of a layer's trainable pieces, packed into `out` (count floats).
    void packPieces(int ls, const std::vector<optim::TrainablePiece>& pieces, float* out) const {
        for (const auto& piece : pieces) {
            std::memcpy(out, grads[size_t(ls)].get() + piece.offset, piece.size * sizeof(float));
            out += piece.size;
        }
    }

    // Stream one layer's gradient out of every system (fp32, in bf16 mode too: see executor.h)
    // and reduce it into MemoryX; on the last
    // micro-batch also average and (without clipping) update the layer. Runs on MemoryX's thread.
    // Across processes every rank sends its systems' slices to rank 0 (the Gradients channel),
    // which reduces all N in system order, as one process does. Only the layer's trainable
    // pieces stream out (a frozen layer's none: the caller does not call this for it), packed
    // back to back: each element is summed in the same tree as before, so the bits are the same.
    void reduceLayer(int64_t step, int m, int layerIndex, bool last, bool updateNow, double lr,
                     int64_t updateCount) {
        const int N = options.systems;
        const auto& pieces = layerPieces[size_t(layerIndex)];
        const size_t count = layerTrainable[size_t(layerIndex)];
        std::vector<const float*> inputs;
        if (comm) {
            const double t0 = now();
            const size_t mySlices = slicesPerRank[size_t(comm->rank())];
            sendBuffer.resize(mySlices * count);
            float* slice = sendBuffer.data();
            std::vector<float> packed;
            for (int ls = 0; ls < mine.count; slice += count) {
                const int s = mine.first + ls;
                const GroupPlan* g = groupStartingAt(s);
                if (g && g->summedByOwner) {
                    const float* children[4];
                    if (pieces.size() == 1) {
                        for (int c = 0; c < g->size; ++c)
                            children[c] = grads[size_t(ls + c)].get() + pieces[0].offset;
                    } else {
                        packed.resize(size_t(g->size) * count);
                        for (int c = 0; c < g->size; ++c) {
                            packPieces(ls + c, pieces, packed.data() + size_t(c) * count);
                            children[c] = packed.data() + size_t(c) * count;
                        }
                    }
                    reduceGroup(children, size_t(g->size), count, slice);
                    ls += g->size;
                } else {
                    packPieces(ls, pieces, slice);
                    ++ls;
                }
            }
            std::vector<size_t> bytes;
            size_t allSlices = 0;
            for (size_t n : slicesPerRank) {
                bytes.push_back(n * count * sizeof(float));
                allSlices += n;
            }
            const int owner = ownerOf(layerIndex);
            if (rank() == owner) gathered.resize(allSlices * count);
            comm->gather(comm::Channel::Gradients, sendBuffer.data(),
                         sendBuffer.size() * sizeof(float), gathered.data(), bytes, owner);
            for (int ls = 0; ls < mine.count; ++ls)
                report(Span{step, m, mine.first + ls, layerIndex, SpanKind::StreamOut,
                            int64_t(count * sizeof(float)), t0, now()});
            {
                // Rank 0 counts what every system sent (it received them all); the others theirs.
                std::lock_guard lock(statsMutex);
                stats.bytesStreamedOut +=
                    int64_t(count * sizeof(float)) * (root() ? N : mine.count);
            }
            if (rank() != owner) return;
            // The layer's trainable pieces are adjacent in the Trainable layout: one range.
            reduceInto(step, m, layerIndex, inputs, count, gradientOut(pieces[0]), last,
                       pieces.size() == 1 || !fullLayout);
            if (last && updateNow) updateLayer(step, layerIndex, lr, 1.0, updateCount);
            return;
        }
        {
            std::lock_guard lock(statsMutex);
            stats.bytesStreamedOut += int64_t(count * sizeof(float)) * N;
        }
        // One process: each piece straight from the systems' buffers into MemoryX, unit by unit
        // (an MoE block's shared part, then each expert; a whole layer otherwise). The sums are
        // element-wise, so cutting pieces at unit bounds changes no bit.
        for (const auto& [expert, unitPieces] : gradientUnits(layerIndex)) {
            size_t unitCount = 0;
            for (const auto& piece : unitPieces) unitCount += piece.size;
            const int64_t unitBytes = int64_t(unitCount * sizeof(float));
            for (int s = 0; s < N; ++s) {
                const double t0 = now();
                Span out{step, m, s, layerIndex, SpanKind::StreamOut, unitBytes, t0, now()};
                out.expert = expert;
                report(out);
            }
            const double r0 = now();
            for (const auto& piece : unitPieces) {
                inputs.clear();
                for (int s = 0; s < N; ++s) inputs.push_back(grads[size_t(s)].get() + piece.offset);
                reduceSlice(inputs, m, piece.size, gradientOut(piece), last);
            }
            Span reduce{step, m, -1, layerIndex, SpanKind::Reduce, unitBytes * N, r0, now()};
            reduce.expert = expert;
            report(reduce);
        }
        if (last && updateNow) updateLayer(step, layerIndex, lr, 1.0, updateCount);
    }

    // Sum the systems' slices (count floats each) into out: = on the first micro-batch, += after,
    // averaged after the last.
    void reduceSlice(const std::vector<const float*>& inputs, int m, size_t count, float* out,
                     bool last) {
        const int N = options.systems;
        treeReduce(inputs, count, out, /*accumulate=*/m > 0, reduceScratch);
        if (last && N * micros > 1) {
            const float scale = 1.0f / float(N * micros);
            for (size_t j = 0; j < count; ++j) out[j] *= scale;
        }
    }

    // The owner's part of a gathered layer: the first level's sums, then the tree.
    void reduceInto(int64_t step, int m, int layerIndex, std::vector<const float*>& inputs,
                    size_t count, float* out, bool last, bool contiguous) {
        const int N = options.systems;
        if (groups.empty()) {
            for (int s = 0; s < N; ++s) inputs.push_back(gathered.data() + size_t(s) * count);
        } else {
            // The first level's sums, in group order: as received, or summed here from the
            // slices of a group split between ranks. The tree above them is treeReduce's.
            groupSums.resize(groups.size() * count);
            const float* next = gathered.data();
            for (size_t gi = 0; gi < groups.size(); ++gi) {
                const GroupPlan& g = groups[gi];
                if (g.summedByOwner) {
                    inputs.push_back(next);
                    next += count;
                    continue;
                }
                const float* children[4];
                for (int c = 0; c < g.size; ++c, next += count) children[c] = next;
                float* sum = groupSums.data() + gi * count;
                reduceGroup(children, size_t(g.size), count, sum);
                inputs.push_back(sum);
            }
        }
        const double r0 = now();
        if (contiguous) {
            reduceSlice(inputs, m, count, out, last);
        } else {
            // A Full-layout MemoryX with frozen gaps inside the layer: piece by piece.
            std::vector<const float*> sliced(inputs.size());
            size_t at = 0;
            for (const auto& piece : layerPieces[size_t(layerIndex)]) {
                for (size_t i = 0; i < inputs.size(); ++i) sliced[i] = inputs[i] + at;
                reduceSlice(sliced, m, piece.size, gradientOut(piece), last);
                at += piece.size;
            }
        }
        report(Span{step, m, -1, layerIndex, SpanKind::Reduce, int64_t(count * sizeof(float)) * N,
                    r0, now()});
    }

    void updateLayer(int64_t step, int layerIndex, double lr, double scale, int64_t updateCount) {
        const auto& l = layer(layerIndex);
        const auto& pieces = layerPieces[size_t(layerIndex)];
        if (pieces.empty()) return;  // a frozen layer: nothing to update
        const double t0 = now();
        const size_t local = l.offset - base;
        if (fullLayout)
            memoryx->beginUpdate(local, l.size, local, l.size);
        else
            memoryx->beginUpdate(local, l.size, pieces[0].stateOffset - stateBase,
                                 layerTrainable[size_t(layerIndex)]);
        optimizer->updateRange(memoryx->weights(), memoryx->gradients(), local, local + l.size, lr,
                               scale, updateCount);
        killPoint("memoryx-update");
        memoryx->endUpdate();
        report(Span{step, micros - 1, -1, layerIndex, SpanKind::Update,
                    int64_t(l.size * sizeof(float)), t0, now()});
    }

    void accountOverlap() {
        std::lock_guard lock(statsMutex);
        for (int s = mine.first; s < mine.first + mine.count; ++s) {
            std::vector<std::pair<double, double>> busy;
            for (const auto& sp : stepSpans) {
                if (sp.system == s && sp.kind != SpanKind::StreamIn)
                    busy.push_back({sp.start, sp.end});
            }
            for (const auto& sp : stepSpans) {
                if (sp.system != s || sp.kind != SpanKind::StreamIn) continue;
                stats.streamInSec += sp.end - sp.start;
                stats.streamInHiddenSec += overlap(sp.start, sp.end, busy);
            }
        }
        stepSpans.clear();
    }
};

StreamingExecutor::StreamingExecutor(const model::GptShape& shape, int globalBatch, int seqLen,
                                     const StreamingOptions& options, MemoryX& memoryx,
                                     optim::Optimizer& optimizer, SpanSink sink)
    : m_table(shape), m_options(options) {
    init(shape, globalBatch, seqLen, &memoryx, &optimizer, std::move(sink));
}

StreamingExecutor::StreamingExecutor(const model::GptShape& shape, int globalBatch, int seqLen,
                                     const StreamingOptions& options, SpanSink sink)
    : m_table(shape), m_options(options) {
    assert(options.comm && options.comm->rank() >= options.memoryxShards);
    init(shape, globalBatch, seqLen, nullptr, nullptr, std::move(sink));
}

void StreamingExecutor::init(const model::GptShape& shape, int globalBatch, int seqLen,
                             MemoryX* memoryx, optim::Optimizer* optimizer, SpanSink sink) {
    const StreamingOptions& options = m_options;
    assert(options.systems >= 1 && globalBatch % options.systems == 0);
    assert(!options.comm || options.comm->size() <= options.systems);
    const bool sharded = options.comm && options.comm->size() > 1 && options.memoryxShards > 1;
    m_plan = ShardPlan(m_table, sharded ? options.memoryxShards : 1);
    m_impl =
        std::make_unique<Impl>(m_table, m_options, memoryx, optimizer, std::move(sink), m_plan);
    Impl& d = *m_impl;
    d.T = seqLen;
    d.perSystem = globalBatch / options.systems;
    d.micro = options.microBatch > 0 ? options.microBatch : d.perSystem;
    assert(d.perSystem % d.micro == 0);
    d.micros = d.perSystem / d.micro;
    m_micros = d.micros;
    size_t slotFloats = 0;
    for (int l = 0; l < int(m_table.layers().size()); ++l) {
        size_t floats = 0;
        for (const auto& piece : d.piecesFor(l, true)) floats += piece.second;
        slotFloats = std::max(slotFloats, floats);
    }
    // Which parameters train: every parameter's groups (options.groups), else the optimizer's
    // (one process), else all of them.
    std::vector<optim::ParamGroup> groups = options.groups;
    if (groups.empty() && optimizer && !sharded) groups = optimizer->groups();
    if (groups.empty()) groups.push_back({0, m_table.totalSize(), true, 1.0, false});
    d.fullLayout = optimizer && optimizer->layout() == optim::GradientLayout::Full;
    // A shard's gradients start with the first trainable parameter at or after its first layer.
    for (const auto& piece : optim::trainablePieces(groups, 0, d.base)) d.stateBase += piece.size;
    for (const auto& layer : m_table.layers()) {
        d.layerPieces.push_back(
            optim::trainablePieces(groups, layer.offset, layer.offset + layer.size));
        size_t n = 0;
        for (const auto& piece : d.layerPieces.back()) n += piece.size;
        d.layerTrainable.push_back(n);
    }
    // Tensors whose weight gradients the systems never compute (model::Gpt::setFrozen).
    std::vector<bool> frozen(m_table.tensors().size(), true);
    for (size_t t = 0; t < frozen.size(); ++t) {
        const auto& tensor = m_table.tensors()[t];
        for (const auto& piece :
             optim::trainablePieces(groups, tensor.offset, tensor.offset + tensor.size))
            if (piece.size > 0) frozen[t] = false;
    }
    for (int s = 0; s < d.mine.count; ++s) {
        d.gpts.push_back(std::make_unique<model::Gpt<float>>(shape, d.micro, seqLen));
        d.gpts.back()->setFrozen(frozen);
        // Not value-initialised: the pages of frozen tensors are never touched.
        d.grads.emplace_back(new float[m_table.totalSize()]);
    }
    d.losses.assign(size_t(d.mine.count), 0.0);
    d.lbLosses.assign(size_t(d.mine.count), 0.0);
    if (shape.hasMoe()) {
        std::vector<std::vector<int64_t>> perBlock(size_t(shape.layers));
        for (int b = 0; b < shape.layers; ++b)
            if (shape.isMoeBlock(b)) perBlock[size_t(b)].assign(size_t(shape.numExperts), 0);
        d.expertTokens.assign(size_t(d.mine.count), perBlock);
    }
    for (const auto& layer : m_table.layers()) d.layerRanges.push_back({layer.offset, layer.size});
    d.streamer = std::make_unique<WeightStreamer>(
        memoryx ? memoryx->weights() : nullptr, d.mine.count,
        std::max(1, options.weightBufferLayers), slotFloats, d.epoch,
        [&d](const Span& span) { d.report(span); }, shape.bf16, d.comm, d.mine.first, d.base);
}

comm::SystemRange StreamingExecutor::localSystems() const {
    return m_impl->mine;
}

StreamingExecutor::~StreamingExecutor() = default;

StreamingStats StreamingExecutor::stats() const {
    std::lock_guard lock(m_impl->statsMutex);
    StreamingStats s = m_impl->stats;
    s.maxResidentLayers = m_impl->streamer->maxResident();
    s.bytesPerWeight = m_impl->streamer->bytesPerValue();
    s.waferBufferBytes = m_impl->streamer->bufferBytes();
    s.peakWaferBufferBytes = m_impl->streamer->peakResidentBytes();
    s.bytesStreamedIn = m_impl->streamer->bytesStreamed();
    // Across processes every system receives the same bytes: rank 0 reports all of them.
    if (m_impl->comm && m_impl->root())
        s.bytesStreamedIn = s.bytesStreamedIn / m_impl->mine.count * m_options.systems;
    return s;
}

void StreamingExecutor::setPositionIds(const int32_t* positionIds) {
    m_impl->positionIds = positionIds;
}

StepResult StreamingExecutor::step(int64_t step, const int32_t* inputs, const int32_t* targets,
                                   double lr, double maxGradientNorm, int64_t updateCount,
                                   uint64_t dropoutSeed, const StepHooks& hooks) {
    Impl& d = *m_impl;
    const int N = m_options.systems;
    const int head = d.headIndex();
    const bool clip = maxGradientNorm > 0.0;

    // The step's visit order: per micro-batch, forward 0..L+1 then backward L+1..0.
    std::vector<WeightVisit> visits;
    for (int m = 0; m < d.micros; ++m) {
        for (int l = 0; l <= head; ++l) visits.push_back(d.visitFor(l, true, m));
        for (int l = head; l >= 0; --l) visits.push_back(d.visitFor(l, false, m));
    }
    d.streamer->begin(step, visits);
    std::fill(d.losses.begin(), d.losses.end(), 0.0);
    std::fill(d.lbLosses.begin(), d.lbLosses.end(), 0.0);
    for (auto& perBlock : d.expertTokens)
        for (auto& counts : perBlock) std::fill(counts.begin(), counts.end(), 0);
    const bool moe = m_table.shape().hasMoe();

    // Updates start with the last micro-batch's first reduced layer (without clipping) or after
    // the backward pass (with clipping); before that a cancel leaves MemoryX untouched.
    auto cancelNow = [&](int m, bool backward) {
        if (hooks.pausePoint) hooks.pausePoint();
        const bool updatesStarted = !clip && backward && m == d.micros - 1;
        // Across processes the other ranks are inside the step too: stop between steps only.
        return hooks.cancel && !d.comm && !updatesStarted &&
               hooks.cancel->load(std::memory_order_relaxed);
    };
    auto abandon = [&](int visit) {
        // Release the remaining visits so the loader finishes, then drop the step.
        for (int j = visit; j < int(visits.size()); ++j) {
            d.streamer->acquire(j);
            d.streamer->release(j);
        }
        d.memoryxQueue.waitIdle();
        d.streamer->finish();
        d.accountOverlap();
        StepResult r;
        r.cancelled = true;
        return r;
    };

    int v = 0;
    bool holding = false;  // visit v is acquired and not yet released
    try {
        for (int m = 0; m < d.micros; ++m) {
            d.memoryxQueue.waitIdle();  // the previous micro-batch's reduces read the grad buffers
            auto rows = [&](int s) { return size_t(s * d.perSystem + m * d.micro) * size_t(d.T); };
            // --- forward
            for (int l = 0; l <= head; ++l, ++v) {
                if (cancelNow(m, false)) return abandon(v);
                d.streamer->acquire(v);
                holding = true;
                d.workers.run([&](int ls) {
                    const int s = d.mine.first + ls;  // the system's number in the job
                    auto& gpt = *d.gpts[size_t(ls)];
                    const auto w = d.weightsOnWafer(v, ls);
                    const double t0 = d.now();
                    if (l == 0) {
                        const bool first = s == 0 && m == 0;
                        gpt.beginStep(true, first ? dropoutSeed
                                                  : model::rng::deriveKey(
                                                        dropoutSeed, uint64_t(s * d.micros + m)));
                        gpt.setPositionIds(d.positionIds ? d.positionIds + rows(s) : nullptr);
                        gpt.embedForward(w, inputs + rows(s));
                    } else if (l == head) {
                        const auto wte = m_table.shape().tiedEmbedding
                                             ? w.advanced(d.layer(head).size)
                                             : model::LayerWeights<float>{};
                        const float loss = gpt.headForward(w, wte, targets + rows(s));
                        // MoE: the cross-entropy and the load-balancing loss apart.
                        d.losses[size_t(ls)] += moe ? gpt.lastCrossEntropy() : loss;
                        if (moe) d.lbLosses[size_t(ls)] += gpt.loadBalancingLoss();
                    } else {
                        gpt.blockForward(l - 1, w);
                        if (m_table.shape().isMoeBlock(l - 1)) d.countExperts(ls, l - 1, gpt);
                    }
                    d.report(Span{step, m, s, l, SpanKind::Forward, 0, t0, d.now()});
                });
                d.streamer->release(v);
                holding = false;
            }
            // --- backward
            for (auto& g : d.grads)
                for (const auto& pieces : d.layerPieces)
                    for (const auto& piece : pieces)
                        std::fill_n(g.get() + piece.offset, piece.size, 0.0f);
            for (int l = head; l >= 0; --l, ++v) {
                if (cancelNow(m, true)) return abandon(v);
                d.streamer->acquire(v);
                holding = true;
                d.workers.run([&](int ls) {
                    const int s = d.mine.first + ls;
                    auto& gpt = *d.gpts[size_t(ls)];
                    float* g = d.grads[size_t(ls)].get();
                    const auto w = d.weightsOnWafer(v, ls);
                    const double t0 = d.now();
                    if (l == head) {
                        const bool tied = m_table.shape().tiedEmbedding;
                        gpt.headBackward(
                            w, tied ? w.advanced(d.layer(head).size) : model::LayerWeights<float>{},
                            g + d.layer(head).offset, tied ? g + d.wteOffset() : nullptr);
                    } else if (l == 0) {
                        gpt.embedBackward(g + d.layer(0).offset);
                    } else {
                        gpt.blockBackward(l - 1, w, g + d.layer(l).offset);
                    }
                    d.report(Span{step, m, s, l, SpanKind::Backward, 0, t0, d.now()});
                });
                d.streamer->release(v);
                holding = false;
                if (d.layerTrainable[size_t(l)] == 0) continue;  // frozen: no gradient leaves
                const bool last = m == d.micros - 1;
                d.memoryxQueue.post([&d, step, m, l, last, clip, lr, updateCount] {
                    d.reduceLayer(step, m, l, last, !clip, lr, updateCount);
                });
            }
        }
        d.memoryxQueue.waitIdle();
    } catch (...) {
        // Across processes the other ranks wait inside this step's broadcasts and gathers: the
        // step cannot be drained, only the job ended.
        if (d.comm) d.comm->abort(1, "a training step failed: " + currentExceptionText());
        // A failure inside the step (an allocation, usually): leave the weight loader and
        // MemoryX's queue idle, as a cancel would, before the error unwinds the step whose
        // visits they reference. MemoryX may hold a partial update; the run ends failed.
        if (holding) d.streamer->release(v++);
        for (int j = v; j < int(visits.size()); ++j) {
            d.streamer->acquire(j);
            d.streamer->release(j);
        }
        try {
            d.memoryxQueue.waitIdle();
        } catch (...) {  // the queue's own error, if any, adds nothing to the first
        }
        d.streamer->finish();
        d.accountOverlap();
        throw;
    }
    d.streamer->finish();

    // The losses, summed in system order on rank 0 (one process: its own, in order).
    std::vector<double> losses = d.losses;
    if (d.comm) {
        std::vector<size_t> bytes;
        for (size_t n : d.systemsPerRank) bytes.push_back(n * sizeof(double));
        losses.assign(size_t(N), 0.0);
        d.comm->gather(comm::Channel::Gradients, d.losses.data(), d.losses.size() * sizeof(double),
                       losses.data(), bytes, 0);
    }
    StepResult result;
    auto expertTokens = d.stepExpertTokens();  // (a collective across processes)
    if (d.sharded()) {
        result = shardedStepEnd(lr, maxGradientNorm, updateCount, step, losses);
        if (d.root()) result.expertTokens = std::move(expertTokens);
        return result;
    }
    result.expertTokens = std::move(expertTokens);
    if (!d.root()) {
        d.accountOverlap();
        return result;
    }
    result.gradNorm = d.optimizer->gradientNorm(d.memoryx->gradients());
    result.layerGradNorms = d.optimizer->rangeGradientNorms(d.memoryx->gradients(), d.layerRanges);
    if (clip) {
        // Phase two: the norm is known only now; update every layer in MemoryX.
        const double scale = optim::clipFactor(result.gradNorm, maxGradientNorm);
        d.memoryxQueue.post([&d, step, head, lr, scale, updateCount] {
            for (int l = head; l >= 0; --l) d.updateLayer(step, l, lr, scale, updateCount);
        });
        d.memoryxQueue.waitIdle();
    }
    double lossSum = 0.0;
    for (double x : losses) lossSum += x;
    result.loss = lossSum / double(N * d.micros);
    d.moeStats(result);
    d.accountOverlap();
    return result;
}

// The end of a step with MemoryX sharded: the gradient norms summed across shards in the
// unsharded order, the clip scale from rank 0, each shard's clipped updates, the loss on rank 0.
StepResult StreamingExecutor::shardedStepEnd(double lr, double maxGradientNorm, int64_t updateCount,
                                             int64_t step, const std::vector<double>& losses) {
    Impl& d = *m_impl;
    comm::Comm& comm = *d.comm;
    const int N = m_options.systems;
    const int head = d.headIndex();
    const int me = comm.rank();
    const bool holder = d.memoryx != nullptr;
    const float* grads = holder ? d.memoryx->gradients() : nullptr;
    const auto channel = comm::Channel::Gradients;
    StepResult result;
    // The global norm: optim::Optimizer::gradientNorm's sums, across shards.
    const auto& groups = m_options.groups;
    // The shards keep gradients in the Trainable layout: the norm walks that layout's shards.
    const bool anyFrozen = std::any_of(groups.begin(), groups.end(),
                                       [](const optim::ParamGroup& g) { return g.frozen; });
    assert(!(anyFrozen && d.fullLayout) && "sharded MemoryX keeps the Trainable layout");
    const ShardPlan trainable = m_plan.overTrainable(groups);
    if (!anyFrozen) {
        result.gradNorm =
            shardedGlobalNorm(comm, channel, trainable, grads, 0, m_table.totalSize());
    } else {
        double sumSquares = 0.0;
        size_t at = 0;  // the group's offset in the Trainable layout
        for (const auto& g : groups) {
            if (g.frozen) continue;
            const double n = shardedGlobalNorm(comm, channel, trainable, grads, at, at + g.size);
            sumSquares += n * n;
            at += g.size;
        }
        result.gradNorm = std::sqrt(sumSquares);
    }
    // Each layer's norm, computed by its owner over its local offsets, collected on rank 0.
    const size_t L = m_table.layers().size();
    std::vector<double> mineNorms(L, 0.0), allNorms(size_t(comm.size()) * L, 0.0);
    if (holder) {
        std::vector<optim::BufferRange> ranges;
        for (int l = m_plan.firstLayer(me); l <= m_plan.lastLayer(me); ++l)
            ranges.push_back({d.layer(l).offset - d.base, d.layer(l).size});
        const auto norms = d.optimizer->rangeGradientNorms(grads, ranges);
        for (size_t i = 0; i < norms.size(); ++i)
            mineNorms[size_t(m_plan.firstLayer(me)) + i] = norms[i];
    }
    comm.gather(channel, mineNorms.data(), L * sizeof(double), allNorms.data(),
                std::vector<size_t>(size_t(comm.size()), L * sizeof(double)), 0);
    if (maxGradientNorm > 0.0) {
        double scale = optim::clipFactor(result.gradNorm, maxGradientNorm);
        comm.broadcast(channel, &scale, sizeof scale, 0);
        if (holder) {
            d.memoryxQueue.post([&d, this, step, head, lr, scale, updateCount, me] {
                for (int l = head; l >= 0; --l)
                    if (m_plan.ownerOfLayer(l) == me)
                        d.updateLayer(step, l, lr, scale, updateCount);
            });
            d.memoryxQueue.waitIdle();
        }
    }
    d.accountOverlap();
    if (me != 0) return StepResult{};
    for (size_t l = 0; l < L; ++l)
        result.layerGradNorms.push_back(allNorms[size_t(m_plan.ownerOfLayer(int(l))) * L + l]);
    double lossSum = 0.0;
    for (double x : losses) lossSum += x;
    result.loss = lossSum / double(N * d.micros);
    d.moeStats(result);
    return result;
}

}  // namespace ws::streaming
