// SPDX-License-Identifier: GPL-3.0-or-later
// The cycle model's third phase (cycle_model.h: plan -> schedule -> simulate -> account): the
// timeline of one system's step. Each scheduled layer phase streams its weights in from MemoryX
// (with two weight slots while the phase before computes; with one, after it), computes once
// they arrive (its ops one after another, step_plan.h's busy cycles), streams its gradients out
// and SwarmX reduces them, and MemoryX updates the layer after its last micro-batch (or, with
// global-norm clipping, after the last reduce). Offloaded activations share the links
// (activation_memory.h). The header comment of cycle_model.h states the rules in full.
//
// Invariants (tests/engine/wafer/step_phases_test.cpp): a phase's compute never starts before
// its weights started to arrive (two slots: nor ends before they all have, plus the fill; one
// slot: never starts before they all have), phases compute one after another in schedule order,
// and an update ends no earlier than its gradients' reduce.
// Thread-safety: plain values and pure functions.
#pragma once

#include <vector>

#include "engine/wafer/cluster_links.h"
#include "engine/wafer/cycle_model.h"
#include "engine/wafer/step_plan.h"
#include "engine/wafer/step_schedule.h"

namespace ws::wafer {

// One scheduled phase's place on the timeline, in seconds from the start of the step.
struct PhaseWindow {
    double inStart = 0, inEnd = 0;            // its inbound stream (activations, then weights)
    double computeStart = 0, computeEnd = 0;  // on the wafer
    double drainEnd = 0;                      // end of its activations' offload (0: none)
};

struct StepTimeline {
    int treeDepth = 0;                      // SwarmX tree depth for the system count
    std::vector<PhaseWindow> phases;        // one per PhaseVisit
    std::vector<LayerTiming> layers;        // one per PhaseVisit, ops scheduled (OpTiming::startS)
    std::vector<TimelineSpan> spans;        // system 0's (every system runs the same)
    std::vector<TimelineSpan> sharedSpans;  // SwarmX reduce, MemoryX update (system -1)
    std::vector<ActivationSpan> activationSpans;              // system 0's
    double gradientStreamS = 0, reduceS = 0, optimizerS = 0;  // as StepPrediction's
    double lastReduceEnd = 0;
    double stepS = 0;  // the last compute or MemoryX update, whichever ends later
    double forwardS = 0, backwardS = 0;
    // The links (cluster_links.h): the rates used and what one system moved over them.
    ClusterRates rates;
    double weightBytesIn = 0;     // one system's weights in, all phases
    double gradientBytesOut = 0;  // one system's gradients out (= each SwarmX link's, reduced)
    double offloadBytes = 0;      // one system's activations out (the same back in)
    double inputBytes = 0;        // one system's tokens and labels
    double lockstepWaitS = 0;     // transfer time spent waiting on the slowest SwarmX link
    double inputWaitS = 0;        // compute held up for a micro-batch's tokens
};

// The timeline of `order` (scheduleStep's, or any order of the plan's kinds), its transfers at
// `rates` (clusterRates(spec, input.numSystems) unless given: the contention model).
StepTimeline simulateStep(const WaferSpec& spec, const StepInput& input, const StepPlan& plan,
                          const std::vector<PhaseVisit>& order);
StepTimeline simulateStep(const WaferSpec& spec, const StepInput& input, const StepPlan& plan,
                          const std::vector<PhaseVisit>& order, const ClusterRates& rates);

// Each op's start and length within its phase (OpTiming::startS, timeS): one after another, a
// run of expert ops at once with each expert's ops in order.
void scheduleOps(std::vector<OpTiming>& ops, double clockHz);

}  // namespace ws::wafer
