// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/streaming/weight_streamer.h"

#include <algorithm>
#include <cassert>
#include <cstring>

#include "engine/tensor/bf16.h"

namespace ws::streaming {

WeightStreamer::WeightStreamer(const float* memoryxWeights, int systems, int slots,
                               size_t slotValues, Clock::time_point epoch, SpanSink sink, bool bf16,
                               comm::Comm* comm, int firstSystem, size_t weightsBase)
    : m_weights(memoryxWeights),
      m_weightsBase(weightsBase),
      m_systems(systems),
      m_slots(slots),
      m_slotValues(slotValues),
      m_epoch(epoch),
      m_sink(std::move(sink)),
      m_bf16(bf16),
      m_comm(comm && comm->size() > 1 ? comm : nullptr),
      m_firstSystem(firstSystem) {
    const size_t values = size_t(slots) * slotValues;
    if (bf16)
        m_bf16Buffers.assign(size_t(systems), std::vector<uint16_t>(values));
    else
        m_buffers.assign(size_t(systems), std::vector<float>(values));
    m_loader = std::thread([this] { loaderLoop(); });
}

WeightStreamer::~WeightStreamer() {
    {
        std::lock_guard lock(m_mutex);
        m_stop = true;
    }
    m_cv.notify_all();
    m_loader.join();
}

void WeightStreamer::begin(int64_t step, std::vector<WeightVisit> visits) {
    std::lock_guard lock(m_mutex);
    assert(m_resident == 0);
    m_step = step;
    m_visits = std::move(visits);
    m_loaded.assign(m_visits.size(), 0);
    m_released.assign(m_visits.size(), 0);
    m_loadedCount = 0;
    m_haveWork = true;
    m_cv.notify_all();
}

void WeightStreamer::acquire(int visit) {
    std::unique_lock lock(m_mutex);
    m_cv.wait(lock, [&] { return m_loaded[size_t(visit)] != 0; });
}

const float* WeightStreamer::slot(int visit, int system) const {
    assert(!m_bf16);
    return m_buffers[size_t(system)].data() + size_t(visit % m_slots) * m_slotValues;
}

const uint16_t* WeightStreamer::packedSlot(int visit, int system) const {
    assert(m_bf16);
    return m_bf16Buffers[size_t(system)].data() + size_t(visit % m_slots) * m_slotValues;
}

int64_t WeightStreamer::visitBytes(const WeightVisit& visit) const {
    size_t values = 0;
    for (const auto& piece : visit.pieces) values += piece.second;
    return int64_t(values) * bytesPerValue();
}

void WeightStreamer::release(int visit) {
    {
        std::lock_guard lock(m_mutex);
        m_released[size_t(visit)] = 1;
        --m_resident;
        m_residentBytes -= visitBytes(m_visits[size_t(visit)]);
    }
    m_cv.notify_all();
}

void WeightStreamer::finish() {
    std::unique_lock lock(m_mutex);
    m_cv.wait(lock, [&] { return !m_haveWork; });
}

// Local system s's copy of pieces [firstPiece, endPiece) of a visit across processes, at
// slotStart: the first system's slot comes from MemoryX on rank 0 and by broadcast elsewhere;
// the other local systems copy it.
void WeightStreamer::streamAcrossRanks(const WeightVisit& visit, size_t firstPiece, size_t endPiece,
                                       int s, size_t slotStart, size_t values) {
    const size_t bytes = values * size_t(bytesPerValue());
    char* first = m_bf16 ? reinterpret_cast<char*>(m_bf16Buffers[0].data() + slotStart)
                         : reinterpret_cast<char*>(m_buffers[0].data() + slotStart);
    if (s > 0) {
        char* dst = m_bf16 ? reinterpret_cast<char*>(m_bf16Buffers[size_t(s)].data() + slotStart)
                           : reinterpret_cast<char*>(m_buffers[size_t(s)].data() + slotStart);
        std::memcpy(dst, first, bytes);
        return;
    }
    // Pieces with the same root go out as one broadcast (all of them when MemoryX is not
    // sharded).
    const int valueBytes = bytesPerValue();
    size_t at = 0;
    for (size_t i = firstPiece; i < endPiece;) {
        const int root = visit.roots.empty() ? 0 : visit.roots[i];
        const size_t runStart = at;
        for (; i < endPiece && (visit.roots.empty() ? 0 : visit.roots[i]) == root; ++i) {
            const auto [offset, count] = visit.pieces[i];
            if (m_comm->rank() == root) {
                const float* src = m_weights + (offset - m_weightsBase);
                if (m_bf16)
                    tensor::floatToBf16Span(src, m_bf16Buffers[0].data() + slotStart + at, count);
                else
                    std::memcpy(m_buffers[0].data() + slotStart + at, src, count * sizeof(float));
            }
            at += count;
        }
        m_comm->broadcast(comm::Channel::Weights, first + runStart * size_t(valueBytes),
                          (at - runStart) * size_t(valueBytes), root);
    }
    assert(at * size_t(valueBytes) == bytes);
}

void WeightStreamer::loaderLoop() {
    std::unique_lock lock(m_mutex);
    for (;;) {
        m_cv.wait(lock, [&] { return m_stop || m_haveWork; });
        if (m_stop) return;
        for (size_t j = 0; j < m_visits.size(); ++j) {
            // Slot j % k is free once the visit that used it before (j - k) has been released.
            m_cv.wait(lock,
                      [&] { return m_stop || j < size_t(m_slots) || m_released[j - m_slots]; });
            if (m_stop) return;
            ++m_resident;
            m_maxResident = std::max(m_maxResident, m_resident);
            const WeightVisit visit = m_visits[j];
            const int64_t bytes = visitBytes(visit);
            m_residentBytes += bytes;
            m_peakResidentBytes = std::max(m_peakResidentBytes, m_residentBytes);
            const int64_t step = m_step;
            lock.unlock();
            size_t values = 0;
            for (const auto& piece : visit.pieces) values += piece.second;
            assert(values <= m_slotValues);
            const size_t slotStart = (j % size_t(m_slots)) * m_slotValues;
            // The visit's transfers: runs of pieces of one unit (the whole visit untagged).
            const auto unitOf = [&](size_t i) {
                return visit.pieceExpert.empty() ? -1 : visit.pieceExpert[i];
            };
            size_t at = 0;  // values of the slot filled by the runs before
            for (size_t p0 = 0; p0 < visit.pieces.size();) {
                size_t p1 = p0, runValues = 0;
                for (; p1 < visit.pieces.size() && unitOf(p1) == unitOf(p0); ++p1)
                    runValues += visit.pieces[p1].second;
                const size_t runStart = slotStart + at;
                for (int s = 0; s < m_systems && runValues > 0; ++s) {
                    const auto t0 = Clock::now();
                    if (m_comm) {
                        streamAcrossRanks(visit, p0, p1, s, runStart, runValues);
                    } else if (!m_bf16) {
                        float* dst = m_buffers[size_t(s)].data() + runStart;
                        for (size_t i = p0; i < p1; ++i) {
                            const auto [offset, count] = visit.pieces[i];
                            std::memcpy(dst, m_weights + (offset - m_weightsBase),
                                        count * sizeof(float));
                            dst += count;
                        }
                    } else if (s == 0) {
                        // Converted once, on the way onto the first wafer...
                        uint16_t* dst = m_bf16Buffers[0].data() + runStart;
                        for (size_t i = p0; i < p1; ++i) {
                            const auto [offset, count] = visit.pieces[i];
                            tensor::floatToBf16Span(m_weights + (offset - m_weightsBase), dst,
                                                    count);
                            dst += count;
                        }
                    } else {
                        // ...and the same bits broadcast to the others.
                        std::memcpy(m_bf16Buffers[size_t(s)].data() + runStart,
                                    m_bf16Buffers[0].data() + runStart,
                                    runValues * sizeof(uint16_t));
                    }
                    const auto t1 = Clock::now();
                    if (m_sink) {
                        Span span{step,
                                  visit.micro,
                                  m_firstSystem + s,
                                  visit.layer,
                                  SpanKind::StreamIn,
                                  int64_t(runValues) * bytesPerValue(),
                                  std::chrono::duration<double>(t0 - m_epoch).count(),
                                  std::chrono::duration<double>(t1 - m_epoch).count(),
                                  !visit.forward};
                        span.expert = unitOf(p0);
                        m_sink(span);
                    }
                }
                at += runValues;
                p0 = p1;
            }
            lock.lock();
            m_bytes += bytes * m_systems;
            m_loaded[j] = 1;
            ++m_loadedCount;
            m_cv.notify_all();
        }
        m_haveWork = false;
        m_cv.notify_all();
    }
}

}  // namespace ws::streaming
