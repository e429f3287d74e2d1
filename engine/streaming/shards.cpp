// SPDX-License-Identifier: GPL-3.0-or-later
// The MemoryX shard plan and the sharded gradient norm (see shards.h).
#include "engine/streaming/shards.h"

#include <fmt/format.h>

#include <algorithm>
#include <cassert>
#include <cmath>

#include "engine/core/units.h"
#include "engine/tensor/threads.h"

namespace ws::streaming {

namespace {
constexpr int kNormChunks = 64;  // optim::globalNorm's fixed chunking
}

ShardPlan::ShardPlan(const model::ParameterTable& table, int shards) : m_shards(shards) {
    const auto& layers = table.layers();
    const int L = int(layers.size());
    assert(shards >= 1 && shards <= L);
    std::vector<size_t> prefix(size_t(L) + 1, 0);
    for (int l = 0; l < L; ++l) {
        assert(layers[size_t(l)].offset == prefix[size_t(l)]);  // layers tile the buffer in order
        prefix[size_t(l) + 1] = prefix[size_t(l)] + layers[size_t(l)].size;
    }
    const double total = double(prefix[size_t(L)]);
    m_firstLayer.assign(size_t(shards) + 1, 0);
    m_firstLayer[size_t(shards)] = L;
    for (int k = 1; k < shards; ++k) {
        // The cut nearest to k/N of the bytes, leaving every shard at least one layer.
        const int lo = m_firstLayer[size_t(k) - 1] + 1, hi = L - (shards - k);
        const double target = total * k / shards;
        int best = lo;
        for (int c = lo; c <= hi; ++c) {
            if (std::abs(double(prefix[size_t(c)]) - target) <
                std::abs(double(prefix[size_t(best)]) - target))
                best = c;
        }
        m_firstLayer[size_t(k)] = best;
    }
    m_bounds.resize(size_t(shards) + 1);
    for (int k = 0; k <= shards; ++k) m_bounds[size_t(k)] = prefix[size_t(m_firstLayer[size_t(k)])];
    m_layerOwner.resize(size_t(L));
    for (int k = 0; k < shards; ++k)
        for (int l = m_firstLayer[size_t(k)]; l < m_firstLayer[size_t(k) + 1]; ++l)
            m_layerOwner[size_t(l)] = k;
}

int ShardPlan::ownerOf(size_t globalOffset) const {
    for (int k = 0; k + 1 < m_shards; ++k)
        if (globalOffset < m_bounds[size_t(k) + 1]) return k;
    return m_shards - 1;
}

ShardPlan ShardPlan::overTrainable(const std::vector<optim::ParamGroup>& groups) const {
    ShardPlan out = *this;
    for (int k = 0; k <= m_shards; ++k) {
        size_t n = 0;
        for (const auto& piece : optim::trainablePieces(groups, 0, m_bounds[size_t(k)]))
            n += piece.size;
        out.m_bounds[size_t(k)] = n;
    }
    return out;
}

size_t ShardPlan::trainableOnRank(const std::vector<optim::ParamGroup>& groups, int rank) const {
    if (rank >= m_shards) return 0;
    return optim::trainableSize(localGroups(groups, rank));
}

std::vector<optim::ParamGroup> ShardPlan::localGroups(const std::vector<optim::ParamGroup>& groups,
                                                      int shard) const {
    std::vector<optim::ParamGroup> out;
    const size_t lo = begin(shard), hi = end(shard);
    for (optim::ParamGroup g : groups) {
        const size_t a = std::max(lo, g.offset), b = std::min(hi, g.offset + g.size);
        if (a >= b) continue;
        g.offset = a - lo;
        g.size = b - a;
        out.push_back(g);
    }
    return out;
}

std::string ShardPlan::layerNames(const model::ParameterTable& table, int shard) const {
    const auto& first = table.layers()[size_t(firstLayer(shard))];
    const auto& last = table.layers()[size_t(lastLayer(shard))];
    return firstLayer(shard) == lastLayer(shard) ? first.name
                                                 : fmt::format("{}..{}", first.name, last.name);
}

std::string ShardPlan::describe(const model::ParameterTable& table, size_t bytesPerParameter,
                                const std::vector<optim::ParamGroup>& groups) const {
    std::string text;
    for (int k = 0; k < m_shards; ++k) {
        const size_t trained = groups.empty() ? count(k) : trainableOnRank(groups, k);
        const double bytes = double(count(k) - trained) * sizeof(float) +
                             double(trained) * double(bytesPerParameter);
        text += fmt::format("{}rank {}: {} ({})", k == 0 ? "" : "; ", k, layerNames(table, k),
                            formatBytes(bytes));
    }
    return text;
}

std::string shardsProblem(int shards, int processes, int layers) {
    if (shards > processes) {
        return fmt::format(
            "memoryx.shards is {} but the job has {} process(es): each shard lives on its own "
            "rank, so start at least {} (mpirun -np {}) or lower memoryx.shards (--set "
            "memoryx.shards={})",
            shards, processes, shards, shards, processes);
    }
    if (shards > layers) {
        return fmt::format(
            "memoryx.shards is {} but the model has only {} MemoryX layers (embeddings, each "
            "block, head) and a shard holds whole layers: lower memoryx.shards to at most {}",
            shards, layers, layers);
    }
    return {};
}

double shardedGlobalNorm(comm::Comm& comm, comm::Channel channel, const ShardPlan& plan,
                         const float* local, size_t begin, size_t end) {
    const int me = comm.rank();
    const size_t count = end - begin;
    const size_t chunk = (count + kNormChunks - 1) / kNormChunks;
    const size_t base = me < plan.shards() ? plan.begin(me) : 0;
    std::vector<double> partial(kNormChunks, 0.0);
    std::vector<int> holder(kNormChunks, 0);  // the shard that finished each chunk
    auto sumSquares = [&](double sum, size_t pos, size_t stop) {
        const float* v = local + (begin + pos - base);
        for (size_t i = 0; i < stop - pos; ++i) sum += double(v[i]) * double(v[i]);
        return sum;
    };
    // Chunks inside one shard are summed by it in parallel, as globalNorm does; a chunk that
    // crosses a border passes its running sum on (at most shards - 1 of them).
    std::vector<int> crossing;
    for (int c = 0; c < kNormChunks; ++c) {
        const size_t b = std::min(count, c * chunk), e = std::min(count, b + chunk);
        holder[size_t(c)] = plan.ownerOf(begin + (e > b ? e - 1 : b));
        if (e > b && plan.ownerOf(begin + b) != holder[size_t(c)]) crossing.push_back(c);
    }
    // On the engine's compute pool, as globalNorm (optim/optimizer.cpp).
    tensor::parallelFor(
        kNormChunks, tensor::threadsForWork(int64_t(count)), [&](int64_t first, int64_t last) {
            for (int64_t c = first; c < last; ++c) {
                const size_t b = std::min(count, size_t(c) * chunk);
                const size_t e = std::min(count, b + chunk);
                if (me != holder[size_t(c)] || plan.ownerOf(begin + b) != me || e <= b) continue;
                partial[size_t(c)] = sumSquares(0.0, b, e);
            }
        });
    for (int c : crossing) {
        const size_t b = std::min(count, c * chunk), e = std::min(count, b + chunk);
        double sum = 0.0;
        int at = plan.ownerOf(begin + b);
        for (size_t pos = b; pos < e;) {
            const int owner = plan.ownerOf(begin + pos);
            if (owner != at) {  // the running sum moves on to the next shard
                comm.broadcast(channel, &sum, sizeof sum, at);
                at = owner;
            }
            const size_t stop = std::min(e, plan.end(owner) - begin);
            if (me == owner) sum = sumSquares(sum, pos, stop);
            pos = stop;
        }
        if (me == at) partial[size_t(c)] = sum;
    }
    std::vector<double> all(size_t(comm.size()) * kNormChunks, 0.0);
    comm.gather(channel, partial.data(), partial.size() * sizeof(double), all.data(),
                std::vector<size_t>(size_t(comm.size()), kNormChunks * sizeof(double)), 0);
    double total = 0.0;
    for (int c = 0; c < kNormChunks; ++c) total += all[size_t(holder[size_t(c)]) * kNormChunks + c];
    return std::sqrt(total);
}

}  // namespace ws::streaming
