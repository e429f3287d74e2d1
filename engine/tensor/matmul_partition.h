// SPDX-License-Identifier: GPL-3.0-or-later
// The static partition every matmul backend runs in (internal to tensor/): C is split along its
// longer side into up to kChunksPerThread blocks per compute thread (fewer when a block would
// drop below kMinBlockMacs or kMinBlockExtent), blocks a multiple of kBlockAlign long, so each
// block depends only on (M, N, K, thread count) and results are reproducible for a thread count.
// Blocks are claimed by whichever thread is free (threads.h): more blocks than threads keep a
// descheduled thread from holding the product up.
//
// Thread-safety: pure functions of their arguments and computeThreads().
#pragma once

#include <algorithm>
#include <cstdint>

#include "engine/tensor/threads.h"

namespace ws::tensor::detail {

// Below this many multiply-adds a GEMM runs on one thread: splitting costs more than it saves.
constexpr int64_t kSerialMacs = int64_t{1} << 18;
// Row/column blocks handed to threads are multiples of this (a 64-byte line of floats), so the
// kernels' register tiles rarely straddle two threads' blocks.
constexpr int kBlockAlign = 16;
// A block below this many multiply-adds costs more in packing and hand-off than it balances.
constexpr int64_t kMinBlockMacs = int64_t{1} << 17;
// Every block packs the whole unsplit operand again (K x the other side: for a weight gradient,
// K = B*T rows), so blocks shorter than this along the split side spend too much on packing.
constexpr int kMinBlockExtent = 256;

struct MatmulPartition {
    int blocks = 1;         // 1: the whole product on the calling thread
    bool splitRows = true;  // blocks of rows of C (else of columns)
    int extent = 0;         // length of the split side
    int chunk = 0;          // block length (the last block may be shorter or empty)
    int begin(int block) const { return std::min(extent, block * chunk); }
    int end(int block) const { return std::min(extent, begin(block) + chunk); }
};

inline MatmulPartition matmulPartition(int M, int N, int K) {
    MatmulPartition p;
    p.splitRows = M >= N;
    p.extent = p.splitRows ? M : N;
    p.chunk = p.extent;
    const int threads = inParallelRegion() ? 1 : computeThreads();
    const int64_t macs = int64_t{M} * N * K;
    if (threads == 1 || macs < kSerialMacs) return p;
    int blocks = threads * kChunksPerThread;
    while (blocks > threads &&
           (macs / blocks < kMinBlockMacs || p.extent / blocks < kMinBlockExtent))
        blocks -= threads;
    p.chunk = ((p.extent + blocks - 1) / blocks + kBlockAlign - 1) / kBlockAlign * kBlockAlign;
    p.blocks = (p.extent + p.chunk - 1) / p.chunk;  // rounding up the length may leave fewer
    return p;
}

}  // namespace ws::tensor::detail
