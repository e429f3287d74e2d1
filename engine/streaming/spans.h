// SPDX-License-Identifier: GPL-3.0-or-later
// What the streamed execution reports: one span per stream-in, compute, stream-out, reduce and
// optimizer update, with the layer, the bytes moved and the real (wall-clock) start and end.
// The wafer emulator (wafer/emulated_time.h) attaches emulated hardware time to the same spans;
// the studio draws them as a timeline. The cycle model's own schedule uses the same kinds.
// Plain data, copied freely.
#pragma once

#include <cstdint>
#include <functional>

namespace ws::streaming {

enum class SpanKind {
    StreamIn,   // MemoryX -> (SwarmX broadcast) -> a system's wafer: one layer's (unit's) weights
    Forward,    // a system computes one layer forward
    Backward,   // a system computes one layer backward
    StreamOut,  // a system's wafer -> SwarmX: one layer's (unit's) gradient
    Reduce,     // SwarmX sums the systems' gradients of one layer into MemoryX
    Update,     // MemoryX applies the optimizer to one layer
};
const char* spanKindName(SpanKind kind);

struct Span {
    int64_t step = 0;  // 0-based training step
    int micro = 0;     // micro-batch within the step
    int system = -1;   // emulated system; -1 for MemoryX / SwarmX work
    int layer = 0;     // ParameterTable layer index (0 embeddings, 1..L blocks, L+1 head)
    SpanKind kind = SpanKind::Forward;
    int64_t bytes = 0;   // weights or gradients moved (0 for compute)
    double start = 0.0;  // seconds since the executor was created
    double end = 0.0;
    bool backwardPass = false;  // StreamIn: the weights for the layer's backward visit
    // Emulated hardware time of the same work, seconds since the run's first step on the
    // emulated machine; negative when not emulated (emulator off, or work the emulated
    // machine does not do, such as a single system's "reduce").
    double emuStart = -1.0;
    double emuEnd = -1.0;
    // The process (mpirun rank) that did the work: 0 in one process, and for MemoryX / SwarmX
    // work, which runs on rank 0. Last, so that the positional initializers above stay valid.
    int rank = 0;
    // An MoE block moves as units (model::StreamUnit): its shared part (-1, also a whole dense
    // layer) and each expert e (e >= 0), each its own stream-in, stream-out and reduce span.
    int expert = -1;
};

// Called from engine threads (the streamer, system workers, MemoryX); must be thread-safe and
// cheap. The session forwards spans to its event queue.
using SpanSink = std::function<void(const Span&)>;

}  // namespace ws::streaming
