#include "engine/streaming/workers.h"

#include "engine/tensor/threads.h"

namespace ws::streaming {

SystemWorkers::SystemWorkers(int systems) {
    for (int s = 1; s < systems; ++s) m_threads.emplace_back([this, s] { loop(s); });
}

SystemWorkers::~SystemWorkers() {
    {
        std::lock_guard lock(m_mutex);
        m_stop = true;
    }
    m_cv.notify_all();
    for (auto& t : m_threads) t.join();
}

void SystemWorkers::run(const std::function<void(int)>& body) {
    {
        std::lock_guard lock(m_mutex);
        m_body = &body;
        m_pending = int(m_threads.size());
        ++m_generation;
    }
    m_cv.notify_all();
    body(0);
    std::unique_lock lock(m_mutex);
    m_cv.wait(lock, [&] { return m_pending == 0; });
    m_body = nullptr;
}

void SystemWorkers::loop(int system) {
    tensor::flushDenormalsOnThisThread();
    unsigned seen = 0;
    std::unique_lock lock(m_mutex);
    for (;;) {
        m_cv.wait(lock, [&] { return m_stop || m_generation != seen; });
        if (m_stop) return;
        seen = m_generation;
        const auto* body = m_body;
        lock.unlock();
        (*body)(system);
        lock.lock();
        if (--m_pending == 0) m_cv.notify_all();
    }
}

SerialQueue::SerialQueue() {
    m_thread = std::thread([this] {
        tensor::flushDenormalsOnThisThread();  // MemoryX's optimizer updates run here
        std::unique_lock lock(m_mutex);
        for (;;) {
            m_cv.wait(lock, [&] { return m_stop || !m_jobs.empty(); });
            if (m_jobs.empty()) return;  // stopping with nothing left to do
            auto job = std::move(m_jobs.front());
            m_jobs.pop_front();
            m_busy = true;
            lock.unlock();
            job();
            lock.lock();
            m_busy = false;
            m_cv.notify_all();
        }
    });
}

SerialQueue::~SerialQueue() {
    {
        std::lock_guard lock(m_mutex);
        m_stop = true;
    }
    m_cv.notify_all();
    m_thread.join();
}

void SerialQueue::post(std::function<void()> job) {
    {
        std::lock_guard lock(m_mutex);
        m_jobs.push_back(std::move(job));
    }
    m_cv.notify_all();
}

void SerialQueue::waitIdle() {
    std::unique_lock lock(m_mutex);
    m_cv.wait(lock, [&] { return m_jobs.empty() && !m_busy; });
}

}  // namespace ws::streaming
