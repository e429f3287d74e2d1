// SPDX-License-Identifier: GPL-3.0-or-later
// The update rules: AdamW (decoupled weight decay, PyTorch semantics) and SGD with optional
// momentum, plus deterministic global-norm gradient clipping. They work on flat fp32 buffers split
// into groups (a contiguous range with its own decay flag and LR multiplier), so the same code
// updates the whole model at once or one streamed layer at a time (updateRange). AdamW's inner
// loop is a Highway kernel (adamw_kernel.h), bit-identical to the scalar loop on every CPU.
// Gradient layout: Full (gradients and state indexed like the parameters, totalSize floats each)
// or Trainable (only the groups that are not frozen have gradients and state, packed in group
// order without gaps: a frozen tensor costs MemoryX its weights alone). Both give the same bits.
// Thread-safety: one Optimizer per run; calls must not overlap on the same range. Results are
// bit-identical for any thread count (element-wise updates, fixed-order reductions).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "engine/config/config.h"

namespace ws::optim {

struct ParamGroup {
    size_t offset = 0;
    size_t size = 0;
    bool decay = true;     // weight decay applies (not to biases and LayerNorm parameters)
    double lrScale = 1.0;  // per-group learning-rate multiplier (μP hidden weights use 1/m)
    // Fine-tuning's frozen tensors: skipped entirely (no update, no decay, no moment update), so
    // they stay bit-identical; an LR multiplier of 0 could still turn -0.0 into +0.0.
    bool frozen = false;
    // Elements [offset, offset + frozenPrefix) of a group that trains are never updated and do
    // not count in gradient norms (the base rows of an embedding whose added rows train under
    // LoRA: PEFT's trainable_token_indices). Their gradients and state still have places.
    size_t frozenPrefix = 0;
};

// How gradients and optimizer state are laid out (see the header comment).
enum class GradientLayout { Full, Trainable };

// Parameters whose gradients and state the Trainable layout keeps: the groups not frozen.
size_t trainableSize(std::span<const ParamGroup> groups);
// A run of [begin, end) that trains, and where its gradients live in the Trainable layout
// (groups sorted by offset, not overlapping). Adjacent runs are merged: with nothing frozen a
// range is one piece whose stateOffset equals its offset.
struct TrainablePiece {
    size_t offset = 0;       // parameter offset
    size_t stateOffset = 0;  // its gradients' and state's offset in the Trainable layout
    size_t size = 0;
};
std::vector<TrainablePiece> trainablePieces(std::span<const ParamGroup> groups, size_t begin,
                                            size_t end);

// L2 norm of a buffer, accumulated in double over a fixed chunking so the result does not depend
// on the thread count.
double globalNorm(const float* values, size_t count);
// A contiguous range of the parameter buffer (a model layer's slice, say).
struct BufferRange {
    size_t offset = 0;
    size_t size = 0;
};

// Factor to multiply gradients by so their global norm is at most maxNorm (1 when maxNorm <= 0).
double clipFactor(double norm, double maxNorm);

// Optimizer state lives either in the Optimizer (owned vectors) or in memory someone else owns
// (MemoryX keeps weights and state together, possibly in a memory-mapped file).
struct OptimizerState {
    float* firstMoment = nullptr;   // (totalSize) Adam first moment or SGD momentum buffer
    float* secondMoment = nullptr;  // (totalSize) Adam second moment
};

class Optimizer {
public:
    // Owns its state, zero-initialised.
    Optimizer(const config::OptimizerConfig& config, std::vector<ParamGroup> groups,
              size_t totalSize);
    // Uses `external` (which must hold stateCopies(config) buffers of stateSize() floats and
    // outlive the optimizer); the caller initialises it (zeros for a fresh run). With the
    // Trainable layout the gradients passed to every call are in that layout too.
    Optimizer(const config::OptimizerConfig& config, std::vector<ParamGroup> groups,
              size_t totalSize, OptimizerState external,
              GradientLayout layout = GradientLayout::Full);
    // Owns its state, in the given layout.
    Optimizer(const config::OptimizerConfig& config, std::vector<ParamGroup> groups,
              size_t totalSize, GradientLayout layout);

    // How many parameter-sized state buffers the update rule keeps (AdamW 2, SGD+momentum 1, 0).
    static int stateCopies(const config::OptimizerConfig& config);

    // Applies one update with learning rate `lr` to every parameter in [begin, end), with
    // gradients multiplied by gradScale (clipping) first. `step` is the 1-based update count used
    // for Adam's bias correction.
    void updateRange(float* params, const float* grads, size_t begin, size_t end, double lr,
                     double gradScale, int64_t step);
    void update(float* params, const float* grads, double lr, double gradScale, int64_t step) {
        updateRange(params, grads, 0, m_totalSize, lr, gradScale, step);
    }

    // Global L2 norm of the gradients of the parameters this optimizer updates: frozen groups do
    // not count (as parameters without requires_grad in PyTorch), so freezing layers does not
    // change how hard the rest is clipped. With nothing frozen it is globalNorm(grads, totalSize).
    double gradientNorm(const float* grads) const;
    // L2 norm of each range's gradients, counting only what gradientNorm counts (frozen groups
    // contribute 0), so for ranges that tile the buffer the squares sum to gradientNorm()² up to
    // rounding. Costs one more read of those gradients; front ends use it to show which layer a
    // spike comes from.
    std::vector<double> rangeGradientNorms(const float* grads,
                                           std::span<const BufferRange> ranges) const;

    const std::vector<ParamGroup>& groups() const { return m_groups; }
    GradientLayout layout() const { return m_layout; }
    // Floats per gradient or state buffer: totalSize (Full) or trainableSize(groups) (Trainable).
    size_t stateSize() const { return m_stateSize; }
    // State in the gradient layout; empty spans when the rule keeps no such state.
    std::span<float> firstMoment() {
        return {m_state.firstMoment, m_state.firstMoment ? m_stateSize : 0};
    }
    std::span<float> secondMoment() {
        return {m_state.secondMoment, m_state.secondMoment ? m_stateSize : 0};
    }

private:
    bool anyFrozen() const;  // a group, or a group's prefix, never updates

    config::OptimizerConfig m_config;
    std::vector<ParamGroup> m_groups;
    size_t m_totalSize;
    GradientLayout m_layout;
    std::vector<size_t> m_stateOffsets;  // (groups) where each group's gradients and state live
    size_t m_stateSize;
    bool m_identity;  // every group's state offset is its offset (Full, or nothing frozen)
    bool m_adam;
    std::vector<float> m_owned;  // (copies * totalSize) when the optimizer owns its state
    OptimizerState m_state;
};

}  // namespace ws::optim
