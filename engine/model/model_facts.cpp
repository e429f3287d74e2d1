// deriveFacts (see model_facts.h).
#include "engine/model/model_facts.h"

#include "engine/model/parameters.h"
#include "engine/tensor/matmul.h"

namespace ws::model {

ModelFacts deriveFacts(const config::Config& config) {
    const GptShape shape = GptShape::fromConfig(config.model);
    const ParameterTable table(shape);
    ModelFacts f;
    f.parameters = static_cast<int64_t>(table.totalSize());
    for (const auto& t : table.tensors()) {
        if (t.name == "wte.weight" || t.name == "wpe.weight" || t.name == "lm_head.weight") {
            f.embeddingParameters += static_cast<int64_t>(t.size);
        }
    }
    const double T = config.trainInput.maxSequenceLength;
    f.trainingFlopsPerToken = 6.0 * double(f.parameters) + 6.0 * shape.layers * shape.channels * T;
    f.weightBytes = f.parameters * 4;
    f.gradientBytes = f.parameters * 4;
    const bool adam = config.optimizer.optimizerType == "adamw";
    const int stateCopies = adam ? 2 : (config.optimizer.momentum > 0 ? 1 : 0);
    f.optimizerBytes = f.parameters * 4 * stateCopies;
    f.tokensPerStep = int64_t(config.trainInput.batchSize) * config.trainInput.maxSequenceLength;
    return f;
}

std::string precisionPath(const config::Config& config) {
    return GptShape::fromConfig(config.model).bf16 ? tensor::bf16PathDescription() : std::string();
}

std::string precisionDescription(const config::Config& config) {
    const std::string path = precisionPath(config);
    if (path.empty()) return {};
    return path +
           ": bf16 weights and matmuls with fp32 accumulation; fp32 master weights, gradients "
           "and optimizer state";
}

}  // namespace ws::model
