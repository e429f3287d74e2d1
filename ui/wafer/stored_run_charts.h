// SPDX-License-Identifier: GPL-3.0-or-later
// Reading a stored run's per-layer charts back from the run store, for the Wafer tab's view of a
// run selected in the Runs dock: its tokens per expert (metrics moe/h.<b>.expert_<e>_tokens, on
// log steps) and its sparsity per layer over the run (sparsity/h.<b> and
// sparsity_imbalance/h.<b>). Reads only; a damaged or missing series reads as absent. GUI
// thread (the store's read connection), cheap enough to run on a selection change.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "engine/config/config.h"
#include "ui/wafer/expert_load_chart.h"

namespace ws::store {
class RunStore;
}

namespace ws::ui {

// One sparsity measurement of a stored run: after `step` (1-based), per block.
struct SparsityPoint {
    int64_t step = 0;
    std::vector<double> levels;     // share of masked weights at zero, [0, 1]
    std::vector<double> imbalance;  // busiest column's nonzeros over the mean column's
};

// The newest log step's routing of an MoE run; nullopt for a dense model or when the store
// holds no counts for it (a run stopped before its first log step).
std::optional<RecordedRouting> readRecordedRouting(const store::RunStore& store, int64_t run,
                                                   const config::Config& config);

// Every recorded sparsity measurement in step order (steps where some block's level is missing
// are left out); empty for a dense run.
std::vector<SparsityPoint> readRecordedSparsity(const store::RunStore& store, int64_t run,
                                                int numBlocks);

}  // namespace ws::ui
