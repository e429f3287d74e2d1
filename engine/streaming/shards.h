// SPDX-License-Identifier: GPL-3.0-or-later
// ShardPlan: MemoryX split over ranks by whole layers (memoryx.shards). Shard k lives on rank k and
// owns a contiguous run of the ParameterTable's layers, chosen so every shard holds about the same
// bytes (cut points nearest to k/N of the total, each shard at least one layer): a pure function
// of the table and N, so every rank computes the same plan. Because the layers tile the parameter
// buffer in order, shard k owns the global range [begin(k), end(k)) and keeps it as one compact
// buffer: global offset g is local offset g - begin(k). With one shard the plan is the identity.
//
// shardedGlobalNorm: optim::globalNorm over a range of a buffer whose pieces live on different
// shards, bit for bit: globalNorm sums squares in 64 fixed chunks, each in element order from 0,
// then adds the chunks in order. Here each chunk's running sum walks through the shards that hold
// its elements (handed on by a broadcast where a chunk crosses a shard border), and rank 0 adds the
// finished chunks in the same order. Every rank of the comm must call it alike (a collective).
// Thread-safety: a ShardPlan is immutable; shardedGlobalNorm uses the given channel.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "engine/comm/comm.h"
#include "engine/model/parameters.h"
#include "engine/optim/optimizer.h"

namespace ws::streaming {

class ShardPlan {
public:
    ShardPlan() = default;  // one shard over an empty table
    ShardPlan(const model::ParameterTable& table, int shards);

    int shards() const { return m_shards; }
    int ownerOfLayer(int layer) const { return m_layerOwner[size_t(layer)]; }
    int ownerOf(size_t globalOffset) const;  // the shard holding that parameter
    size_t begin(int shard) const { return m_bounds[size_t(shard)]; }
    size_t end(int shard) const { return m_bounds[size_t(shard) + 1]; }
    size_t count(int shard) const { return end(shard) - begin(shard); }
    // Parameters on a rank: its shard's, or none for a rank that holds no shard.
    size_t countOnRank(int rank) const { return rank < m_shards ? count(rank) : 0; }
    int firstLayer(int shard) const { return m_firstLayer[size_t(shard)]; }
    int lastLayer(int shard) const { return m_firstLayer[size_t(shard) + 1] - 1; }
    // The same shards over the Trainable layout (optim::GradientLayout) of `groups` (global
    // offsets): where each shard's gradients and optimizer state begin and end. Layers as here.
    ShardPlan overTrainable(const std::vector<optim::ParamGroup>& groups) const;
    // Gradient and state floats a rank keeps in the Trainable layout of `groups`.
    size_t trainableOnRank(const std::vector<optim::ParamGroup>& groups, int rank) const;
    // `groups` (global offsets) cut to shard k's range and moved to its local offsets.
    std::vector<optim::ParamGroup> localGroups(const std::vector<optim::ParamGroup>& groups,
                                               int shard) const;
    // Shard k's layers by name: "embeddings..h.1", or one name.
    std::string layerNames(const model::ParameterTable& table, int shard) const;
    // "rank 0: layers 0-2 (embeddings-h.1), 12.0 MiB of weights + optimizer state" for each shard;
    // bytesPerParameter: what MemoryX keeps per parameter (weights, gradients, state copies);
    // with `groups`, frozen parameters count their weights (4 bytes) alone.
    std::string describe(const model::ParameterTable& table, size_t bytesPerParameter,
                         const std::vector<optim::ParamGroup>& groups = {}) const;

private:
    int m_shards = 1;
    std::vector<size_t> m_bounds = {0, 0};   // (shards + 1) global offsets
    std::vector<int> m_firstLayer = {0, 0};  // (shards + 1)
    std::vector<int> m_layerOwner;           // (layers)
};

// The problem with memoryx.shards = shards for a job of `processes` ranks and a model of `layers`
// MemoryX layers (empty when it can run).
std::string shardsProblem(int shards, int processes, int layers);

// optim::globalNorm(values + begin - base(rank), end - begin) over the sharded buffer, where
// `local` is this rank's shard (null on ranks without one) and `plan` says who holds what.
// The result is meaningful on rank 0 only.
double shardedGlobalNorm(comm::Comm& comm, comm::Channel channel, const ShardPlan& plan,
                         const float* local, size_t begin, size_t end);

}  // namespace ws::streaming
