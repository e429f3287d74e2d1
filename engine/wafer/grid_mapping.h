// SPDX-License-Identifier: GPL-3.0-or-later
// Output-stationary mapping of one operation's output matrix Y[m, n] onto the R x C core grid
// (SUMMA-style: core (i, j) owns the tile Y[rows_i, cols_j]; operand panels arrive by row and
// column broadcasts). Uneven splits round the block size up, so trailing cores get smaller or
// empty tiles - the imbalance is real, not smoothed.
//
// Folding: when n is smaller than the grid is wide (n = 768 on 994 columns would idle 23% of
// the wafer), the mapper cuts the columns into `folds` groups of `groupCols` and gives each group
// its own slice of the rows: the virtual grid is (R * folds) x groupCols. It picks the fold that
// minimizes the largest tile (what bounds the op's time), the fewest folds on ties. folds = 1 is
// the plain R x C SUMMA grid.
//
// Thread-safety: plain values. Failure contract: sizes are programmer input (asserted).
#pragma once

#include <algorithm>
#include <cassert>
#include <cstdint>
#include <functional>

namespace ws::wafer {

// `total` items cut into `parts` blocks of ceil(total / parts); block i is [begin(i), end(i)),
// empty for trailing blocks when the blocks run out early.
struct Split {
    int64_t total = 0;
    int64_t parts = 1;
    int64_t block = 0;

    static Split of(int64_t total, int64_t parts) {
        assert(parts > 0 && total >= 0);
        return {total, parts, (total + parts - 1) / parts};
    }
    int64_t begin(int64_t i) const { return std::min(total, i * block); }
    int64_t end(int64_t i) const { return std::min(total, (i + 1) * block); }
    int64_t size(int64_t i) const { return end(i) - begin(i); }
};

struct GridMapping {
    int rows = 0;       // physical grid R
    int cols = 0;       // physical grid C
    int folds = 1;      // column groups
    int groupCols = 0;  // columns per group: floor(C / folds); leftover columns stay idle
    Split m;            // output rows over rows * folds virtual rows
    Split n;            // output columns over groupCols virtual columns

    int64_t virtualRows() const { return int64_t(rows) * folds; }
    // Core (r, c) as virtual (row, col); false for the idle columns left over after folding.
    bool toVirtual(int r, int c, int64_t& vRow, int64_t& vCol) const {
        const int group = c / groupCols;
        if (group >= folds) return false;
        vRow = int64_t(group) * rows + r;
        vCol = c % groupCols;
        return true;
    }
    // Physical column of virtual column vCol in fold group `group`.
    int physicalCol(int group, int64_t vCol) const { return group * groupCols + int(vCol); }
    int64_t largestTile() const { return m.block * n.block; }
};

GridMapping mapOutputStationary(int64_t m, int64_t n, int rows, int cols);
// The same, choosing the fold that minimizes `cost` (e.g. an op's max(compute, fabric) time)
// instead of the largest tile; ties keep fewer folds.
GridMapping mapOutputStationary(int64_t m, int64_t n, int rows, int cols,
                                const std::function<double(const GridMapping&)>& cost);

// The plain R x C mapping (folds = 1), e.g. for the exact dataflow mode's textbook SUMMA.
GridMapping mapUnfolded(int64_t m, int64_t n, int rows, int cols);

}  // namespace ws::wafer
