// SPDX-License-Identifier: GPL-3.0-or-later
// The decoder's shape and its parameter layout: ONE contiguous buffer of all weights, in
// Hugging Face GPT-2 names and layouts (Conv1D weights stored (in, out), so y = x·W + b), laid
// out layer-contiguously so streaming, checkpoints, gradient reduction and the optimizer work on
// plain contiguous copies:
//   layer 0      "embeddings": wte.weight (V,C), wpe.weight (maxT,C)
//   layer 1+l    "h.l":        ln_1.weight (C), ln_1.bias (C), attn.c_attn.weight (C,3C),
//                              attn.c_attn.bias (3C), attn.c_proj.weight (C,C), attn.c_proj.bias
//                              (C), ln_2.weight (C), ln_2.bias (C), mlp.c_fc.weight (C,F),
//                              mlp.c_fc.bias (F), mlp.c_proj.weight (F,C), mlp.c_proj.bias (C)
//                The block options (GptShape) keep these names and the (in, out) layout and
//                change only widths and presence (Llama-family models map to and from Hugging
//                Face's q/k/v/o and gate/up/down names in engine/modelio): no wpe unless
//                positions are learned; no norm biases with RMSNorm; c_attn (C, Q+2K) =
//                [q (Q = NH·hs) | k (K = KV·hs) | v (K)] with grouped-query heads; attn.c_proj
//                (Q, C); SwiGLU's c_fc (C, 2F) = [gate | up]; each bias only when its option
//                is on (use_projection_bias_in_attention: c_attn; use_ffn_bias_in_attention:
//                attn.c_proj; use_ffn_bias: c_fc and mlp.c_proj).
//                              and with LoRA (GptShape::loraRank > 0) each targeted linear's
//                              lora_A.weight (IN,R) and lora_B.weight (R,OUT), e.g.
//                              attn.c_attn.lora_A.weight (C,R), attn.c_attn.lora_B.weight (R,3C);
//                              the slice targets (Llama's separate projections on the fused
//                              linears, lora.h) are named attn.q_proj, attn.k_proj, attn.v_proj,
//                              mlp.gate_proj, mlp.up_proj: attn.q_proj.lora_B.weight (R,Q), ...
//                              (o_proj and down_proj ARE attn.c_proj and mlp.c_proj's adapters)
//                or, an MoE block (GptShape::isMoeBlock), the same up to ln_2.bias, then
//                              mlp.router.weight (C,E) and per expert e = 0..E-1, each expert
//                              contiguous: mlp.experts.e.c_fc.weight (C,F), .c_fc.bias (F),
//                              .c_proj.weight (F,C), .c_proj.bias (C) (no LoRA with MoE)
//   layer L+1    "head":       ln_f.weight (C), ln_f.bias (C) (LayerNorm only), lm_head.weight
//                              (V,C) only if untied
// with no padding anywhere (V vocab, C channels, F ffn width, maxT positions, L layers, E
// experts). Dense and MoE blocks differ in size, so a block's offsets come from
// blockOffsets(shape, block); ParameterTable::streamUnits(block) splits an MoE block into its
// shared part and one contiguous range per expert, the units weight streaming moves.
//
// Thread-safety: ParameterTable is immutable after construction. initParameters() writes the
// buffer it is given (using the compute threads) and is deterministic for a seed.
#pragma once

#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/config/config.h"
#include "engine/core/result.h"

namespace ws::model {

// The linears an adapter can sit on (lora::Target): GPT-2's four, then Llama's five slices.
inline constexpr size_t kLoraTargetCount = 9;

struct GptShape {
    int vocab = 0;         // V
    int channels = 0;      // C
    int layers = 0;        // L
    int heads = 0;         // NH (divides C)
    int ffn = 0;           // F, width of the MLP's hidden layer
    int maxPositions = 0;  // rows of wpe (learned positions); the longest usable sequence
    bool tiedEmbedding = true;
    double lnEps = 1e-5;  // epsilon of every norm, LayerNorm or RMSNorm

    // The block options (config model.*; GPT-2's values by default, under which every layout,
    // op and bit is the GPT-2 model's). Llama/Mistral/Qwen2: rotary, RMSNorm, SwiGLU, KV heads
    // < heads, no biases (Qwen2: q/k/v biases); BTLM: ALiBi + SwiGLU + LayerNorm.
    enum class Position { Learned, Rotary, Alibi };
    enum class Norm { LayerNorm, RmsNorm };
    enum class Mlp { Gelu, SwiGlu };
    enum class RopeScaling { None, Linear, Llama3 };
    Position position = Position::Learned;
    Norm norm = Norm::LayerNorm;
    Mlp mlp = Mlp::Gelu;
    int kvHeads = 0;  // KV heads (divides heads); 0 = heads (multi-head attention)
    int headDim = 0;  // hs; 0 = channels / heads
    bool qkvBias = true, attnProjBias = true, mlpBias = true;
    int rotaryDim = 0;  // rotary: dims of each head that rotate (even); 0 = the whole head
    double ropeTheta = 10000.0;
    RopeScaling ropeScaling = RopeScaling::None;
    double ropeFactor = 1.0;                                   // linear and llama3
    double ropeLowFreqFactor = 1.0, ropeHighFreqFactor = 4.0;  // llama3
    int ropeOriginalMaxPositions = 8192;                       // llama3
    double dropout = 0.0;      // on the embedding output and on each residual branch output
    double attnDropout = 0.0;  // on attention probabilities
    bool bf16 = false;         // compute with bf16-rounded weights and activations (Gpt<float>)
    // μP (config: model.mup_base_*, see fromConfig). All 1 / off under the standard
    // parameterization, where every multiplication by them is exact, so SP is unchanged.
    bool mup = false;
    double widthMult = 1.0;             // m_d = C / mup_base_hidden_size (1 without μP)
    double ffnWidthMult = 1.0;          // m_ffn = F / mup_base_filter_size (1 without μP)
    double embeddingsScale = 1.0;       // embedding output × m_emb
    double outputLogitsScale = 1.0;     // logits × output_logits_alpha / m_d (or / sqrt(m_d))
    bool scaleQkDotByD = false;         // scores / hs instead of / sqrt(hs)
    double attentionLogitsAlpha = 1.0;  // scores × this
    // LoRA (config lora:, lora.h): rank 0 = no adapters. Targets indexed by lora::Target
    // (c_attn, attn.c_proj, c_fc, mlp.c_proj, then the slice targets q_proj, k_proj, v_proj,
    // gate_proj, up_proj); each block then ends with lora_A (IN, R) and lora_B (R, OUT) for
    // every target, in that order, after GPT-2's 12 tensors.
    int loraRank = 0;
    double loraScale = 0.0;    // alpha / rank
    double loraDropout = 0.0;  // on the adapter branch's input only
    std::array<bool, kLoraTargetCount> loraTargets{};
    // lora.trainable_tokens_from: > 0, the wte (and untied lm_head) rows from this token id on
    // train beside the adapters (isFrozenTensor, session::parameterGroups' frozenPrefix).
    int loraTrainableTokensFrom = 0;
    bool hasLora() const { return loraRank > 0; }
    // Sets the fields above from a lora: section (absent: leaves the shape without adapters).
    void applyLora(const std::optional<config::LoraConfig>& lora);

    // Mixture of experts (config model.moe): numExperts 0 = every block dense. Block l is MoE when
    // l % moeEvery == 0 (blocks 0, n, 2n, ...). engine/model/moe.h has the routing rules.
    int numExperts = 0;            // E
    int topK = 1;                  // k: experts per token
    int moeEvery = 1;              // model.moe.moe_layer_frequency
    double capacityFactor = 0.0;   // 0: no capacity limit
    double lbCoef = 0.0;           // load_balancing_loss_coef
    bool expertNormalize = false;  // expert_weighting_normalization (top_k >= 2 only)
    bool hasMoe() const { return numExperts > 0; }
    bool isMoeBlock(int block) const { return hasMoe() && block % moeEvery == 0; }
    // Tokens one expert of an MoE block takes from `tokens` routed tokens:
    // ceil(capacityFactor * tokens * k / E), or `tokens` without a capacity factor.
    int expertCapacity(int tokens) const;
    // Sets the MoE fields from a model.moe section (absent: dense).
    void applyMoe(const std::optional<config::MoeConfig>& moe);

    static GptShape fromConfig(const config::ModelConfig& model);

    int headSize() const { return headDim > 0 ? headDim : heads > 0 ? channels / heads : 0; }
    int kvHeadCount() const { return kvHeads > 0 ? kvHeads : heads; }
    int qWidth() const { return heads * headSize(); }  // query (and attention output) width
    int kvWidth() const { return kvHeadCount() * headSize(); }
    int qkvWidth() const { return qWidth() + 2 * kvWidth(); }  // c_attn's output: [q | k | v]
    int mlpInWidth() const { return mlp == Mlp::SwiGlu ? 2 * ffn : ffn; }  // c_fc: [gate | up]
    int rotaryDims() const { return rotaryDim > 0 ? rotaryDim : headSize(); }
    bool learnedPositions() const { return position == Position::Learned; }
    bool layerNorm() const { return norm == Norm::LayerNorm; }
    // Whether every option is GPT-2's (the layout and ops of GPT-2 / Cerebras-GPT exactly).
    bool gpt2Blocks() const;
    // The multiplier of q·kᵀ: attention_logits_alpha / hs (scale_qk_dot_by_d) or / sqrt(hs),
    // computed in Real so that the SP value is exactly the 1 / sqrt(hs) GPT-2 uses.
    template <typename Real>
    Real attentionScale() const {
        const Real hs = Real(headSize());
        const Real base = scaleQkDotByD ? Real(1) / hs : Real(1) / std::sqrt(hs);
        return attentionLogitsAlpha == 1.0 ? base : Real(attentionLogitsAlpha) * base;
    }

    // Checks the shape itself (positive sizes, heads divide channels, rates in [0, 1)); with
    // batch/seqLen > 0 also that a Gpt of that batch and sequence length can be built. The message
    // names the config key to change.
    Status validate(int batch = 0, int seqLen = 0) const;
};

struct TensorSlice {
    std::string name;            // Hugging Face GPT-2 name, e.g. "h.3.attn.c_attn.weight"
    std::vector<int64_t> shape;  // e.g. {C, 3C}
    size_t offset = 0;           // elements from the start of the parameter buffer
    size_t size = 0;             // elements
    int layerIndex = 0;          // index into ParameterTable::layers()
    bool decay = false;          // weight decay applies: every 2-D tensor (incl. wte, wpe, lm_head)
    double lrScale = 1.0;        // learning-rate multiplier (μP: 1/m_d or 1/m_ffn, see .cpp)
};

struct LayerSlice {
    std::string name;  // "embeddings", "h.0" ... "h.{L-1}", "head"
    size_t offset = 0;
    size_t size = 0;
    size_t firstTensor = 0;  // index into ParameterTable::tensors()
    size_t tensorCount = 0;
};

// Offsets of a block's tensors inside its slice: GPT-2's 12, then with LoRA each target's lora_A
// and lora_B (loraA[t] = loraB[t] = 0 for a target without an adapter). In an MoE block
// (experts > 0) fcw, fcb, fcprojw and fcprojb are EXPERT 0's c_fc/c_proj tensors, expert e's are
// expertStride * e further on (expert(e)), and router is mlp.router.weight (C,E); the shared part
// (everything but the experts) is [0, fcw).
// A tensor the block options leave out (RMSNorm's bias, a bias the model has not) has offset
// kAbsent; at() turns an offset into a pointer or null.
struct BlockOffsets {
    static constexpr size_t kAbsent = ~size_t{0};
    size_t ln1w, ln1b, qkvw, qkvb, attprojw, attprojb, ln2w, ln2b, fcw, fcb, fcprojw, fcprojb;
    std::array<size_t, kLoraTargetCount> loraA, loraB;
    size_t size;
    int experts = 0;  // E in an MoE block, 0 in a dense one
    size_t router = 0;
    size_t expertStride = 0;  // elements of one expert (c_fc.weight .. c_proj.bias)
    size_t expert(int e) const { return size_t(e) * expertStride; }
    template <typename T>
    static T* at(T* base, size_t offset) {
        return offset == kAbsent ? nullptr : base + offset;
    }
};
// The dense block layout (every block of a shape without MoE).
BlockOffsets blockOffsets(const GptShape& shape);
// The layout of block `block` (0-based): MoE or dense by GptShape::isMoeBlock.
BlockOffsets blockOffsets(const GptShape& shape, int block);

// A contiguous piece of one block that weight streaming moves as a unit: an MoE block's shared
// part ("h.3.shared": LayerNorms, attention, router) then each expert ("h.3.mlp.experts.0", ...);
// a dense block is one unit named like its layer ("h.3").
struct StreamUnit {
    std::string name;
    size_t offset = 0;         // elements from the start of the parameter buffer
    size_t offsetInBlock = 0;  // elements from the start of the block's slice
    size_t size = 0;           // elements
    int expert = -1;           // the expert, or -1 for the shared part / a dense block
};

class ParameterTable {
public:
    explicit ParameterTable(const GptShape& shape);

    const GptShape& shape() const { return m_shape; }
    const std::vector<TensorSlice>& tensors() const { return m_tensors; }
    const std::vector<LayerSlice>& layers() const { return m_layers; }
    size_t totalSize() const { return m_totalSize; }
    const TensorSlice* find(std::string_view name) const;

    // Indices into layers().
    static constexpr int embeddingLayer() { return 0; }
    static constexpr int blockLayer(int block) { return 1 + block; }
    int headLayer() const { return m_shape.layers + 1; }
    // Block `block`'s stream units in buffer order; they tile its layer slice exactly.
    std::vector<StreamUnit> streamUnits(int block) const;

private:
    void add(std::string name, std::vector<int64_t> shape, bool decay, double lrScale = 1.0);

    GptShape m_shape;
    std::vector<TensorSlice> m_tensors;
    std::vector<LayerSlice> m_layers;
    std::map<std::string, size_t, std::less<>> m_byName;
    size_t m_totalSize = 0;
};

// Initializes all parameters, ModelZoo style: embedding_initializer for wte/wpe, initializer for
// c_attn, c_fc and lm_head weights, output_layer_initializer for attn.c_proj and mlp.c_proj weights
// (absent: initializer with std, a - mean and b - mean all divided by sqrt(2 L), GPT-2's scaled
// residual init, truncation staying at the same number of standard deviations). Under μP the
// same spread is further divided by sqrt(m_d) for c_attn, c_fc and attn.c_proj and by
// sqrt(m_ffn) for mlp.c_proj (embeddings and lm_head unscaled; see the .cpp). Biases 0,
// LayerNorm weights 1 and biases 0. truncated_normal resamples values outside [a, b] (after 64
// rejected draws, which only an interval far from the mean can cause, the value is clamped into
// [a, b] so a bad config cannot hang). Each tensor draws from its own counter-based stream keyed by
// (seed, tensor index), so the result does not depend on thread count or order.
void initParameters(const ParameterTable& table, const config::ModelConfig& model, uint64_t seed,
                    float* params);
// The same values, tensor by tensor into wherever `where` says (tensor index -> its elements;
// null skips the tensor): a MemoryX shard initialises just its own tensors, bit for bit.
void initParameterTensors(const ParameterTable& table, const config::ModelConfig& model,
                          uint64_t seed, const std::function<float*(size_t tensor)>& where);

// Whether fine-tuning freezes a tensor of `table`: optimizer.freeze_embeddings (wte, wpe),
// optimizer.freeze_blocks = K (h.0 .. h.{K-1}, their adapters included), and with LoRA (a table
// whose shape has adapters) every tensor but the adapters, except wte and an untied lm_head when
// rows of added tokens train (GptShape::loraTrainableTokensFrom: the tensor trains, its rows
// before that id do not, see trainableRowsFrom). session::parameterGroups marks these
// groups frozen; MemoryX keeps no gradients or optimizer state for them.
bool isFrozenTensor(const ParameterTable& table, const TensorSlice& tensor,
                    const config::OptimizerConfig& optimizer);
// The first element of `tensor` that trains when it trains only from a row on (wte and an
// untied lm_head under LoRA with GptShape::loraTrainableTokensFrom > 0); 0 otherwise.
size_t frozenPrefixOf(const ParameterTable& table, const TensorSlice& tensor);
// The parameters that train: those of the tensors isFrozenTensor does not freeze.
size_t trainableParameterCount(const ParameterTable& table,
                               const config::OptimizerConfig& optimizer);

// Parameters the model counts: every tensor of the table (wte, wpe, lm_head when untied).
size_t parameterCount(const GptShape& shape);

// llm.c's training FLOPs per step, (6 N + 6 L C T) B T, with N = parameterCount() (it includes wpe,
// which does no multiply-adds, and lm_head when untied, which does): the first term is the
// matmuls' forward + backward, the second the attention score and value products.
// With MoE, N counts top_k experts of each MoE block (the ones a token runs through).
double trainingFlopsPerStep(const GptShape& shape, int batch, int seqLen);

}  // namespace ws::model
