// parameterGroups (see param_groups.h).
#include "engine/session/param_groups.h"

namespace ws::session {

std::vector<optim::ParamGroup> parameterGroups(const model::ParameterTable& table,
                                               const config::OptimizerConfig& optimizer) {
    std::vector<optim::ParamGroup> groups;
    groups.reserve(table.tensors().size());
    for (const auto& t : table.tensors()) {
        const int layer = t.layerIndex;
        const bool embedding = layer == model::ParameterTable::embeddingLayer();
        const bool frozenBlock = layer >= model::ParameterTable::blockLayer(0) &&
                                 layer < model::ParameterTable::blockLayer(optimizer.freezeBlocks);
        // LoRA: only the adapters train; every base tensor is frozen.
        const bool baseUnderLora =
            table.shape().hasLora() && t.name.find(".lora_") == std::string::npos;
        const bool frozen =
            (embedding && optimizer.freezeEmbeddings) || frozenBlock || baseUnderLora;
        groups.push_back({t.offset, t.size, t.decay, t.lrScale, frozen});
    }
    return groups;
}

}  // namespace ws::session
