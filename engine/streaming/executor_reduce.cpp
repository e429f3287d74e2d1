// StreamingExecutor::Impl, the gradient path: each layer's gradient streams out of every system,
// is gathered across processes and reduced in SwarmX's fixed tree into MemoryX, and the optimizer
// updates the layer there. See executor_impl.h.
#include <algorithm>
#include <cstring>

#include "engine/core/kill_points.h"
#include "engine/streaming/executor_impl.h"
#include "engine/streaming/swarmx.h"

namespace ws::streaming {

void StreamingExecutor::Impl::planGather() {
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
        g.summedByOwner = g.size > 1 && owner[size_t(first)] == owner[size_t(first + g.size - 1)];
        if (g.summedByOwner) slicesPerRank[size_t(owner[size_t(first)])] -= size_t(g.size - 1);
        groups.push_back(g);
    }
}

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
        comm->gather(comm::Channel::Gradients, sendBuffer.data(), sendBuffer.size() * sizeof(float),
                     gathered.data(), bytes, owner);
        for (int ls = 0; ls < mine.count; ++ls)
            report(Span{step, m, mine.first + ls, layerIndex, SpanKind::StreamOut,
                        int64_t(count * sizeof(float)), t0, now()});
        {
            // Rank 0 counts what every system sent (it received them all); the others theirs.
            std::lock_guard lock(statsMutex);
            stats.bytesStreamedOut += int64_t(count * sizeof(float)) * (root() ? N : mine.count);
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

void StreamingExecutor::Impl::reduceSlice(const std::vector<const float*>& inputs, int m,
                                          size_t count, float* out, bool last) {
    const int N = options.systems;
    treeReduce(inputs, count, out, /*accumulate=*/m > 0, reduceScratch);
    if (last && N * micros > 1) {
        const float scale = 1.0f / float(N * micros);
        for (size_t j = 0; j < count; ++j) out[j] *= scale;
    }
}

void StreamingExecutor::Impl::reduceInto(int64_t step, int m, int layerIndex,
                                         std::vector<const float*>& inputs, size_t count,
                                         float* out, bool last, bool contiguous) {
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
