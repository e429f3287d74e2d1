// SPDX-License-Identifier: GPL-3.0-or-later
// Two small thread helpers of the executor. SystemWorkers runs one function per emulated system
// in parallel (system 0 on the caller's thread) and returns when all are done. SerialQueue runs
// posted jobs one after another on its own thread (MemoryX's reduce and update work), so they
// overlap the systems' compute; waitIdle() is the synchronisation point, and a job its thread has
// not started by then runs on the waiting thread instead (still one at a time, in order), so the
// waiter never sleeps until a descheduled thread gets the CPU back. An exception thrown by a
// body or job (std::bad_alloc above all) is not lost and does not terminate: run() rethrows it
// after every system finished, waitIdle() after the queue ran dry.
// Thread-safety: run() from one thread at a time; post()/waitIdle() from any thread.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace ws::streaming {

class SystemWorkers {
public:
    explicit SystemWorkers(int systems);
    ~SystemWorkers();
    SystemWorkers(const SystemWorkers&) = delete;
    SystemWorkers& operator=(const SystemWorkers&) = delete;

    void run(const std::function<void(int system)>& body);

private:
    void loop(int system);

    std::mutex m_mutex;
    std::condition_variable m_cv;
    const std::function<void(int)>* m_body = nullptr;
    unsigned m_generation = 0;
    int m_pending = 0;
    bool m_stop = false;
    std::exception_ptr m_error;  // the first body that threw in this run()
    std::vector<std::thread> m_threads;
};

class SerialQueue {
public:
    SerialQueue();
    ~SerialQueue();
    SerialQueue(const SerialQueue&) = delete;
    SerialQueue& operator=(const SerialQueue&) = delete;

    void post(std::function<void()> job);
    void waitIdle();
    // Jobs waitIdle() ran on its caller's thread so far.
    int64_t jobsRunByWaiter() const {
        std::lock_guard lock(m_mutex);
        return m_helped;
    }
    // Test hook: while held, the queue's thread starts no job, as a thread a busy machine has
    // not scheduled yet; waitIdle() must still return (having run the jobs itself).
    void holdThreadForTest(bool hold) { m_holdForTest.store(hold); }

private:
    void runFront(std::unique_lock<std::mutex>& lock);  // pops and runs the front job; lock held

    mutable std::mutex m_mutex;
    std::condition_variable m_cv;
    std::deque<std::function<void()>> m_jobs;
    bool m_busy = false;
    int64_t m_helped = 0;
    bool m_stop = false;
    std::atomic<bool> m_holdForTest{false};
    std::exception_ptr m_error;  // the first job that threw since the last waitIdle()
    std::thread m_thread;
};

}  // namespace ws::streaming
