// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/optim/optimizer.h"

#include <algorithm>
#include <cassert>
#include <cmath>

#include "engine/optim/adamw_kernel.h"
#include "engine/tensor/threads.h"

namespace ws::optim {

namespace {
// Fixed number of partial sums: the reduction order is independent of the thread count.
constexpr int kNormChunks = 64;
// Elements per call of the AdamW kernel.
constexpr std::ptrdiff_t kAdamChunk = 16384;
// The loops run on the engine's compute pool (tensor/threads.h), not OpenMP's: its threads are
// the ones --threads / runconfig.num_threads counts, a small loop (tensor::threadsForWork) stays
// on the calling thread (a LoRA run updates ~100 small adapter tensors per step), a region never
// waits for a thread that has not started, and no second team of threads spins after each loop
// on the cores the training step needs (libgomp spins ~300k iterations at every barrier). Results
// do not depend on the threads (element-wise updates; globalNorm's chunking is fixed).
}  // namespace

size_t trainableSize(std::span<const ParamGroup> groups) {
    size_t n = 0;
    for (const auto& g : groups) n += g.frozen ? 0 : g.size;
    return n;
}

std::vector<TrainablePiece> trainablePieces(std::span<const ParamGroup> groups, size_t begin,
                                            size_t end) {
    std::vector<TrainablePiece> pieces;
    size_t state = 0;
    for (const auto& g : groups) {
        if (g.frozen) continue;
        const size_t lo = std::max(begin, g.offset), hi = std::min(end, g.offset + g.size);
        if (lo < hi) {
            const size_t at = state + (lo - g.offset);
            if (!pieces.empty() && pieces.back().offset + pieces.back().size == lo &&
                pieces.back().stateOffset + pieces.back().size == at) {
                pieces.back().size += hi - lo;
            } else {
                pieces.push_back({lo, at, hi - lo});
            }
        }
        state += g.size;
    }
    return pieces;
}

double globalNorm(const float* values, size_t count) {
    double partial[kNormChunks] = {};
    const size_t chunk = (count + kNormChunks - 1) / kNormChunks;
    tensor::parallelFor(kNormChunks, tensor::threadsForWork(int64_t(count)),
                        [&](int64_t firstChunk, int64_t endChunk) {
                            for (int64_t c = firstChunk; c < endChunk; ++c) {
                                const size_t begin = std::min(count, size_t(c) * chunk);
                                const size_t end = std::min(count, begin + chunk);
                                double sum = 0.0;
                                for (size_t i = begin; i < end; ++i)
                                    sum += double(values[i]) * double(values[i]);
                                partial[c] = sum;
                            }
                        });
    double total = 0.0;
    for (double p : partial) total += p;
    return std::sqrt(total);
}

double clipFactor(double norm, double maxNorm) {
    if (maxNorm <= 0.0 || !(norm > maxNorm)) return 1.0;
    return maxNorm / (norm + 1e-6);  // torch.nn.utils.clip_grad_norm_'s epsilon
}

int Optimizer::stateCopies(const config::OptimizerConfig& config) {
    if (config.optimizerType == "adamw") return 2;
    return config.momentum > 0.0 ? 1 : 0;
}

Optimizer::Optimizer(const config::OptimizerConfig& config, std::vector<ParamGroup> groups,
                     size_t totalSize)
    : Optimizer(config, std::move(groups), totalSize, GradientLayout::Full) {}

Optimizer::Optimizer(const config::OptimizerConfig& config, std::vector<ParamGroup> groups,
                     size_t totalSize, GradientLayout layout)
    : Optimizer(config, std::move(groups), totalSize, OptimizerState{}, layout) {
    const int copies = stateCopies(config);
    m_owned.assign(size_t(copies) * m_stateSize, 0.0f);
    if (copies >= 1) m_state.firstMoment = m_owned.data();
    if (copies >= 2) m_state.secondMoment = m_owned.data() + m_stateSize;
}

Optimizer::Optimizer(const config::OptimizerConfig& config, std::vector<ParamGroup> groups,
                     size_t totalSize, OptimizerState external, GradientLayout layout)
    : m_config(config),
      m_groups(std::move(groups)),
      m_totalSize(totalSize),
      m_layout(layout),
      m_stateSize(totalSize),
      m_identity(true),
      m_adam(config.optimizerType == "adamw"),
      m_state(external) {
    size_t state = 0;
    for (const auto& g : m_groups) {
        assert(layout == GradientLayout::Full || g.offset >= state);  // sorted, disjoint
        m_stateOffsets.push_back(layout == GradientLayout::Full ? g.offset : state);
        m_identity = m_identity && m_stateOffsets.back() == g.offset;
        state += g.frozen ? 0 : g.size;
    }
    if (layout == GradientLayout::Trainable) m_stateSize = state;
}

bool Optimizer::anyFrozen() const {
    return std::any_of(m_groups.begin(), m_groups.end(),
                       [](const ParamGroup& g) { return g.frozen || g.frozenPrefix > 0; });
}

double Optimizer::gradientNorm(const float* grads) const {
    if (!anyFrozen() && m_identity) return globalNorm(grads, m_stateSize);
    double sumSquares = 0.0;
    for (size_t i = 0; i < m_groups.size(); ++i) {
        const auto& g = m_groups[i];
        if (g.frozen) continue;
        const double n =
            globalNorm(grads + m_stateOffsets[i] + g.frozenPrefix, g.size - g.frozenPrefix);
        sumSquares += n * n;
    }
    return std::sqrt(sumSquares);
}

std::vector<double> Optimizer::rangeGradientNorms(const float* grads,
                                                  std::span<const BufferRange> ranges) const {
    const bool frozenAny = anyFrozen();
    std::vector<double> norms;
    norms.reserve(ranges.size());
    for (const auto& r : ranges) {
        // One parallel pass per range in the common case instead of one per tensor.
        if (!frozenAny && m_identity) {
            norms.push_back(globalNorm(grads + r.offset, r.size));
            continue;
        }
        // Only the unfrozen groups' part of the range counts, as in gradientNorm.
        double sumSquares = 0.0;
        for (size_t i = 0; i < m_groups.size(); ++i) {
            const auto& g = m_groups[i];
            const size_t lo = std::max(r.offset, g.offset + g.frozenPrefix);
            const size_t hi = std::min(r.offset + r.size, g.offset + g.size);
            if (lo >= hi || g.frozen) continue;
            const double n = globalNorm(grads + m_stateOffsets[i] + (lo - g.offset), hi - lo);
            sumSquares += n * n;
        }
        norms.push_back(std::sqrt(sumSquares));
    }
    return norms;
}

void Optimizer::updateRange(float* params, const float* grads, size_t begin, size_t end, double lr,
                            double gradScale, int64_t step) {
    assert(step >= 1);
    const auto& c = m_config;
    const float scale = static_cast<float>(gradScale);
    for (size_t gi = 0; gi < m_groups.size(); ++gi) {
        const auto& group = m_groups[gi];
        const size_t lo = std::max(begin, group.offset + group.frozenPrefix);
        const size_t hi = std::min(end, group.offset + group.size);
        if (lo >= hi || group.frozen) continue;
        const double groupLr = lr * group.lrScale;
        const double decay = group.decay ? c.weightDecay : 0.0;
        const auto n = static_cast<std::ptrdiff_t>(hi - lo);
        float* p = params + lo;
        const size_t at = m_stateOffsets[gi] + (lo - group.offset);  // gradients and state
        const float* g = grads + at;
        if (m_adam) {
            const double b1 = c.betas[0], b2 = c.betas[1];
            const double c1 = c.correctBias ? 1.0 - std::pow(b1, double(step)) : 1.0;
            const double c2 = c.correctBias ? 1.0 - std::pow(b2, double(step)) : 1.0;
            // PyTorch AdamW: p *= 1 - lr*wd; p -= lr * (m/c1) / (sqrt(v/c2) + eps).
            AdamwConstants k;
            k.gradScale = scale;
            k.beta1 = float(b1);
            k.beta2 = float(b2);
            k.stepSize = static_cast<float>(groupLr / c1);
            k.invSqrtC2 = static_cast<float>(1.0 / std::sqrt(c2));
            k.keep = static_cast<float>(1.0 - groupLr * decay);
            k.eps = float(c.eps);
            assert(m_state.firstMoment && m_state.secondMoment);
            float* m = m_state.firstMoment + at;
            float* v = m_state.secondMoment + at;
            // Element-wise, so the chunking changes no value; chunks keep each call long enough
            // for the SIMD kernel and give the threads even shares.
            const std::ptrdiff_t chunks = (n + kAdamChunk - 1) / kAdamChunk;
            tensor::parallelFor(chunks, tensor::threadsForWork(n),
                                [&](int64_t first, int64_t last) {
                                    for (int64_t ci = first; ci < last; ++ci) {
                                        const std::ptrdiff_t i = ci * kAdamChunk;
                                        adamwUpdate(k, p + i, g + i, m + i, v + i,
                                                    size_t(std::min(kAdamChunk, n - i)));
                                    }
                                });
        } else {
            // PyTorch SGD: d = g + wd*p; buf = momentum*buf + d (buf = d at step 1); p -= lr*buf.
            const float flr = static_cast<float>(groupLr);
            const float wd = static_cast<float>(decay);
            const float mu = static_cast<float>(c.momentum);
            float* buf = m_state.firstMoment ? m_state.firstMoment + at : nullptr;
            const bool first = step == 1;
            tensor::parallelFor(n, tensor::threadsForWork(n), [&](int64_t i0, int64_t i1) {
                for (int64_t i = i0; i < i1; ++i) {
                    float d = g[i] * scale + wd * p[i];
                    if (buf) {
                        buf[i] = first ? d : mu * buf[i] + d;
                        d = buf[i];
                    }
                    p[i] -= flr * d;
                }
            });
        }
    }
}

}  // namespace ws::optim
