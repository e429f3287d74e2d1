// The executor's thread helpers: an exception thrown on a worker thread (an allocation failing
// inside a layer's compute) reaches the caller instead of terminating the process, and the
// helpers stay usable afterwards.
#include "engine/streaming/workers.h"

#include <gtest/gtest.h>

#include <atomic>
#include <new>
#include <stdexcept>

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

}  // namespace
}  // namespace ws::streaming
