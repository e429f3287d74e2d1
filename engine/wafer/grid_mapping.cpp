// SPDX-License-Identifier: GPL-3.0-or-later
// Choosing the fold of an output-stationary mapping (grid_mapping.h).
#include "engine/wafer/grid_mapping.h"

namespace ws::wafer {

GridMapping mapUnfolded(int64_t m, int64_t n, int rows, int cols) {
    assert(rows > 0 && cols > 0);
    GridMapping g;
    g.rows = rows;
    g.cols = cols;
    g.folds = 1;
    g.groupCols = cols;
    g.m = Split::of(m, rows);
    g.n = Split::of(n, cols);
    return g;
}

GridMapping mapOutputStationary(int64_t m, int64_t n, int rows, int cols,
                                const std::function<double(const GridMapping&)>& cost) {
    GridMapping best = mapUnfolded(m, n, rows, cols);
    double bestCost = cost(best);
    GridMapping g = best;
    for (int folds = 2; folds <= cols; ++folds) {
        g.folds = folds;
        g.groupCols = cols / folds;
        g.m = Split::of(m, int64_t(rows) * folds);
        g.n = Split::of(n, g.groupCols);
        const double c = cost(g);
        if (c < bestCost) {
            best = g;
            bestCost = c;
        }
        if (g.m.block <= 1) break;  // more folds cannot shrink the rows' block further
    }
    return best;
}

GridMapping mapOutputStationary(int64_t m, int64_t n, int rows, int cols) {
    return mapOutputStationary(m, n, rows, cols,
                               [](const GridMapping& g) { return double(g.largestTile()); });
}

}  // namespace ws::wafer
