// predictRunStep (emulation.h).
#include "engine/session/emulation.h"

#include "engine/model/model_facts.h"
#include "engine/model/parameters.h"
#include "engine/wafer/run_fit.h"
#include "engine/wafer/spec.h"

namespace ws::session {

Result<std::shared_ptr<const wafer::StepPrediction>> predictRunStep(
    const config::Config& cfg, const model::GptShape& shape, int microBatch,
    std::vector<wafer::BlockSparsity> perBlockSparsity, bool frames, int attentionLength) {
    auto spec = wafer::specForConfig(cfg);
    if (!spec.ok()) return spec.error();
    wafer::StepInput in;
    in.shape = shape;
    in.numSystems = cfg.runconfig.numCsx;
    in.batchPerSystem = cfg.trainInput.batchSize / cfg.runconfig.numCsx;
    in.seqLen = cfg.trainInput.maxSequenceLength;
    in.microBatch = microBatch;
    in.perBlockSparsity = std::move(perBlockSparsity);
    in.updatesAfterNorm = cfg.optimizer.maxGradientNorm > 0;
    in.weightBytesPerValue = model::streamedBytesPerWeight(shape);  // as the executor streams
    in.weightBufferLayers = cfg.wafer.weightBufferLayers;
    in.attentionLength = attentionLength;
    // Layers with nothing to train stream no gradients out (executor.h).
    const model::ParameterTable table(shape);
    for (const auto& layer : table.layers()) {
        bool frozen = true;
        for (size_t t = layer.firstTensor; t < layer.firstTensor + layer.tensorCount; ++t)
            frozen = frozen && model::isFrozenTensor(table, table.tensors()[t], cfg.optimizer);
        in.frozenLayers.push_back(frozen);
    }
    auto prediction = wafer::predictStep(*spec, in, {.frames = frames});
    if (!prediction.ok()) return prediction.error();
    return std::make_shared<const wafer::StepPrediction>(std::move(prediction).value());
}

Result<std::shared_ptr<const wafer::StepPrediction>> predictConfigStep(const config::Config& cfg,
                                                                       bool frames) {
    auto fit = wafer::fitOnWafer(cfg);
    if (!fit.ok()) return fit.error();
    model::GptShape shape = model::GptShape::fromConfig(cfg.model);
    shape.applyLora(cfg.lora);
    return predictRunStep(cfg, shape, fit->microBatch, {}, frames);
}

}  // namespace ws::session
