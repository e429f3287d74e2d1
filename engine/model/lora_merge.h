// SPDX-License-Identifier: GPL-3.0-or-later
// Folding LoRA adapters into the base weights (issue 16): for every adapted linear of every block,
// W (IN,OUT) + scale · A (IN,R) · B (R,OUT) in this model's Conv1D layout, giving a plain GPT-2
// parameter buffer (no adapters) that computes the adapted model. Everything that needs the adapted
// model without the adapter path uses it: `wafer export --merge`, sampling a LoRA run (the KV
// decoder computes a plain GPT-2), the Samples tab's adapter column.
//
// Precision: each merged element is W + scale · Σ_r A·B with the sum and the scaling done in
// double and rounded to float once, so it is the exact value within one float rounding (the
// adapter path of Gpt computes the same sum in float; the two agree within float rounding).
// The result depends only on the inputs (not on the thread count).
// Thread-safety: pure functions; the merge uses tensor::computeThreads().
#pragma once

#include <vector>

#include "engine/model/parameters.h"

namespace ws::model::lora {

// The same shape without adapters (loraRank 0): the layout of a merged buffer.
GptShape baseShape(const GptShape& adapted);

// params: ParameterTable(adapted) layout; returns ParameterTable(baseShape(adapted)) layout with
// every adapter folded in. A shape without LoRA gives a plain copy.
std::vector<float> mergeAdapters(const GptShape& adapted, const float* params);

// The base model's own weights (adapters dropped): ParameterTable(baseShape(adapted)) layout.
std::vector<float> baseWeights(const GptShape& adapted, const float* params);

}  // namespace ws::model::lora
