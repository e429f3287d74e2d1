// SPDX-License-Identifier: GPL-3.0-or-later
// StreamingExecutor::Impl, the gradient path: each layer's gradient streams out of every system,
// is reduced in SwarmX's fixed tree into MemoryX (across processes in a tree of ranks that keeps
// that tree's order, rank_tree.h), and the optimizer updates the layer there. See executor_impl.h.
#include <algorithm>
#include <cstring>
#include <map>

#include "engine/core/kill_points.h"
#include "engine/streaming/executor_impl.h"
#include "engine/streaming/swarmx.h"

namespace ws::streaming {

void StreamingExecutor::Impl::packPieces(int ls, const std::vector<optim::TrainablePiece>& pieces,
                                         float* out) const {
    for (const auto& piece : pieces) {
        std::memcpy(out, grads[size_t(ls)].get() + piece.offset, piece.size * sizeof(float));
        out += piece.size;
    }
}

void StreamingExecutor::Impl::reduceLayer(int64_t step, int m, int layerIndex, bool last,
                                          bool updateNow, double lr, int64_t updateCount) {
    const int N = options.systems;
    const auto& pieces = layerPieces[size_t(layerIndex)];
    const size_t count = layerTrainable[size_t(layerIndex)];
    std::vector<const float*> inputs;
    if (comm) {
        const double t0 = now();
        const int owner = ownerOf(layerIndex);
        const std::vector<const float*> rootChildren = treeReduceAcrossRanks(layerIndex, count);
        for (int ls = 0; ls < mine.count; ++ls)
            report(Span{step, m, mine.first + ls, layerIndex, SpanKind::StreamOut,
                        int64_t(count * sizeof(float)), t0, now()});
        {
            // Rank 0 counts what every system sent; the others theirs.
            std::lock_guard lock(statsMutex);
            stats.bytesStreamedOut += int64_t(count * sizeof(float)) * (root() ? N : mine.count);
        }
        if (rank() != owner) return;
        // The layer's trainable pieces are adjacent in the Trainable layout: one range.
        reduceInto(step, m, layerIndex, rootChildren, count, gradientOut(pieces[0]), last,
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

void StreamingExecutor::Impl::reduceSlice(const std::vector<const float*>& inputs, int m,
                                          size_t count, float* out, bool last) {
    const int N = options.systems;
    treeReduce(inputs, count, out, /*accumulate=*/m > 0, reduceScratch);
    if (last && N * micros > 1) {
        const float scale = 1.0f / float(N * micros);
        for (size_t j = 0; j < count; ++j) out[j] *= scale;
    }
}

std::vector<const float*> StreamingExecutor::Impl::treeReduceAcrossRanks(int layerIndex,
                                                                         size_t count) {
    constexpr int kReduceTag = 1;
    const auto& pieces = layerPieces[size_t(layerIndex)];
    const RankReduceStep& me = reducePlanFor(ownerOf(layerIndex)).of(rank());
    std::map<ReduceNode, const float*> held;
    // The leaves: each system's trainable pieces, packed back to back when there are several.
    if (pieces.size() > 1) packedLeaves.resize(size_t(mine.count) * count);
    for (int ls = 0; ls < mine.count; ++ls) {
        const float* leaf = grads[size_t(ls)].get() + pieces[0].offset;
        if (pieces.size() > 1) {
            float* packed = packedLeaves.data() + size_t(ls) * count;
            packPieces(ls, pieces, packed);
            leaf = packed;
        }
        held[{0, mine.first + ls}] = leaf;
    }
    // One buffer per node received or summed, all sized before any pointer is taken.
    size_t needed = me.ownSums.size() + me.sums.size();
    for (const auto& nodes : me.received) needed += nodes.size();
    if (nodeBuffers.size() < needed) nodeBuffers.resize(needed);
    for (size_t i = 0; i < needed; ++i) nodeBuffers[i].resize(count);
    size_t next = 0;
    const auto runSums = [&](const std::vector<NodeSum>& sums) {
        for (const NodeSum& sum : sums) {
            const float* children[4];
            for (size_t c = 0; c < sum.children.size(); ++c) {
                auto it = held.find(sum.children[c]);
                children[c] = it->second;
                held.erase(it);
            }
            float* out = nodeBuffers[next++].data();
            reduceGroup(children, sum.children.size(), count, out);
            held[sum.node] = out;
        }
    };
    runSums(me.ownSums);
    for (size_t c = 0; c < me.children.size(); ++c) {
        for (const ReduceNode& node : me.received[c]) {
            float* out = nodeBuffers[next++].data();
            comm->receiveExact(comm::Channel::Gradients, me.children[c], kReduceTag, out,
                               count * sizeof(float));
            held[node] = out;
        }
    }
    runSums(me.sums);
    std::vector<const float*> result;
    for (const ReduceNode& node : me.result) result.push_back(held.at(node));
    if (me.parent < 0) return result;
    for (const float* node : result)
        comm->sendExact(comm::Channel::Gradients, me.parent, kReduceTag, node,
                        count * sizeof(float));
    linkBytesThisStep += int64_t(result.size() * count * sizeof(float));
    return {};
}

void StreamingExecutor::Impl::reduceInto(int64_t step, int m, int layerIndex,
                                         const std::vector<const float*>& inputs, size_t count,
                                         float* out, bool last, bool contiguous) {
    const int N = options.systems;
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
    report(Span{step, m, -1, layerIndex, SpanKind::Reduce, int64_t(count * sizeof(float)) * N, r0,
                now()});
}

void StreamingExecutor::Impl::updateLayer(int64_t step, int layerIndex, double lr, double scale,
                                          int64_t updateCount) {
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
    report(Span{step, micros - 1, -1, layerIndex, SpanKind::Update, int64_t(l.size * sizeof(float)),
                t0, now()});
}

}  // namespace ws::streaming
