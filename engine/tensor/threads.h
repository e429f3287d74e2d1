// SPDX-License-Identifier: GPL-3.0-or-later
// Compute threads for every engine kernel: one process-wide pool and static partitions.
//
// parallelFor() splits a range into a few contiguous chunks per thread (kChunksPerThread); each
// chunk's result depends only on the range and the thread count, never on which thread runs it or
// when, so results are reproducible for a given thread count. matmul() runs OpenBLAS / Eigen as
// single-threaded kernels inside such a partition, so OpenBLAS's own pthread pool and Eigen's
// threading are pinned to one thread and no second pool ever spins against this one.
//
// Why not OpenMP's runtime: libgomp's default waiting spins ~300k iterations at every barrier and
// can only be changed by OMP_WAIT_POLICY before the process starts; on a loaded 2-core machine that
// spinning halved our training throughput (PyTorch needs OMP_WAIT_POLICY=PASSIVE for the same
// reason). This pool spins only briefly (microseconds) and then sleeps on a futex. `#pragma omp
// simd` is still used for vectorization.
//
// A region's chunks are claimed one by one by the caller and the pool's threads, so the caller
// never waits for a thread that has not started yet: on a busy machine, where a woken worker may
// wait a scheduler slice before it runs, the caller runs the chunks itself (as one thread would)
// instead of stalling the region on it. Two threads are then not slower than one.
//
// Thread-safety: everything here may be called from any thread. setComputeThreads() takes effect
// for regions started afterwards. One region runs on the pool at a time: a region started while
// another thread's region is running, or from inside a region, runs all its chunks on the calling
// thread in order (same partition, so the same results).
#pragma once

#include <cstdint>

namespace ws::tensor {

// n > 0: use n threads; n <= 0: all cores the process may run on (OMP_NUM_THREADS if set).
// Also flushes denormals on the calling thread (below), as every compute thread does.
void setComputeThreads(int n);

// Subnormal floats are flushed to zero (FTZ) and read as zero (DAZ) on the calling thread, as
// bf16/fp16 accelerator arithmetic and oneDNN do. Without it, a run at a high learning rate, whose
// softmax and Adam moments underflow into subnormals, computed 3-10x slower on x86 (microcode
// assists): 27 s instead of 3.5 s for one width-64 trial of presets/mup-sweep.yaml. Called by the
// engine's compute threads (the pool, session, system and MemoryX threads); no-op off x86.
void flushDenormalsOnThisThread();

// Flushes denormals (as above) on the calling thread for its lifetime and restores the thread's
// earlier mode after: for work that runs on whichever thread gets to it first (a pool region's
// chunks), so its results never depend on the thread.
class DenormalsFlushedHere {
public:
    DenormalsFlushedHere();
    ~DenormalsFlushedHere();
    DenormalsFlushedHere(const DenormalsFlushedHere&) = delete;
    DenormalsFlushedHere& operator=(const DenormalsFlushedHere&) = delete;

private:
    unsigned m_saved = 0;
};

// Threads a region started outside a region uses (>= 1).
int computeThreads();

// Team size for a loop over `work` elements: 1 inside a region or when the work is too small to
// pay for waking the pool, else computeThreads().
int threadsForWork(int64_t work);

// True on a pool thread, or on the caller while it runs its own chunk of a region.
bool inParallelRegion();

// Runs body(index, count) once for every index in [0, count), each on the caller or a pool thread
// (whichever claims it first), and returns when all are done. A chunk's result must depend only on
// (index, count), never on the thread. Exceptions must not escape body.
void parallelRun(int count, void (*body)(void* context, int index, int count), void* context);

template <typename F>
void parallelRun(int count, F&& body) {
    parallelRun(
        count, [](void* ctx, int index, int n) { (*static_cast<F*>(ctx))(index, n); },
        static_cast<void*>(&body));
}

// Chunks per thread of a region that parallelFor() and matmul() split: a thread descheduled in
// the middle of a region (a busy machine) then holds up one small chunk, not its whole share,
// while the others claim the rest.
constexpr int kChunksPerThread = 4;

// Static partition of [0, n) into at most threads * kChunksPerThread contiguous chunks of equal
// length (the last may be shorter), fixed by (n, threads): body(begin, end) once per chunk, on
// whichever thread claims it.
template <typename F>
void parallelFor(int64_t n, int threads, F&& body) {
    if (threads <= 1 || n <= 1) {
        if (n > 0) body(int64_t{0}, n);
        return;
    }
    const int64_t most = int64_t{threads} * kChunksPerThread;
    const int64_t chunk = (n + (n < most ? n : most) - 1) / (n < most ? n : most);
    parallelRun(int((n + chunk - 1) / chunk), [&](int index, int) {
        const int64_t begin = index * chunk;
        const int64_t end = begin + chunk < n ? begin + chunk : n;
        body(begin, end);
    });
}

// What the pool has done since the process started (benchmarks: bench/small_model_bench.cpp).
struct PoolStats {
    int64_t regions = 0;            // regions run on the pool
    int64_t busyInlineRegions = 0;  // regions run on their caller alone: another one had the pool
    int64_t callerChunks = 0;       // chunks of pool regions their caller ran
    int64_t workerChunks = 0;       // chunks of pool regions a pool thread ran
    int64_t waits = 0;              // regions whose caller waited for a worker's chunk to finish
    double waitSec = 0.0;           // the time those waits took
};
PoolStats poolStats();

namespace detail {
// Test hook: while held, the pool's threads wake but claim nothing until released, as threads a
// busy machine has not scheduled yet; regions must still finish (on their callers).
void holdWorkersForTest(bool hold);

// Pins OpenBLAS and Eigen to one thread the first time any matmul runs (idempotent, cheap).
void pinLibraryThreadsOnce();
}  // namespace detail

}  // namespace ws::tensor
