// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/streaming/workers.h"

#include <chrono>
#include <exception>
#include <utility>

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
    std::exception_ptr error;
    try {
        body(0);
    } catch (...) {
        error = std::current_exception();
    }
    // Every system finishes before anything propagates: they all use the caller's body.
    std::unique_lock lock(m_mutex);
    m_cv.wait(lock, [&] { return m_pending == 0; });
    m_body = nullptr;
    if (!error) error = std::exchange(m_error, nullptr);
    m_error = nullptr;
    lock.unlock();
    if (error) std::rethrow_exception(error);
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
        std::exception_ptr error;
        try {
            (*body)(system);
        } catch (...) {
            error = std::current_exception();
        }
        lock.lock();
        if (error && !m_error) m_error = error;
        if (--m_pending == 0) m_cv.notify_all();
    }
}

SerialQueue::SerialQueue() {
    m_thread = std::thread([this] {
        tensor::flushDenormalsOnThisThread();  // MemoryX's optimizer updates run here
        std::unique_lock lock(m_mutex);
        for (;;) {
            // A job waitIdle() is running on its caller's thread keeps the order: wait for it.
            m_cv.wait(lock, [&] { return m_stop || (!m_jobs.empty() && !m_busy); });
            if (m_jobs.empty()) return;  // stopping with nothing left to do
            if (m_holdForTest.load()) {
                lock.unlock();
                std::this_thread::sleep_for(std::chrono::milliseconds(1));
                lock.lock();
                continue;
            }
            runFront(lock);
        }
    });
}

void SerialQueue::runFront(std::unique_lock<std::mutex>& lock) {
    auto job = std::move(m_jobs.front());
    m_jobs.pop_front();
    m_busy = true;
    lock.unlock();
    std::exception_ptr error;
    try {
        job();
    } catch (...) {
        error = std::current_exception();
    }
    lock.lock();
    if (error && !m_error) m_error = error;
    m_busy = false;
    m_cv.notify_all();
}

SerialQueue::~SerialQueue() {
    {
        std::lock_guard lock(m_mutex);
        // Jobs still queued belong to a step that failed and unwound; they must not run.
        m_jobs.clear();
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
    for (;;) {
        if (m_jobs.empty() && !m_busy) break;
        if (!m_busy) {
            // The queue's thread has not taken the next job yet (on a busy machine it may wait a
            // scheduler slice to run): the caller, who has nothing to do but wait, runs it. The
            // jobs still run one at a time and in order.
            ++m_helped;
            const tensor::DenormalsFlushedHere flushed;  // as on the queue's own thread
            runFront(lock);
            continue;
        }
        m_cv.wait(lock);
    }
    if (std::exception_ptr error = std::exchange(m_error, nullptr)) {
        lock.unlock();
        std::rethrow_exception(error);
    }
}

}  // namespace ws::streaming
