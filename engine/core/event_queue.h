// SPDX-License-Identifier: GPL-3.0-or-later
// EventQueue<Event>: how engine threads talk to a front end. Producers push; a front end (the
// CLI's loop, the studio's timer) drains whole batches and never blocks the engine. An optional
// notify hook runs on the producer's thread after each push (the studio posts one queued
// wake-up from it). Thread-safe: any number of producers and consumers; set the hook before the
// producers start.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <vector>

namespace ws {

template <class Event>
class EventQueue {
public:
    void push(Event event) {
        std::function<void()> notify;
        {
            std::lock_guard lock(m_mutex);
            m_events.push_back(std::move(event));
            notify = m_notify;
        }
        m_cv.notify_all();
        if (notify) notify();
    }

    // Moves every queued event into `out` (appending); returns how many.
    size_t drain(std::vector<Event>& out) {
        std::lock_guard lock(m_mutex);
        const size_t n = m_events.size();
        for (auto& e : m_events) out.push_back(std::move(e));
        m_events.clear();
        return n;
    }

    // Waits up to `timeout` for at least one event, then drains.
    size_t waitAndDrain(std::vector<Event>& out, std::chrono::milliseconds timeout) {
        {
            std::unique_lock lock(m_mutex);
            m_cv.wait_for(lock, timeout, [this] { return !m_events.empty(); });
        }
        return drain(out);
    }

    void setNotify(std::function<void()> notify) {
        std::lock_guard lock(m_mutex);
        m_notify = std::move(notify);
    }

private:
    std::mutex m_mutex;
    std::condition_variable m_cv;
    std::deque<Event> m_events;
    std::function<void()> m_notify;
};

}  // namespace ws
