// SPDX-License-Identifier: GPL-3.0-or-later
// KvDecoder: GPT-2 inference for one sequence (B = 1) with a key/value cache, so that generating
// token t costs O(L·C·(C + t)) instead of re-running the whole prefix. It computes exactly what
// model::Gpt<float>::forward computes (same parameter layout, same ops, same bf16 rounding
// points; dropout off), so its logits match Gpt's at every position up to float reassociation
// (the GEMMs see different shapes, so their summation order may differ).
//
// Shapes: C channels, NH heads, hs = C / NH, F ffn width, V vocabulary, L layers, maxT positions.
// The cache holds K and V of every layer for positions [0, position()), (maxT, KV·hs) per layer
// each (KV heads only: grouped-query attention caches a fraction of (maxT, C)). append(n tokens)
// runs them at positions position() .. position()+n-1 in one batched pass (prefill) or one at a
// time (decoding); both give the same logits.
//
// bf16 mode (shape.bf16): the decoder computes with a bf16-rounded copy of the weights taken at
// construction (also kept packed as bf16 bits for the matmuls), runs every product with bf16
// operands and fp32 accumulation as Gpt does, and rounds activations where Gpt does (ln outputs,
// qkv, attention output, projection outputs, c_fc, GELU, logits), so it matches Gpt in bf16 mode
// too. Appends of up to 4 rows (decoding) run the weight products on the bf16 GEMV
// (tensor/gemv_bf16.h), whose panels hold the weights a third time, packed once at construction;
// prefills run on the oneDNN bf16 backend. Memory in bf16 mode: the fp32 copy plus two bf16 copies
// of the weights (GPT-2 small: 0.5 + 0.25 + 0.25 GB) beside the caller's fp32 parameters.
//
// Mixture of experts (shape.hasMoe()): an MoE block's router, top-k choice and experts run as in
// Gpt's evaluation forward (model/moe.h: no capacity limit outside training), each expert on the
// rows routed to it.
//
// Thread-safety: one call at a time per object; different objects may run concurrently. Kernels
// use tensor::computeThreads(). Preconditions (tokens in [0, V), room in the cache) are programmer
// contracts, asserted in debug builds; check user tokens with model::checkTokens() first.
#pragma once

#include <atomic>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "engine/model/ops.h"
#include "engine/model/parameters.h"
#include "engine/tensor/gemv_bf16.h"

namespace ws::sample {

class KvDecoder {
public:
    // params: the ParameterTable(shape) layout. Must outlive the decoder and not change while it is
    // used (bf16 mode copies it). maxContext > 0 caps the cache below shape.maxPositions (Llama
    // 3.2's 131,072 positions would take gigabytes of cache). Precondition: shape.validate() is ok.
    KvDecoder(const model::GptShape& shape, const float* params, int maxContext = 0);

    const model::GptShape& shape() const { return m_table.shape(); }
    int position() const { return m_pos; }       // tokens in the cache
    int capacity() const { return m_capacity; }  // maxT: positions the cache holds

    // Empties the cache (position() becomes 0). Cheap: nothing is cleared.
    void reset() { m_pos = 0; }

    // Runs `tokens` (n >= 1, position() + n <= capacity()) at the next positions and appends their
    // keys and values to the cache. Afterwards logits() is the next-token distribution after the
    // last of them; with allLogits, logits(i) is available for every row i < n as well.
    // cancel (may be null) is checked between layers: when it is set, append returns false and
    // the cache is left as it was before the call (position() unchanged, logits invalid).
    bool append(std::span<const int32_t> tokens, bool allLogits = false,
                const std::atomic<bool>* cancel = nullptr);

    // Logits (V) of row `row` of the last successful append (row -1: its last token). Rows other
    // than the last exist only when that append asked for allLogits.
    const float* logits(int row = -1) const;

private:
    void ensureRows(int rows);
    void blockForward(int layer, int rows);
    void attention(int layer, int rows);
    // LayerNorm or RMSNorm (by the shape) of `rows` rows into out; bias null without one.
    void norm(float* out, const float* inp, const float* weight, const float* bias, int rows);
    // An MoE block's MLP branch of `rows` rows into m_branch (from m_ln), as Gpt computes it in
    // evaluation (every top-k assignment kept).
    void moeMlp(int layer, int rows, const float* w);

    model::ParameterTable m_table;
    model::BlockOffsets m_off;           // a dense block's layout
    model::BlockOffsets m_moeOff;        // an MoE block's (shape().hasMoe() only)
    const float* m_params;               // what the decoder computes with
    std::vector<float> m_bf16Params;     // bf16 mode: the rounded copy m_params points to
    std::vector<uint16_t> m_bf16Packed;  // bf16 mode: the same values as bf16 bits
    // bf16 mode: the packed bits of a weight inside m_params; null otherwise.
    const uint16_t* packed(const float* weight) const;
    const float* logitWeight() const;  // (V, C): wte, or the untied head's weight
    // bf16 mode: the weight matrices once more in the GEMV's panel layout, for decoding.
    struct LayerPanels {
        tensor::Bf16PanelMatrix qkv, attproj, fc, fcproj;
        std::vector<tensor::Bf16PanelMatrix> expertFc, expertProj;  // MoE block: per expert
    };
    std::vector<LayerPanels> m_panels;      // (L)
    tensor::Bf16PanelMatrix m_logitPanels;  // the logits' (V,C)ᵀ
    int m_capacity = 0;
    int m_pos = 0;
    int m_rows = 0;       // rows the scratch buffers hold
    int m_logitRows = 0;  // rows of m_logits of the last append
    int m_lastRows = 0;   // rows of the last append

    std::vector<float> m_k, m_v;                      // (L, maxT, KV·hs) each: only the KV heads
    std::optional<model::ops::RotaryTable> m_rotary;  // rotary positions only
    std::vector<float> m_alibiSlopes;                 // (NH) ALiBi only
    std::vector<int32_t> m_positions;                 // (n) positions of the rows appended
    // Scratch for up to m_rows rows.
    std::vector<float> m_x;             // (n, C) residual stream
    std::vector<float> m_ln;            // (n, C)
    std::vector<float> m_mean, m_rstd;  // (n)
    std::vector<float> m_qkv;           // (n, QKV) = [q | k | v], 3C for GPT-2
    std::vector<float> m_atty;          // (n, Q) Q = NH·hs
    std::vector<float> m_branch;        // (n, C)
    std::vector<float> m_fch;           // (n, M): F, or SwiGLU's [gate | up] 2F
    std::vector<float> m_gelu;          // (n, F) the activation's output
    std::vector<float> m_logits;        // (n or 1, V)
    // MoE: router probabilities (n,E), gates (n,k), gathered rows and expert outputs (n,C).
    std::vector<float> m_probs, m_gates, m_gathered, m_expertOut;
};

}  // namespace ws::sample
