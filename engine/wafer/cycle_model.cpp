// SPDX-License-Identifier: GPL-3.0-or-later
// The cycle model (cycle_model.h): predictStep runs its four phases; the activation fit.
#include "engine/wafer/cycle_model.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "engine/wafer/step_accounting.h"
#include "engine/wafer/step_plan.h"
#include "engine/wafer/step_schedule.h"
#include "engine/wafer/step_simulation.h"

namespace ws::wafer {

const char* bindingName(Binding b) {
    switch (b) {
        case Binding::Compute:
            return "compute";
        case Binding::Fabric:
            return "fabric";
        case Binding::WeightStream:
            return "weight stream";
    }
    return "?";
}

namespace {

// Korthikanti et al. 2022 ("Reducing Activation Recomputation"): a block keeps ~34 * C bytes
// per token in 16 bits for its backward, without the attention-score terms (scores are
// recomputed, flash-style, as our attention op does).
constexpr double kStoredBytesPerTokenChannel = 34;

}  // namespace

int largestFittingMicroBatch(const WaferSpec& spec, const model::GptShape& shape, int batch,
                             int seqLen, double availableBytes) {
    for (int mb = batch; mb > 1; --mb) {
        if (batch % mb != 0) continue;
        ActivationFit f = activationFit(spec, shape, mb, seqLen);
        if (f.storedBytes <= (availableBytes > 0 ? availableBytes : f.availableBytes)) return mb;
    }
    return 1;
}

std::vector<float> coreBusyCycles(const LayerOps& planned, const WaferSpec& spec) {
    const int R = spec.gridRows, C = spec.gridCols;
    std::vector<float> busy(size_t(R) * C, 0.0f);
    for (const auto& op : planned.ops) addCoreCycles(op, spec, busy);
    return busy;
}

ActivationFit activationFit(const WaferSpec& spec, const model::GptShape& s, int batch,
                            int seqLen) {
    ActivationFit f;
    const double tokens = double(batch) * seqLen;
    const double perSequence =
        double(seqLen) * s.channels * (kStoredBytesPerTokenChannel * s.layers + 2.0);
    f.storedBytes = perSequence * batch;
    f.minimalBytes = tokens * s.channels * 2.0 * (s.layers + 1);
    f.availableBytes = double(spec.cores()) * double(spec.sramBytesPerCore);
    f.fits = f.storedBytes <= f.availableBytes;
    f.fitsWithRecompute = f.minimalBytes <= f.availableBytes;
    f.maxSequences = int(std::min(1e9, std::floor(f.availableBytes / perSequence)));
    return f;
}

// plan -> schedule -> simulate -> account (step_plan.h, step_schedule.h, step_simulation.h,
// step_accounting.h).
Result<StepPrediction> predictStep(const WaferSpec& spec, const StepInput& in,
                                   const PredictOptions& opt) {
    auto plan = planStep(spec, in, opt.frames);
    if (!plan.ok()) return plan.error();
    const std::vector<PhaseVisit> order = scheduleStep(in.shape, *plan);
    const ClusterRates rates = clusterRates(spec, in.numSystems);
    StepTimeline timeline = simulateStep(spec, in, *plan, order, rates);
    // What lockstep costs (TimeSplit::queueing): the same step with SwarmX at line rate.
    double lineRateStepS = -1;
    if (rates.waitFraction > 0) {
        ClusterRates line = rates;
        line.swarmxBytesPerS = rates.lineBytesPerS;
        line.waitFraction = 0;
        lineRateStepS = simulateStep(spec, in, *plan, order, line).stepS;
    }
    StepPrediction out = accountStep(spec, in, *plan, order, std::move(timeline), lineRateStepS);
    if (opt.frames) addUtilizationFrames(out, spec, *plan, order, opt);
    return out;
}

const UtilizationFrame* StepPrediction::adapterFrame(bool backward) const {
    const int index = backward ? adapterBackwardFrame : adapterForwardFrame;
    return index >= 0 && size_t(index) < frames.size() ? &frames[size_t(index)] : nullptr;
}

const UtilizationFrame* StepPrediction::frameFor(int layer, bool backward) const {
    if (frames.empty()) return nullptr;
    if (layer < 0) return &frames.back();
    const auto& index = backward ? backwardFrame : forwardFrame;
    if (size_t(layer) >= index.size() || index[size_t(layer)] < 0) return nullptr;
    return &frames[size_t(index[size_t(layer)])];
}

}  // namespace ws::wafer
