// SPDX-License-Identifier: GPL-3.0-or-later
// The compute pool: the thread count is process-wide, regions run every chunk exactly once (also
// nested, concurrent and back-to-back) and never wait for a thread that has not started, chunks
// run in one float mode whichever thread claims them, small work stays on one thread.
#include "engine/tensor/threads.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <mutex>
#include <numeric>
#include <set>
#include <thread>
#include <vector>

#if defined(__x86_64__)
#include <xmmintrin.h>
#endif

namespace ws::tensor {
namespace {

TEST(ThreadsTest, SettingIsProcessWideAndZeroMeansAllCores) {
    setComputeThreads(3);
    EXPECT_EQ(computeThreads(), 3);
    int seenOnOtherThread = 0;
    std::thread([&] { seenOnOtherThread = computeThreads(); }).join();
    EXPECT_EQ(seenOnOtherThread, 3);
    EXPECT_EQ(threadsForWork(int64_t{1} << 30), 3);
    EXPECT_EQ(threadsForWork(10), 1);

    setComputeThreads(0);
    const int all = computeThreads();
    EXPECT_GE(all, 1);
    setComputeThreads(-5);
    EXPECT_EQ(computeThreads(), all);
}

TEST(ThreadsTest, RegionsRunEveryChunkOnce) {
    for (int count : {1, 2, 3, 5, 2, 4}) {  // growing and shrinking teams
        std::vector<std::atomic<int>> runs(static_cast<size_t>(count));
        std::vector<std::thread::id> ids(static_cast<size_t>(count));
        parallelRun(count, [&](int index, int n) {
            EXPECT_EQ(n, count);
            EXPECT_TRUE(inParallelRegion());
            runs[size_t(index)].fetch_add(1);
            ids[size_t(index)] = std::this_thread::get_id();
        });
        for (int i = 0; i < count; ++i) EXPECT_EQ(runs[size_t(i)].load(), 1) << i;
        // Chunks go to whichever thread claims them: the caller and at most count - 1 others.
        EXPECT_LE(std::set<std::thread::id>(ids.begin(), ids.end()).size(), size_t(count));
        EXPECT_FALSE(inParallelRegion());
    }
}

TEST(ThreadsTest, ManyBackToBackRegionsLoseNoChunk) {
    std::atomic<int64_t> total{0};
    for (int r = 0; r < 5000; ++r) {
        parallelRun(2 + r % 3, [&](int index, int) { total.fetch_add(index + 1); });
    }
    // Teams of 2, 3, 4 add 3, 6, 10 per region.
    int64_t expected = 0;
    for (int r = 0; r < 5000; ++r) expected += (2 + r % 3) * (3 + r % 3) / 2;
    EXPECT_EQ(total.load(), expected);
}

TEST(ThreadsTest, NestedAndConcurrentRegionsRunInlineWithTheSamePartition) {
    setComputeThreads(2);
    std::vector<int64_t> outer(1000), inner(1000);
    parallelFor(1000, 2, [&](int64_t b, int64_t e) {
        EXPECT_EQ(threadsForWork(int64_t{1} << 30), 1);  // nested kernels stay serial
        parallelFor(e - b, 2, [&](int64_t ib, int64_t ie) {
            for (int64_t i = ib; i < ie; ++i) inner[size_t(b + i)] = b + i;
        });
        for (int64_t i = b; i < e; ++i) outer[size_t(i)] = i;
    });
    std::vector<int64_t> expected(1000);
    std::iota(expected.begin(), expected.end(), 0);
    EXPECT_EQ(outer, expected);
    EXPECT_EQ(inner, expected);

    // Two threads starting regions at once: one gets the pool, the other runs its chunks itself.
    std::vector<int64_t> sums(2, 0);
    std::vector<std::thread> callers;
    for (int c = 0; c < 2; ++c) {
        callers.emplace_back([&, c] {
            for (int r = 0; r < 2000; ++r) {
                std::vector<int64_t> part(300, 0);  // one slot per chunk (its first index)
                parallelFor(300, 3, [&](int64_t b, int64_t e) {
                    for (int64_t i = b; i < e; ++i) part[size_t(b)] += i;
                });
                for (int64_t p : part) sums[size_t(c)] += p;
            }
        });
    }
    for (std::thread& t : callers) t.join();
    EXPECT_EQ(sums[0], 2000 * (299 * 300 / 2));
    EXPECT_EQ(sums[1], 2000 * (299 * 300 / 2));
    setComputeThreads(0);
}

TEST(ThreadsTest, ARegionNeverWaitsForAThreadThatHasNotStarted) {
    // On a busy machine a woken pool thread may wait a scheduler slice before it runs; a region
    // that waited for it made two threads slower than one. Held, the pool's threads claim
    // nothing: the region still finishes, every chunk on its caller.
    setComputeThreads(2);
    parallelRun(4, [](int, int) {});  // the pool's threads exist
    detail::holdWorkersForTest(true);
    const PoolStats before = poolStats();
    std::vector<std::thread::id> ids(4);
    auto region = std::async(std::launch::async, [&] {
        parallelRun(4, [&](int index, int) { ids[size_t(index)] = std::this_thread::get_id(); });
        return std::this_thread::get_id();
    });
    const bool finished = region.wait_for(std::chrono::seconds(20)) == std::future_status::ready;
    detail::holdWorkersForTest(false);  // (lets a region that waited finish, so the test ends)
    const std::thread::id caller = region.get();
    EXPECT_TRUE(finished) << "the region waited for a pool thread that never started";
    for (const auto& id : ids) EXPECT_EQ(id, caller);
    const PoolStats after = poolStats();
    EXPECT_EQ(after.regions - before.regions, 1);
    EXPECT_EQ(after.callerChunks - before.callerChunks, 4);
    EXPECT_EQ(after.workerChunks - before.workerChunks, 0);
    setComputeThreads(0);
}

TEST(ThreadsTest, ARegionOfManyChunksRunsOnAtMostTheComputeThreads) {
    // parallelFor and matmul split into several chunks per thread: the chunks, not the threads,
    // grew the team (7 workers woken for every 8-chunk region on 2 threads, spinning and
    // yielding against the step on a 2-core machine).
    setComputeThreads(4);
    parallelRun(4, [](int, int) {});  // the pool has workers to spare
    setComputeThreads(2);
    std::mutex mutex;
    std::set<std::thread::id> ids;
    for (int r = 0; r < 5; ++r) {
        parallelRun(8, [&](int, int) {
            std::this_thread::sleep_for(std::chrono::milliseconds(2));  // time for all to join
            std::lock_guard lock(mutex);
            ids.insert(std::this_thread::get_id());
        });
    }
    EXPECT_LE(ids.size(), 2u);
    setComputeThreads(0);
}

TEST(ThreadsTest, PoolChunksRunWithDenormalsFlushedOnEveryThread) {
    // A chunk's result must not depend on which thread claims it: the caller runs its chunks in
    // the pool threads' float mode (denormals flushed) and gets its own mode back after.
#if !defined(__x86_64__)
    GTEST_SKIP() << "denormal flushing is x86 only (threads.h)";
#else
    setComputeThreads(2);
    std::thread([] {
        _mm_setcsr(_mm_getcsr() & ~0x8040u);  // gradual underflow: FTZ and DAZ off
        volatile float tiny = 1e-39f;         // subnormal
        std::vector<float> seen(8, -1.0f);
        parallelRun(8, [&](int index, int) { seen[size_t(index)] = tiny * 2.0f; });
        for (float v : seen) EXPECT_EQ(v, 0.0f);
        EXPECT_NE(tiny * 2.0f, 0.0f);  // the thread's own mode again
    }).join();
    setComputeThreads(0);
#endif
}

}  // namespace
}  // namespace ws::tensor
