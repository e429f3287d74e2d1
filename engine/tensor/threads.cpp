// The compute pool (see threads.h): workers wait on a generation counter, spinning for a few
// microseconds and then sleeping in std::atomic::wait (a futex on Linux); the caller runs chunk 0
// and waits for the others the same way.
#include "engine/tensor/threads.h"

#include <cblas.h>
#include <sched.h>

#include <Eigen/Core>
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

// Back-to-back regions (a layer runs dozens) find the workers still spinning; a pause longer than
// this puts them to sleep so they cost nothing on a busy machine.
constexpr auto kSpinMicros = std::chrono::microseconds(30);
constexpr int64_t kMinParallelWork = int64_t{1} << 16;

thread_local bool t_inRegion = false;

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
T waitChange(const std::atomic<T>& value, T old) {
    const auto deadline = std::chrono::steady_clock::now() + kSpinMicros;
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

// Regions are published through a seqlock: m_generation is odd while the caller writes the job
// fields and even once they are stable. A worker runs a job only if it read the fields within one
// stable generation, so a late worker can neither run a job twice nor run a half-written one (it
// can only miss jobs that did not need it, since a job ends only after all its workers ran).
class Pool {
public:
    ~Pool() {
        m_stop.store(true, std::memory_order_relaxed);
        m_generation.fetch_add(2, std::memory_order_release);
        m_generation.notify_all();
        for (std::thread& t : m_workers) t.join();
    }

    // Runs the region if the pool is free; returns false (having done nothing) if it is busy.
    bool tryRun(int count, void (*body)(void*, int, int), void* context) {
        std::unique_lock lock(m_busy, std::try_to_lock);
        if (!lock.owns_lock()) return false;
        const unsigned g = m_generation.load(std::memory_order_relaxed);
        while (int(m_workers.size()) < count - 1) {
            // A new worker starts from the generation before this job, so it cannot miss it.
            const int index = int(m_workers.size()) + 1;
            m_workers.emplace_back([this, index, g] { workerLoop(index, g); });
        }
        m_generation.store(g + 1, std::memory_order_relaxed);  // odd: fields being written
        std::atomic_thread_fence(std::memory_order_release);
        m_body.store(body, std::memory_order_relaxed);
        m_context.store(context, std::memory_order_relaxed);
        m_count.store(count, std::memory_order_relaxed);
        m_pending.store(count - 1, std::memory_order_relaxed);
        m_generation.store(g + 2, std::memory_order_release);  // even: published
        m_generation.notify_all();
        t_inRegion = true;
        body(context, 0, count);
        t_inRegion = false;
        for (int left = m_pending.load(std::memory_order_acquire); left != 0;) {
            left = waitChange(m_pending, left);
        }
        return true;
    }

private:
    void workerLoop(int index, unsigned seen) {
        flushDenormalsOnThisThread();
        t_inRegion = true;
        for (;;) {
            unsigned g = waitChange(m_generation, seen);
            if (g & 1u) g = waitChange(m_generation, g);  // the caller is writing: wait for even
            if (m_stop.load(std::memory_order_relaxed)) return;
            const int count = m_count.load(std::memory_order_relaxed);
            auto* body = m_body.load(std::memory_order_relaxed);
            void* context = m_context.load(std::memory_order_relaxed);
            std::atomic_thread_fence(std::memory_order_acquire);
            seen = g;
            if (m_generation.load(std::memory_order_relaxed) != g) continue;  // torn: retry
            if (index >= count) continue;  // this region uses fewer threads
            body(context, index, count);
            if (m_pending.fetch_sub(1, std::memory_order_acq_rel) == 1) m_pending.notify_all();
        }
    }

    std::mutex m_busy;  // held by the thread running a region
    std::vector<std::thread> m_workers;
    std::atomic<unsigned> m_generation{0};
    std::atomic<int> m_pending{0};
    std::atomic<bool> m_stop{false};
    std::atomic<void (*)(void*, int, int)> m_body{nullptr};
    std::atomic<void*> m_context{nullptr};
    std::atomic<int> m_count{0};
};

Pool& pool() {
    static Pool instance;
    return instance;
}

}  // namespace

namespace detail {
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

void parallelRun(int count, void (*body)(void*, int, int), void* context) {
    if (count <= 1 || t_inRegion || !pool().tryRun(count, body, context)) {
        // Serial fallback: the same chunks, in order, on this thread.
        const bool outer = t_inRegion;
        t_inRegion = true;
        for (int i = 0; i < count; ++i) body(context, i, count);
        t_inRegion = outer;
    }
}

}  // namespace ws::tensor
