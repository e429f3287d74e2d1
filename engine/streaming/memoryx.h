// SPDX-License-Identifier: GPL-3.0-or-later
// MemoryX: the external weight store of a wafer-scale cluster. It holds the fp32 master weights
// in the model's ParameterTable layout, and the reduced gradients of the current step and the
// optimizer state of the parameters that train only, in optim::GradientLayout::Trainable (a frozen
// tensor, every base weight of a LoRA run, has its master weights and nothing else), and it is
// where the optimizer runs. Backing: RAM, or a memory-mapped
// file (memoryx.backing: file) so a model whose weights + Adam state exceed the RAM given to the
// process can still train, streaming from disk through the page cache.
// Thread-safety: the buffers are plain memory; the streaming executor guarantees that a layer's
// slice is never written while another thread reads it. Creating checks everything first (path,
// free disk space) and writes nothing half-way: a failure leaves no store file behind.
//
// Crash safety of a file-backed store: before the optimizer rewrites a layer, the layer's old
// weights and optimizer state are copied to an undo journal in the file and the journal is marked
// valid; once the update is complete the mark is cleared. A process killed mid-update (SIGKILL
// included: the mapped pages stay in the page cache) leaves at most one layer half-written, and
// open() rolls it back from the journal, so every layer in a reopened store is whole - some
// layers may be one step ahead of others, which is what "no torn layer" promises.
//
// Sparsity masks (optim/sparse_masks.h) live here too when a run asks for them (maskBytes > 0):
// one byte per parameter after everything else (in the file, after the journal), so a
// file-backed store keeps them beside the weights they mask. Mask updates happen between steps,
// outside any journaled layer update.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>

#include "engine/config/config.h"
#include "engine/core/result.h"
#include "engine/optim/optimizer.h"

namespace ws::streaming {

class MemoryX {
public:
    static constexpr size_t kEveryParameter = SIZE_MAX;  // nothing frozen: trainable = paramCount
    // stateCopies: optimizer buffers (optim::Optimizer::stateCopies) of trainableCount floats
    // each, as the gradients (a shard may have none);
    // largestUpdate: the most parameters one beginUpdate() will cover (the largest layer).
    static Result<std::unique_ptr<MemoryX>> create(const config::MemoryXConfig& config,
                                                   size_t paramCount, int stateCopies,
                                                   size_t largestUpdate,
                                                   size_t trainableCount = kEveryParameter,
                                                   size_t maskBytes = 0);
    // Reopens a file-backed store, rolling back a layer update that a crash interrupted.
    static Result<std::unique_ptr<MemoryX>> open(const std::filesystem::path& path);
    ~MemoryX();
    MemoryX(const MemoryX&) = delete;
    MemoryX& operator=(const MemoryX&) = delete;

    size_t paramCount() const { return m_paramCount; }
    size_t trainableCount() const { return m_trainableCount; }
    float* weights() { return m_base; }  // (P) master weights
    const float* weights() const { return m_base; }
    float* gradients() { return m_base + m_paramCount; }  // (trainable) reduced gradients
    optim::OptimizerState optimizerState();               // (copies x trainable)
    // (maskBytes) the sparsity masks, 1 = pruned; null when the store was created without them.
    uint8_t* pruneMask() { return m_maskBytes ? m_mask : nullptr; }
    const uint8_t* pruneMask() const { return m_maskBytes ? m_mask : nullptr; }
    size_t maskBytes() const { return m_maskBytes; }
    size_t bytes() const { return m_floats * sizeof(float); }
    bool fileBacked() const { return m_mapped != nullptr; }
    const std::filesystem::path& path() const { return m_path; }

    // Bracket an optimizer update of weights [offset, offset+count) and of the optimizer state
    // [stateOffset, stateOffset+stateCount) (file-backed: journal the old values; RAM: nothing
    // to do). stateCount <= count.
    void beginUpdate(size_t offset, size_t count, size_t stateOffset, size_t stateCount);
    void endUpdate();
    // After open(): whether an interrupted update was rolled back, and where.
    bool rolledBack() const { return m_rolledBack; }
    size_t rolledBackOffset() const { return m_rolledBackOffset; }

private:
    struct Header;
    MemoryX() = default;
    Header* header() const;
    float* journal() const;
    size_t m_paramCount = 0;
    size_t m_trainableCount = 0;
    int m_stateCopies = 0;
    size_t m_floats = 0;
    float* m_base = nullptr;
    std::unique_ptr<float[]> m_ram;
    void* m_mapped = nullptr;  // the whole file mapping (header + data) when file-backed
    size_t m_mappedBytes = 0;
    std::filesystem::path m_path;
    size_t m_journalFloats = 0;
    bool m_rolledBack = false;
    size_t m_rolledBackOffset = 0;
    size_t m_maskBytes = 0;
    uint8_t* m_mask = nullptr;
    std::unique_ptr<uint8_t[]> m_ramMask;
};

}  // namespace ws::streaming
