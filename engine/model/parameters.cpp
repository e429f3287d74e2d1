// SPDX-License-Identifier: GPL-3.0-or-later
// Parameter table construction, initialization and the FLOP count (see parameters.h).
#include "engine/model/parameters.h"

#include "engine/model/lora.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "engine/model/random.h"
#include "engine/tensor/threads.h"

namespace ws::model {

GptShape GptShape::fromConfig(const config::ModelConfig& model) {
    GptShape s;
    s.vocab = model.vocabSize;
    s.channels = model.hiddenSize;
    s.layers = model.numHiddenLayers;
    s.heads = model.numHeads;
    s.ffn = model.filterSize;
    s.maxPositions = model.maxPositionEmbeddings;
    s.tiedEmbedding = model.shareEmbeddingWeights;
    s.lnEps = model.layerNormEpsilon;
    s.dropout = model.dropoutRate;
    s.attnDropout = model.attentionDropoutRate;
    s.bf16 = model.mixedPrecision && model.fp16Type == "bfloat16";
    // Applied with or without μP, as in ModelZoo (embeddings_scale, scale_qk_dot_by_d and
    // attention_logits_alpha are plain model options there).
    s.position = model.positionEmbeddingType == "rotary"  ? Position::Rotary
                 : model.positionEmbeddingType == "alibi" ? Position::Alibi
                                                          : Position::Learned;
    s.norm = model.normType == "rmsnorm" ? Norm::RmsNorm : Norm::LayerNorm;
    s.mlp = model.nonlinearity == "swiglu" ? Mlp::SwiGlu : Mlp::Gelu;
    s.kvHeads = model.attentionModule == "multiquery_attention"
                    ? model.extraAttentionParams.numKvGroups
                    : 0;
    s.headDim = model.attentionInnerDim > 0 && model.numHeads > 0
                    ? model.attentionInnerDim / model.numHeads
                    : 0;
    s.qkvBias = model.useProjectionBiasInAttention;
    s.attnProjBias = model.useFfnBiasInAttention;
    s.mlpBias = model.useFfnBias;
    if (s.position == Position::Rotary) {
        s.rotaryDim = model.rotaryDim;
        s.ropeTheta = model.ropeTheta;
        s.ropeFactor = model.posScalingFactor;
        if (model.posScalingType == "llama3") {
            s.ropeScaling = RopeScaling::Llama3;
            const config::PosScalingExtraArgs extra =
                model.posScalingExtraArgs.value_or(config::PosScalingExtraArgs{});
            s.ropeLowFreqFactor = extra.lowFreqFactor;
            s.ropeHighFreqFactor = extra.highFreqFactor;
            s.ropeOriginalMaxPositions = extra.originalMaxPositionEmbeddings;
        } else if (model.posScalingFactor != 1.0) {
            s.ropeScaling = RopeScaling::Linear;
        }
    }
    s.embeddingsScale = model.embeddingsScale;
    s.scaleQkDotByD = model.scaleQkDotByD;
    s.attentionLogitsAlpha = model.attentionLogitsAlpha;
    s.applyMoe(model.moe);
    if (model.mupEnabled() && model.mupBaseFilterSize > 0) {
        // Width multipliers (Cerebras-GPT, arXiv 2304.03208, Appendix G: m_d = d_model / d_base).
        s.mup = true;
        s.widthMult = double(model.hiddenSize) / model.mupBaseHiddenSize;
        s.ffnWidthMult = double(model.filterSize) / model.mupBaseFilterSize;
        // Output logits × alpha / m_d: the μP paper's (Yang et al. 2022, arXiv 2203.03466)
        // Table 3 "output weights multiplier 1/fan_in" expressed relative to the base width, as
        // ModelZoo's gpt2_model.py does (scale_output_logits_by_d false: alpha / sqrt(m_d)).
        s.outputLogitsScale = model.scaleOutputLogitsByD
                                  ? model.outputLogitsAlpha / s.widthMult
                                  : model.outputLogitsAlpha / std::sqrt(s.widthMult);
    }
    return s;
}

void GptShape::applyMoe(const std::optional<config::MoeConfig>& moe) {
    numExperts = 0;
    topK = 1;
    moeEvery = 1;
    capacityFactor = 0.0;
    lbCoef = 0.0;
    expertNormalize = false;
    if (!moe) return;
    numExperts = moe->numExperts;
    topK = moe->topK;
    moeEvery = moe->moeLayerFrequency;
    capacityFactor = moe->capacityFactor;
    lbCoef = moe->loadBalancingLossCoef;
    expertNormalize = moe->expertWeightingNormalization;
}

int GptShape::expertCapacity(int tokens) const {
    if (!(capacityFactor > 0.0) || numExperts <= 0) return tokens;
    const double cap = std::ceil(capacityFactor * double(tokens) * topK / numExperts);
    return int(std::min(double(tokens), cap));
}

Status GptShape::validate(int batch, int seqLen) const {
    auto positive = [](int v, const char* key) -> Status {
        if (v > 0) return Status::success();
        return Error{fmt::format("model.{} is {}; it must be at least 1", key, v)};
    };
    for (auto [v, key] : {std::pair{vocab, "vocab_size"},
                          {channels, "hidden_size"},
                          {layers, "num_hidden_layers"},
                          {heads, "num_heads"},
                          {ffn, "filter_size"},
                          {maxPositions, "max_position_embeddings"}}) {
        if (Status st = positive(v, key); !st.ok()) return st;
    }
    if (headDim == 0 && channels % heads != 0) {
        return Error{
            fmt::format("model.num_heads = {} does not divide model.hidden_size = {}; "
                        "pick a head count that divides the width",
                        heads, channels)};
    }
    if (headDim < 0 || kvHeads < 0 || (kvHeads > 0 && heads % kvHeads != 0)) {
        return Error{fmt::format(
            "model.extra_attention_params.num_kv_groups = {} must divide model.num_heads = {}",
            kvHeads, heads)};
    }
    if (position == Position::Rotary &&
        (rotaryDims() % 2 != 0 || rotaryDims() > headSize() || rotaryDims() <= 0)) {
        return Error{
            fmt::format("model.rotary_dim = {} must be even, positive and at most the head size {}",
                        rotaryDims(), headSize())};
    }
    if (hasMoe() && !gpt2Blocks()) {
        return Error{
            "model.moe needs GPT-2 blocks (learned positions, layernorm, gelu, every bias, "
            "one KV head per head); remove model.moe or those options"};
    }
    if (!(lnEps >= 0.0)) {
        return Error{fmt::format("model.layer_norm_epsilon is {}; it must be >= 0", lnEps)};
    }
    if (!(dropout >= 0.0 && dropout < 1.0)) {
        return Error{fmt::format("model.dropout_rate is {}; it must be in [0, 1)", dropout)};
    }
    if (mup && !(widthMult > 0.0 && ffnWidthMult > 0.0)) {
        return Error{
            "model.mup_base_hidden_size and model.mup_base_filter_size must be positive "
            "when muP is on"};
    }
    if (loraRank < 0 || (loraRank > 0 && !(loraDropout >= 0.0 && loraDropout < 1.0))) {
        return Error{fmt::format("lora: rank {} and dropout {} must be >= 1 and in [0, 1)",
                                 loraRank, loraDropout)};
    }
    if (hasLora()) {
        if (std::string problem = lora::targetsProblem(loraTargets, *this); !problem.empty())
            return Error{std::move(problem)};
    }
    if (!(attnDropout >= 0.0 && attnDropout < 1.0)) {
        return Error{
            fmt::format("model.attention_dropout_rate is {}; it must be in [0, 1)", attnDropout)};
    }
    if (hasMoe()) {
        if (numExperts < 1 || topK < 1 || topK > numExperts || moeEvery < 1)
            return Error{fmt::format(
                "model.moe: num_experts {} and top_k {} must satisfy 1 <= top_k <= num_experts, "
                "moe_layer_frequency {} >= 1",
                numExperts, topK, moeEvery)};
        if (expertNormalize && topK == 1)
            return Error{
                "model.moe.expert_weighting_normalization needs top_k >= 2 (with top_k 1 the "
                "router never learns)"};
        if (!(capacityFactor >= 0.0) || !(lbCoef >= 0.0))
            return Error{"model.moe.capacity_factor and load_balancing_loss_coef must be >= 0"};
        if (hasLora()) return Error{"lora with model.moe is not supported; remove one of them"};
    }
    if (batch < 0 || seqLen < 0) {
        return Error{
            fmt::format("batch {} and sequence length {} must not be negative", batch, seqLen)};
    }
    if (seqLen > maxPositions) {
        return Error{
            fmt::format("sequence length {} exceeds model.max_position_embeddings = {}; "
                        "lower train_input.max_sequence_length or raise the positions",
                        seqLen, maxPositions)};
    }
    // Activation buffers are indexed with int per row of (B*T, V), (B*T, 3C) and (B*T, F).
    const double rows = double(batch) * seqLen;
    const int widest = std::max({vocab, 3 * channels, qkvWidth(), 2 * ffn});
    if (rows * widest > 2147483647.0) {
        return Error{
            fmt::format("batch {} x sequence {} x vocabulary {} is too large for one "
                        "step; lower train_input.batch_size",
                        batch, seqLen, vocab)};
    }
    return Status::success();
}

bool GptShape::gpt2Blocks() const {
    return position == Position::Learned && norm == Norm::LayerNorm && mlp == Mlp::Gelu &&
           kvHeadCount() == heads && headSize() * heads == channels && qkvBias && attnProjBias &&
           mlpBias;
}

BlockOffsets blockOffsets(const GptShape& s) {
    const size_t C = s.channels, F = s.ffn, Q = size_t(s.qWidth()), QKV = size_t(s.qkvWidth()),
                 M = size_t(s.mlpInWidth());
    BlockOffsets o{};
    size_t at = 0;
    auto next = [&at](size_t n, bool present = true) {
        if (!present) return BlockOffsets::kAbsent;
        const size_t here = at;
        at += n;
        return here;
    };
    const bool ln = s.layerNorm();
    o.ln1w = next(C);
    o.ln1b = next(C, ln);
    o.qkvw = next(C * QKV);
    o.qkvb = next(QKV, s.qkvBias);
    o.attprojw = next(Q * C);
    o.attprojb = next(C, s.attnProjBias);
    o.ln2w = next(C);
    o.ln2b = next(C, ln);
    o.fcw = next(C * M);
    o.fcb = next(M, s.mlpBias);
    o.fcprojw = next(F * C);
    o.fcprojb = next(C, s.mlpBias);
    for (size_t t = 0; t < kLoraTargetCount; ++t) {
        o.loraA[t] = o.loraB[t] = 0;
        if (!s.hasLora() || !s.loraTargets[t]) continue;
        const lora::LinearShape linear = lora::linearShape(lora::Target(t), s);
        o.loraA[t] = next(size_t(linear.in) * size_t(s.loraRank));
        o.loraB[t] = next(size_t(s.loraRank) * size_t(linear.out));
    }
    o.size = at;
    return o;
}

BlockOffsets blockOffsets(const GptShape& s, int block) {
    if (!s.isMoeBlock(block)) return blockOffsets(s);
    const size_t C = s.channels, F = s.ffn, E = size_t(s.numExperts);
    BlockOffsets o = blockOffsets(s);  // the shared part's offsets up to ln_2 are the same
    o.loraA = {};
    o.loraB = {};
    o.experts = s.numExperts;
    o.router = o.ln2b + C;
    o.expertStride = C * F + F + F * C + C;
    o.fcw = o.router + C * E;
    o.fcb = o.fcw + C * F;
    o.fcprojw = o.fcb + F;
    o.fcprojb = o.fcprojw + F * C;
    o.size = o.fcw + E * o.expertStride;
    return o;
}

namespace {
bool isLoraA(std::string_view name) {
    return name.find(".lora_A.") != std::string_view::npos;
}
bool isLoraB(std::string_view name) {
    return name.find(".lora_B.") != std::string_view::npos;
}
}  // namespace

void GptShape::applyLora(const std::optional<config::LoraConfig>& lora) {
    loraRank = 0;
    loraScale = 0.0;
    loraDropout = 0.0;
    loraTargets = {};
    loraTrainableTokensFrom = 0;
    if (!lora || lora->rank < 1) return;
    loraRank = lora->rank;
    loraScale = lora->alpha / lora->rank;
    loraDropout = lora->dropout;
    for (const std::string& name : lora->targets)
        if (const auto target = lora::targetFromName(name)) loraTargets[size_t(*target)] = true;
    loraTrainableTokensFrom = lora->trainableTokensFrom;
}

ParameterTable::ParameterTable(const GptShape& shape) : m_shape(shape) {
    const int64_t V = shape.vocab, C = shape.channels, F = shape.ffn, P = shape.maxPositions;
    auto beginLayer = [this](std::string name) {
        m_layers.push_back({std::move(name), m_totalSize, 0, m_tensors.size(), 0});
    };
    auto endLayer = [this] {
        LayerSlice& layer = m_layers.back();
        layer.size = m_totalSize - layer.offset;
        layer.tensorCount = m_tensors.size() - layer.firstTensor;
    };
    const int64_t Q = shape.qWidth(), QKV = shape.qkvWidth(), M = shape.mlpInWidth();
    const bool ln = shape.layerNorm();
    beginLayer("embeddings");
    add("wte.weight", {V, C}, true);
    if (shape.learnedPositions()) add("wpe.weight", {P, C}, true);
    endLayer();
    for (int l = 0; l < shape.layers; ++l) {
        const std::string h = fmt::format("h.{}.", l);
        beginLayer(fmt::format("h.{}", l));
        // Same order as BlockOffsets.
        add(h + "ln_1.weight", {C}, false);
        if (ln) add(h + "ln_1.bias", {C}, false);
        // μP hidden learning rates for Adam (μP paper Table 3: hidden weights' LR 1/fan_in;
        // Cerebras-GPT Appendix G / ModelZoo lr_adjustment_groups "decoder_attention" and
        // "decoder_input_ffn": η_base / m_d, "decoder_output_ffn": η_base / m_ffn). Biases,
        // LayerNorm, embeddings and lm_head keep the base LR.
        const double hiddenLr = 1.0 / shape.widthMult, ffnOutLr = 1.0 / shape.ffnWidthMult;
        add(h + "attn.c_attn.weight", {C, QKV}, true, hiddenLr);
        if (shape.qkvBias) add(h + "attn.c_attn.bias", {QKV}, false);
        add(h + "attn.c_proj.weight", {Q, C}, true, hiddenLr);
        if (shape.attnProjBias) add(h + "attn.c_proj.bias", {C}, false);
        add(h + "ln_2.weight", {C}, false);
        if (ln) add(h + "ln_2.bias", {C}, false);
        if (shape.isMoeBlock(l)) {
            // Same order as blockOffsets(shape, l). μP: the router's fan-in is C like c_fc's, and
            // each expert is a dense MLP of width F, so it scales as the dense MLP does.
            add(h + "mlp.router.weight", {C, shape.numExperts}, true, hiddenLr);
            for (int e = 0; e < shape.numExperts; ++e) {
                const std::string x = fmt::format("{}mlp.experts.{}.", h, e);
                add(x + "c_fc.weight", {C, F}, true, hiddenLr);
                add(x + "c_fc.bias", {F}, false);
                add(x + "c_proj.weight", {F, C}, true, ffnOutLr);
                add(x + "c_proj.bias", {C}, false);
            }
            endLayer();
            continue;
        }
        add(h + "mlp.c_fc.weight", {C, M}, true, hiddenLr);
        if (shape.mlpBias) add(h + "mlp.c_fc.bias", {M}, false);
        add(h + "mlp.c_proj.weight", {F, C}, true, ffnOutLr);
        if (shape.mlpBias) add(h + "mlp.c_proj.bias", {C}, false);
        for (size_t t = 0; t < kLoraTargetCount; ++t) {  // same order as BlockOffsets
            if (!shape.hasLora() || !shape.loraTargets[t]) continue;
            const lora::LinearShape linear = lora::linearShape(lora::Target(t), shape);
            const std::string module = h + std::string(lora::tableModule(lora::Target(t)));
            add(module + ".lora_A.weight", {linear.in, shape.loraRank}, true);
            add(module + ".lora_B.weight", {shape.loraRank, linear.out}, true);
        }
        endLayer();
    }
    beginLayer("head");
    add("ln_f.weight", {C}, false);
    if (ln) add("ln_f.bias", {C}, false);
    if (!shape.tiedEmbedding) add("lm_head.weight", {V, C}, true);
    endLayer();
}

void ParameterTable::add(std::string name, std::vector<int64_t> shape, bool decay, double lrScale) {
    size_t size = 1;
    for (int64_t d : shape) size *= static_cast<size_t>(d);
    m_byName.emplace(name, m_tensors.size());
    m_tensors.push_back({std::move(name), std::move(shape), m_totalSize, size,
                         static_cast<int>(m_layers.size()) - 1, decay, lrScale});
    m_totalSize += size;
}

std::vector<StreamUnit> ParameterTable::streamUnits(int block) const {
    const LayerSlice& layer = m_layers[size_t(blockLayer(block))];
    if (!m_shape.isMoeBlock(block)) return {{layer.name, layer.offset, 0, layer.size, -1}};
    const BlockOffsets o = blockOffsets(m_shape, block);
    std::vector<StreamUnit> units;
    units.push_back({layer.name + ".shared", layer.offset, 0, o.fcw, -1});
    for (int e = 0; e < o.experts; ++e) {
        const size_t at = o.fcw + o.expert(e);
        units.push_back({fmt::format("{}.mlp.experts.{}", layer.name, e), layer.offset + at, at,
                         o.expertStride, e});
    }
    return units;
}

const TensorSlice* ParameterTable::find(std::string_view name) const {
    const auto it = m_byName.find(name);
    return it == m_byName.end() ? nullptr : &m_tensors[it->second];
}

namespace {

enum class InitKind { Embedding, Hidden, Head, AttnOutput, FfnOutput, Zero, One };

InitKind initKindOf(const std::string& name) {
    auto endsWith = [&name](std::string_view suffix) {
        return name.size() >= suffix.size() &&
               std::string_view(name).substr(name.size() - suffix.size()) == suffix;
    };
    if (name == "wte.weight" || name == "wpe.weight") return InitKind::Embedding;
    if (endsWith("attn.c_proj.weight")) return InitKind::AttnOutput;
    if (endsWith("mlp.c_proj.weight")) return InitKind::FfnOutput;
    // An expert's output projection is a residual-output projection like mlp.c_proj; the router
    // (mlp.router.weight) and the experts' c_fc draw like c_fc (Hidden, below).
    if (name.find(".mlp.experts.") != std::string::npos && endsWith(".c_proj.weight"))
        return InitKind::FfnOutput;
    if (name == "lm_head.weight") return InitKind::Head;
    if (endsWith("ln_1.weight") || endsWith("ln_2.weight") || name == "ln_f.weight") {
        return InitKind::One;
    }
    if (endsWith(".bias")) return InitKind::Zero;
    return InitKind::Hidden;  // c_attn.weight, c_fc.weight
}

// The same distribution with its spread (std and the truncation bounds around the mean) × scale.
config::InitializerConfig scaled(config::InitializerConfig init, double scale) {
    if (scale == 1.0) return init;
    init.std *= scale;
    init.a = init.mean + (init.a - init.mean) * scale;
    init.b = init.mean + (init.b - init.mean) * scale;
    return init;
}

void fillInitializer(const config::InitializerConfig& init, uint64_t key, float* out, size_t n) {
    const bool truncated = init.name != "normal";
    const double lo = std::min(init.a, init.b), hi = std::max(init.a, init.b);
    constexpr int kMaxDraws = 64;
    const auto count = static_cast<int64_t>(n);
    tensor::parallelFor(count, tensor::threadsForWork(count), [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) {
            double x = 0.0;
            for (int draw = 0; draw < kMaxDraws; ++draw) {
                // Counter = element + draw * 2^40: every (element, draw) pair has its own numbers.
                const uint64_t counter =
                    static_cast<uint64_t>(i) + (static_cast<uint64_t>(draw) << 40);
                x = init.mean + init.std * rng::standardNormal(key, counter);
                if (!truncated || (x >= lo && x <= hi)) break;
            }
            if (truncated) x = std::clamp(x, lo, hi);
            out[i] = static_cast<float>(x);
        }
    });
}

}  // namespace

void initParameters(const ParameterTable& table, const config::ModelConfig& model, uint64_t seed,
                    float* params) {
    initParameterTensors(table, model, seed,
                         [&](size_t t) { return params + table.tensors()[t].offset; });
}

void initParameterTensors(const ParameterTable& table, const config::ModelConfig& model,
                          uint64_t seed, const std::function<float*(size_t tensor)>& where) {
    const GptShape& shape = table.shape();
    const config::InitializerConfig output =
        model.outputLayerInitializer
            ? *model.outputLayerInitializer
            : scaled(model.initializer, 1.0 / std::sqrt(2.0 * std::max(1, shape.layers)));
    // μP init (μP paper Table 3: hidden weights' init variance 1/fan_in; Cerebras-GPT Appendix G
    // and the Cerebras μP practitioner's guide: σ_base / sqrt(m_d) for QKV and FFN in, and for the
    // residual-output projections σ_base / sqrt(2 m_d L) (attention) and σ_base / sqrt(2 m_ffn L)
    // (FFN), i.e. the SP output init above further divided by sqrt(m)). Embeddings and an untied
    // lm_head keep σ_base: their fan-in does not grow with width (the 1/m of the readout is the
    // output logits multiplier instead). Under SP both multipliers are 1 and nothing changes.
    // Unlike ModelZoo, an explicit output_layer_initializer is not depth-scaled again here, so
    // that a μP model at m = 1 is exactly the SP model.
    const config::InitializerConfig hidden =
        scaled(model.initializer, 1.0 / std::sqrt(shape.widthMult));
    const config::InitializerConfig attnOutput = scaled(output, 1.0 / std::sqrt(shape.widthMult));
    const config::InitializerConfig ffnOutput = scaled(output, 1.0 / std::sqrt(shape.ffnWidthMult));
    // Adapters draw from their own streams, and the base tensors keep the keys they have
    // without adapters (their index in a table without LoRA), so adding LoRA changes no base value.
    size_t adaptersBefore = 0;
    for (size_t t = 0; t < table.tensors().size(); ++t) {
        const TensorSlice& slice = table.tensors()[t];
        const bool adapterA = isLoraA(slice.name), adapterB = isLoraB(slice.name);
        float* out = where(t);
        if (adapterA || adapterB) {
            ++adaptersBefore;
            if (!out) continue;
            if (adapterA) {
                lora::initA(out, int(slice.shape[0]), int(slice.shape[1]),
                            rng::deriveKey(rng::deriveKey(seed, 0x10A4ull), t));
            } else {
                std::fill(out, out + slice.size, 0.0f);  // B = 0: the adapted model is the base
            }
            continue;
        }
        if (!out) continue;
        const uint64_t key = rng::deriveKey(seed, t - adaptersBefore);
        switch (initKindOf(slice.name)) {
            case InitKind::Embedding:
                fillInitializer(model.embeddingInitializer, key, out, slice.size);
                break;
            case InitKind::Hidden:
                fillInitializer(hidden, key, out, slice.size);
                break;
            case InitKind::Head:
                fillInitializer(model.initializer, key, out, slice.size);
                break;
            case InitKind::AttnOutput:
                fillInitializer(attnOutput, key, out, slice.size);
                break;
            case InitKind::FfnOutput:
                fillInitializer(ffnOutput, key, out, slice.size);
                break;
            case InitKind::Zero:
                std::fill(out, out + slice.size, 0.0f);
                break;
            case InitKind::One:
                std::fill(out, out + slice.size, 1.0f);
                break;
        }
    }
}

bool isFrozenTensor(const ParameterTable& table, const TensorSlice& t,
                    const config::OptimizerConfig& optimizer) {
    const int layer = t.layerIndex;
    const bool embedding = layer == ParameterTable::embeddingLayer();
    const bool frozenBlock = layer >= ParameterTable::blockLayer(0) &&
                             layer < ParameterTable::blockLayer(optimizer.freezeBlocks);
    // LoRA: only the adapters train; every base tensor is frozen.
    const bool baseUnderLora = table.shape().hasLora() &&
                               t.name.find(".lora_") == std::string::npos &&
                               frozenPrefixOf(table, t) == 0;
    return (embedding && optimizer.freezeEmbeddings) || frozenBlock || baseUnderLora;
}

size_t frozenPrefixOf(const ParameterTable& table, const TensorSlice& t) {
    const GptShape& shape = table.shape();
    if (!shape.hasLora() || shape.loraTrainableTokensFrom <= 0 ||
        shape.loraTrainableTokensFrom >= shape.vocab)
        return 0;
    if (t.name != "wte.weight" && t.name != "lm_head.weight") return 0;
    return size_t(shape.loraTrainableTokensFrom) * size_t(shape.channels);
}

size_t trainableParameterCount(const ParameterTable& table,
                               const config::OptimizerConfig& optimizer) {
    size_t n = 0;
    for (const auto& t : table.tensors())
        n += isFrozenTensor(table, t, optimizer) ? 0 : t.size - frozenPrefixOf(table, t);
    return n;
}

size_t parameterCount(const GptShape& shape) {
    return ParameterTable(shape).totalSize();
}

double trainingFlopsPerStep(const GptShape& shape, int batch, int seqLen) {
    double N = static_cast<double>(parameterCount(shape));
    // MoE: a token runs through top_k of an MoE block's experts, not all of them.
    if (shape.hasMoe()) {
        const BlockOffsets moe = blockOffsets(shape, 0);
        for (int l = 0; l < shape.layers; ++l)
            if (shape.isMoeBlock(l))
                N -= double(shape.numExperts - shape.topK) * double(moe.expertStride);
    }
    // Without learned positions there is no wpe; the attention products scale with the query
    // width (NH·hs, C for GPT-2).
    const double perToken = 6.0 * N + 6.0 * shape.layers * shape.qWidth() * double(seqLen);
    return perToken * batch * seqLen;
}

}  // namespace ws::model
