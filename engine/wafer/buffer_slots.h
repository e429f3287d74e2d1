// SPDX-License-Identifier: GPL-3.0-or-later
// What the wafer's weight buffer holds at a moment of one step: which layer's weights sit in each
// of the wafer.weight_buffer_layers slots (streaming in, waiting, or being computed on) and whose
// gradients are streaming out to MemoryX. Read off one system's spans of a step: the emulated
// schedule's (StepPrediction, bufferStateAt), or the executor's real ones with their wall-clock
// times (bufferStateOf), which say what the CPU run's bounded buffer really held (the loader
// fills slot j % k as soon as visit j - k is released: with two slots the next layer is in while
// this one computes). A layer takes a slot from the start of its stream-in until its compute
// ends; the visits take the slots in turn (visit k in slot k mod slots), as the executor's ring
// does. An MoE block's visit streams in as several units (TimelineSpan::expert): one visit, one
// slot.
// Thread-safety: pure functions of immutable input.
#pragma once

#include <vector>

#include "engine/wafer/cycle_model.h"

namespace ws::wafer {

enum class SlotActivity { Empty, StreamingIn, Waiting, Computing };
const char* slotActivityName(SlotActivity a);

struct SlotState {
    SlotActivity activity = SlotActivity::Empty;
    int layer = -1;               // ParameterTable layer index; -1 when empty
    bool backward = false;        // the weights are in for the layer's backward visit
    int micro = 0;                // the micro-batch of that visit
    double streamedFraction = 0;  // of the layer's weights arrived (1 once in)
    double computedFraction = 0;  // of the layer phase's compute done
};

struct BufferState {
    double timeS = 0;                   // seconds from the step's start
    std::vector<SlotState> slotStates;  // weightBufferLayers entries ("slots" is a Qt macro)
    // Layers whose gradients are streaming out at timeS (to MemoryX, through SwarmX).
    std::vector<int> streamingOut;
};

BufferState bufferStateAt(const StepPrediction& prediction, double timeS);

// The same from any spans of one step (times in seconds from a common origin): system `system`'s
// stream-ins, computes and stream-outs; `slotCount` is wafer.weight_buffer_layers.
BufferState bufferStateOf(const std::vector<TimelineSpan>& spans, int slotCount, double timeS,
                          int system = 0);

// The middle of a layer phase's compute (system 0, micro-batch `micro`) in seconds from the
// step's start; < 0 when the schedule has no such phase.
double phaseMidpoint(const StepPrediction& prediction, int layer, bool backward, int micro = 0);

}  // namespace ws::wafer
