// SPDX-License-Identifier: GPL-3.0-or-later
// Where a run across processes computed its systems: one row per rank (run_placement,
// schema.cpp) with the rank's host and its systems. Rank 0's Session writes it when the run
// starts (or continues, with the new placement); `wafer runs show` and the studio's Wafer tab
// read it. A run in one process has no rows.
// Thread-safety and failures as RunStore's (these go through its writer thread and reader).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/core/result.h"
#include "engine/store/run_store.h"

namespace ws::store {

struct RankPlacement {
    int rank = 0;
    std::string host;
    int firstSystem = 0;  // the rank computes systems [firstSystem, firstSystem + systems)
    int systems = 0;
    bool operator==(const RankPlacement&) const = default;
};

// memoryx.shards > 1: rank `rank` held MemoryX's `layers` ("embeddings..h.0"), `bytes` of
// weights, gradients and optimizer state (run_memoryx_shards).
struct MemoryXShard {
    int rank = 0;
    std::string layers;
    int64_t bytes = 0;
    bool operator==(const MemoryXShard&) const = default;
};

// Replaces the run's MemoryX shards (empty: rank 0 holds all of MemoryX).
Status saveMemoryXShards(RunStore& store, int64_t run, const std::vector<MemoryXShard>& shards);
// The run's MemoryX shards by rank; empty unless it ran with memoryx.shards > 1.
Result<std::vector<MemoryXShard>> memoryxShards(const RunStore& store, int64_t run);

// Replaces the run's placement with `ranks` (empty: the run now runs in one process).
Status savePlacement(RunStore& store, int64_t run, const std::vector<RankPlacement>& ranks);
// The run's placement by rank; empty for a run in one process.
Result<std::vector<RankPlacement>> placement(const RunStore& store, int64_t run);

}  // namespace ws::store
