// SPDX-License-Identifier: GPL-3.0-or-later
// Exact dataflow mode (small wafers only): computes a matmul the way the mapping says the wafer
// does - every core holds only its own tiles, operand panels travel by row and column
// broadcasts step by step (SUMMA), partial sums by column reductions - and returns the assembled
// result, so tests can check the mapping against a plain matmul. Link bytes are counted on the
// way. Panels are one k-column wide; each core accumulates its tile in fp32 in ascending k.
//
// Thread-safety: pure functions. Failure contract: grids above kMaxDataflowCores and shape
// mismatches return errors (the mode is for the teaching wafer, not a WSE-2).
#pragma once

#include <cstdint>
#include <vector>

#include "engine/core/result.h"
#include "engine/wafer/grid_mapping.h"
#include "engine/wafer/spec.h"

namespace ws::wafer {

inline constexpr int64_t kMaxDataflowCores = 4096;

struct DataflowStats {
    int64_t steps = 0;           // broadcast steps (k-columns) or reduction hops
    double maxRowLinkBytes = 0;  // busiest link along a row
    double maxColLinkBytes = 0;  // busiest link along a column
    int64_t maxCoreFmacs = 0;    // the busiest core's multiply-adds
    int64_t minCoreFmacs = 0;    // the least busy core's (0 when a core owns nothing)
};

// Y[M, N] = X[M, K] W[K, N] (row-major), output-stationary SUMMA on `mapping` (the cycle
// model's, folds included; it must be for M x N on the spec's grid). Within each fold group X
// is distributed as tiles (rows_i, k-block j), the streamed W as (k-block i, cols_j) - every
// group gets its copy of the stream; at step k the owner of column k of row panel i broadcasts
// it along its row segment, the owner of row k of column panel j down column j, and every core
// adds the outer product into its Y tile.
Result<std::vector<float>> summaMatmul(const WaferSpec& spec, const GridMapping& mapping,
                                       const float* X, const float* W, int M, int K, int N,
                                       DataflowStats* stats = nullptr);
// The same on the plain, unfolded R x C grid (the textbook SUMMA).
Result<std::vector<float>> summaMatmul(const WaferSpec& spec, const float* X, const float* W, int M,
                                       int K, int N, DataflowStats* stats = nullptr);

// dW[K, N] = X[M, K]^T dY[M, N], token-stationary on `mapping` (the forward output's, M x N):
// core (i, j) holds dY[rows_i, cols_j] (its forward output tile), receives X[rows_i, :] along
// its row segment, forms the partial dW[:, cols_j] of its tokens; the partials are summed down
// each column in row order, then across the fold groups holding the same columns.
Result<std::vector<float>> tokenStationaryWeightGrad(const WaferSpec& spec,
                                                     const GridMapping& mapping, const float* X,
                                                     const float* dY, int M, int K, int N,
                                                     DataflowStats* stats = nullptr);

}  // namespace ws::wafer
