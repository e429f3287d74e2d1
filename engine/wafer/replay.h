// SPDX-License-Identifier: GPL-3.0-or-later
// Slow-motion replay of one emulated training step: the state of the step's schedule at any
// emulated time t (which spans run, the layer phase on the wafer or the one it waits for, the
// weight buffer's slots, and the bytes on every link of MemoryX -> SwarmX -> systems and back),
// and the mapping from wall-clock time on screen to emulated time, so a replay runs at a chosen
// pace ("1 emulated µs = 20 ms on screen") whatever the speed of the CPU that trained the run.
//
// The schedule is a StepPrediction's (the cycle model's plan, the same times the run's spans
// carry). A span's bytes: the planned ones are its layer phase's stream time x the spec's I/O
// bandwidth (LayerTiming::weightStreamS / gradStreamS are bytes / WaferSpec::ioBytesPerS), and a
// step's recorded spans, when given, replace them with the bytes each span really moved (the
// executor's: an fp32 run streams 4-byte weights and gradients, a reduce counts its N inputs).
// A span's bytes move at an even rate over its duration. Links: MemoryX -> SwarmX carries one copy
// of each layer's weights (system 0's stream-ins: SwarmX broadcasts that copy), SwarmX -> system s
// that system's stream-ins, system s
// -> SwarmX its stream-outs, SwarmX -> MemoryX the reduced gradients (a reduce span's inputs / N;
// with one system, which has no reduce, system 0's stream-outs).
//
// Thread-safety: a StepReplay is immutable after construction; stateAt() is const and safe from
// any thread. Everything else is a pure function.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "engine/wafer/buffer_slots.h"
#include "engine/wafer/cycle_model.h"

namespace ws::wafer {

// One link's traffic at a moment of the step.
struct LinkFlow {
    double bytesSoFar = 0;      // moved since the step's start
    double bytesPerS = 0;       // the rate now (sum over the link's spans running now)
    double totalBytes = 0;      // the whole step's
    double peakBytesPerS = 0;   // the fastest span's rate on this link in the step (for scales)
    int layer = -1;             // the layer whose bytes move now (the latest started); -1: idle
    bool backwardPass = false;  // that layer's weights are for its backward visit
    bool active() const { return bytesPerS > 0; }
};

enum class WaferActivity {
    Idle,               // no compute now and none to come (the step's tail: updates, reduces)
    Computing,          // a layer phase computes (possibly as its last weights arrive)
    WaitingForWeights,  // between phases: the next phase's weights are still streaming in
};

// The layer phase under the cursor (system 0: every system runs the same schedule).
struct PhaseAtTime {
    WaferActivity activity = WaferActivity::Idle;
    // Computing: the phase computing now; otherwise the last phase computed (layer -1: none yet).
    int layer = -1;
    bool backward = false;
    int micro = 0;
    double computedFraction = 0;  // of that phase's compute span
    int frame = -1;               // StepPrediction::frames index of that phase; -1: none
    // Computing: the fraction of the phase's own weights arrived (< 1: compute waits on them).
    double streamedFraction = 1;
    // The next phase to compute (WaitingForWeights: the one waited for); layer -1: none.
    int nextLayer = -1;
    bool nextBackward = false;
    int nextMicro = 0;
    double nextStreamedFraction = 0;  // of the next phase's weights arrived
};

struct ReplayState {
    double timeS = 0;                 // clamped to [0, step]
    std::vector<size_t> activeSpans;  // StepReplay::spans() indices running at timeS
    PhaseAtTime phase;
    BufferState buffer;                  // the weight buffer's slots (buffer_slots.h)
    LinkFlow weightsIn;                  // MemoryX -> SwarmX
    std::vector<LinkFlow> broadcast;     // SwarmX -> system s (numSystems entries)
    std::vector<LinkFlow> gradientsOut;  // system s -> SwarmX
    LinkFlow reducedOut;                 // SwarmX -> MemoryX
    std::vector<int> updating;           // layers MemoryX updates now
    int updatesDone = 0, updatesPlanned = 0;
};

// The bytes one span of a step really moved (streaming::Span's, without its times).
struct SpanBytes {
    int system = 0;
    int micro = 0;
    int layer = 0;
    streaming::SpanKind kind = streaming::SpanKind::StreamIn;
    bool backwardPass = false;  // stream-ins: the weights for the backward visit
    double bytes = 0;
    int expert = -1;  // an MoE block's stream unit (streaming::Span::expert)
};

class StepReplay {
public:
    // `ioBytesPerS`: the spec's WaferSpec::ioBytesPerS(), for the planned bytes (0: none).
    // `recorded`: a step's spans as run, matched by system, micro-batch, layer, kind and (for
    // stream-ins) the pass, whose bytes replace the planned ones. A null prediction replays
    // nothing (durationS() 0, every state empty).
    explicit StepReplay(std::shared_ptr<const StepPrediction> prediction, double ioBytesPerS = 0,
                        const std::vector<SpanBytes>& recorded = {});

    double durationS() const { return m_durationS; }
    const std::shared_ptr<const StepPrediction>& prediction() const { return m_prediction; }
    // The schedule replayed (the prediction's spans) and each span's bytes (same order).
    const std::vector<TimelineSpan>& spans() const { return m_spans; }
    const std::vector<double>& spanBytes() const { return m_bytes; }
    int numSystems() const { return m_numSystems; }
    int numBlocks() const { return m_numBlocks; }  // transformer blocks (layers 1..numBlocks)
    // The state at emulated time `timeS` (clamped to [0, durationS()]).
    ReplayState stateAt(double timeS) const;

private:
    std::shared_ptr<const StepPrediction> m_prediction;
    std::vector<TimelineSpan> m_spans;
    std::vector<double> m_bytes;
    std::vector<size_t> m_compute;  // system 0's compute spans, by start
    double m_durationS = 0;
    int m_numSystems = 1;
    int m_numBlocks = 0;
    bool m_hasReduce = false;
};

// The pace of a replay: emulated seconds per wall-clock second on screen ("1 emulated µs = 20 ms
// on screen" is 1e-6 / 0.020 = 5e-5). Independent of the training's own speed.
class ReplayPace {
public:
    // emulatedS of the step shown in wallS on screen; non-positive inputs give pace 0 (frozen).
    static ReplayPace of(double emulatedS, double wallS);
    // The whole step of `stepS` emulated seconds in `wallS` on screen.
    static ReplayPace wholeStepIn(double stepS, double wallS) { return of(stepS, wallS); }

    double emulatedPerWallS() const { return m_factor; }
    // Emulated time after `wallS` more seconds on screen from `timeS`, stopping at `endS`.
    double advance(double timeS, double wallS, double endS) const;
    // Wall seconds the replay of `emulatedS` takes on screen (infinite when frozen).
    double wallSeconds(double emulatedS) const;
    // An animation of a step of `stepS` at `fps` frames per wall second: frames 0..count-1, the
    // last at the step's end; frame i shows emulated time min(stepS, i / fps x pace).
    int frameCount(double stepS, double fps) const;
    double frameTime(int frame, double stepS, double fps) const;

private:
    double m_factor = 0;
};

// One line saying what happens at the state's moment, for the replay's caption: "h.1 forward on
// system 0 while h.2's weights stream in", "waiting for the weights of h.2 (backward): 40 % in".
std::string describeReplayState(const ReplayState& state, int numSystems, int numBlocks);

}  // namespace ws::wafer
