// SPDX-License-Identifier: GPL-3.0-or-later
// The ops of Llama-family blocks (Llama, Mistral, Qwen2, BTLM), forward and backward, beside the
// GPT-2 ops of ops.h and under the same contracts (backward accumulates parameter gradients,
// static deterministic partitions over tensor::computeThreads(), Real = float or double):
// RMSNorm, the SwiGLU activation, rotary position embeddings in Hugging Face's half-rotation
// layout, and the ALiBi slopes (the ALiBi bias itself is an argument of ops::attentionForward).
// Each follows the published semantics of transformers' modeling code: LlamaRMSNorm, LlamaMLP's
// down(silu(gate(x)) * up(x)), apply_rotary_pos_emb with rotate_half and the rope_scaling types
// `linear` and `llama3`, build_alibi_tensor's slopes. Shapes: N rows, C channels, F ffn width,
// B batch, T sequence; qkv rows as attention_shape.h describes.
//
// Thread-safety: the functions are pure; a RotaryTable is immutable after construction.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "engine/model/attention_shape.h"

namespace ws::model::ops {

// out (N,C) = inp * rstd * weight with rstd[n] = 1 / sqrt(mean_c(inp[n,c]²) + eps), saved (N) for
// the backward (transformers' LlamaRMSNorm: no mean subtraction, no bias).
template <typename Real>
void rmsNormForward(Real* out, Real* rstd, const Real* inp, const Real* weight, int N, int C,
                    double eps);
// dinp (N,C) and dweight (C) accumulate; dweight may be null (a frozen norm: skipped).
template <typename Real>
void rmsNormBackward(Real* dinp, Real* dweight, const Real* dout, const Real* inp,
                     const Real* weight, const Real* rstd, int N, int C);

// SwiGLU: inp (N,2F) holds per row [gate (F) | up (F)] (the fused gate and up projections);
// out (N,F) = silu(gate) * up with silu(x) = x * sigmoid(x).
template <typename Real>
void swigluForward(Real* out, const Real* inp, int N, int F);
// dinp (N,2F): overwrites with [d gate | d up] for dout (N,F).
template <typename Real>
void swigluBackward(Real* dinp, const Real* inp, const Real* dout, int N, int F);

// rope_scaling (HF) / ModelZoo's pos_scaling_*: how the inverse frequencies are stretched.
struct RopeScaling {
    enum class Type { None, Linear, Llama3 } type = Type::None;
    double factor = 1.0;                               // linear: positions / factor; llama3: factor
    double lowFreqFactor = 1.0, highFreqFactor = 4.0;  // llama3 only
    int originalMaxPositions = 8192;                   // llama3 only
};

// cos and sin of position · inverse frequency, (maxPositions, rotaryDim/2), computed in double
// (with a float copy for the float ops). inverse frequency i = theta^(-2i/rotaryDim), then
// scaled: linear divides it by factor; llama3 follows transformers' _compute_llama3_parameters
// (long wavelengths divided by factor, short ones kept, a smooth blend between).
// Preconditions (asserted; the config validation refuses them first): rotaryDim even and > 0,
// theta > 0, maxPositions > 0, factor > 0, llama3's highFreqFactor > lowFreqFactor.
class RotaryTable {
public:
    RotaryTable(int rotaryDim, double theta, RopeScaling scaling, int maxPositions);
    int rotaryDim() const { return m_rotaryDim; }
    int maxPositions() const { return m_maxPositions; }
    // Inverse frequency i in [0, rotaryDim/2), after scaling.
    double inverseFrequency(int i) const { return m_inverseFrequency[size_t(i)]; }
    // Row `position` (in [0, maxPositions)) of the tables: rotaryDim/2 values each.
    template <typename Real>
    const Real* cosRow(int position) const {
        return row<Real>(m_cos, m_cosF, position);
    }
    template <typename Real>
    const Real* sinRow(int position) const {
        return row<Real>(m_sin, m_sinF, position);
    }

private:
    int m_rotaryDim, m_maxPositions;
    std::vector<double> m_inverseFrequency;  // (rotaryDim/2)
    std::vector<double> m_cos, m_sin;        // (maxPositions, rotaryDim/2)
    std::vector<float> m_cosF, m_sinF;       // the same, rounded to float

    template <typename Real>
    const Real* row(const std::vector<double>& d, const std::vector<float>& f, int position) const {
        const size_t at = size_t(position) * size_t(m_rotaryDim / 2);
        if constexpr (std::is_same_v<Real, float>) {
            return f.data() + at;
        } else {
            return d.data() + at;
        }
    }
};

// Rotates, in place, the first rotaryDim channels of every q head and every k head of qkv
// (B,T,qkvWidth); v and the channels past rotaryDim (partial rotary) are untouched. Channel i and
// i + rotaryDim/2 of a head form a pair: (x1, x2) → (x1 cos - x2 sin, x2 cos + x1 sin) with the
// angle of the row's position (HF's q * cos + rotate_half(q) * sin). positions (B,T): position ids
// in [0, maxPositions) (packed sequences restart them per document), or null for t.
template <typename Real>
void ropeForward(Real* qkv, const RotaryTable& table, const AttentionShape& shape,
                 const int32_t* positions, int B, int T);
// The transposed rotation on dq and dk of dqkv (B,T,qkvWidth), in place: turns the gradient
// with respect to the rotated q, k into the gradient with respect to the unrotated ones.
template <typename Real>
void ropeBackward(Real* dqkv, const RotaryTable& table, const AttentionShape& shape,
                  const int32_t* positions, int B, int T);

// ALiBi slopes of `heads` heads (Press et al.; transformers' build_alibi_tensor, BTLM): for the
// largest power of two p <= heads, slope h = 2^(-8(h+1)/p); the remaining heads - p take the odd
// powers 2^(-4(2k+1)/p), k = 0, 1, ... (every other slope of 2p heads).
std::vector<double> alibiSlopes(int heads);

}  // namespace ws::model::ops
