// SPDX-License-Identifier: GPL-3.0-or-later
// The cycle model's last phase (cycle_model.h: plan -> schedule -> simulate -> account): what
// the simulated step adds up to. The time split (compute, streaming, fabric, reduce, bubble;
// the parts add up to the step), whether weight streaming hid behind compute, the model's FLOPs
// and MFU, the hardware's FLOPs (recomputed forward ops included) and HFU, LoRA's adapter time,
// the activation plan's costs, the MoE routing that was mapped, every system's spans, and the
// per-core utilization frames.
// Thread-safety: plain values and pure functions.
#pragma once

#include <vector>

#include "engine/wafer/cycle_model.h"
#include "engine/wafer/step_plan.h"
#include "engine/wafer/step_schedule.h"
#include "engine/wafer/step_simulation.h"

namespace ws::wafer {

// The prediction of a simulated step, without frames (StepPrediction::frames stays empty).
// `lineRateStepS`: the same step with SwarmX at its links' line rate (no lockstep waits), which
// sets TimeSplit::queueing; < 0 when it is the same step.
StepPrediction accountStep(const WaferSpec& spec, const StepInput& input, const StepPlan& plan,
                           const std::vector<PhaseVisit>& order, StepTimeline timeline,
                           double lineRateStepS = -1);

// The load a simulated step puts on each kind of link (StepPrediction::links).
std::vector<LinkLoad> linkLoads(const WaferSpec& spec, const StepTimeline& timeline);

// Where the step's time goes: walks the wafer's compute windows; the parts add up to
// timeline.stepS. `hidden` (optional): whether no layer phase but the embeddings' waited on
// its weight stream.
TimeSplit splitStepTime(const StepInput& input, const StepPlan& plan,
                        const std::vector<PhaseVisit>& order, const StepTimeline& timeline,
                        double clockHz, bool* hidden = nullptr);

// Adds the utilization frames (StepPrediction::frames and their indices): one per kind over
// its compute window, LoRA's adapter products per pass, then the whole step.
void addUtilizationFrames(StepPrediction& out, const WaferSpec& spec, const StepPlan& plan,
                          const std::vector<PhaseVisit>& order, const PredictOptions& options);

}  // namespace ws::wafer
