// SPDX-License-Identifier: GPL-3.0-or-later
// KvDecoder: the cached forward pass (see kv_decoder.h). Mirrors model::Gpt<float>::blockForward
// step by step with the same ops, so that a change there is easy to carry over here.
#include "engine/sample/kv_decoder.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstring>
#include <vector>

#include "engine/model/element_kernels.h"
#include "engine/model/moe.h"
#include "engine/model/ops.h"
#include "engine/model/position_encoding.h"
#include "engine/tensor/bf16.h"
#include "engine/tensor/gemv_bf16.h"
#include "engine/tensor/matmul.h"
#include "engine/tensor/threads.h"

namespace ws::sample {

using model::GptShape;
using tensor::Trans;

namespace {
// Query rows per attention block in a prefill: bounds the score scratch to kRowBlock x maxT.
constexpr int kRowBlock = 64;

// The backend for a product with `rows` rows of activations. A single row (one decoded token) is
// a matrix-vector product bound by reading the weights: OpenBLAS's sgemm still packs the whole
// weight matrix for it, Eigen's product switches to its GEMV kernel when a side has one row
// (measured by bench/sample_bench.cpp). Batched rows (prefill) keep the default GEMM backend.
tensor::MatmulBackend backendFor(int rows) {
    return rows == 1 ? tensor::MatmulBackend::Eigen : tensor::defaultMatmulBackend();
}

// In bf16 mode a product this small runs on the fp32 kernels instead of the bf16 backend. Its
// operands are bf16 values already (the rounded weights, rounded activations), so the products
// are the same exact bf16 products with fp32 accumulation, only added in another order; but one
// oneDNN call costs more than such a product (gpt-nano's one-token products: 0.3-0.4x fp32 speed
// on the bf16 backend). Decided by shape only, so generation stays deterministic. Weight products
// of up to kGemvMaxRows rows run on the bf16 GEMV instead (below); this threshold still decides
// for attention and small prefills.
constexpr int64_t kBf16MinMacs = int64_t{1} << 20;

bool onBf16Backend(bool bf16, int64_t M, int64_t N, int64_t K) {
    return bf16 && M * N * K >= kBf16MinMacs;
}

// In bf16 mode a weight product with this many rows or fewer (a decoded token, a short prompt)
// runs on the bf16 matrix-vector kernel (tensor/gemv_bf16.h) with the weights packed once into its
// panels and streams each weight once as 2 bytes: 8.7-11.8 G weights/s on the logits' product
// where the oneDNN call reached 3.8-5.6 (bench/sample_bench.cpp, 2 threads, loaded AMD EPYC).
// More rows are a prefill, which oneDNN's GEMM does better.
constexpr int kGemvMaxRows = 4;

bool onGemv(const tensor::Bf16PanelMatrix* panels, int rows) {
    return panels != nullptr && !panels->empty() && rows <= kGemvMaxRows;
}

// The (rows, cols) activations at a (row stride lda) rounded to bf16, densely, in this thread's
// scratch: the bf16 backend rounds its operands as it packs them, so its fp32 stand-in must too.
const float* roundedRows(const float* a, int rows, int cols, int lda) {
    thread_local std::vector<float> scratch;
    scratch.resize(size_t(rows) * size_t(cols));
    for (int r = 0; r < rows; ++r) {
        tensor::roundToBf16Span(a + size_t(r) * size_t(lda), scratch.data() + size_t(r) * cols,
                                size_t(cols));
    }
    return scratch.data();
}

// out (N,OUT) = inp (N,IN) · weight (IN,OUT) + bias (OUT), as model::ops::linearForward. In bf16
// mode (weightBf16 and panels not null): a few rows on the bf16 GEMV, more on the bf16 backend
// with the packed weight when the product is large enough, else fp32 kernels on bf16 values.
void linear(float* out, const float* inp, const float* weight, const uint16_t* weightBf16,
            const tensor::Bf16PanelMatrix* panels, const float* bias, int N, int IN, int OUT) {
    for (int n = 0; n < N; ++n) {
        if (bias) {
            std::memcpy(out + size_t(n) * OUT, bias, sizeof(float) * OUT);
        } else {  // a linear without a bias (Llama's)
            std::fill(out + size_t(n) * OUT, out + size_t(n + 1) * OUT, 0.0f);
        }
    }
    if (onGemv(panels, N)) {
        tensor::gemvBf16(N, 1.0f, inp, IN, *panels, true, out, OUT);
        return;
    }
    if (onBf16Backend(weightBf16 != nullptr, N, IN, OUT)) {
        tensor::matmulBf16(Trans::No, Trans::No, N, OUT, IN, 1.0f, inp, nullptr, IN, weight,
                           weightBf16, OUT, 1.0f, out, OUT);
        return;
    }
    if (weightBf16) inp = roundedRows(inp, N, IN, IN);  // the weights are bf16 values already
    tensor::matmul<float>(backendFor(N), Trans::No, Trans::No, N, OUT, IN, 1.0f, inp, IN, weight,
                          OUT, 1.0f, out, OUT);
}

// An attention product: bf16 backend in bf16 mode (when large enough), else the default fp32 one.
void attentionGemm(bool bf16, Trans tb, int M, int N, int K, float alpha, const float* A, int lda,
                   const float* B, int ldb, float* C, int ldc) {
    if (onBf16Backend(bf16, M, N, K)) {
        tensor::matmulBf16(Trans::No, tb, M, N, K, alpha, A, nullptr, lda, B, nullptr, ldb, 0.0f, C,
                           ldc);
    } else if (bf16) {  // the keys and values are bf16 values already (the qkv rows are rounded)
        tensor::matmul<float>(Trans::No, tb, M, N, K, alpha, roundedRows(A, M, K, lda), K, B, ldb,
                              0.0f, C, ldc);
    } else {
        tensor::matmul<float>(Trans::No, tb, M, N, K, alpha, A, lda, B, ldb, 0.0f, C, ldc);
    }
}
}  // namespace

KvDecoder::KvDecoder(const model::GptShape& shape, const float* params, int maxContext)
    : m_table(shape),
      m_off(model::blockOffsets(shape)),
      m_moeOff(shape.hasMoe() ? model::blockOffsets(shape, 0) : model::BlockOffsets{}),
      m_params(params),
      m_capacity(maxContext > 0 ? std::min(maxContext, shape.maxPositions) : shape.maxPositions) {
    assert(shape.validate().ok());
    if (shape.bf16) {
        // Packed once: the bf16 matmuls read the packed weights, everything else the rounded
        // values (the same RNE rounding).
        m_bf16Packed.resize(m_table.totalSize());
        m_bf16Params.resize(m_table.totalSize());
        tensor::floatToBf16(params, m_bf16Packed.data(), m_bf16Packed.size());
        tensor::bf16ToFloat(m_bf16Packed.data(), m_bf16Params.data(), m_bf16Params.size());
        m_params = m_bf16Params.data();
        // And once more in the GEMV's panels for decoding: each weight matrix, and the logits'
        // (V,C) read transposed.
        m_panels.resize(size_t(shape.layers));
        for (int l = 0; l < shape.layers; ++l) {
            const float* w =
                params + m_table.layers()[size_t(model::ParameterTable::blockLayer(l))].offset;
            const int C = shape.channels, F = shape.ffn, QKV = shape.qkvWidth(), Q = shape.qWidth(),
                      M = shape.mlpInWidth();
            LayerPanels& p = m_panels[size_t(l)];
            p.qkv = tensor::Bf16PanelMatrix(Trans::No, C, QKV, w + m_off.qkvw, QKV);
            p.attproj = tensor::Bf16PanelMatrix(Trans::No, Q, C, w + m_off.attprojw, C);
            if (shape.isMoeBlock(l)) {
                for (int e = 0; e < shape.numExperts; ++e) {
                    const float* x = w + m_moeOff.expert(e);
                    p.expertFc.emplace_back(Trans::No, C, F, x + m_moeOff.fcw, F);
                    p.expertProj.emplace_back(Trans::No, F, C, x + m_moeOff.fcprojw, C);
                }
                continue;
            }
            p.fc = tensor::Bf16PanelMatrix(Trans::No, C, M, w + m_off.fcw, M);
            p.fcproj = tensor::Bf16PanelMatrix(Trans::No, F, C, w + m_off.fcprojw, C);
        }
        m_logitPanels = tensor::Bf16PanelMatrix(Trans::Yes, shape.channels, shape.vocab,
                                                logitWeight(), shape.channels);
    }
    // Grouped-query attention caches only the KV heads: (L, maxT, KV·hs) each.
    const size_t cache = size_t(shape.layers) * size_t(m_capacity) * size_t(shape.kvWidth());
    m_k.assign(cache, 0.0f);
    m_v.assign(cache, 0.0f);
    m_rotary = model::rotaryTableFor(shape, m_capacity);
    m_alibiSlopes = model::alibiSlopesFor<float>(shape);
    ensureRows(1);
}

void KvDecoder::ensureRows(int rows) {
    if (rows <= m_rows) return;
    const GptShape& s = shape();
    const size_t n = size_t(rows), C = size_t(s.channels), F = size_t(s.ffn);
    m_x.resize(n * C);
    m_ln.resize(n * C);
    m_mean.resize(n);
    m_rstd.resize(n);
    m_qkv.resize(n * size_t(s.qkvWidth()));
    m_atty.resize(n * size_t(s.qWidth()));
    m_branch.resize(n * C);
    m_fch.resize(n * size_t(s.mlpInWidth()));
    m_positions.resize(n);
    m_gelu.resize(n * F);
    if (s.hasMoe()) {
        const size_t E = size_t(s.numExperts), K = size_t(s.topK);
        m_probs.resize(n * E);
        m_gates.resize(n * K);
        m_gathered.resize(n * C);
        m_expertOut.resize(n * K * C);
    }
    m_rows = rows;
}

bool KvDecoder::append(std::span<const int32_t> tokens, bool allLogits,
                       const std::atomic<bool>* cancel) {
    const GptShape& s = shape();
    const int n = int(tokens.size()), C = s.channels, V = s.vocab;
    assert(n >= 1 && m_pos + n <= capacity());
    ensureRows(n);
    const bool round = s.bf16;

    const float* wte = m_params + m_table.layers()[model::ParameterTable::embeddingLayer()].offset;
    // Positions m_pos .. m_pos+n-1: the embedding op with B = 1, T = n on wpe's rows from m_pos
    // (learned positions; rotary and ALiBi place them in the attention).
    const float* wpe = s.learnedPositions() ? wte + size_t(V) * C + size_t(m_pos) * C : nullptr;
    model::ops::embeddingForward(m_x.data(), tokens.data(), wte, wpe, 1, n, C);
    for (int i = 0; i < n; ++i) m_positions[size_t(i)] = m_pos + i;
    if (s.embeddingsScale != 1.0) {  // μP, as in Gpt::embedForward
        const float scale = float(s.embeddingsScale);
        for (size_t i = 0; i < size_t(n) * C; ++i) m_x[i] *= scale;
    }

    for (int l = 0; l < s.layers; ++l) {
        if (cancel && cancel->load(std::memory_order_relaxed)) return false;
        blockForward(l, n);
    }
    if (cancel && cancel->load(std::memory_order_relaxed)) return false;

    // Head: ln_f and the logits, for every row or only the last.
    const int first = allLogits ? 0 : n - 1, rows = n - first;
    const float* head = m_params + m_table.layers()[size_t(m_table.headLayer())].offset;
    const float* W = logitWeight();
    norm(m_ln.data(), m_x.data() + size_t(first) * C, head, s.layerNorm() ? head + C : nullptr,
         rows);
    if (round) tensor::roundToBf16(m_ln.data(), size_t(rows) * C);
    m_logits.resize(size_t(rows) * V);
    if (round && rows <= kGemvMaxRows) {
        tensor::gemvBf16(rows, float(s.outputLogitsScale), m_ln.data(), C, m_logitPanels, false,
                         m_logits.data(), V);
    } else if (onBf16Backend(round, rows, V, C)) {
        tensor::matmulBf16(Trans::No, Trans::Yes, rows, V, C, float(s.outputLogitsScale),
                           m_ln.data(), nullptr, C, W, packed(W), C, 0.0f, m_logits.data(), V);
    } else {  // m_ln was rounded above in bf16 mode, and W is the rounded copy
        tensor::matmul<float>(backendFor(rows), Trans::No, Trans::Yes, rows, V, C,
                              float(s.outputLogitsScale), m_ln.data(), C, W, C, 0.0f,
                              m_logits.data(), V);
    }
    if (round) tensor::roundToBf16(m_logits.data(), size_t(rows) * V);
    m_logitRows = rows;
    m_lastRows = n;
    m_pos += n;
    return true;
}

const float* KvDecoder::logitWeight() const {
    const GptShape& s = shape();
    if (s.tiedEmbedding) {
        return m_params + m_table.layers()[model::ParameterTable::embeddingLayer()].offset;
    }
    const size_t lnf = s.layerNorm() ? 2 * size_t(s.channels) : size_t(s.channels);
    return m_params + m_table.layers()[size_t(m_table.headLayer())].offset + lnf;
}

const uint16_t* KvDecoder::packed(const float* weight) const {
    return m_bf16Packed.empty() ? nullptr : m_bf16Packed.data() + (weight - m_params);
}

const float* KvDecoder::logits(int row) const {
    if (row < 0) row = m_lastRows - 1;
    const int index = row - (m_lastRows - m_logitRows);
    assert(index >= 0 && index < m_logitRows);
    return m_logits.data() + size_t(index) * size_t(shape().vocab);
}

void KvDecoder::norm(float* out, const float* inp, const float* weight, const float* bias,
                     int rows) {
    const GptShape& s = shape();
    if (s.layerNorm()) {
        model::ops::layerNormForward(out, m_mean.data(), m_rstd.data(), inp, weight, bias, rows,
                                     s.channels, s.lnEps);
    } else {
        model::ops::rmsNormForward(out, m_rstd.data(), inp, weight, rows, s.channels, s.lnEps);
    }
}

void KvDecoder::blockForward(int layer, int rows) {
    const GptShape& s = shape();
    const int N = rows, C = s.channels, F = s.ffn, Q = s.qWidth(), QKV = s.qkvWidth(),
              M = s.mlpInWidth();
    const size_t nc = size_t(N) * C;
    const bool round = s.bf16;
    auto maybeRound = [round](float* data, size_t count) {
        if (round) tensor::roundToBf16(data, count);
    };
    const float* w =
        m_params + m_table.layers()[size_t(model::ParameterTable::blockLayer(layer))].offset;
    namespace ops = model::ops;
    using model::BlockOffsets;
    const LayerPanels* panels = m_panels.empty() ? nullptr : &m_panels[size_t(layer)];

    norm(m_ln.data(), m_x.data(), w + m_off.ln1w, BlockOffsets::at(w, m_off.ln1b), N);
    maybeRound(m_ln.data(), nc);
    linear(m_qkv.data(), m_ln.data(), w + m_off.qkvw, packed(w + m_off.qkvw),
           panels ? &panels->qkv : nullptr, BlockOffsets::at(w, m_off.qkvb), N, C, QKV);
    maybeRound(m_qkv.data(), size_t(N) * QKV);
    if (m_rotary) {  // as Gpt::blockForward: rotate, then round again in bf16 mode
        ops::ropeForward(m_qkv.data(), *m_rotary,
                         ops::AttentionShape{s.heads, s.kvHeadCount(), s.headSize()},
                         m_positions.data(), 1, N);
        maybeRound(m_qkv.data(), size_t(N) * QKV);
    }
    attention(layer, N);
    maybeRound(m_atty.data(), size_t(N) * Q);
    linear(m_branch.data(), m_atty.data(), w + m_off.attprojw, packed(w + m_off.attprojw),
           panels ? &panels->attproj : nullptr, BlockOffsets::at(w, m_off.attprojb), N, Q, C);
    maybeRound(m_branch.data(), nc);
    ops::residualForward(m_x.data(), m_x.data(), m_branch.data(), nc);

    norm(m_ln.data(), m_x.data(), w + m_off.ln2w, BlockOffsets::at(w, m_off.ln2b), N);
    maybeRound(m_ln.data(), nc);
    if (s.isMoeBlock(layer)) {
        moeMlp(layer, N, w);
        maybeRound(m_branch.data(), nc);
        ops::residualForward(m_x.data(), m_x.data(), m_branch.data(), nc);
        return;
    }
    linear(m_fch.data(), m_ln.data(), w + m_off.fcw, packed(w + m_off.fcw),
           panels ? &panels->fc : nullptr, BlockOffsets::at(w, m_off.fcb), N, C, M);
    maybeRound(m_fch.data(), size_t(N) * M);
    if (s.mlp == GptShape::Mlp::SwiGlu) {
        ops::swigluForward(m_gelu.data(), m_fch.data(), N, F);
    } else {
        ops::geluForward(m_gelu.data(), m_fch.data(), size_t(N) * F);
    }
    maybeRound(m_gelu.data(), size_t(N) * F);
    linear(m_branch.data(), m_gelu.data(), w + m_off.fcprojw, packed(w + m_off.fcprojw),
           panels ? &panels->fcproj : nullptr, BlockOffsets::at(w, m_off.fcprojb), N, F, C);
    maybeRound(m_branch.data(), nc);
    ops::residualForward(m_x.data(), m_x.data(), m_branch.data(), nc);
}

void KvDecoder::moeMlp(int layer, int rows, const float* w) {
    const GptShape& s = shape();
    const int N = rows, C = s.channels, F = s.ffn, E = s.numExperts, k = s.topK;
    const model::BlockOffsets& o = m_moeOff;
    const bool round = s.bf16;
    const LayerPanels* panels = m_panels.empty() ? nullptr : &m_panels[size_t(layer)];
    // The router in fp32 on the (bf16-valued in bf16 mode) weights, as Gpt::moeForward.
    model::ops::linearForward(m_probs.data(), m_ln.data(), w + o.router,
                              static_cast<const float*>(nullptr), N, C, E);
    model::moe::softmaxRows(m_probs.data(), N, E);
    model::moe::Routing r;
    model::moe::route(r, m_gates.data(), m_probs.data(), N, E, k, N, s.expertNormalize, 0.0);
    for (int e = 0; e < E; ++e) {
        const int begin = r.expertBegin[size_t(e)], n = r.counts[size_t(e)];
        if (n == 0) continue;
        const float* in = m_ln.data();
        if (!r.allTokens(e)) {
            for (int i = 0; i < n; ++i)
                std::memcpy(m_gathered.data() + size_t(i) * C,
                            m_ln.data() + size_t(r.tokenOfRow[size_t(begin + i)]) * C,
                            sizeof(float) * size_t(C));
            in = m_gathered.data();
        }
        const float* x = w + o.expert(e);
        float* y = m_expertOut.data() + size_t(begin) * C;
        linear(m_fch.data(), in, x + o.fcw, packed(x + o.fcw),
               panels ? &panels->expertFc[size_t(e)] : nullptr, x + o.fcb, n, C, F);
        if (round) tensor::roundToBf16(m_fch.data(), size_t(n) * F);
        model::ops::geluForward(m_gelu.data(), m_fch.data(), size_t(n) * F);
        if (round) tensor::roundToBf16(m_gelu.data(), size_t(n) * F);
        linear(y, m_gelu.data(), x + o.fcprojw, packed(x + o.fcprojw),
               panels ? &panels->expertProj[size_t(e)] : nullptr, x + o.fcprojb, n, F, C);
        if (round) tensor::roundToBf16(y, size_t(n) * C);
    }
    // The gated sum, slots in order, the first assigning (Gpt::moeForward).
    for (int t = 0; t < N; ++t) {
        float* b = m_branch.data() + size_t(t) * C;
        for (int j = 0; j < k; ++j) {
            const float gate = m_gates[size_t(t) * k + size_t(j)];
            const float* y = m_expertOut.data() + size_t(r.row[size_t(t) * k + size_t(j)]) * C;
            for (int c = 0; c < C; ++c) b[c] = j == 0 ? gate * y[c] : b[c] + gate * y[c];
        }
    }
}

// Causal attention of `rows` new queries (positions m_pos ..) over the cached keys 0 .. m_pos-1
// and the new keys, after storing the new keys and values in the cache. Heads are independent
// and split statically over threads; the products inside a head run serially on its thread.
void KvDecoder::attention(int layer, int rows) {
    const GptShape& s = shape();
    const int NH = s.heads, hs = s.headSize(), Q = s.qWidth(), KVW = s.kvWidth(), ld = s.qkvWidth(),
              maxT = m_capacity, group = NH / s.kvHeadCount();
    const size_t layerOffset = size_t(layer) * size_t(maxT) * KVW;
    float* K = m_k.data() + layerOffset;  // (maxT, KV·hs)
    float* V = m_v.data() + layerOffset;  // (maxT, KV·hs)
    for (int i = 0; i < rows; ++i) {
        const float* qkv = m_qkv.data() + size_t(i) * ld;
        std::memcpy(K + size_t(m_pos + i) * KVW, qkv + Q, sizeof(float) * size_t(KVW));
        std::memcpy(V + size_t(m_pos + i) * KVW, qkv + Q + KVW, sizeof(float) * size_t(KVW));
    }
    const float scale = s.attentionScale<float>();  // 1/sqrt(hs), or μP's alpha / hs
    const int total = m_pos + rows;                 // keys visible to the last query
    const int64_t work = int64_t(rows) * total * Q * 2;
    const int pos = m_pos;
    const bool bf16 = s.bf16;
    tensor::parallelFor(NH, tensor::threadsForWork(work), [&](int64_t begin, int64_t end) {
        std::vector<float> scores(size_t(std::min(rows, kRowBlock)) * size_t(total));
        for (int h = int(begin); h < int(end); ++h) {
            const int kvHead = h / group;                    // transformers' repeat_kv order
            const float* q = m_qkv.data() + size_t(h) * hs;  // (rows, hs), stride QKV
            const float* k = K + size_t(kvHead) * hs;        // (total, hs), stride KV·hs
            const float* v = V + size_t(kvHead) * hs;
            float* o = m_atty.data() + size_t(h) * hs;  // (rows, hs), stride Q
            for (int r0 = 0; r0 < rows; r0 += kRowBlock) {
                const int blockRows = std::min(kRowBlock, rows - r0);
                const int cols = pos + r0 + blockRows;  // keys the block's last row sees
                attentionGemm(bf16, Trans::Yes, blockRows, cols, hs, scale, q + size_t(r0) * ld, ld,
                              k, KVW, scores.data(), cols);
                if (!m_alibiSlopes.empty()) {  // + slope · (j - i) for the keys j <= i
                    const float slope = m_alibiSlopes[size_t(h)];
                    for (int r = 0; r < blockRows; ++r) {
                        const int i = pos + r0 + r;
                        float* row = scores.data() + size_t(r) * cols;
                        for (int j = 0; j <= i; ++j) row[j] += slope * float(j - i);
                    }
                }
                model::kernels::causalSoftmaxRows(scores.data(), blockRows, pos + r0 + 1, cols);
                attentionGemm(bf16, Trans::No, blockRows, hs, cols, 1.0f, scores.data(), cols, v,
                              KVW, o + size_t(r0) * Q, Q);
            }
        }
    });
}

}  // namespace ws::sample
