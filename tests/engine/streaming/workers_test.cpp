// SPDX-License-Identifier: GPL-3.0-or-later
// The executor's thread helpers: an exception thrown on a worker thread (an allocation failing
// inside a layer's compute) reaches the caller instead of terminating the process, and the
// helpers stay usable afterwards.
#include "engine/streaming/workers.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <new>
#include <stdexcept>
#include <thread>
#include <vector>

namespace ws::streaming {
namespace {

TEST(SystemWorkers, AnExceptionOnAnySystemReachesTheCallerAfterAllFinished) {
    SystemWorkers workers(3);
    std::atomic<int> finished{0};
    EXPECT_THROW(workers.run([&](int system) {
        if (system == 2) throw std::bad_alloc();
        ++finished;
    }),
                 std::bad_alloc);
    EXPECT_EQ(finished.load(), 2);  // systems 0 and 1 ran to the end before run() returned
    EXPECT_THROW(workers.run([](int system) {
        if (system == 0) throw std::runtime_error("on the caller's thread");
    }),
                 std::runtime_error);
    finished = 0;
    workers.run([&](int) { ++finished; });  // usable again, and the old error is gone
    EXPECT_EQ(finished.load(), 3);
}

TEST(SerialQueue, AJobsExceptionIsRethrownByWaitIdleOnce) {
    SerialQueue queue;
    std::atomic<int> ran{0};
    queue.post([] { throw std::bad_alloc(); });
    queue.post([&] { ++ran; });
    EXPECT_THROW(queue.waitIdle(), std::bad_alloc);
    EXPECT_EQ(ran.load(), 1);
    queue.post([&] { ++ran; });
    EXPECT_NO_THROW(queue.waitIdle());
    EXPECT_EQ(ran.load(), 2);
}

TEST(SerialQueue, WaitIdleRunsJobsTheQueuesThreadHasNotStartedInOrder) {
    // On a busy machine the queue's thread may wait a scheduler slice before it runs; the step
    // waiting in waitIdle() must not wait for it. Held, the thread starts nothing: waitIdle()
    // runs every job itself, one at a time and in the order posted.
    SerialQueue queue;
    queue.holdThreadForTest(true);
    std::vector<int> order;
    std::vector<std::thread::id> ids;
    for (int j = 0; j < 3; ++j) {
        queue.post([&, j] {
            order.push_back(j);
            ids.push_back(std::this_thread::get_id());
        });
    }
    auto waited = std::async(std::launch::async, [&] {
        queue.waitIdle();
        return std::this_thread::get_id();
    });
    const bool returned = waited.wait_for(std::chrono::seconds(20)) == std::future_status::ready;
    queue.holdThreadForTest(false);  // (lets a waitIdle() that waited return, so the test ends)
    const std::thread::id waiter = waited.get();
    EXPECT_TRUE(returned) << "waitIdle() waited for a thread that never started";
    EXPECT_EQ(order, (std::vector<int>{0, 1, 2}));
    for (const auto& id : ids) EXPECT_EQ(id, waiter);
    EXPECT_EQ(queue.jobsRunByWaiter(), 3);
    queue.post([&] { order.push_back(3); });  // and the thread runs jobs again once released
    queue.waitIdle();
    EXPECT_EQ(order.size(), 4u);
}

}  // namespace
}  // namespace ws::streaming
