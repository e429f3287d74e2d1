// SPDX-License-Identifier: GPL-3.0-or-later
// The compute pool (see threads.h): workers wait on a generation counter, spinning for a few
// microseconds and then sleeping in std::atomic::wait (a futex on Linux); the caller and the
// workers claim a region's chunks one by one, and the caller waits (the same way) only for chunks
// a worker has started.
#include "engine/tensor/threads.h"

#include <cblas.h>
#include <sched.h>

#include <Eigen/Core>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#if defined(__SSE__) || defined(__x86_64__)
#include <pmmintrin.h>
#include <xmmintrin.h>
#endif

namespace ws::tensor {
namespace {

// An idle worker spins this long for the next region before it sleeps. Back-to-back regions (a
// layer runs dozens) find it still spinning; a longer pause puts it to sleep so it costs nothing
// on a busy machine. Short, because a region never waits for a sleeping worker (its chunks are
// claimed, see Pool): a worker that sleeps through a region's start only joins it later, while
// 30 us of spinning after each of a gpt-nano step's ~150 regions cost ~5% of the process's CPU
// on a 2-core machine whose other core was busy.
constexpr auto kWorkerSpin = std::chrono::microseconds(5);
// A caller spins this long for chunks a worker has started (they are short) before it sleeps.
constexpr auto kCallerSpin = std::chrono::microseconds(30);
constexpr int64_t kMinParallelWork = int64_t{1} << 16;

thread_local bool t_inRegion = false;

std::atomic<bool> g_holdWorkers{false};  // detail::holdWorkersForTest
// Regions run on the caller alone because the pool was busy (another thread's region).
std::atomic<int64_t> g_busyInline{0};

int allCores() {
    static const int cores = [] {
        if (const char* env = std::getenv("OMP_NUM_THREADS")) {
            const int n = std::atoi(env);
            if (n > 0) return n;
        }
        cpu_set_t set;
        if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0) {
            return CPU_COUNT(&set);
        }
        const unsigned hw = std::thread::hardware_concurrency();
        return hw > 0 ? int(hw) : 1;
    }();
    return cores;
}

std::atomic<int> g_threads{0};  // 0: not set yet, use allCores()

inline void cpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

// Waits until `value` differs from `old`: spin briefly, then sleep.
template <typename T>
T waitChange(const std::atomic<T>& value, T old, std::chrono::microseconds spin) {
    const auto deadline = std::chrono::steady_clock::now() + spin;
    for (int i = 0;; ++i) {
        const T now = value.load(std::memory_order_acquire);
        if (now != old) return now;
        if ((i & 63) == 63 && std::chrono::steady_clock::now() > deadline) break;
        cpuRelax();
    }
    for (;;) {
        value.wait(old, std::memory_order_acquire);
        const T now = value.load(std::memory_order_acquire);
        if (now != old) return now;
    }
}

// A region's chunks are claimed, not assigned: the caller and every worker take the next
// unclaimed chunk until none is left, and the caller then waits only for chunks a worker has
// already started. A worker that is slow to wake (asleep, or descheduled on a busy machine) thus
// never holds a region up: the caller runs the chunks it would have run, as one thread would, and
// the worker finds nothing left when it gets the CPU. With a fixed chunk per thread, every region
// waited for the slowest thread's wake-up, and two threads trained gpt-nano slower than one.
// Which thread runs a chunk changes no result: a chunk's work depends only on (index, count), and
// every thread runs chunks in the same float mode (denormals flushed).
//
// m_claim packs (job serial, chunk count, next chunk) in one word, so a claim is one
// compare-and-swap that succeeds only on the job it was read from: a late worker can never take a
// chunk of a job it did not read, nor take one twice. A successful claim also orders the job's
// body and context (written before the word's release store) before the chunk runs, and a job
// ends only after every claimed chunk finished, so its body and context outlive every use.
class Pool {
public:
    ~Pool() {
        m_stop.store(true, std::memory_order_relaxed);
        m_generation.fetch_add(1, std::memory_order_release);
        m_generation.notify_all();
        for (std::thread& t : m_workers) t.join();
    }

    // Runs the region if the pool is free; returns false (having done nothing) if it is busy.
    bool tryRun(int count, void (*body)(void*, int, int), void* context) {
        std::unique_lock lock(m_busy, std::try_to_lock);
        if (!lock.owns_lock()) return false;
        const unsigned g = m_generation.load(std::memory_order_relaxed);
        // Threads, not chunks, decide the team: a region of 8 chunks on 2 threads wakes 1 worker.
        const int helpers = std::min(count, computeThreads()) - 1;
        while (int(m_workers.size()) < helpers) {
            // A new worker starts from the generation before this job, so it sees it.
            const int index = int(m_workers.size());
            m_workers.emplace_back([this, g, index] { workerLoop(index, g); });
        }
        m_helpers.store(helpers, std::memory_order_relaxed);
        m_body.store(body, std::memory_order_relaxed);
        m_context.store(context, std::memory_order_relaxed);
        m_done.store(0, std::memory_order_relaxed);
        ++m_serial;
        m_claim.store(packClaim(m_serial, count, 0), std::memory_order_release);
        m_generation.store(g + 1, std::memory_order_release);
        m_generation.notify_all();
        int mine = 0;
        {
            const DenormalsFlushedHere flushed;  // the workers' float mode, for any chunk
            t_inRegion = true;
            mine = runChunks();
            t_inRegion = false;
        }
        // Only the region's caller (holding m_busy) writes the counters: plain stores, no RMW.
        bump(m_stats.regions, 1);
        bump(m_stats.chunks, count);
        bump(m_stats.callerChunks, mine);
        int done = m_done.load(std::memory_order_acquire);
        if (done != count) {
            // Chunks a worker started and has not finished: nothing else is left to do.
            const auto t0 = std::chrono::steady_clock::now();
            while (done != count) done = waitChange(m_done, done, kCallerSpin);
            bump(m_stats.waits, 1);
            bump(m_stats.waitNanos, std::chrono::duration_cast<std::chrono::nanoseconds>(
                                        std::chrono::steady_clock::now() - t0)
                                        .count());
        }
        return true;
    }

    struct Counters {
        std::atomic<int64_t> regions{0}, chunks{0}, callerChunks{0}, waits{0}, waitNanos{0};
    };
    const Counters& stats() const { return m_stats; }

private:
    static void bump(std::atomic<int64_t>& counter, int64_t by) {
        counter.store(counter.load(std::memory_order_relaxed) + by, std::memory_order_relaxed);
    }

    static constexpr uint64_t packClaim(uint32_t serial, int count, int next) {
        return (uint64_t{serial} << 32) | (uint64_t(uint32_t(count)) << 16) | uint64_t(next);
    }

    // Claims and runs chunks of the current job until none is left unclaimed; returns how many
    // this thread ran.
    int runChunks() {
        int ran = 0;
        uint64_t w = m_claim.load(std::memory_order_acquire);
        for (;;) {
            const int next = int(w & 0xffffu), count = int((w >> 16) & 0xffffu);
            if (next >= count) return ran;
            if (!m_claim.compare_exchange_weak(w, w + 1, std::memory_order_acq_rel,
                                               std::memory_order_acquire)) {
                continue;  // another thread took a chunk (or a new job began): look again
            }
            auto* body = m_body.load(std::memory_order_relaxed);
            void* context = m_context.load(std::memory_order_relaxed);
            body(context, next, count);
            ++ran;
            if (m_done.fetch_add(1, std::memory_order_acq_rel) + 1 == count) m_done.notify_all();
            w = m_claim.load(std::memory_order_acquire);
        }
    }

    void workerLoop(int index, unsigned seen) {
        flushDenormalsOnThisThread();
        t_inRegion = true;
        for (;;) {
            seen = waitChange(m_generation, seen, kWorkerSpin);
            if (m_stop.load(std::memory_order_relaxed)) return;
            while (g_holdWorkers.load(std::memory_order_relaxed))  // as if not scheduled yet
                std::this_thread::sleep_for(std::chrono::milliseconds(1));
            // Workers beyond the current thread count (it was lowered) sit regions out.
            if (index < m_helpers.load(std::memory_order_relaxed)) runChunks();
        }
    }

    std::mutex m_busy;  // held by the thread running a region
    std::vector<std::thread> m_workers;
    uint32_t m_serial = 0;                         // the job's number (under m_busy)
    std::atomic<unsigned> m_generation{0};         // bumped per job: what idle workers wait on
    alignas(64) std::atomic<uint64_t> m_claim{0};  // packClaim(serial, count, next chunk)
    std::atomic<int> m_done{0};                    // chunks of the current job finished
    std::atomic<bool> m_stop{false};
    std::atomic<int> m_helpers{0};  // workers that may join the current region
    std::atomic<void (*)(void*, int, int)> m_body{nullptr};
    std::atomic<void*> m_context{nullptr};
    alignas(64) Counters m_stats;  // apart from the words the workers touch
};

Pool& pool() {
    static Pool instance;
    return instance;
}

}  // namespace

namespace detail {
void holdWorkersForTest(bool hold) {
    g_holdWorkers.store(hold, std::memory_order_relaxed);
}

void pinLibraryThreadsOnce() {
    static std::once_flag once;
    std::call_once(once, [] {
        openblas_set_num_threads(1);
        Eigen::setNbThreads(1);
    });
}
}  // namespace detail

void flushDenormalsOnThisThread() {
#if defined(__SSE__) || defined(__x86_64__)
    _MM_SET_FLUSH_ZERO_MODE(_MM_FLUSH_ZERO_ON);
    _MM_SET_DENORMALS_ZERO_MODE(_MM_DENORMALS_ZERO_ON);
#endif
}

DenormalsFlushedHere::DenormalsFlushedHere() {
#if defined(__SSE__) || defined(__x86_64__)
    m_saved = _mm_getcsr();
    flushDenormalsOnThisThread();
#endif
}

DenormalsFlushedHere::~DenormalsFlushedHere() {
#if defined(__SSE__) || defined(__x86_64__)
    _mm_setcsr(m_saved);
#endif
}

void setComputeThreads(int n) {
    flushDenormalsOnThisThread();
    detail::pinLibraryThreadsOnce();
    g_threads.store(n > 0 ? n : allCores(), std::memory_order_relaxed);
}

int computeThreads() {
    const int n = g_threads.load(std::memory_order_relaxed);
    return n > 0 ? n : allCores();
}

int threadsForWork(int64_t work) {
    if (work < kMinParallelWork || t_inRegion) return 1;
    return computeThreads();
}

bool inParallelRegion() {
    return t_inRegion;
}

PoolStats poolStats() {
    const auto& c = pool().stats();
    PoolStats s;
    s.regions = c.regions.load(std::memory_order_relaxed);
    s.busyInlineRegions = g_busyInline.load(std::memory_order_relaxed);
    s.callerChunks = c.callerChunks.load(std::memory_order_relaxed);
    s.workerChunks = c.chunks.load(std::memory_order_relaxed) - s.callerChunks;
    s.waits = c.waits.load(std::memory_order_relaxed);
    s.waitSec = double(c.waitNanos.load(std::memory_order_relaxed)) * 1e-9;
    return s;
}

void parallelRun(int count, void (*body)(void*, int, int), void* context) {
    if (count > 1 && !t_inRegion) {
        if (pool().tryRun(count, body, context)) return;
        g_busyInline.fetch_add(1, std::memory_order_relaxed);  // rare: two callers at once
    }
    // Serial fallback: the same chunks, in order, on this thread.
    const bool outer = t_inRegion;
    t_inRegion = true;
    for (int i = 0; i < count; ++i) body(context, i, count);
    t_inRegion = outer;
}

}  // namespace ws::tensor
