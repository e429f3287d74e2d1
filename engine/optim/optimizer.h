// The update rules: AdamW (decoupled weight decay, PyTorch semantics) and SGD with optional
// momentum, plus deterministic global-norm gradient clipping. They work on flat fp32 buffers split
// into groups (a contiguous range with its own decay flag and LR multiplier), so the same code
// updates the whole model at once or one streamed layer at a time (updateRange). AdamW's inner
// loop is a Highway kernel (adamw_kernel.h), bit-identical to the scalar loop on every CPU.
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
};

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
    // Uses `external` (which must hold stateCopies(config) buffers of totalSize floats and outlive
    // the optimizer); the caller initialises it (zeros for a fresh run).
    Optimizer(const config::OptimizerConfig& config, std::vector<ParamGroup> groups,
              size_t totalSize, OptimizerState external);

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
    // State in the parameters' layout; empty spans when the rule keeps no such state.
    std::span<float> firstMoment() {
        return {m_state.firstMoment, m_state.firstMoment ? m_totalSize : 0};
    }
    std::span<float> secondMoment() {
        return {m_state.secondMoment, m_state.secondMoment ? m_totalSize : 0};
    }

private:
    config::OptimizerConfig m_config;
    std::vector<ParamGroup> m_groups;
    size_t m_totalSize;
    bool m_adam;
    std::vector<float> m_owned;  // (copies * totalSize) when the optimizer owns its state
    OptimizerState m_state;
};

}  // namespace ws::optim
