// SPDX-License-Identifier: GPL-3.0-or-later
// The position encodings a shape's attention needs, built once per model object: the rotary
// cos/sin table (rotary positions) and the ALiBi slopes (ALiBi), from GptShape's options. Gpt and
// the KV-cache decoder (engine/sample) both take them from here, so they cannot disagree.
// Thread-safety: pure functions.
#pragma once

#include <optional>
#include <vector>

#include "engine/model/ops.h"
#include "engine/model/parameters.h"

namespace ws::model {

// The rotary table for positions [0, positions), or none when positions are not rotary.
inline std::optional<ops::RotaryTable> rotaryTableFor(const GptShape& shape, int positions) {
    if (shape.position != GptShape::Position::Rotary) return std::nullopt;
    ops::RopeScaling scaling;
    scaling.type =
        shape.ropeScaling == GptShape::RopeScaling::Llama3   ? ops::RopeScaling::Type::Llama3
        : shape.ropeScaling == GptShape::RopeScaling::Linear ? ops::RopeScaling::Type::Linear
                                                             : ops::RopeScaling::Type::None;
    scaling.factor = shape.ropeFactor;
    scaling.lowFreqFactor = shape.ropeLowFreqFactor;
    scaling.highFreqFactor = shape.ropeHighFreqFactor;
    scaling.originalMaxPositions = shape.ropeOriginalMaxPositions;
    return ops::RotaryTable(shape.rotaryDims(), shape.ropeTheta, scaling, positions);
}

// One ALiBi slope per head (NH), or none without ALiBi.
template <typename Real>
std::vector<Real> alibiSlopesFor(const GptShape& shape) {
    std::vector<Real> slopes;
    if (shape.position != GptShape::Position::Alibi) return slopes;
    for (double slope : ops::alibiSlopes(shape.heads)) slopes.push_back(Real(slope));
    return slopes;
}

}  // namespace ws::model
