#include "engine/session/events.h"

namespace ws::session {

const char* runStateName(RunState state) {
    switch (state) {
        case RunState::Preparing:
            return "preparing";
        case RunState::Running:
            return "running";
        case RunState::Paused:
            return "paused";
        case RunState::Finished:
            return "finished";
        case RunState::Stopped:
            return "stopped";
        case RunState::Diverged:
            return "diverged";
        case RunState::Failed:
            return "failed";
    }
    return "unknown";
}

void EventQueue::push(Event event) {
    std::function<void()> notify;
    {
        std::lock_guard lock(m_mutex);
        m_events.push_back(std::move(event));
        notify = m_notify;
    }
    m_cv.notify_all();
    if (notify) notify();
}

size_t EventQueue::drain(std::vector<Event>& out) {
    std::lock_guard lock(m_mutex);
    const size_t n = m_events.size();
    for (auto& e : m_events) out.push_back(std::move(e));
    m_events.clear();
    return n;
}

size_t EventQueue::waitAndDrain(std::vector<Event>& out, std::chrono::milliseconds timeout) {
    {
        std::unique_lock lock(m_mutex);
        m_cv.wait_for(lock, timeout, [this] { return !m_events.empty(); });
    }
    return drain(out);
}

void EventQueue::setNotify(std::function<void()> notify) {
    std::lock_guard lock(m_mutex);
    m_notify = std::move(notify);
}

}  // namespace ws::session
