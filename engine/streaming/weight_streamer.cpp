#include "engine/streaming/weight_streamer.h"

#include <algorithm>
#include <cassert>
#include <cstring>

namespace ws::streaming {

WeightStreamer::WeightStreamer(const float* memoryxWeights, int systems, int slots,
                               size_t slotFloats, Clock::time_point epoch, SpanSink sink)
    : m_weights(memoryxWeights),
      m_systems(systems),
      m_slots(slots),
      m_slotFloats(slotFloats),
      m_epoch(epoch),
      m_sink(std::move(sink)),
      m_buffers(size_t(systems), std::vector<float>(size_t(slots) * slotFloats)) {
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
    return m_buffers[size_t(system)].data() + size_t(visit % m_slots) * m_slotFloats;
}

void WeightStreamer::release(int visit) {
    {
        std::lock_guard lock(m_mutex);
        m_released[size_t(visit)] = 1;
        --m_resident;
    }
    m_cv.notify_all();
}

void WeightStreamer::finish() {
    std::unique_lock lock(m_mutex);
    m_cv.wait(lock, [&] { return !m_haveWork; });
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
            const int64_t step = m_step;
            lock.unlock();
            size_t floats = 0;
            for (const auto& piece : visit.pieces) floats += piece.second;
            assert(floats <= m_slotFloats);
            for (int s = 0; s < m_systems && floats > 0; ++s) {
                const auto t0 = Clock::now();
                float* dst = m_buffers[size_t(s)].data() + (j % size_t(m_slots)) * m_slotFloats;
                for (const auto& [offset, count] : visit.pieces) {
                    std::memcpy(dst, m_weights + offset, count * sizeof(float));
                    dst += count;
                }
                const auto t1 = Clock::now();
                if (m_sink) {
                    m_sink(Span{step, visit.micro, s, visit.layer, SpanKind::StreamIn,
                                int64_t(floats * sizeof(float)),
                                std::chrono::duration<double>(t0 - m_epoch).count(),
                                std::chrono::duration<double>(t1 - m_epoch).count(),
                                !visit.forward});
                }
            }
            lock.lock();
            m_bytes += int64_t(floats * sizeof(float)) * m_systems;
            m_loaded[j] = 1;
            ++m_loadedCount;
            m_cv.notify_all();
        }
        m_haveWork = false;
        m_cv.notify_all();
    }
}

}  // namespace ws::streaming
