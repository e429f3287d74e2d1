// SPDX-License-Identifier: GPL-3.0-or-later
// Gpt<Real>: the decoder's forward and backward pass over a flat parameter buffer laid out by
// ParameterTable (parameters.h), for one batch shape (B, T) fixed at construction. Like llm.c's
// train_gpt2.c: one contiguous activation buffer split by a size table, layer-by-layer functions.
// Real = float trains; Real = double is the exact reference for gradient checks.
//
// One decoder with configurable blocks (GptShape's options; GPT-2 below is the default, and with
// the defaults every op and bit is GPT-2's). Llama / Mistral / Qwen2 / BTLM are configurations:
//   norm: LayerNorm, or RMSNorm (x · rstd · gain, no mean, no bias; ops::rmsNormForward);
//   positions: learned wpe added to the embedding, rotary (q and k of each head rotated by
//     position in HF's half layout right after the qkv projection, over the first rotary_dim
//     dims; the backward rotates dq and dk back; packed rows use their position ids), or ALiBi
//     (slope_h · (j - i) added to the scores);
//   attention: NH query heads of hs and KV key/value heads (grouped-query: query head h reads KV
//     head h / (NH / KV)); qkv = [q (NH·hs) | k (KV·hs) | v (KV·hs)], attention output NH·hs;
//   MLP: GELU, or SwiGLU: c_fc gives [gate | up] (2F), then silu(gate) · up (F), then c_proj;
//   biases: each linear's only when its option is on; the head tied to wte or lm_head.weight.
// In bf16 mode the rotated q and k are rounded again after the rotation (autocast rounds the
// rotation's bf16 arithmetic), and SwiGLU's output is rounded like GELU's.
//
// Architecture (GPT-2 exactly): x = dropout(wte[token] + wpe[pos]); per block, pre-LN:
//   x = x + dropout(c_proj(attn(ln_1(x))))  (causal, scores / sqrt(hs), dropout on probabilities)
//   x = x + dropout(mlp.c_proj(gelu_tanh(c_fc(ln_2(x)))))
// then ln_f, logits = ln_f(x) · Wᵀ with W = wte (tied) or lm_head.weight (V,C), and the mean
// cross-entropy over the B*T positions (the training mask: a target < 0 is a position not trained
// on, see headForward; with every target >= 0 it is the mean over all of them). Dropout only in
// training mode, inverted scaling, masks from the counter-based stream of (dropoutSeed, layer,
// site), so a step is reproducible and a rate of 0 draws no random numbers.
//
// LoRA (GptShape::loraRank > 0, lora.h): each targeted linear's output gains
// alpha/r · dropout(x)·A·B right after the base product (before any bf16 rounding of that output),
// with the adapter-dropout mask from site kLoraInput + target of the layer's stream; the backward
// adds the adapter's part of the input gradient. The adapters live at the end of each block's slice
// (ParameterTable), so per-layer entry points, streaming and packing handle them like any tensor:
// in bf16 mode their values are bf16-rounded floats like the layer's vectors, and their matmuls,
// forward and backward, run on the bf16 backend like the base matmuls (lora.h).
//
// Mixture of experts (GptShape::isMoeBlock, moe.h, moe.cpp): an MoE block's MLP branch is
// sum over its token's kept top-k experts of gate · expert_MLP(ln_2(x)), each expert a GPT-2 MLP
// (c_fc, GELU, c_proj) computed on the rows routed to it, then dropout and the residual add as in
// a dense block. The router's product and softmax stay fp32 in bf16 mode (its weight is a
// bf16-valued float like the layer's vectors); each expert's matmuls run like the dense MLP's,
// with its c_fc output, GELU output and c_proj output rounded to bf16, and the gated sum rounded
// like the dense projection output. In training the forward's loss adds every MoE block's
// load-balancing loss (moe.h), whose gradient the block's backward adds to the router.
//
// μP multipliers (GptShape, all 1 under SP): the embedding sum × embeddings_scale (before
// dropout), scores × GptShape::attentionScale() instead of 1/sqrt(hs), logits × outputLogitsScale;
// the backward applies the same factors.
//
// Packed sequences (setPositionIds, packed_sequences.h): with ModelZoo's position_ids a row holds
// several documents; positions restart at each and attention stays inside each. Without them (the
// default) every op is the dense one above, untouched.
//
// Attention keeps no (T,T) matrix: per layer the activations hold q, k, v ("h.N.attn.qkv"), the
// heads' output and each query row's softmax statistics ("h.N.attn.row_max", "h.N.attn.row_sum",
// (B,NH,T) each), and blockBackward recomputes the probabilities block by block from q, k and the
// saved max, bit-identical to the forward's (attention.cpp), so memory per head grows linearly
// with T (at T = 2048, 16 KiB of statistics per head and layer instead of 16 MiB of
// probabilities).
//
// bf16 mode (shape.bf16, Gpt<float> only; Gpt<double> ignores it): a bf16-rounded (RNE) copy of
// each layer's fp32 weights is what the layer computes with, in forward and backward. Rounded to
// bf16 after their op: ln_1/ln_2/ln_f outputs, qkv, attention output, both projection outputs
// (before dropout), c_fc output, GELU output, logits; the attention probabilities as the backward
// recomputes them (the forward's product with v rounds its operand itself). Kept fp32, as under
// PyTorch autocast where a bf16 branch added to an fp32 stream stays fp32: the residual stream
// (embedding sum, residual adds), LayerNorm statistics, softmax/cross-entropy, every gradient, and
// the master weights and their gradients. Every matmul, forward and backward (including the
// attention products and the logits), runs on the bf16 backend (tensor::MatmulBackend::OneDnnBf16:
// bf16 operands, fp32 accumulation and output), so operands that are not bf16 values, the
// gradients flowing backward, are rounded to bf16 as they enter a product, as under autocast.
// Given fp32 weights, a layer's matrices are packed to bf16 bits once each time the layer runs
// (forward, and again in backward) and handed to the kernel packed; given a packed slice (weight
// streaming converts each layer once as it streams onto the wafer) they are used as they are. Its
// vectors (LayerNorm, biases) and the embedding rows are bf16-valued floats either way.
//
// Per-layer entry points take the layer's own slice (params + table().layers()[i].offset), so the
// streaming executor can pass weights from a separate buffer: fp32 values, or in bf16 mode the
// slice already packed to bf16 bits (LayerWeights::packed), as weight streaming converts each layer
// once on its way onto the wafer. A packed slice's matrices go to the bf16 matmuls as they are and
// its vectors are widened to floats (exact), so it computes bit for bit what the fp32 slice
// computes after the per-run packing above. Order: beginStep, embedForward,
// blockForward(0..L-1), headForward; then headBackward, blockBackward(L-1..0), embedBackward.
// Backward functions ACCUMULATE into the gradient slices (the caller zeroes them).
//
// Frozen tensors (setFrozen: fine-tuning's frozen groups, every base tensor of a LoRA run): the
// backward never computes their gradients (no weight-gradient product, no bias or LayerNorm gain
// sums, no embedding scatter) and never writes their gradient slices, while every input gradient
// the trainable tensors need is computed as before, so the trainable gradients are the same bits.
//
// Thread-safety: one step at a time per object (it owns the activations); different Gpt objects
// may run concurrently. Kernels use tensor::computeThreads(). Inputs are programmer contracts
// (tokens in [0, V); check user data with checkTokens()), asserted in debug builds.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "engine/core/result.h"
#include "engine/model/moe.h"
#include "engine/model/ops.h"
#include "engine/model/parameters.h"

namespace ws::model {

// One named activation tensor inside Gpt's activation buffer (for μP coord checks and views).
struct ActivationSlice {
    std::string name;  // "encoded", "h.3.attn.qkv", "h.3.attn.row_max", "ln_f", "logits", ...
    std::vector<int64_t> shape;
    size_t offset = 0;
    size_t size = 0;
};

// Where every activation of a step lives in Gpt's one activation buffer: the size table (llm.c's
// act_sizes) and each tensor's offset, in buffer order: the embedding sum; per block ln_1 with its
// mean and rstd, qkv, the softmax statistics (max and sum per head and row), the attention
// output, the residual, ln_2 with mean and rstd, the MLP's c_fc and GELU outputs (an MoE block:
// router probabilities, gates, and per kept assignment c_fc, GELU and the expert's output), the
// residual, each LoRA adapter's dropout(x)·A; then ln_f with mean and rstd, logits, log-sum-exp
// and the per-token losses. The one source of the activation memory a step needs (the streaming
// executor's fit reads its size). Every tensor is a multiple of batch x seqLen.
struct ActivationLayout {
    struct Block {  // offsets into the buffer
        size_t ln1, ln1Mean, ln1Rstd, qkv, attnMax, attnSum, atty, residual2, ln2, ln2Mean, ln2Rstd,
            fch, fchGelu, residual3;
        std::array<size_t, kLoraTargetCount>
            loraU{};  // per lora::Target: dropout(x) · A (N,R), LoRA only
        // MoE block only (fch and fchGelu unused): router probabilities (N,E), gates (N,k), and
        // per kept assignment, rows grouped by expert (moe::Routing): c_fc output and GELU
        // output (N*k,F), the expert's c_proj output before gating (N*k,C).
        size_t routerProbs = 0, gates = 0, expertFch = 0, expertGelu = 0, expertOut = 0;
    };
    std::vector<ActivationSlice> slices;  // in buffer order, back to back
    size_t encoded = 0;
    std::vector<Block> blocks;
    size_t lnf = 0, lnfMean = 0, lnfRstd = 0, logits = 0, lse = 0, losses = 0;

    size_t size() const { return slices.empty() ? 0 : slices.back().offset + slices.back().size; }
    // What block `layer` (0-based) keeps, and what the head keeps (ln_f to the losses).
    size_t blockSize(int layer) const {
        const size_t end = size_t(layer) + 1 < blocks.size() ? blocks[size_t(layer) + 1].ln1 : lnf;
        return end - blocks[size_t(layer)].ln1;
    }
    size_t headSize() const { return size() - lnf; }
};

ActivationLayout activationLayout(const GptShape& shape, int batch, int seqLen);

// A layer's weights as a per-layer entry point receives them (same layout either way): fp32 values
// (a plain `const Real*` converts), or in bf16 mode (Gpt<float> with shape.bf16 only) the slice as
// bf16 bits (tensor::floatToBf16), which the layer uses without converting anything but its
// vectors. Exactly one pointer is set; a default LayerWeights is "none" (e.g. an untied head's
// wte).
template <typename Real>
struct LayerWeights {
    const Real* values = nullptr;
    const uint16_t* bf16 = nullptr;

    LayerWeights() = default;
    LayerWeights(const Real* fp32) : values(fp32) {}  // NOLINT(google-explicit-constructor)
    static LayerWeights packed(const uint16_t* bits) {
        LayerWeights w;
        w.bf16 = bits;
        return w;
    }
    bool empty() const { return !values && !bf16; }
    // The weights `elements` further on (e.g. the tied head's wte after the head's own slice).
    LayerWeights advanced(size_t elements) const {
        LayerWeights w;
        w.values = values ? values + elements : nullptr;
        w.bf16 = bf16 ? bf16 + elements : nullptr;
        return w;
    }
};

// Fails with a message naming the first token outside [0, vocab).
Status checkTokens(const int32_t* tokens, size_t count, int vocab);
// The targets trained on (>= 0) among count targets; a target < 0 is masked (not trained on).
int64_t countTrainedTargets(const int32_t* targets, size_t count);

template <typename Real>
class Gpt {
public:
    // Precondition: shape.validate(batch, seqLen) is ok.
    Gpt(const GptShape& shape, int batch, int seqLen);

    const GptShape& shape() const { return m_table.shape(); }
    const ParameterTable& table() const { return m_table; }
    int batch() const { return m_B; }
    int seqLen() const { return m_T; }

    // Full step on params (P, table layout). inputs and targets are (B,T) token ids; targets may
    // be null (logits only; returns 0). A target < 0 masks its position (no loss, no gradient).
    // Returns the loss: the trained positions' summed cross-entropy / lossDenominator (see
    // headForward).
    Real forward(const Real* params, const int32_t* inputs, const int32_t* targets, bool training,
                 uint64_t dropoutSeed);
    // After forward with targets: grads (P, table layout) += dLoss/dParams. Consumes the logits.
    void backward(const Real* params, Real* grads);
    // Packed sequences (packed_sequences.h): ModelZoo's position_ids (B,T) for the steps that
    // follow, copied; null returns to the dense layout (position t, attention over the row).
    // Precondition: ops::checkPositionIds accepts them.
    void setPositionIds(const int32_t* positionIds);
    bool packed() const { return !m_positionIds.empty(); }
    // frozen: one flag per ParameterTable tensor (empty: every tensor trains). A frozen tensor's
    // gradient is neither computed nor written by any backward.
    void setFrozen(std::vector<bool> frozen);

    // Logits (V) at position t of sequence b, valid after a forward until the next backward.
    const Real* logits(int b, int t) const;

    // --- Per-layer entry points (slices as described above).
    // Gradients are fp32 (Real) whatever the weights' form: MemoryX's masters take fp32 updates.
    void beginStep(bool training, uint64_t dropoutSeed);
    void embedForward(LayerWeights<Real> embeddingParams, const int32_t* inputs);
    void blockForward(int layer, LayerWeights<Real> blockParams);
    // wte: the embedding slice's wte (V,C), used when the head is tied (may be null otherwise).
    // Loss = (sum of the cross-entropy of the positions whose target is >= 0) / D, plus the MoE
    // load-balancing term when training; backward's gradient is that loss's (dLoss/dlogit row =
    // 1/D on trained rows, 0 on masked ones). D: setLossDenominator's, or by default the count of
    // targets >= 0 in this forward (the mean over trained tokens). Every target < 0 (and D by
    // count): the cross-entropy is 0 and its gradient zero.
    Real headForward(LayerWeights<Real> headParams, LayerWeights<Real> wte, const int32_t* targets);
    // dWte: the embedding gradient slice's wte part when tied (null otherwise).
    void headBackward(LayerWeights<Real> headParams, LayerWeights<Real> wte, Real* headGrads,
                      Real* dWte);
    void blockBackward(int layer, LayerWeights<Real> blockParams, Real* blockGrads);
    void embedBackward(Real* embeddingGrads);

    // --- Mixture of experts, from the last forward (block: 0-based; dense blocks give empty / 0).
    // Tokens each expert of `block` computed, after capacity drops: (E).
    const std::vector<int>& expertTokenCounts(int block) const;
    // Tokens that chose each expert (top-k assignments before capacity): (E).
    const std::vector<int>& expertTokensRouted(int block) const;
    // Assignments of `block` dropped by the expert capacity.
    int droppedAssignments(int block) const;
    // `block`'s load-balancing loss coef · E · sum_e f_e P_e (moe.h).
    double loadBalancingLoss(int block) const;
    // The sum over MoE blocks: what a training forward added to the cross-entropy.
    double loadBalancingLoss() const;
    // The cross-entropy of the last forward with targets: its trained positions' sum / D (its
    // loss without the load-balancing term; by default the mean over trained positions).
    double lastCrossEntropy() const { return m_lastCrossEntropy; }
    // Targets >= 0 (trained positions) in the last forward with targets.
    int64_t lastLossTokens() const { return m_lossTokens; }

    // --- The training mask's denominator D (headForward). 0 (the default): the count of trained
    // targets in each forward. > 0: D fixed by the caller for the forwards that follow, so that a
    // micro-batch's loss and gradient are its share of a larger batch's mean: a caller splitting
    // G trained targets over K equal-weight micro-batches passes G / K and averages the K losses
    // and gradients (the result is the sum over the G targets / G). With every target >= 0 and
    // D = B*T the bits are the unmasked mean's.
    void setLossDenominator(double denominator);
    double lossDenominator() const { return m_lossDenominator; }

    // --- Activations of the last forward, addressable by name.
    const std::vector<ActivationSlice>& activationSlices() const { return m_layout.slices; }
    const Real* activationData() const { return m_acts.data(); }
    const Real* activation(std::string_view name) const;  // null if unknown

private:
    // MoE block: from ln_2's output to m_branch (before dropout), and back: dout (N,C) is the MLP
    // branch's gradient, m_dln receives ln_2 output's gradient (overwritten). moe.cpp.
    void moeForward(int layer, const Real* w);
    void moeBackward(int layer, const Real* w, Real* blockGrads, const Real* dout);
    Real* act(size_t offset) { return m_acts.data() + offset; }
    const Real* blockInput(int layer) const;
    uint64_t dropoutKey(int layerIndex, int site) const;
    double rate(double p) const { return m_training ? p : 0.0; }
    // A matrix inside a layer slice (offset and size in elements), used only by matmuls.
    struct MatrixRange {
        size_t offset, size;
    };
    // The block's layout (dense or MoE) and the matrices its bf16 weights pack.
    const BlockOffsets& offsets(int layer) const;
    std::span<const MatrixRange> blockMatrices(int layer) const;
    // The weights a layer computes with: params itself, or (bf16 mode) a copy at m_bf16Weights +
    // scratchOffset: bf16-valued floats except the listed matrices, whose bf16 bits the matmuls
    // read instead (their float copy is not written): packed here into m_bf16Packed at the same
    // offset from fp32 params, or used where they are in packed params. A call at scratch
    // offset 0 starts a new layer (packedWeight forgets the previous layer's matrices).
    const Real* computeWeights(LayerWeights<Real> params, size_t count, size_t scratchOffset,
                               std::span<const MatrixRange> matrices = {});
    // The head's weights (ln_f, and lm_head when untied) and, in *W, the output projection.
    const Real* headWeights(LayerWeights<Real> headParams, LayerWeights<Real> wte, const Real** W);
    void roundActivation(Real* data, size_t count) const;
    // Where the gradient of the tensor at `offset` inside layer `layerIndex` goes: layerGrads +
    // offset, or null when that tensor is frozen.
    Real* gradOf(int layerIndex, Real* layerGrads, size_t offset) const;
    bool bf16() const;  // bf16 mode: Gpt<float> with shape().bf16
    // The bf16 packing of a weight inside the m_bf16Weights copy (null outside bf16 mode).
    const uint16_t* packedWeight(const Real* weight) const;
    ops::MatmulMode linearMode(const Real* weight) const;
    // The attention's head layout, the ALiBi slopes (null without ALiBi), the position ids the
    // rotary op reads (null: position t).
    ops::AttentionShape attentionShape() const;
    const Real* alibiSlopes() const {
        return m_alibiSlopes.empty() ? nullptr : m_alibiSlopes.data();
    }
    const int32_t* positionIds() const { return packed() ? m_positionIds.data() : nullptr; }
    // The block's norms, LayerNorm or RMSNorm by the shape: forward into out (saving mean and
    // rstd; RMSNorm saves rstd only) and backward accumulating into dinp.
    void normForward(Real* out, Real* mean, Real* rstd, const Real* inp, const Real* weight,
                     const Real* bias);
    void normBackward(Real* dinp, Real* dweight, Real* dbias, const Real* dout, const Real* inp,
                      const Real* weight, const Real* mean, const Real* rstd);
    // LoRA (lora.h) on lora::Target `target` of block `layer`, when the shape adapts it: adds the
    // adapter's output to out (forward), or accumulates its gradients and its part of dinp. out /
    // dout is the adapted linear's whole output (N, OUT): a slice target (q_proj, ...) works on
    // its columns of it.
    void adapterForward(int layer, int target, Real* out, const Real* inp, const Real* w, int IN,
                        int OUT);
    void adapterBackward(int layer, int target, Real* dinp, const Real* dout, const Real* inp,
                         const Real* w, Real* g, int IN, int OUT);

    ParameterTable m_table;
    BlockOffsets m_off;          // a dense block's layout
    BlockOffsets m_moeOff;       // an MoE block's layout (shape().hasMoe() only)
    std::vector<bool> m_frozen;  // (tensors) setFrozen's flags; empty: all train
    int m_B, m_T, m_N;           // N = B*T
    bool m_training = false;
    uint64_t m_dropoutSeed = 0;
    bool m_haveTargets = false;
    double m_lastCrossEntropy = 0.0;
    double m_lossDenominator = 0.0;  // setLossDenominator's; 0: count per forward
    double m_lossScale = 0.0;        // D used by the last forward with targets (0: nothing trained)
    int64_t m_lossTokens = 0;        // targets >= 0 in the last forward with targets

    ActivationLayout m_layout;
    std::vector<Real> m_acts;  // (m_layout.size())

    std::vector<int32_t> m_tokens;       // (B,T) copy of the inputs for embedBackward
    std::vector<int32_t> m_targets;      // (B,T)
    std::vector<int32_t> m_positionIds;  // (B,T) setPositionIds; empty: the dense layout

    // Scratch, reused by every layer (not addressable activations).
    std::vector<Real> m_branch;       // (N,C) projection output before dropout and residual add
    std::vector<Real> m_dres;         // (N,C) gradient of the residual stream
    std::vector<Real> m_dbranch;      // (N,C) dropout-masked branch gradient (dropout > 0 only)
    std::vector<Real> m_dln;          // (N,C)
    std::vector<Real> m_dqkv;         // (N,QKV) QKV = NH·hs + 2·KV·hs (3C for GPT-2)
    std::vector<Real> m_datty;        // (N,Q) Q = NH·hs
    std::vector<Real> m_dfch;         // (N,M) M = F, or 2F with SwiGLU
    std::vector<Real> m_dact;         // (N,F) SwiGLU's output gradient (SwiGLU only)
    std::vector<Real> m_loraDu;       // (N,R), LoRA only
    std::vector<Real> m_loraDropped;  // (N,max(C,Q,F)), LoRA with adapter dropout only
    // Rotary positions: cos/sin per position (rotary only); ALiBi: one slope per head.
    std::optional<ops::RotaryTable> m_rotary;
    std::vector<Real> m_alibiSlopes;     // (NH) ALiBi only
    std::vector<Real> m_bf16Weights;     // largest layer slice (+ wte when tied), bf16 mode only
    std::vector<uint16_t> m_bf16Packed;  // the matrices as bf16 bits, for the bf16 matmuls
    // Where the current layer's matrices are as bf16 bits: the copy at m_bf16Weights + offset
    // (count elements) reads its matrices at bits (m_bf16Packed + offset, or the packed slice).
    // Two regions: the layer itself (offset 0) and the tied head's wte.
    struct PackedRegion {
        size_t offset = 0, count = 0;
        const uint16_t* bits = nullptr;
    };
    std::array<PackedRegion, 2> m_packedRegions{};
    std::array<MatrixRange, 4> m_blockMatrices{};  // qkv, attention projection, fc, MLP projection
    std::vector<MatrixRange> m_moeMatrices;  // qkv, attention projection, each expert's fc, proj
    // MoE: routing of the last forward per block (empty for dense blocks) and scratch.
    std::vector<moe::Routing> m_routing;
    std::vector<Real> m_moeX;        // (N*k,C) inputs gathered per expert
    std::vector<Real> m_moeDx;       // (N*k,C) their gradient
    std::vector<Real> m_moeDy;       // (N*k,C) gated gradient of the experts' outputs
    std::vector<Real> m_moeDgates;   // (N,k)
    std::vector<Real> m_moeDlogits;  // (N,E)
};

extern template class Gpt<float>;
extern template class Gpt<double>;

}  // namespace ws::model
