// SPDX-License-Identifier: GPL-3.0-or-later
// predictRunStep (emulation.h).
#include "engine/session/emulation.h"

#include <algorithm>

#include "engine/config/validate.h"
#include "engine/model/model_facts.h"
#include "engine/model/parameters.h"
#include "engine/wafer/activation_plan.h"
#include "engine/wafer/run_fit.h"
#include "engine/wafer/spec.h"

namespace ws::session {

namespace {

wafer::StepInput runStepInput(const config::Config& cfg, const model::GptShape& shape,
                              int microBatch) {
    wafer::StepInput in;
    in.shape = shape;
    in.numSystems = cfg.runconfig.numCsx;
    in.batchPerSystem = cfg.trainInput.batchSize / cfg.runconfig.numCsx;
    in.seqLen = cfg.trainInput.maxSequenceLength;
    in.microBatch = microBatch;
    in.updatesAfterNorm = cfg.optimizer.maxGradientNorm > 0;
    in.weightBytesPerValue = model::streamedBytesPerWeight(shape);  // as the executor streams
    in.weightBufferLayers = cfg.wafer.weightBufferLayers;
    // Layers with nothing to train stream no gradients out (executor.h).
    const model::ParameterTable table(shape);
    for (const auto& layer : table.layers()) {
        bool frozen = true;
        for (size_t t = layer.firstTensor; t < layer.firstTensor + layer.tensorCount; ++t)
            frozen = frozen && model::isFrozenTensor(table, table.tensors()[t], cfg.optimizer);
        in.frozenLayers.push_back(frozen);
    }
    return in;
}

}  // namespace

Result<std::shared_ptr<const wafer::StepPrediction>> predictRunStep(
    const config::Config& cfg, const model::GptShape& shape, int microBatch,
    std::vector<wafer::BlockSparsity> perBlockSparsity, bool frames,
    std::vector<std::vector<int64_t>> expertTokens, int attentionLength) {
    auto spec = wafer::specForConfig(cfg);
    if (!spec.ok()) return spec.error();
    wafer::StepInput in = runStepInput(cfg, shape, microBatch);
    in.perBlockSparsity = std::move(perBlockSparsity);
    in.expertTokens = std::move(expertTokens);
    in.attentionLength = attentionLength;
    auto prediction = wafer::predictStep(*spec, in, {.frames = frames});
    if (!prediction.ok()) return prediction.error();
    return std::make_shared<const wafer::StepPrediction>(std::move(prediction).value());
}

std::vector<std::vector<int64_t>> perPassExpertTokens(
    const std::vector<std::vector<int64_t>>& stepTokens, int passes) {
    passes = std::max(1, passes);
    std::vector<std::vector<int64_t>> out;
    for (const auto& counts : stepTokens) {
        std::vector<int64_t> block(counts.size());
        int64_t total = 0, given = 0;
        std::vector<std::pair<int64_t, size_t>> remainders;  // (remainder, expert)
        for (size_t e = 0; e < counts.size(); ++e) {
            total += counts[e];
            block[e] = counts[e] / passes;
            given += block[e];
            remainders.push_back({counts[e] % passes, e});
        }
        // Largest remainders first; ties to the lower expert, so the result is deterministic.
        std::stable_sort(remainders.begin(), remainders.end(),
                         [](const auto& a, const auto& b) { return a.first > b.first; });
        const int64_t target = (total + passes / 2) / passes;
        for (size_t i = 0; given < target && i < remainders.size(); ++i, ++given)
            ++block[remainders[i].second];
        out.push_back(std::move(block));
    }
    return out;
}

Result<std::shared_ptr<const wafer::StepPrediction>> predictConfigStep(const config::Config& cfg,
                                                                       bool frames) {
    auto fit = wafer::fitOnWafer(cfg);
    model::GptShape shape = model::GptShape::fromConfig(cfg.model);
    shape.applyLora(cfg.lora);
    if (fit.ok()) return predictRunStep(cfg, shape, fit->microBatch, {}, frames);
    // This computer cannot train the step (its activations do not fit the wafer buffer); the
    // emulated wafer would offload or recompute them (wafer/activation_plan.h): show that plan.
    if (!config::validate(cfg).empty()) return fit.error();
    auto spec = wafer::specForConfig(cfg);
    if (!spec.ok()) return fit.error();
    wafer::StepInput in = runStepInput(cfg, shape, 0);
    auto plan = wafer::planActivations(*spec, in, double(cfg.wafer.sramBytes));
    if (!plan.ok() || !plan->fits) return fit.error();
    wafer::applyActivationPlan(*plan, in);
    auto prediction = wafer::predictStep(*spec, in, {.frames = frames});
    if (!prediction.ok()) return prediction.error();
    return std::make_shared<const wafer::StepPrediction>(std::move(prediction).value());
}

}  // namespace ws::session
