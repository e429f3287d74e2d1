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

}  // namespace ws::wafer
