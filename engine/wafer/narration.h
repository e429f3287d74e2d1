// SPDX-License-Identifier: GPL-3.0-or-later
// One-line, plain-English narration of the emulated schedule for teachers (issue 17): what a
// layer phase or one span of a step does ("h.1 forward: the 256 cores multiply this
// micro-batch's activations by h.1's weights, streamed in from MemoryX; h.2's weights stream
// into the other buffer slot"), and what the machine is doing at a moment of the step (a
// phase, or "waiting: h.2's weights are still streaming in"). The words follow the spans'
// kinds (streaming::SpanKind) and ParameterTable layer numbering; nothing is invented that
// the schedule does not say.
// Thread-safety: pure functions of their arguments.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/wafer/cycle_model.h"

namespace ws::wafer {

// "embeddings", "h.3" (block index from 0, as the parameter names), "head" for ParameterTable
// layer `layer` of a model with `numBlocks` blocks.
std::string layerName(int layer, int numBlocks);

// What the sentences need to know about the run.
struct NarrationContext {
    int numBlocks = 0;     // L (ParameterTable layers 1..L)
    int numSystems = 1;    // num_csx
    int64_t cores = 0;     // cores per wafer (WaferSpec::cores()); 0: "the cores"
    int microBatches = 1;  // wafer passes per step (batch per system / micro-batch)
    int bufferSlots = 2;   // wafer.weight_buffer_layers
    std::string optimizer = "AdamW";
};

// The context a prediction implies: its blocks (from the layers its spans name), systems,
// cores (from its frames; 0 without frames), micro-batches and buffer slots. The optimizer
// stays the default: the prediction does not know it.
NarrationContext narrationContext(const StepPrediction& prediction);

// The step's last layer phase (system 0; the compute span that starts last), or null when the
// schedule has none.
const TimelineSpan* lastPhase(const StepPrediction& prediction);

// What else is under way while a compute span runs (system 0 and MemoryX / SwarmX).
struct InFlight {
    std::vector<int> streamingIn;   // layers whose weights stream into another slot
    std::vector<int> streamingOut;  // layers whose gradients stream out to MemoryX
    std::vector<int> updating;      // layers MemoryX updates meanwhile
    // Of the phase's time, the fraction its cores wait for the phase's own weights (a phase
    // bound by the weight stream: the cores compute each part as it arrives).
    double waitingForWeights = 0;
};

// The sentence for one span of the schedule: a compute phase (with what is in flight beside
// it), a stream in or out, a SwarmX reduce or a MemoryX update.
std::string narrateSpan(const TimelineSpan& span, const NarrationContext& context,
                        const InFlight& inFlight = {});

// The sentence for one layer phase (system 0, micro-batch `micro`) of a predicted step, with
// the streams that overlap its compute; "" when the schedule has no such phase.
std::string narratePhase(const StepPrediction& prediction, int layer, bool backward, int micro,
                         const NarrationContext& context);

// What the machine does at `timeS` seconds from the step's start: "waiting: ..." while weights
// still stream in and the cores have nothing else to do (no phase, or a phase bound by its
// weight stream); else the compute phase under way; else the reduce / update / gradient stream
// in progress; "" past the end of the step.
std::string narrateMoment(const StepPrediction& prediction, double timeS,
                          const NarrationContext& context);

// The streams and updates of the schedule (system 0, MemoryX) that overlap the compute span
// `compute`, leaving out its own visit's stream in and gradient stream out; and how much of the
// phase waits for its weights (from the phase's LayerTiming, named as `context` names layers).
InFlight inFlightDuring(const StepPrediction& prediction, const TimelineSpan& compute,
                        const NarrationContext& context);

}  // namespace ws::wafer
