// SPDX-License-Identifier: GPL-3.0-or-later
// parameterGroups (see param_groups.h).
#include "engine/session/param_groups.h"

namespace ws::session {

std::vector<optim::ParamGroup> parameterGroups(const model::ParameterTable& table,
                                               const config::OptimizerConfig& optimizer) {
    std::vector<optim::ParamGroup> groups;
    groups.reserve(table.tensors().size());
    for (const auto& t : table.tensors())
        groups.push_back({t.offset, t.size, t.decay, t.lrScale,
                          model::isFrozenTensor(table, t, optimizer),
                          model::frozenPrefixOf(table, t)});
    return groups;
}

std::vector<bool> frozenTensors(const std::vector<optim::ParamGroup>& groups) {
    std::vector<bool> frozen;
    frozen.reserve(groups.size());
    for (const auto& g : groups) frozen.push_back(g.frozen);
    return frozen;
}

}  // namespace ws::session
