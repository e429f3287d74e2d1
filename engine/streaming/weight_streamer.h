// SPDX-License-Identifier: GPL-3.0-or-later
// WeightStreamer: the bounded weight buffer on each system's wafer and the prefetcher that fills
// it. A step is a known sequence of layer visits (forward 0..L+1, backward L+1..0, per
// micro-batch); a loader thread copies visit j's weights out of MemoryX into slot j % k of every
// system's buffer (the SwarmX broadcast) as soon as visit j-k has been released, so with k = 2 the
// next layer streams in while the current one computes. The wafer never holds more than k layers'
// weights: the buffer has exactly k slots, and maxResident() proves it from the instrumentation.
//
// Element width: fp32 (4 bytes), or bf16 (2 bytes, the model's bf16 mode): MemoryX keeps fp32
// masters and the loader converts each visit's weights to bf16 once (round to nearest even,
// tensor::floatToBf16Span, on the loader's own thread) into system 0's slot, then broadcasts those
// bits to the other systems, so the wafer buffer, the bytes streamed and the StreamIn spans'
// bytes are half the fp32 figures.
//
// Across processes (a comm of several ranks): `systems` are this rank's, numbered from
// firstSystem in spans. Rank 0 fills its first system's slot from MemoryX (converting to bf16 in
// bf16 mode) and broadcasts the slot's bytes on the Weights channel; every other rank receives
// them into its first system's slot (it passes no MemoryX); each rank then copies them to its
// other systems. The loader thread is the only user of the Weights channel. With MemoryX sharded
// (memoryx.shards) each piece comes from the rank that holds it (WeightVisit::roots): that rank
// fills the piece's part of the slot and broadcasts it; a visit whose pieces share a root is one
// broadcast, as before. A rank's MemoryX holds the parameters from weightsBase on.
//
// Units (WeightVisit::pieceExpert, an MoE block): the visit's pieces are tagged with the unit they
// belong to (its shared part, each expert); each run of pieces with one tag is its own transfer
// with its own StreamIn span (Span::expert), landing in the slot right after the run before it,
// so the slot holds the same values as one transfer would. The buffer is counted per visit, as
// before: a block's units share its slot.
// Thread-safety: begin/acquire/release from the executor's thread; the loader is internal.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

#include "engine/comm/comm.h"
#include "engine/streaming/spans.h"

namespace ws::streaming {

struct WeightVisit {
    int layer = 0;
    bool forward = true;
    int micro = 0;
    // Pieces of MemoryX's weights this visit needs, copied back to back into the slot
    // (e.g. the tied head needs ln_f and wte). Empty: the visit computes without weights.
    std::vector<std::pair<size_t, size_t>> pieces;  // (offset, floats)
    // Across processes with MemoryX sharded: the rank whose MemoryX holds each piece (empty: all
    // on rank 0).
    std::vector<int> roots;
    // The streamed unit of each piece (Span::expert: -1 shared part, e an expert); empty: the
    // visit is one transfer.
    std::vector<int> pieceExpert;
};

class WeightStreamer {
public:
    using Clock = std::chrono::steady_clock;

    // slotValues: the most weights one visit needs; bf16: stream them as bf16 (see above).
    WeightStreamer(const float* memoryxWeights, int systems, int slots, size_t slotValues,
                   Clock::time_point epoch, SpanSink sink, bool bf16 = false,
                   comm::Comm* comm = nullptr, int firstSystem = 0, size_t weightsBase = 0);
    ~WeightStreamer();
    WeightStreamer(const WeightStreamer&) = delete;
    WeightStreamer& operator=(const WeightStreamer&) = delete;

    // Starts streaming a step's visits (the previous step must be fully released).
    void begin(int64_t step, std::vector<WeightVisit> visits);
    // Blocks until visit j is on every system's wafer; returns system s's copy via slot().
    void acquire(int visit);
    // System s's copy of visit j: fp32 values (slot) or, streaming bf16, bf16 bits (packedSlot).
    const float* slot(int visit, int system) const;
    const uint16_t* packedSlot(int visit, int system) const;
    void release(int visit);
    // Waits until the loader has finished the step (all visits loaded).
    void finish();

    bool bf16() const { return m_bf16; }
    int bytesPerValue() const { return m_bf16 ? 2 : 4; }
    int maxResident() const { return m_maxResident; }
    int64_t bytesStreamed() const { return m_bytes; }  // all systems, all steps
    // One system's weight buffer: its capacity (slots x slotValues) and the most bytes of weights
    // it ever held at once (visits loading, loaded or in use; each system holds the same).
    int64_t bufferBytes() const {
        return int64_t(m_slots) * int64_t(m_slotValues) * bytesPerValue();
    }
    int64_t peakResidentBytes() const { return m_peakResidentBytes; }

private:
    void loaderLoop();
    void streamAcrossRanks(const WeightVisit& visit, size_t firstPiece, size_t endPiece, int s,
                           size_t slotStart, size_t values);

    int64_t visitBytes(const WeightVisit& visit) const;

    const float* m_weights;  // this rank's MemoryX weights (null: it holds none)
    size_t m_weightsBase;    // the global offset of m_weights[0]
    int m_systems;
    int m_slots;
    size_t m_slotValues;
    Clock::time_point m_epoch;
    SpanSink m_sink;
    bool m_bf16;
    comm::Comm* m_comm;  // null or one rank: no other process to broadcast to
    int m_firstSystem;
    std::vector<std::vector<float>> m_buffers;         // fp32: per system, (slots * slotValues)
    std::vector<std::vector<uint16_t>> m_bf16Buffers;  // bf16: per system, (slots * slotValues)

    std::mutex m_mutex;
    std::condition_variable m_cv;
    std::vector<WeightVisit> m_visits;
    std::vector<char> m_loaded, m_released;
    int64_t m_step = 0;
    bool m_haveWork = false;
    bool m_stop = false;
    int m_loadedCount = 0;
    int m_resident = 0;  // slots holding a layer (loading, loaded or in use), not yet released
    int m_maxResident = 0;
    int64_t m_residentBytes = 0;  // per system
    int64_t m_peakResidentBytes = 0;
    int64_t m_bytes = 0;
    std::thread m_loader;
};

}  // namespace ws::streaming
