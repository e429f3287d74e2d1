// SPDX-License-Identifier: GPL-3.0-or-later
// Rotary position embeddings (llama_ops.h) in Hugging Face's half-rotation layout: channel i of a
// head pairs with channel i + rotaryDim/2 (transformers' rotate_half; Meta's original code pairs
// neighbours, and HF checkpoints are already permuted for this layout). The table holds cos and
// sin per (position, frequency), computed in double once; the ops rotate every q and k head of a
// row with its position's row of the table. Rows are independent: split statically over threads.
#include <cassert>
#include <cmath>
#include <numbers>

#include "engine/model/llama_ops.h"
#include "engine/tensor/threads.h"

namespace ws::model::ops {
namespace {

// theta^(-2i/d), then stretched as rope_scaling says (transformers' rope init functions).
std::vector<double> inverseFrequencies(int rotaryDim, double theta, const RopeScaling& scaling) {
    const int half = rotaryDim / 2;
    std::vector<double> inv(static_cast<size_t>(half));
    for (int i = 0; i < half; ++i) inv[size_t(i)] = std::pow(theta, -2.0 * i / rotaryDim);
    switch (scaling.type) {
        case RopeScaling::Type::None:
            break;
        case RopeScaling::Type::Linear:
            for (double& f : inv) f /= scaling.factor;
            break;
        case RopeScaling::Type::Llama3: {  // _compute_llama3_parameters
            const double original = scaling.originalMaxPositions;
            const double lowFreqWavelen = original / scaling.lowFreqFactor;
            const double highFreqWavelen = original / scaling.highFreqFactor;
            for (double& f : inv) {
                const double wavelen = 2.0 * std::numbers::pi / f;
                if (wavelen < highFreqWavelen) continue;  // high frequencies: unchanged
                if (wavelen > lowFreqWavelen) {           // low frequencies: interpolated
                    f /= scaling.factor;
                    continue;
                }
                const double smooth = (original / wavelen - scaling.lowFreqFactor) /
                                      (scaling.highFreqFactor - scaling.lowFreqFactor);
                f = (1.0 - smooth) * f / scaling.factor + smooth * f;
            }
            break;
        }
    }
    return inv;
}

// sign = +1: (x1, x2) → (x1 c - x2 s, x2 c + x1 s); sign = -1: the transposed rotation.
template <typename Real>
void rotateRows(Real* qkv, const RotaryTable& table, const AttentionShape& shape,
                const int32_t* positions, int B, int T, Real sign) {
    assert(shape.valid() && table.rotaryDim() <= shape.headDim);
    const int N = B * T, ld = shape.qkvWidth(), hs = shape.headDim, half = table.rotaryDim() / 2;
    const int rotated = shape.heads + shape.kvHeads;  // the q heads, then the k heads
    const int64_t work = int64_t{N} * rotated * table.rotaryDim();
    tensor::parallelFor(N, tensor::threadsForWork(work), [&](int64_t begin, int64_t end) {
        for (int n = int(begin); n < int(end); ++n) {
            const int position = positions ? positions[n] : n % T;
            assert(position >= 0 && position < table.maxPositions());
            const Real* c = table.cosRow<Real>(position);
            const Real* s = table.sinRow<Real>(position);
            Real* row = qkv + size_t(n) * ld;
            for (int h = 0; h < rotated; ++h) {
                Real* x1 = row + size_t(h) * hs;
                Real* x2 = x1 + half;
#pragma omp simd
                for (int i = 0; i < half; ++i) {
                    const Real a = x1[i], b = x2[i], sn = sign * s[i];
                    x1[i] = a * c[i] - b * sn;
                    x2[i] = b * c[i] + a * sn;
                }
            }
        }
    });
}

}  // namespace

RotaryTable::RotaryTable(int rotaryDim, double theta, RopeScaling scaling, int maxPositions)
    : m_rotaryDim(rotaryDim), m_maxPositions(maxPositions) {
    assert(rotaryDim > 0 && rotaryDim % 2 == 0 && theta > 0 && maxPositions > 0);
    assert(scaling.factor > 0);
    assert(scaling.type != RopeScaling::Type::Llama3 ||
           scaling.highFreqFactor > scaling.lowFreqFactor);
    m_inverseFrequency = inverseFrequencies(rotaryDim, theta, scaling);
    const size_t half = size_t(rotaryDim / 2), cells = size_t(maxPositions) * half;
    m_cos.resize(cells);
    m_sin.resize(cells);
    m_cosF.resize(cells);
    m_sinF.resize(cells);
    for (int p = 0; p < maxPositions; ++p) {
        for (size_t i = 0; i < half; ++i) {
            const double angle = double(p) * m_inverseFrequency[i];
            const size_t at = size_t(p) * half + i;
            m_cos[at] = std::cos(angle);
            m_sin[at] = std::sin(angle);
            m_cosF[at] = float(m_cos[at]);
            m_sinF[at] = float(m_sin[at]);
        }
    }
}

template <typename Real>
void ropeForward(Real* qkv, const RotaryTable& table, const AttentionShape& shape,
                 const int32_t* positions, int B, int T) {
    rotateRows(qkv, table, shape, positions, B, T, Real(1));
}

template <typename Real>
void ropeBackward(Real* dqkv, const RotaryTable& table, const AttentionShape& shape,
                  const int32_t* positions, int B, int T) {
    rotateRows(dqkv, table, shape, positions, B, T, Real(-1));
}

template void ropeForward<float>(float*, const RotaryTable&, const AttentionShape&, const int32_t*,
                                 int, int);
template void ropeForward<double>(double*, const RotaryTable&, const AttentionShape&,
                                  const int32_t*, int, int);
template void ropeBackward<float>(float*, const RotaryTable&, const AttentionShape&, const int32_t*,
                                  int, int);
template void ropeBackward<double>(double*, const RotaryTable&, const AttentionShape&,
                                   const int32_t*, int, int);

}  // namespace ws::model::ops
