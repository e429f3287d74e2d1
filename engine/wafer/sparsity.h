// SPDX-License-Identifier: GPL-3.0-or-later
// Static unstructured weight sparsity on the wafer: magnitude pruning of real weights, and the
// per-output-column nonzero counts the cycle model uses so that cores whose weight columns hold
// more zeros finish early (the hardware skips zero weights).
// Thread-safety: pure functions. Failure contract: bad levels / targets return errors.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/core/result.h"
#include "engine/model/parameters.h"
#include "engine/wafer/layer_ops.h"

namespace ws::wafer {

// Positions (ascending) of the round(level * count) smallest-magnitude values of W, ties broken
// by position: what magnitude pruning zeroes.
std::vector<int64_t> magnitudePruneIndices(const float* W, int64_t count, double level);

// Zeroes the round(level * K * N) smallest-magnitude values of W[K, N] (row-major; ties broken
// by position) and returns prefix sums (size N + 1) of the nonzeros left in each column.
// `W` is not modified.
std::vector<int64_t> columnNonzerosAfterPruning(const float* W, int64_t K, int64_t N, double level);

// Every column keeps round((1 - level) * K) weights: what magnitude pruning gives on average.
std::vector<int64_t> uniformColumnNonzeros(int64_t K, int64_t N, double level);

// The sparsity of block `block` of a parameter buffer for the given targets ("qkv",
// "attn_proj", "fc", "fc_proj"; empty = all four) at `level` in [0, 1).
Result<BlockSparsity> blockSparsityFromWeights(const model::ParameterTable& table,
                                               const float* params, int block, double level,
                                               const std::vector<std::string>& targets);

// Static sparsity of a whole model (model.sparsity): prunes every block's target matrices by
// magnitude, in place, once, and remembers the positions so training keeps them at zero.
class StaticSparsity {
public:
    static Result<StaticSparsity> prune(const model::ParameterTable& table, float* params,
                                        double level, const std::vector<std::string>& targets);
    // Zeroes the pruned positions again (after the optimizer moved them).
    void reapply(float* params) const;
    int64_t prunedCount() const { return int64_t(m_positions.size()); }
    // Each block's per-column nonzeros, for the cycle model (StepInput::perBlockSparsity).
    const std::vector<BlockSparsity>& blocks() const { return m_blocks; }

private:
    std::vector<int64_t> m_positions;  // offsets into the parameter buffer
    std::vector<BlockSparsity> m_blocks;
};

}  // namespace ws::wafer
