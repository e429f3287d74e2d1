// SPDX-License-Identifier: GPL-3.0-or-later
// Utilization frames: every core's busy fraction over a stated window of time (a layer phase's
// compute window, or a whole step), averaged down to at most a display resolution for big grids
// (a WSE-2 frame is ~750 x 994 cores).
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
    // What the fractions are of: `windowS` seconds of `window`. A layer phase's frame is over
    // its compute window (its ops back to back: the time the wafer works on the layer once its
    // weights are in, the waiting for weights excluded, cycle_model.h), so a stream-bound layer
    // still shows how its matrices load the cores; the step's frame is over the whole step.
    enum class Window { Compute, Step, Adapters };
    Window window = Window::Step;
    double windowS = 0;
};

// Averages a full-resolution busy grid (gridRows x gridCols) down so that rows <= maxRows and
// cols <= maxCols, each display cell the mean of the cores it covers.
UtilizationFrame downsample(std::string label, const std::vector<float>& busy, int gridRows,
                            int gridCols, int maxRows, int maxCols);

}  // namespace ws::wafer
