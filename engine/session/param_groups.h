// SPDX-License-Identifier: GPL-3.0-or-later
// The optimizer's parameter groups of a model: one per tensor, carrying its weight-decay flag and
// μP learning-rate multiplier, and marked frozen when fine-tuning freezes it
// (optimizer.freeze_embeddings: wte, wpe; optimizer.freeze_blocks = K: h.0 .. h.{K-1}; with LoRA,
// a table whose shape has adapters, every tensor but the adapters).
// A frozen tensor is never touched by the optimizer, so it stays bit-identical to the base model.
// Thread-safe: a pure function.
#pragma once

#include <vector>

#include "engine/config/config.h"
#include "engine/model/parameters.h"
#include "engine/optim/optimizer.h"

namespace ws::session {

std::vector<optim::ParamGroup> parameterGroups(const model::ParameterTable& table,
                                               const config::OptimizerConfig& optimizer);
// parameterGroups' frozen flags, one per tensor (its groups are the table's tensors in order).
std::vector<bool> frozenTensors(const std::vector<optim::ParamGroup>& groups);

}  // namespace ws::session
