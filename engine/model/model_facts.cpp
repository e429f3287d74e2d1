// SPDX-License-Identifier: GPL-3.0-or-later
// deriveFacts (see model_facts.h).
#include "engine/model/model_facts.h"

#include <algorithm>

#include "engine/model/lora.h"
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
    // The attention's score and weighted-sum products run over the query width (C for GPT-2).
    f.trainingFlopsPerToken = 6.0 * double(f.parameters) + 6.0 * shape.layers * shape.qWidth() * T;
    f.kvCacheBytesPerToken = 2 * int64_t(shape.layers) * shape.kvWidth() * int64_t(sizeof(float));
    f.kvCacheBytes = f.kvCacheBytesPerToken * shape.maxPositions;
    // MemoryX: fp32 weights of every tensor (adapters included), gradients and optimizer state of
    // the tensors that train only (a frozen tensor has none).
    GptShape adapted = shape;
    adapted.applyLora(config.lora);
    const ParameterTable stored(adapted);
    f.trainableParameters = static_cast<int64_t>(trainableParameterCount(stored, config.optimizer));
    f.weightBytes = static_cast<int64_t>(stored.totalSize()) * 4;
    f.gradientBytes = f.trainableParameters * 4;
    const bool adam = config.optimizer.optimizerType == "adamw";
    const int stateCopies = adam ? 2 : (config.optimizer.momentum > 0 ? 1 : 0);
    f.optimizerBytes = f.trainableParameters * 4 * stateCopies;
    f.tokensPerStep = int64_t(config.trainInput.batchSize) * config.trainInput.maxSequenceLength;
    if (config.lora) f.adapterParameters = loraAdapterParameters(*config.lora, shape);
    f.streamBytesPerWeight = streamedBytesPerWeight(shape);
    f.waferBufferBytes = int64_t(largestStreamedVisit(table)) * f.streamBytesPerWeight *
                         config.wafer.weightBufferLayers;
    f.streamedBytesPerPass = streamedWeightsPerPass(table) * f.streamBytesPerWeight;
    return f;
}

int64_t loraAdapterParameters(const config::LoraConfig& lora, const GptShape& shape) {
    int64_t perRank = 0;  // in + out of every targeted matrix of one block
    for (const std::string& name : lora.targets) {
        const auto target = lora::targetFromName(name);
        if (!target) continue;  // validate() reports it
        const lora::LinearShape linear = lora::linearShape(*target, shape);
        perRank += int64_t(linear.in) + linear.out;
    }
    return int64_t(shape.layers) * lora.rank * perRank;
}

double stepTrainingFlopsPerToken(const GptShape& shape, int seqLen) {
    const double attention = 6.0 * shape.layers * shape.qWidth() * double(seqLen);
    if (!shape.hasLora()) return 6.0 * double(parameterCount(shape)) + attention;
    GptShape base = shape;
    base.applyLora(std::nullopt);
    const double baseParameters = double(parameterCount(base));
    const double adapters = double(parameterCount(shape)) - baseParameters;
    return 4.0 * baseParameters + 6.0 * adapters + attention;
}

int streamedBytesPerWeight(const GptShape& shape) {
    return shape.bf16 ? 2 : 4;
}

size_t largestStreamedVisit(const ParameterTable& table) {
    size_t largest = 0;
    for (const auto& layer : table.layers()) largest = std::max(largest, layer.size);
    if (table.shape().tiedEmbedding) {
        largest = std::max(largest, table.layers()[size_t(table.headLayer())].size +
                                        table.find("wte.weight")->size);
    }
    return largest;
}

int64_t streamedWeightsPerPass(const ParameterTable& table) {
    const size_t embeddings = table.layers()[size_t(ParameterTable::embeddingLayer())].size;
    const size_t wte = table.shape().tiedEmbedding ? table.find("wte.weight")->size : 0;
    return 2 * int64_t(table.totalSize() + wte) - int64_t(embeddings);
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
