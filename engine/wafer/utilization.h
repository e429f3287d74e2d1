// Utilization frames: every core's busy fraction over one layer phase or a whole step, averaged
// down to at most a display resolution for big grids (a WSE-2 frame is ~750 x 994 cores).
// Thread-safety: plain values and pure functions.
#pragma once

#include <string>
#include <vector>

namespace ws::wafer {

struct UtilizationFrame {
    std::string label;  // "h forward", "head backward", "step"
    int gridRows = 0;   // the wafer's grid
    int gridCols = 0;
    int rows = 0;  // this frame's resolution (<= the grid; equal for small grids)
    int cols = 0;
    std::vector<float> busy;            // rows x cols, row-major, each in [0, 1]
    double mean = 0, min = 0, max = 0;  // over cores, at full resolution
};

// Averages a full-resolution busy grid (gridRows x gridCols) down so that rows <= maxRows and
// cols <= maxCols, each display cell the mean of the cores it covers.
UtilizationFrame downsample(std::string label, const std::vector<float>& busy, int gridRows,
                            int gridCols, int maxRows, int maxCols);

}  // namespace ws::wafer
