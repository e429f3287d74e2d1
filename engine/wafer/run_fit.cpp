// SPDX-License-Identifier: GPL-3.0-or-later
// fitOnWafer (see run_fit.h).
#include "engine/wafer/run_fit.h"

#include "engine/config/validate.h"
#include "engine/model/model_facts.h"
#include "engine/wafer/spec.h"

namespace ws::wafer {

Result<streaming::FitResult> fitOnWafer(const config::Config& cfg, const model::GptShape& shape,
                                        const model::ParameterTable& table) {
    // The spec is loaded even when wafer.sram_bytes replaces its SRAM: a misspelt wafer.spec is
    // an error in the config either way (the emulator reads the spec too).
    auto spec = specForConfig(cfg);
    if (!spec.ok()) return spec.error();
    const int64_t sram =
        cfg.wafer.sramBytes > 0 ? cfg.wafer.sramBytes : spec->cores() * spec->sramBytesPerCore;
    // The buffer holds weights as they reach the wafer: 2-byte bf16 in bf16 mode, else fp32.
    const size_t largest = model::largestStreamedVisit(table);
    streaming::FitInput in;
    in.shape = shape;
    in.seqLen = cfg.trainInput.maxSequenceLength;
    in.perSystemBatch = cfg.trainInput.batchSize / cfg.runconfig.numCsx;
    in.microBatchSetting = cfg.trainInput.microBatchSize;
    in.sramBytes = sram;
    in.weightBufferBytes =
        int64_t(largest) * model::streamedBytesPerWeight(shape) * cfg.wafer.weightBufferLayers;
    in.weightBufferLayers = cfg.wafer.weightBufferLayers;
    return streaming::chooseMicroBatch(in);
}

Result<streaming::FitResult> fitOnWafer(const config::Config& cfg) {
    if (const auto problems = config::validate(cfg); !problems.empty()) {
        std::string message = "the config has problems:";
        for (const auto& p : problems) message += "\n  - " + p;
        return Error{message};
    }
    model::GptShape shape = model::GptShape::fromConfig(cfg.model);
    shape.applyLora(cfg.lora);
    const model::ParameterTable table(shape);
    return fitOnWafer(cfg, shape, table);
}

}  // namespace ws::wafer
