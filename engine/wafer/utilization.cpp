// SPDX-License-Identifier: GPL-3.0-or-later
// Averaging full-resolution utilization down to display size (utilization.h).
#include "engine/wafer/utilization.h"

#include <algorithm>

namespace ws::wafer {

UtilizationFrame downsample(std::string label, const std::vector<float>& busy, int gridRows,
                            int gridCols, int maxRows, int maxCols) {
    UtilizationFrame f;
    f.label = std::move(label);
    f.gridRows = gridRows;
    f.gridCols = gridCols;
    f.rows = std::clamp(maxRows, 1, gridRows);
    f.cols = std::clamp(maxCols, 1, gridCols);
    f.busy.assign(size_t(f.rows) * f.cols, 0.0f);
    std::vector<double> sum(f.busy.size(), 0.0);
    std::vector<int> count(f.busy.size(), 0);
    double total = 0, lo = 1e300, hi = -1e300;
    std::vector<int> colCell(static_cast<size_t>(gridCols));
    for (int c = 0; c < gridCols; ++c) colCell[size_t(c)] = int(int64_t(c) * f.cols / gridCols);
    for (int r = 0; r < gridRows; ++r) {
        const size_t rowBase = size_t(int64_t(r) * f.rows / gridRows) * f.cols;
        const float* src = busy.data() + size_t(r) * gridCols;
        for (int c = 0; c < gridCols; ++c) {
            const double v = src[c];
            const size_t cell = rowBase + size_t(colCell[size_t(c)]);
            sum[cell] += v;
            ++count[cell];
            total += v;
            lo = std::min(lo, v);
            hi = std::max(hi, v);
        }
    }
    for (size_t i = 0; i < f.busy.size(); ++i)
        f.busy[i] = count[i] ? float(sum[i] / count[i]) : 0.0f;
    const double n = double(gridRows) * gridCols;
    f.mean = n > 0 ? total / n : 0;
    f.min = n > 0 ? lo : 0;
    f.max = n > 0 ? hi : 0;
    return f;
}

}  // namespace ws::wafer
