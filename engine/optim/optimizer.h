// The update rules: AdamW (decoupled weight decay, PyTorch semantics) and SGD with optional
// momentum, plus deterministic global-norm gradient clipping. They work on flat fp32 buffers split
// into groups (a contiguous range with its own decay flag and LR multiplier), so the same code
// updates the whole model at once or one streamed layer at a time (updateRange).
// Thread-safety: one Optimizer per run; calls must not overlap on the same range. Results are
// bit-identical for any thread count (element-wise updates, fixed-order reductions).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "engine/config/config.h"

namespace ws::optim {

struct ParamGroup {
    size_t offset = 0;
    size_t size = 0;
    bool decay = true;     // weight decay applies (not to biases and LayerNorm parameters)
    double lrScale = 1.0;  // per-group learning-rate multiplier (μP hidden weights use 1/m)
};

// L2 norm of a buffer, accumulated in double over a fixed chunking so the result does not depend
// on the thread count.
double globalNorm(const float* values, size_t count);
// Factor to multiply gradients by so their global norm is at most maxNorm (1 when maxNorm <= 0).
double clipFactor(double norm, double maxNorm);

class Optimizer {
public:
    Optimizer(const config::OptimizerConfig& config, std::vector<ParamGroup> groups,
              size_t totalSize);

    // Applies one update with learning rate `lr` to every parameter in [begin, end), with
    // gradients multiplied by gradScale (clipping) first. `step` is the 1-based update count used
    // for Adam's bias correction.
    void updateRange(float* params, const float* grads, size_t begin, size_t end, double lr,
                     double gradScale, int64_t step);
    void update(float* params, const float* grads, double lr, double gradScale, int64_t step) {
        updateRange(params, grads, 0, m_totalSize, lr, gradScale, step);
    }

    const std::vector<ParamGroup>& groups() const { return m_groups; }
    // Optimizer state in the parameters' layout: Adam's first/second moments or SGD's momentum
    // buffer (firstMoment); empty when the rule keeps no state.
    std::vector<float>& firstMoment() { return m_m; }
    std::vector<float>& secondMoment() { return m_v; }

private:
    config::OptimizerConfig m_config;
    std::vector<ParamGroup> m_groups;
    size_t m_totalSize;
    bool m_adam;
    std::vector<float> m_m;  // (totalSize) Adam first moment or SGD momentum buffer
    std::vector<float> m_v;  // (totalSize) Adam second moment
};

}  // namespace ws::optim
