// The Cerebras-GPT validation table (validation.h).
#include "engine/wafer/validation.h"

#include <algorithm>
#include <cmath>

#include "engine/wafer/cycle_model.h"

namespace ws::wafer {

const std::vector<CerebrasGptModel>& cerebrasGptModels() {
    static const std::vector<CerebrasGptModel> models = {
        {"111M", 10, 768, 12, 3072, 120},   {"256M", 14, 1088, 17, 4352, 264},
        {"590M", 18, 1536, 12, 6144, 264},  {"1.3B", 24, 2048, 16, 8192, 528},
        {"2.7B", 32, 2560, 20, 10240, 528}, {"6.7B", 32, 4096, 32, 16384, 1040},
        {"13B", 40, 5120, 40, 20480, 720}};
    return models;
}

Result<ValidationReport> validateCerebrasGpt(const WaferSpec& spec) {
    ValidationReport rep;
    rep.waferName = spec.name;
    rep.computeEfficiency = spec.computeEfficiency;
    rep.systems = {1, 2, 4, 8, 16};
    const PredictOptions noFrames{.frames = false};
    for (const auto& m : cerebrasGptModels()) {
        ValidationRow row;
        row.model = m.name;
        row.batch = m.batch;
        StepInput in;
        in.shape.vocab = 50257;
        in.shape.channels = m.dModel;
        in.shape.layers = m.layers;
        in.shape.heads = m.heads;
        in.shape.ffn = m.ffn;
        in.shape.maxPositions = 2048;
        in.batchPerSystem = m.batch;
        in.seqLen = 2048;
        in.updatesAfterNorm = true;  // Cerebras-GPT clipped the global gradient norm at 1.0
        row.streamingHidden = true;
        double tokensPerS1 = 0;
        for (int n : rep.systems) {
            in.numSystems = n;
            auto p = predictStep(spec, in, noFrames);
            if (!p.ok()) return Error{m.name + ": " + p.error().message};
            if (n == 1) {
                tokensPerS1 = p->tokensPerS;
                row.stepS1 = p->stepS;
                row.mfu1 = p->mfu;
                row.activationsFit = p->activations.fits;
            }
            const double eff = p->tokensPerS / (tokensPerS1 * n);
            row.efficiency.push_back(eff);
            row.worstEfficiency = std::min(row.worstEfficiency, eff);
            row.streamingHidden = row.streamingHidden && p->weightStreamingHidden;
        }
        rep.rows.push_back(std::move(row));
    }
    const double base = rep.rows.front().mfu1;
    for (auto& r : rep.rows) {
        r.mfuDeviation = std::fabs(r.mfu1 / base - 1);
        rep.worstMfuDeviation = std::max(rep.worstMfuDeviation, r.mfuDeviation);
        rep.worstScaling = std::min(rep.worstScaling, r.worstEfficiency);
    }
    rep.scalingOk = rep.worstScaling >= 0.91;
    rep.mfuOk = rep.worstMfuDeviation < 0.08;
    rep.streamingOk = std::all_of(rep.rows.begin(), rep.rows.end(),
                                  [](const ValidationRow& r) { return r.streamingHidden; });
    return rep;
}

}  // namespace ws::wafer
