// SPDX-License-Identifier: GPL-3.0-or-later
// Gpt<Real>: activation layout, per-layer forward/backward and the full step (see gpt.h).
#include "engine/model/gpt.h"

#include <fmt/format.h>

#include <algorithm>
#include <cassert>
#include <type_traits>

#include "engine/model/lora.h"
#include "engine/model/ops.h"
#include "engine/model/packed_sequences.h"
#include "engine/model/position_encoding.h"
#include "engine/model/precision_gemm.h"
#include "engine/model/random.h"
#include "engine/tensor/bf16.h"
#include "engine/tensor/matmul.h"

namespace ws::model {

using tensor::Trans;

namespace {
// Dropout sites inside a layer, part of the mask stream's key.
// kLoraInput + t: the input of lora::Target t's adapter (LoRA dropout).
enum DropoutSite : int {
    kEmbedding = 0,
    kAttentionProbs = 1,
    kAttentionOut = 2,
    kMlpOut = 3,
    kLoraInput = 4
};
}  // namespace

Status checkTokens(const int32_t* tokens, size_t count, int vocab) {
    for (size_t i = 0; i < count; ++i) {
        if (tokens[i] < 0 || tokens[i] >= vocab) {
            return Error{
                fmt::format("token {} at position {} is outside the model's vocabulary "
                            "[0, {}); raise model.vocab_size to the tokenizer's size",
                            tokens[i], i, vocab)};
        }
    }
    return Status::success();
}

int64_t countTrainedTargets(const int32_t* targets, size_t count) {
    int64_t n = 0;
    for (size_t i = 0; i < count; ++i) n += targets[i] >= 0 ? 1 : 0;
    return n;
}

ActivationLayout activationLayout(const GptShape& shape, int batch, int seqLen) {
    const int64_t B = batch, T = seqLen, C = shape.channels, F = shape.ffn, V = shape.vocab,
                  NH = shape.heads, QKV = shape.qkvWidth(), Q = shape.qWidth(),
                  M = shape.mlpInWidth();
    // RMSNorm keeps no mean: its slot is an empty tensor at the rstd's offset.
    const bool ln = shape.layerNorm();
    ActivationLayout L;
    auto add = [&L](std::string name, std::vector<int64_t> dims) {
        size_t size = 1;
        for (int64_t d : dims) size *= size_t(d);
        const size_t offset = L.size();
        L.slices.push_back({std::move(name), std::move(dims), offset, size});
        return offset;
    };
    L.encoded = add("encoded", {B, T, C});
    for (int l = 0; l < shape.layers; ++l) {
        const std::string h = fmt::format("h.{}.", l);
        ActivationLayout::Block a{};
        a.ln1 = add(h + "ln_1", {B, T, C});
        a.ln1Mean = ln ? add(h + "ln_1.mean", {B, T}) : L.size();
        a.ln1Rstd = add(h + "ln_1.rstd", {B, T});
        a.qkv = add(h + "attn.qkv", {B, T, QKV});
        a.attnMax = add(h + "attn.row_max", {B, NH, T});
        a.attnSum = add(h + "attn.row_sum", {B, NH, T});
        a.atty = add(h + "attn.out", {B, T, Q});
        a.residual2 = add(h + "residual_attn", {B, T, C});
        a.ln2 = add(h + "ln_2", {B, T, C});
        a.ln2Mean = ln ? add(h + "ln_2.mean", {B, T}) : L.size();
        a.ln2Rstd = add(h + "ln_2.rstd", {B, T});
        if (shape.isMoeBlock(l)) {
            const int64_t E = shape.numExperts, K = shape.topK;
            a.routerProbs = add(h + "mlp.router.probs", {B, T, E});
            a.gates = add(h + "mlp.router.gates", {B, T, K});
            a.expertFch = add(h + "mlp.experts.c_fc", {B * T * K, F});
            a.expertGelu = add(h + "mlp.experts.gelu", {B * T * K, F});
            a.expertOut = add(h + "mlp.experts.out", {B * T * K, C});
        } else {
            a.fch = add(h + "mlp.c_fc", {B, T, M});  // SwiGLU: [gate | up]
            a.fchGelu = add(h + (shape.mlp == GptShape::Mlp::SwiGlu ? "mlp.swiglu" : "mlp.gelu"),
                            {B, T, F});
        }
        a.residual3 = add(h + "residual_mlp", {B, T, C});
        for (size_t t = 0; t < kLoraTargetCount; ++t)
            if (shape.hasLora() && shape.loraTargets[t])
                a.loraU[t] = add(h + std::string(lora::targetName(lora::Target(t))) + ".lora_u",
                                 {B, T, shape.loraRank});
        L.blocks.push_back(a);
    }
    L.lnf = add("ln_f", {B, T, C});
    L.lnfMean = ln ? add("ln_f.mean", {B, T}) : L.size();
    L.lnfRstd = add("ln_f.rstd", {B, T});
    L.logits = add("logits", {B, T, V});
    L.lse = add("logsumexp", {B, T});
    L.losses = add("losses", {B, T});
    return L;
}

template <typename Real>
Gpt<Real>::Gpt(const GptShape& shape, int batch, int seqLen)
    : m_table(shape),
      m_off(blockOffsets(shape)),
      m_moeOff(shape.hasMoe() ? blockOffsets(shape, 0) : BlockOffsets{}),
      m_B(batch),
      m_T(seqLen),
      m_N(batch * seqLen),
      m_layout(activationLayout(shape, batch, seqLen)) {
    assert(shape.validate(batch, seqLen).ok());
    const int64_t C = shape.channels, F = shape.ffn, V = shape.vocab, QKV = shape.qkvWidth(),
                  Q = shape.qWidth(), M = shape.mlpInWidth();
    m_acts.assign(m_layout.size(), Real(0));

    const size_t N = size_t(m_N);
    m_tokens.assign(N, 0);
    m_targets.assign(N, 0);
    m_branch.assign(N * C, 0);
    m_dres.assign(N * C, 0);
    if (shape.dropout > 0.0) m_dbranch.assign(N * C, 0);
    m_dln.assign(N * C, 0);
    m_dqkv.assign(N * QKV, 0);
    m_datty.assign(N * Q, 0);
    m_dfch.assign(N * M, 0);
    if (shape.mlp == GptShape::Mlp::SwiGlu) m_dact.assign(N * F, 0);
    // Positions stay below T (dense: t; packed: restarted per document).
    m_rotary = rotaryTableFor(shape, seqLen);
    m_alibiSlopes = alibiSlopesFor<Real>(shape);
    if (shape.hasMoe()) {
        const size_t K = size_t(shape.topK), E = size_t(shape.numExperts);
        m_dfch.assign(N * K * F, 0);
        m_moeX.assign(N * K * C, 0);
        m_moeDx.assign(N * K * C, 0);
        m_moeDy.assign(N * K * C, 0);
        m_moeDgates.assign(N * K, 0);
        m_moeDlogits.assign(N * E, 0);
        m_routing.resize(size_t(shape.layers));
        m_moeMatrices = {MatrixRange{m_moeOff.qkvw, size_t(C) * 3 * C},
                         MatrixRange{m_moeOff.attprojw, size_t(C) * C}};
        for (int e = 0; e < shape.numExperts; ++e) {
            m_moeMatrices.push_back({m_moeOff.fcw + m_moeOff.expert(e), size_t(C) * F});
            m_moeMatrices.push_back({m_moeOff.fcprojw + m_moeOff.expert(e), size_t(F) * C});
        }
    }
    if (shape.hasLora()) {
        m_loraDu.assign(N * size_t(shape.loraRank), 0);
        if (shape.loraDropout > 0.0) m_loraDropped.assign(N * size_t(std::max({C, Q, F})), 0);
    }
    if (std::is_same_v<Real, float> && shape.bf16) {
        size_t largest = 0;
        for (const LayerSlice& layer : m_table.layers()) largest = std::max(largest, layer.size);
        const LayerSlice& head = m_table.layers()[m_table.headLayer()];
        const size_t headWithWte = head.size + (shape.tiedEmbedding ? size_t(V * C) : 0);
        m_bf16Weights.assign(std::max(largest, headWithWte), 0);
        m_bf16Packed.assign(m_bf16Weights.size(), 0);
    }
    const size_t Cs = size_t(C), Fs = size_t(F);
    m_blockMatrices = {MatrixRange{m_off.qkvw, Cs * size_t(QKV)},
                       MatrixRange{m_off.attprojw, size_t(Q) * Cs},
                       MatrixRange{m_off.fcw, Cs * size_t(M)}, MatrixRange{m_off.fcprojw, Fs * Cs}};
}

template <typename Real>
const Real* Gpt<Real>::activation(std::string_view name) const {
    for (const ActivationSlice& s : m_layout.slices) {
        if (s.name == name) return m_acts.data() + s.offset;
    }
    return nullptr;
}

template <typename Real>
const Real* Gpt<Real>::blockInput(int layer) const {
    return m_acts.data() +
           (layer == 0 ? m_layout.encoded : m_layout.blocks[size_t(layer - 1)].residual3);
}

template <typename Real>
uint64_t Gpt<Real>::dropoutKey(int layerIndex, int site) const {
    return rng::deriveKey(rng::deriveKey(m_dropoutSeed, uint64_t(layerIndex)), uint64_t(site));
}

template <typename Real>
const Real* Gpt<Real>::computeWeights(LayerWeights<Real> params, size_t count, size_t scratchOffset,
                                      std::span<const MatrixRange> matrices) {
    if constexpr (std::is_same_v<Real, float>) {
        if (shape().bf16) {
            // Matrices only as bf16 bits (the matmuls read nothing else); the rest (LayerNorm
            // gains, biases, embedding rows) as bf16-valued floats: rounded here from fp32, or
            // widened from a packed slice (exact), which gives the same floats, since packing
            // is the same RNE rounding.
            float* dst = m_bf16Weights.data() + scratchOffset;
            const uint16_t* bits = params.bf16;
            if (!bits) bits = m_bf16Packed.data() + scratchOffset;
            size_t done = 0;
            const auto vectorsUpTo = [&](size_t end) {
                if (end <= done) return;
                if (params.bf16) {
                    tensor::bf16ToFloat(params.bf16 + done, dst + done, end - done);
                } else {
                    std::copy(params.values + done, params.values + end, dst + done);
                    tensor::roundToBf16(dst + done, end - done);
                }
            };
            for (const MatrixRange& m : matrices) {
                vectorsUpTo(m.offset);
                if (!params.bf16)
                    tensor::floatToBf16(params.values + m.offset,
                                        m_bf16Packed.data() + scratchOffset + m.offset, m.size);
                done = m.offset + m.size;
            }
            vectorsUpTo(count);
            if (scratchOffset == 0) m_packedRegions[1] = {};
            m_packedRegions[scratchOffset == 0 ? 0 : 1] = {scratchOffset, count, bits};
            return dst;
        }
    }
    assert(!params.bf16 && "packed bf16 weights need bf16 mode (Gpt<float>, shape.bf16)");
    (void)count;
    (void)scratchOffset;
    (void)matrices;
    return params.values;
}

template <typename Real>
const Real* Gpt<Real>::headWeights(LayerWeights<Real> headParams, LayerWeights<Real> wte,
                                   const Real** W) {
    const GptShape& s = shape();
    const size_t C = size_t(s.channels), VC = size_t(s.vocab) * C;
    const size_t headSize = m_table.layers()[size_t(m_table.headLayer())].size;
    if (s.tiedEmbedding) {
        const MatrixRange whole[] = {{0, VC}};
        const Real* w = computeWeights(headParams, headSize, 0);  // first: it starts the layer
        *W = computeWeights(wte, VC, headSize, whole);
        return w;
    }
    const size_t lnf = s.layerNorm() ? 2 * C : C;  // lm_head follows ln_f's gain (and bias)
    const MatrixRange lmHead[] = {{lnf, VC}};
    const Real* w = computeWeights(headParams, headSize, 0, lmHead);
    *W = w + lnf;
    return w;
}

template <typename Real>
bool Gpt<Real>::bf16() const {
    return std::is_same_v<Real, float> && shape().bf16;
}

template <typename Real>
const uint16_t* Gpt<Real>::packedWeight(const Real* weight) const {
    if (!bf16()) return nullptr;
    assert(weight >= m_bf16Weights.data() && weight < m_bf16Weights.data() + m_bf16Weights.size());
    const size_t at = size_t(weight - m_bf16Weights.data());
    for (const PackedRegion& r : m_packedRegions) {
        if (r.bits && at >= r.offset && at < r.offset + r.count) return r.bits + (at - r.offset);
    }
    assert(false && "a matrix outside the layer being computed");
    return nullptr;
}

template <typename Real>
ops::MatmulMode Gpt<Real>::linearMode(const Real* weight) const {
    return {bf16(), packedWeight(weight)};
}

template <typename Real>
void Gpt<Real>::roundActivation(Real* data, size_t count) const {
    if constexpr (std::is_same_v<Real, float>) {
        if (shape().bf16) tensor::roundToBf16(data, count);
    } else {
        (void)data;
        (void)count;
    }
}

template <typename Real>
void Gpt<Real>::setFrozen(std::vector<bool> frozen) {
    assert(frozen.empty() || frozen.size() == m_table.tensors().size());
    m_frozen = std::move(frozen);
}

template <typename Real>
Real* Gpt<Real>::gradOf(int layerIndex, Real* layerGrads, size_t offset) const {
    if (offset == BlockOffsets::kAbsent) return nullptr;  // a tensor the block options leave out
    if (m_frozen.empty() || !layerGrads) return layerGrads ? layerGrads + offset : nullptr;
    const LayerSlice& layer = m_table.layers()[size_t(layerIndex)];
    for (size_t t = layer.firstTensor; t < layer.firstTensor + layer.tensorCount; ++t) {
        if (m_table.tensors()[t].offset == layer.offset + offset)
            return m_frozen[t] ? nullptr : layerGrads + offset;
    }
    assert(false && "no tensor starts at that offset");
    return layerGrads + offset;
}

template <typename Real>
ops::AttentionShape Gpt<Real>::attentionShape() const {
    const GptShape& s = shape();
    return ops::AttentionShape{s.heads, s.kvHeadCount(), s.headSize()};
}

template <typename Real>
void Gpt<Real>::normForward(Real* out, Real* mean, Real* rstd, const Real* inp, const Real* weight,
                            const Real* bias) {
    const GptShape& s = shape();
    if (s.layerNorm()) {
        ops::layerNormForward(out, mean, rstd, inp, weight, bias, m_N, s.channels, s.lnEps);
    } else {
        ops::rmsNormForward(out, rstd, inp, weight, m_N, s.channels, s.lnEps);
    }
}

template <typename Real>
void Gpt<Real>::normBackward(Real* dinp, Real* dweight, Real* dbias, const Real* dout,
                             const Real* inp, const Real* weight, const Real* mean,
                             const Real* rstd) {
    const GptShape& s = shape();
    if (s.layerNorm()) {
        ops::layerNormBackward(dinp, dweight, dbias, dout, inp, weight, mean, rstd, m_N,
                               s.channels);
    } else {
        ops::rmsNormBackward(dinp, dweight, dout, inp, weight, rstd, m_N, s.channels);
    }
}

template <typename Real>
void Gpt<Real>::beginStep(bool training, uint64_t dropoutSeed) {
    m_training = training;
    m_dropoutSeed = dropoutSeed;
    m_haveTargets = false;
}

template <typename Real>
void Gpt<Real>::embedForward(LayerWeights<Real> embeddingParams, const int32_t* inputs) {
    const GptShape& s = shape();
    const size_t C = size_t(s.channels), n = size_t(m_N) * C;
    std::copy(inputs, inputs + m_N, m_tokens.begin());
    const size_t rows = size_t(s.vocab) + (s.learnedPositions() ? size_t(s.maxPositions) : 0);
    const Real* w = computeWeights(embeddingParams, rows * C, 0);
    Real* encoded = act(m_layout.encoded);
    if (!s.learnedPositions()) {  // rotary / ALiBi: positions enter in the attention
        ops::embeddingForward(encoded, inputs, w, static_cast<const Real*>(nullptr), m_B, m_T,
                              s.channels);
    } else if (packed()) {
        ops::packedEmbeddingForward(encoded, inputs, m_positionIds.data(), w,
                                    w + size_t(s.vocab) * C, m_B, m_T, s.channels);
    } else {
        ops::embeddingForward(encoded, inputs, w, w + size_t(s.vocab) * C, m_B, m_T, s.channels);
    }
    // μP: embedding output × m_emb (Cerebras-GPT Appendix G, `embeddings_scale`; applied before
    // dropout as in ModelZoo's gpt2_model.py).
    if (s.embeddingsScale != 1.0) {
        const Real scale = Real(s.embeddingsScale);
        for (size_t i = 0; i < n; ++i) encoded[i] *= scale;
    }
    ops::dropoutForward(encoded, n, rate(s.dropout),
                        dropoutKey(ParameterTable::embeddingLayer(), kEmbedding));
}

template <typename Real>
void Gpt<Real>::adapterForward(int layer, int target, Real* out, const Real* inp, const Real* w,
                               int IN, int OUT) {
    const GptShape& s = shape();
    if (!s.hasLora() || !s.loraTargets[size_t(target)]) return;
    // A slice target (q_proj, ...) adds into its columns of the fused output (row stride OUT).
    const lora::LinearShape ls = lora::linearShape(lora::Target(target), s);
    lora::loraForward(
        out + ls.column, act(m_layout.blocks[size_t(layer)].loraU[size_t(target)]),
        m_loraDropped.data(), inp, w + m_off.loraA[size_t(target)], w + m_off.loraB[size_t(target)],
        m_N, IN, s.loraRank, ls.out, Real(s.loraScale), rate(s.loraDropout),
        dropoutKey(ParameterTable::blockLayer(layer), kLoraInput + target), bf16(), OUT);
}

template <typename Real>
void Gpt<Real>::adapterBackward(int layer, int target, Real* dinp, const Real* dout,
                                const Real* inp, const Real* w, Real* g, int IN, int OUT) {
    const GptShape& s = shape();
    if (!s.hasLora() || !s.loraTargets[size_t(target)]) return;
    const size_t t = size_t(target);
    const int layerIndex = ParameterTable::blockLayer(layer);
    const lora::LinearShape ls = lora::linearShape(lora::Target(target), s);
    lora::loraBackward(
        dinp, gradOf(layerIndex, g, m_off.loraA[t]), gradOf(layerIndex, g, m_off.loraB[t]),
        m_loraDu.data(), m_loraDropped.data(), dout + ls.column, inp,
        act(m_layout.blocks[size_t(layer)].loraU[t]), w + m_off.loraA[t], w + m_off.loraB[t], m_N,
        IN, s.loraRank, ls.out, Real(s.loraScale), rate(s.loraDropout),
        dropoutKey(ParameterTable::blockLayer(layer), kLoraInput + target), bf16(), OUT);
}

template <typename Real>
void Gpt<Real>::blockForward(int layer, LayerWeights<Real> blockParams) {
    const GptShape& s = shape();
    const int N = m_N, C = s.channels, F = s.ffn, Q = s.qWidth(), QKV = s.qkvWidth(),
              M = s.mlpInWidth();
    const size_t nc = size_t(N) * C;
    const int layerIndex = ParameterTable::blockLayer(layer);
    const BlockOffsets& o = offsets(layer);
    const Real* w = computeWeights(blockParams, o.size, 0, blockMatrices(layer));
    const ActivationLayout::Block& a = m_layout.blocks[size_t(layer)];
    const Real* input = blockInput(layer);
    const ops::AttentionShape heads = attentionShape();

    normForward(act(a.ln1), act(a.ln1Mean), act(a.ln1Rstd), input, w + o.ln1w,
                BlockOffsets::at(w, o.ln1b));
    roundActivation(act(a.ln1), nc);
    ops::linearForward(act(a.qkv), act(a.ln1), w + o.qkvw, BlockOffsets::at(w, o.qkvb), N, C, QKV,
                       linearMode(w + o.qkvw));
    adapterForward(layer, 0, act(a.qkv), act(a.ln1), w, C, QKV);
    for (const lora::Target t : {lora::Target::QProj, lora::Target::KProj, lora::Target::VProj})
        adapterForward(layer, int(t), act(a.qkv), act(a.ln1), w, C, QKV);
    roundActivation(act(a.qkv), size_t(N) * QKV);
    if (m_rotary) {  // q and k rotate by position, as bf16 values in bf16 mode (autocast's)
        ops::ropeForward(act(a.qkv), *m_rotary, heads, positionIds(), m_B, m_T);
        roundActivation(act(a.qkv), size_t(N) * QKV);
    }
    if (packed()) {
        ops::packedAttentionForward(act(a.atty), act(a.attnMax), act(a.attnSum), act(a.qkv),
                                    m_positionIds.data(), m_B, m_T, heads, s.attentionScale<Real>(),
                                    rate(s.attnDropout), dropoutKey(layerIndex, kAttentionProbs),
                                    bf16(), alibiSlopes());
    } else {
        ops::attentionForward(act(a.atty), act(a.attnMax), act(a.attnSum), act(a.qkv), m_B, m_T,
                              heads, s.attentionScale<Real>(), rate(s.attnDropout),
                              dropoutKey(layerIndex, kAttentionProbs), bf16(), alibiSlopes());
    }
    roundActivation(act(a.atty), size_t(N) * Q);
    ops::linearForward(m_branch.data(), act(a.atty), w + o.attprojw,
                       BlockOffsets::at(w, o.attprojb), N, Q, C, linearMode(w + o.attprojw));
    adapterForward(layer, 1, m_branch.data(), act(a.atty), w, Q, C);
    roundActivation(m_branch.data(), nc);
    ops::dropoutForward(m_branch.data(), nc, rate(s.dropout),
                        dropoutKey(layerIndex, kAttentionOut));
    ops::residualForward(act(a.residual2), input, m_branch.data(), nc);

    normForward(act(a.ln2), act(a.ln2Mean), act(a.ln2Rstd), act(a.residual2), w + o.ln2w,
                BlockOffsets::at(w, o.ln2b));
    roundActivation(act(a.ln2), nc);
    if (o.experts > 0) {
        moeForward(layer, w);
    } else {
        ops::linearForward(act(a.fch), act(a.ln2), w + o.fcw, BlockOffsets::at(w, o.fcb), N, C, M,
                           linearMode(w + o.fcw));
        adapterForward(layer, 2, act(a.fch), act(a.ln2), w, C, M);
        for (const lora::Target t : {lora::Target::GateProj, lora::Target::UpProj})
            adapterForward(layer, int(t), act(a.fch), act(a.ln2), w, C, M);
        roundActivation(act(a.fch), size_t(N) * M);
        if (s.mlp == GptShape::Mlp::SwiGlu) {
            ops::swigluForward(act(a.fchGelu), act(a.fch), N, F);
        } else {
            ops::geluForward(act(a.fchGelu), act(a.fch), size_t(N) * F);
        }
        roundActivation(act(a.fchGelu), size_t(N) * F);
        ops::linearForward(m_branch.data(), act(a.fchGelu), w + o.fcprojw,
                           BlockOffsets::at(w, o.fcprojb), N, F, C, linearMode(w + o.fcprojw));
        adapterForward(layer, 3, m_branch.data(), act(a.fchGelu), w, F, C);
    }
    roundActivation(m_branch.data(), nc);
    ops::dropoutForward(m_branch.data(), nc, rate(s.dropout), dropoutKey(layerIndex, kMlpOut));
    ops::residualForward(act(a.residual3), act(a.residual2), m_branch.data(), nc);
}

template <typename Real>
Real Gpt<Real>::headForward(LayerWeights<Real> headParams, LayerWeights<Real> wte,
                            const int32_t* targets) {
    const GptShape& s = shape();
    const int N = m_N, C = s.channels, V = s.vocab;
    // The output projection W (V,C): tied to wte, or lm_head.weight right after ln_f.
    const Real* W = nullptr;
    const Real* w = headWeights(headParams, wte, &W);
    const Real* last = blockInput(s.layers);

    normForward(act(m_layout.lnf), act(m_layout.lnfMean), act(m_layout.lnfRstd), last, w,
                s.layerNorm() ? w + C : nullptr);
    roundActivation(act(m_layout.lnf), size_t(N) * C);
    // μP: logits × output_logits_alpha / m_d (1 under SP; see GptShape::fromConfig).
    precisionGemm<Real>(bf16(), Trans::No, Trans::Yes, N, V, C, Real(s.outputLogitsScale),
                        act(m_layout.lnf), nullptr, C, W, packedWeight(W), C, Real(0),
                        act(m_layout.logits), V);
    roundActivation(act(m_layout.logits), size_t(N) * V);
    m_haveTargets = targets != nullptr;
    if (!targets) return Real(0);
    std::copy(targets, targets + N, m_targets.begin());
    ops::crossEntropyForward(act(m_layout.losses), act(m_layout.lse), act(m_layout.logits), targets,
                             N, V);
    // Masked rows' losses are exactly 0, so summing every row adds nothing for them.
    double sum = 0.0;  // fixed order, so the loss is reproducible
    for (int n = 0; n < N; ++n) sum += double(m_acts[m_layout.losses + size_t(n)]);
    m_lossTokens = countTrainedTargets(targets, size_t(N));
    // D: the caller's, or the trained count (N when nothing is masked: today's mean, bit for bit).
    const double D = m_lossDenominator > 0.0 ? m_lossDenominator : double(m_lossTokens);
    m_lossScale = D;
    m_lastCrossEntropy = D > 0.0 ? sum / D : 0.0;
    if (s.hasMoe() && m_training) return Real(m_lastCrossEntropy + loadBalancingLoss());
    return Real(m_lastCrossEntropy);
}

template <typename Real>
void Gpt<Real>::setLossDenominator(double denominator) {
    assert(denominator >= 0.0);
    m_lossDenominator = denominator;
}

template <typename Real>
void Gpt<Real>::headBackward(LayerWeights<Real> headParams, LayerWeights<Real> wte, Real* headGrads,
                             Real* dWte) {
    assert(m_haveTargets && "headBackward needs a forward with targets");
    const GptShape& s = shape();
    const int N = m_N, C = s.channels, V = s.vocab;
    const Real* W = nullptr;
    const Real* w = headWeights(headParams, wte, &W);
    const int head = m_table.headLayer(), emb = ParameterTable::embeddingLayer();
    const size_t lnf = s.layerNorm() ? 2 * size_t(C) : size_t(C);  // ln_f's gain (and bias)
    Real* dW = s.tiedEmbedding ? gradOf(emb, dWte, 0) : gradOf(head, headGrads, lnf);

    Real* dlogits = act(m_layout.logits);  // in place: the logits are not needed any more
    // dLoss/dlogit row: 1/D (a masked row's gradient is zero whatever the scale).
    const Real dlossPerRow = m_lossScale > 0.0 ? Real(1) / Real(m_lossScale) : Real(0);
    ops::crossEntropyBackward(dlogits, act(m_layout.logits), act(m_layout.lse), m_targets.data(),
                              dlossPerRow, N, V);
    const Real logitScale = Real(s.outputLogitsScale);  // logits = scale · ln_f · Wᵀ
    // bf16: dlogits feeds both products, so it is packed once.
    const uint16_t* dlogitsBf16 = packOnceForBf16(bf16(), dlogits, size_t(N) * V);
    precisionGemm<Real>(bf16(), Trans::No, Trans::No, N, C, V, logitScale, dlogits, dlogitsBf16, V,
                        W, packedWeight(W), C, Real(0), m_dln.data(), C);
    if (dW) {
        precisionGemm<Real>(bf16(), Trans::Yes, Trans::No, V, C, N, logitScale, dlogits,
                            dlogitsBf16, V, act(m_layout.lnf), nullptr, C, Real(1), dW, C);
    }
    std::fill(m_dres.begin(), m_dres.end(), Real(0));
    normBackward(m_dres.data(), gradOf(head, headGrads, 0),
                 s.layerNorm() ? gradOf(head, headGrads, size_t(C)) : nullptr, m_dln.data(),
                 blockInput(s.layers), w, act(m_layout.lnfMean), act(m_layout.lnfRstd));
    m_haveTargets = false;
}

template <typename Real>
void Gpt<Real>::blockBackward(int layer, LayerWeights<Real> blockParams, Real* blockGrads) {
    const GptShape& s = shape();
    const int N = m_N, C = s.channels, F = s.ffn, Q = s.qWidth(), QKV = s.qkvWidth(),
              M = s.mlpInWidth();
    const size_t nc = size_t(N) * C;
    const int layerIndex = ParameterTable::blockLayer(layer);
    const BlockOffsets& o = offsets(layer);
    const Real* w = computeWeights(blockParams, o.size, 0, blockMatrices(layer));
    Real* g = blockGrads;
    auto dW = [&](size_t offset) { return gradOf(layerIndex, blockGrads, offset); };
    const ActivationLayout::Block& a = m_layout.blocks[size_t(layer)];
    const ops::AttentionShape heads = attentionShape();
    Real* dres = m_dres.data();  // holds d(residual_mlp) on entry, d(block input) on exit
    const double p = rate(s.dropout);
    auto branchGrad = [&](int site) -> const Real* {
        if (p <= 0.0) return dres;
        ops::dropoutBackward(m_dbranch.data(), dres, nc, p, dropoutKey(layerIndex, site));
        return m_dbranch.data();
    };

    // MLP branch.
    const Real* dMlpOut = branchGrad(kMlpOut);
    if (o.experts > 0) {
        moeBackward(layer, w, blockGrads, dMlpOut);
    } else {
        const bool swiglu = s.mlp == GptShape::Mlp::SwiGlu;
        Real* dAct = swiglu ? m_dact.data() : m_dfch.data();  // d(activation output) (N,F)
        ops::linearBackward(dAct, false, dW(o.fcprojw), dW(o.fcprojb), dMlpOut, act(a.fchGelu),
                            w + o.fcprojw, N, F, C, linearMode(w + o.fcprojw));
        adapterBackward(layer, 3, dAct, dMlpOut, act(a.fchGelu), w, g, F, C);
        if (swiglu) {
            ops::swigluBackward(m_dfch.data(), act(a.fch), dAct, N, F);
        } else {
            ops::geluBackward(m_dfch.data(), act(a.fch), m_dfch.data(), size_t(N) * F);
        }
        ops::linearBackward(m_dln.data(), false, dW(o.fcw), dW(o.fcb), m_dfch.data(), act(a.ln2),
                            w + o.fcw, N, C, M, linearMode(w + o.fcw));
        adapterBackward(layer, 2, m_dln.data(), m_dfch.data(), act(a.ln2), w, g, C, M);
        for (const lora::Target t : {lora::Target::GateProj, lora::Target::UpProj})
            adapterBackward(layer, int(t), m_dln.data(), m_dfch.data(), act(a.ln2), w, g, C, M);
    }
    normBackward(dres, dW(o.ln2w), dW(o.ln2b), m_dln.data(), act(a.residual2), w + o.ln2w,
                 act(a.ln2Mean), act(a.ln2Rstd));
    // Attention branch.
    const Real* dAttentionOut = branchGrad(kAttentionOut);
    ops::linearBackward(m_datty.data(), false, dW(o.attprojw), dW(o.attprojb), dAttentionOut,
                        act(a.atty), w + o.attprojw, N, Q, C, linearMode(w + o.attprojw));
    adapterBackward(layer, 1, m_datty.data(), dAttentionOut, act(a.atty), w, g, Q, C);
    if (packed()) {
        ops::packedAttentionBackward(
            m_dqkv.data(), m_datty.data(), act(a.qkv), act(a.attnMax), act(a.attnSum),
            m_positionIds.data(), m_B, m_T, heads, s.attentionScale<Real>(), rate(s.attnDropout),
            dropoutKey(layerIndex, kAttentionProbs), bf16(), alibiSlopes());
    } else {
        ops::attentionBackward(m_dqkv.data(), m_datty.data(), act(a.qkv), act(a.attnMax),
                               act(a.attnSum), m_B, m_T, heads, s.attentionScale<Real>(),
                               rate(s.attnDropout), dropoutKey(layerIndex, kAttentionProbs), bf16(),
                               alibiSlopes());
    }
    // The saved qkv holds rotated q and k; their gradient rotates back to the projection's.
    if (m_rotary) ops::ropeBackward(m_dqkv.data(), *m_rotary, heads, positionIds(), m_B, m_T);
    ops::linearBackward(m_dln.data(), false, dW(o.qkvw), dW(o.qkvb), m_dqkv.data(), act(a.ln1),
                        w + o.qkvw, N, C, QKV, linearMode(w + o.qkvw));
    adapterBackward(layer, 0, m_dln.data(), m_dqkv.data(), act(a.ln1), w, g, C, QKV);
    for (const lora::Target t : {lora::Target::QProj, lora::Target::KProj, lora::Target::VProj})
        adapterBackward(layer, int(t), m_dln.data(), m_dqkv.data(), act(a.ln1), w, g, C, QKV);
    normBackward(dres, dW(o.ln1w), dW(o.ln1b), m_dln.data(), blockInput(layer), w + o.ln1w,
                 act(a.ln1Mean), act(a.ln1Rstd));
}

template <typename Real>
void Gpt<Real>::embedBackward(Real* embeddingGrads) {
    const GptShape& s = shape();
    const size_t C = size_t(s.channels), nc = size_t(m_N) * C;
    const double p = rate(s.dropout);
    Real* d = m_dres.data();
    if (p > 0.0) {
        ops::dropoutBackward(m_dbranch.data(), m_dres.data(), nc, p,
                             dropoutKey(ParameterTable::embeddingLayer(), kEmbedding));
        d = m_dbranch.data();
    }
    if (s.embeddingsScale != 1.0) {  // encoded = m_emb · (wte + wpe); d is not needed after this
        const Real scale = Real(s.embeddingsScale);
        for (size_t i = 0; i < nc; ++i) d[i] *= scale;
    }
    const int emb = ParameterTable::embeddingLayer();
    Real* dwte = gradOf(emb, embeddingGrads, 0);
    Real* dwpe = s.learnedPositions() ? gradOf(emb, embeddingGrads, size_t(s.vocab) * C) : nullptr;
    if (!dwte && !dwpe) return;  // frozen embeddings: nothing below needs a gradient
    if (packed() || !dwpe) {
        ops::embeddingBackward(dwte, static_cast<Real*>(nullptr), d, m_tokens.data(), m_B, m_T,
                               s.channels);
        if (dwpe) ops::packedPositionBackward(dwpe, d, m_positionIds.data(), m_B, m_T, s.channels);
    } else {
        ops::embeddingBackward(dwte, dwpe, d, m_tokens.data(), m_B, m_T, s.channels);
    }
}

template <typename Real>
void Gpt<Real>::setPositionIds(const int32_t* positionIds) {
    if (!positionIds) {
        m_positionIds.clear();
        return;
    }
    assert(ops::checkPositionIds(positionIds, m_B, m_T).ok());
    m_positionIds.assign(positionIds, positionIds + m_N);
}

template <typename Real>
Real Gpt<Real>::forward(const Real* params, const int32_t* inputs, const int32_t* targets,
                        bool training, uint64_t dropoutSeed) {
    const auto& layers = m_table.layers();
    const Real* embedding = params + layers[size_t(ParameterTable::embeddingLayer())].offset;
    beginStep(training, dropoutSeed);
    embedForward(embedding, inputs);
    for (int l = 0; l < shape().layers; ++l) {
        blockForward(l, params + layers[size_t(ParameterTable::blockLayer(l))].offset);
    }
    return headForward(params + layers[size_t(m_table.headLayer())].offset, embedding, targets);
}

template <typename Real>
void Gpt<Real>::backward(const Real* params, Real* grads) {
    const auto& layers = m_table.layers();
    const size_t emb = layers[size_t(ParameterTable::embeddingLayer())].offset;
    const size_t head = layers[size_t(m_table.headLayer())].offset;
    headBackward(params + head, params + emb, grads + head,
                 shape().tiedEmbedding ? grads + emb : nullptr);
    for (int l = shape().layers - 1; l >= 0; --l) {
        const size_t off = layers[size_t(ParameterTable::blockLayer(l))].offset;
        blockBackward(l, params + off, grads + off);
    }
    embedBackward(grads + emb);
}

template <typename Real>
const BlockOffsets& Gpt<Real>::offsets(int layer) const {
    return shape().isMoeBlock(layer) ? m_moeOff : m_off;
}

template <typename Real>
auto Gpt<Real>::blockMatrices(int layer) const -> std::span<const MatrixRange> {
    if (shape().isMoeBlock(layer)) return m_moeMatrices;
    return m_blockMatrices;
}

template <typename Real>
const Real* Gpt<Real>::logits(int b, int t) const {
    return m_acts.data() + m_layout.logits + (size_t(b) * m_T + size_t(t)) * size_t(shape().vocab);
}

template class Gpt<float>;
template class Gpt<double>;

}  // namespace ws::model
