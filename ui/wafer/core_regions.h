// SPDX-License-Identifier: GPL-3.0-or-later
// Which part of a layer's matrices each region of cores holds, for labelling the heatmap: the
// layer phase's longest op (the one its heatmap mostly shows), its output Y[m, n] laid over the
// grid as grid_mapping.h does (rows of cores hold tokens, columns of cores hold Y's columns:
// Q | K | V for qkv, hidden units for fc, vocabulary for the logits, ...; folded mappings give
// each group of columns its own tokens; leftover columns idle). Pure functions. GUI thread only
// (QString).
#pragma once

#include <QString>
#include <vector>

#include "engine/wafer/cycle_model.h"

namespace ws::ui {

struct CoreRegion {
    // In core coordinates: core (r, c) covers [c - 0.5, c + 0.5] x [r - 0.5, r + 0.5].
    double col0 = 0, col1 = 0, row0 = 0, row1 = 0;
    QString label;  // "Q", "K", "V", "hidden 0–255", "idle", "tokens 0–63"
};

struct CoreRegions {
    QString caption;  // two lines: which op and its shape; what rows and columns of cores hold
    std::vector<CoreRegion> regions;
};

// The phase's longest dense op (attention's causal score tiles have no matrix to name); empty
// caption and regions when the phase has none.
CoreRegions coreRegionsFor(const wafer::LayerTiming& phase);
// The regions of one op's mapping.
CoreRegions coreRegionsOf(const wafer::OpTiming& op);
// An MoE block's phase: each expert's fixed rectangle of cores (StepPrediction::expertRegions)
// labelled with the tokens it got this pass ("expert 3 · 0 tokens: idle").
CoreRegions coreRegionsOfExperts(const std::vector<wafer::CoreRegion>& experts,
                                 const std::vector<int64_t>& tokens);

}  // namespace ws::ui
