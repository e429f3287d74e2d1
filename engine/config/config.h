// SPDX-License-Identifier: GPL-3.0-or-later
// The run configuration as plain structs, in Cerebras ModelZoo's legacy YAML layout (sections
// model, optimizer, train_input, eval_input, runconfig) plus our own keys. Each struct lists its
// fields once in visit(); load/save/validate/override/the GUI form are visitors over that list.
//
// Public API over these structs: config_yaml.h (load, save, --set overrides, hash), validate.h
// (cross-field rules), describe.h (the field catalogue for help and the GUI form).
//
// Visitor protocol (visitors: yaml_reader.h, yaml_writer.cpp, validate.cpp, describe.cpp):
//   v.field(member, FieldInfo{...})     for scalars, strings, lists of them and LearningRate
//   v.section(member, FieldInfo{...})   for a nested struct that itself has visit()
//   v.optionalSection(std::optional<S>&, FieldInfo{...})  nested struct that may be absent
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "engine/config/fields.h"
#include "engine/config/sparsity_config.h"
#include "engine/config/sweep_config.h"

namespace ws::config {

// One weight initializer, ModelZoo style: {name: truncated_normal, mean, std, a, b}.
struct InitializerConfig {
    std::string name = "truncated_normal";
    double mean = 0.0;
    double std = 0.02;
    double a = -0.04;  // truncation bounds (absolute values, as in torch.nn.init.trunc_normal_)
    double b = 0.04;

    bool operator==(const InitializerConfig&) const = default;

    template <class V>
    void visit(V& v) {
        v.field(name, {.key = "name",
                       .help = "Distribution of the initial weights",
                       .choices = {"truncated_normal", "normal"}});
        v.field(mean, {.key = "mean", .help = "Mean of the distribution"});
        v.field(std, {.key = "std", .help = "Standard deviation of the distribution", .min = 0});
        v.field(a, {.key = "a", .help = "Lower truncation bound (truncated_normal only)"});
        v.field(b, {.key = "b", .help = "Upper truncation bound (truncated_normal only)"});
    }
};

// Static unstructured weight sparsity (ours; Cerebras' sparse pre-training recipes): at
// initialisation the smallest-magnitude weights of the chosen block matrices are pruned to zero
// and stay zero; the emulated wafer skips them, so cores whose tiles hold more zeros finish early.
struct SparsityConfig {
    double level = 0.0;                // fraction of each target matrix's weights pruned
    std::vector<std::string> targets;  // qkv, attn_proj, fc, fc_proj; empty: all four
    std::string method = "magnitude";

    bool operator==(const SparsityConfig&) const = default;

    template <class V>
    void visit(V& v) {
        v.field(level,
                {.key = "level",
                 .help = "Fraction of weights pruned to zero in each target matrix (0: dense)",
                 .min = 0,
                 .max = 0.99});
        v.field(targets,
                {.key = "targets",
                 .help = "Block matrices to prune: qkv, attn_proj, fc, fc_proj (empty: all)",
                 .choices = {"qkv", "attn_proj", "fc", "fc_proj"}});
        v.field(method,
                {.key = "method",
                 .help = "How weights are chosen: the smallest magnitudes at initialisation",
                 .choices = {"magnitude"}});
    }
};

// Mixture of experts (ours, in ModelZoo's moe_params key names where it has them). Present: the
// MLP of every moe_layer_frequency-th block (blocks 0, n, 2n, ..., Megatron's moe_layer_freq
// pattern; 1 = every block) becomes a router (softmax over experts of ln_2(x) · W_router) and
// num_experts GPT-2 MLPs of filter_size each; every token goes to its top_k experts, whose outputs
// are summed weighted by the router probabilities. Absent: every block is dense. num_experts 1 is
// a real (single-expert) MoE block, equal to the dense MLP; ModelZoo treats it as dense.
struct MoeConfig {
    int numExperts = 4;
    int topK = 1;
    double loadBalancingLossCoef = 0.01;
    int moeLayerFrequency = 1;
    double capacityFactor = 0.0;  // 0: no limit (no token is dropped)
    // Divide the top_k selected probabilities by their sum (Mixtral). With top_k 1 that makes
    // every weight 1 and the router gets no gradient from the loss, so validate() refuses it.
    bool expertWeightingNormalization = false;
    std::string routingAlgorithm = "learned";
    bool routerFp32 = true;

    bool operator==(const MoeConfig&) const = default;

    template <class V>
    void visit(V& v) {
        v.field(numExperts, {.key = "num_experts",
                             .help = "Experts per MoE block (each a GPT-2 MLP of filter_size)",
                             .min = 1,
                             .max = 1024});
        v.field(topK, {.key = "top_k",
                       .help = "Experts each token is sent to (1: Switch Transformer)",
                       .min = 1,
                       .max = 1024});
        v.field(loadBalancingLossCoef,
                {.key = "load_balancing_loss_coef",
                 .help = "Weight of the Switch load-balancing loss E * sum_e f_e * P_e added to "
                         "the training loss (0: none)",
                 .min = 0});
        v.field(moeLayerFrequency,
                {.key = "moe_layer_frequency",
                 .help = "Every n-th block is MoE (blocks 0, n, 2n, ...); 1 = every block",
                 .min = 1,
                 .aliases = {"moe_layer_freq"}});
        v.field(capacityFactor,
                {.key = "capacity_factor",
                 .help = "Expert capacity ceil(capacity_factor * tokens * top_k / num_experts); "
                         "tokens past it skip that expert (0: no limit)",
                 .min = 0});
        v.field(
            expertWeightingNormalization,
            {.key = "expert_weighting_normalization",
             .help = "Divide the selected experts' probabilities by their sum (needs top_k "
                     ">= 2: with top_k 1 every weight would be 1 and the router never learns)"});
        v.field(routingAlgorithm, {.key = "routing_algorithm",
                                   .help = "How tokens pick experts: a learned softmax router",
                                   .choices = {"learned"}});
        v.field(routerFp32,
                {.key = "router_fp32",
                 .help = "The router computes in fp32 (also under mixed precision); must be true"});
    }
};

// ModelZoo's extra_attention_params: with attention_module multiquery_attention, num_kv_groups
// is the number of key/value heads (1: multi-query; between: grouped-query, as Llama 2 70B's 8).
struct ExtraAttentionParams {
    int numKvGroups = 0;  // 0: one KV head per query head (plain multi-head attention)

    bool operator==(const ExtraAttentionParams&) const = default;

    template <class V>
    void visit(V& v) {
        v.field(numKvGroups,
                {.key = "num_kv_groups",
                 .help = "Key/value heads shared by the query heads (grouped-query attention; "
                         "must divide num_heads; needs attention_module: multiquery_attention)",
                 .min = 0});
    }
};

// ModelZoo's pos_scaling_extra_args for pos_scaling_type llama3 (Hugging Face rope_scaling's
// low_freq_factor, high_freq_factor, original_max_position_embeddings).
struct PosScalingExtraArgs {
    double lowFreqFactor = 1.0;
    double highFreqFactor = 4.0;
    int originalMaxPositionEmbeddings = 8192;

    bool operator==(const PosScalingExtraArgs&) const = default;

    template <class V>
    void visit(V& v) {
        v.field(lowFreqFactor, {.key = "low_freq_factor",
                                .help = "llama3 scaling: wavelengths longer than original / this "
                                        "are divided by pos_scaling_factor",
                                .min = 0});
        v.field(highFreqFactor, {.key = "high_freq_factor",
                                 .help = "llama3 scaling: wavelengths shorter than original / "
                                         "this keep their frequency",
                                 .min = 0});
        v.field(originalMaxPositionEmbeddings,
                {.key = "original_max_position_embeddings",
                 .help = "llama3 scaling: the context length the model was pre-trained with",
                 .unit = "tokens",
                 .min = 1});
    }
};

struct ModelConfig {
    std::string name = "gpt2";
    int vocabSize = 50257;
    int hiddenSize = 768;
    int numHiddenLayers = 12;
    int numHeads = 12;
    int filterSize = 3072;
    int maxPositionEmbeddings = 1024;
    // learned (GPT-2: a wpe table), rotary (RoPE on q and k: Llama, Mistral, Qwen2) or alibi
    // (linear biases on the attention scores: BTLM, BLOOM).
    std::string positionEmbeddingType = "learned";
    int rotaryDim = 0;              // rotary: dims of each head that rotate; 0 = the whole head
    double ropeTheta = 10000.0;     // rotary: frequency base
    double posScalingFactor = 1.0;  // rotary: position interpolation factor
    std::string posScalingType = "linear";                   // linear | llama3
    std::optional<PosScalingExtraArgs> posScalingExtraArgs;  // llama3's factors
    bool shareEmbeddingWeights = true;
    double dropoutRate = 0.0;
    double attentionDropoutRate = 0.0;
    std::string nonlinearity = "gelu";   // gelu (GPT-2 MLP) | swiglu (down(silu(gate) * up))
    std::string normType = "layernorm";  // layernorm | rmsnorm
    double layerNormEpsilon = 1e-5;      // epsilon of every norm, either type
    // aiayn_attention: one KV head per query head; multiquery_attention: extra_attention_params
    // .num_kv_groups KV heads shared by the query heads.
    std::string attentionModule = "aiayn_attention";
    ExtraAttentionParams extraAttentionParams;
    int attentionInnerDim = 0;  // heads x head size; 0 = hidden_size (HF head_dim x heads)
    int attentionSlidingWindowLength = 0;      // 0: none; otherwise no sequence may be longer
    bool useProjectionBiasInAttention = true;  // q/k/v biases (GPT-2 and Qwen2 have them)
    bool useFfnBiasInAttention = true;         // the attention output projection's bias
    bool useFfnBias = true;                    // the MLP's biases
    bool useBiasInOutput = false;              // a bias on the logits (not implemented: false)
    InitializerConfig embeddingInitializer;
    InitializerConfig initializer;
    // Absent: GPT-2's scaled init for residual-output projections, std / sqrt(2 * layers).
    std::optional<InitializerConfig> outputLayerInitializer;
    bool mixedPrecision = false;
    std::string fp16Type = "bfloat16";
    // μP (Maximal Update Parameterization), ModelZoo's names and meaning: on when
    // mupBaseHiddenSize > 0; the rules themselves are in engine/model/parameters.cpp (init, LR)
    // and engine/model/gpt.cpp (multipliers). embeddingsScale, scaleQkDotByD and
    // attentionLogitsAlpha apply with or without μP, as in ModelZoo.
    int mupBaseHiddenSize = 0;     // d_base; m_d = hidden_size / d_base
    int mupBaseFilterSize = 0;     // F_base; m_ffn = filter_size / F_base
    double embeddingsScale = 1.0;  // m_emb
    double outputLogitsAlpha = 1.0;
    bool scaleOutputLogitsByD = true;  // logits × alpha / m_d (false: alpha / sqrt(m_d))
    bool scaleQkDotByD = false;  // attention scores q·kᵀ / d_head instead of / sqrt(d_head)
    double attentionLogitsAlpha = 1.0;

    SparsityConfig sparsity;
    std::optional<MoeConfig> moe;  // absent: every block's MLP is dense

    bool mupEnabled() const { return mupBaseHiddenSize > 0; }

    bool operator==(const ModelConfig&) const = default;

    template <class V>
    void visit(V& v) {
        v.field(name, {.key = "name", .help = "Model family name (informational)"});
        v.field(vocabSize,
                {.key = "vocab_size",
                 .help = "Rows of the token embedding; at least the tokenizer's vocabulary",
                 .unit = "tokens",
                 .min = 2});
        v.field(hiddenSize,
                {.key = "hidden_size", .help = "Width d_model of the residual stream", .min = 1});
        v.field(numHiddenLayers,
                {.key = "num_hidden_layers", .help = "Number of transformer blocks", .min = 1});
        v.field(numHeads, {.key = "num_heads",
                           .help = "Attention heads per block; must divide hidden_size",
                           .min = 1});
        v.field(
            filterSize,
            {.key = "filter_size", .help = "Width of the MLP's hidden layer (d_ffn)", .min = 1});
        v.field(maxPositionEmbeddings,
                {.key = "max_position_embeddings",
                 .help = "Rows of the learned position embedding; the longest usable sequence",
                 .unit = "tokens",
                 .min = 1});
        v.field(positionEmbeddingType,
                {.key = "position_embedding_type",
                 .help = "How positions are encoded: learned (GPT-2's table), rotary (RoPE: "
                         "Llama, Mistral, Qwen2) or alibi (linear attention biases: BTLM)",
                 .choices = {"learned", "rotary", "alibi"}});
        v.field(rotaryDim, {.key = "rotary_dim",
                            .help = "rotary only: dimensions of each head that rotate (even; "
                                    "0 = the whole head)",
                            .min = 0});
        v.field(ropeTheta, {.key = "rope_theta",
                            .help = "rotary only: frequency base (Llama 2: 10000, Llama 3: "
                                    "500000, Qwen2: 1000000)",
                            .min = 1});
        v.field(posScalingFactor, {.key = "pos_scaling_factor",
                                   .help = "rotary only: position interpolation factor (1: none)",
                                   .min = 1});
        v.field(posScalingType, {.key = "pos_scaling_type",
                                 .help = "rotary only: how pos_scaling_factor stretches the "
                                         "frequencies (linear: all; llama3: the low ones)",
                                 .choices = {"linear", "llama3"}});
        v.optionalSection(posScalingExtraArgs,
                          {.key = "pos_scaling_extra_args",
                           .help = "rotary llama3 scaling's factors (absent: Llama 3.1's)"});
        v.field(shareEmbeddingWeights,
                {.key = "share_embedding_weights",
                 .help = "Tie the output projection to the token embedding (GPT-2 does)"});
        v.field(dropoutRate, {.key = "dropout_rate",
                              .help = "Dropout on embeddings and residual branches during training",
                              .min = 0,
                              .max = 0.999});
        v.field(attentionDropoutRate, {.key = "attention_dropout_rate",
                                       .help = "Dropout on attention probabilities during training",
                                       .min = 0,
                                       .max = 0.999});
        v.field(nonlinearity, {.key = "nonlinearity",
                               .help = "MLP: gelu (GPT-2's tanh-approximated GELU between two "
                                       "projections) or swiglu (down(silu(gate(x)) * up(x)): "
                                       "Llama, BTLM)",
                               .choices = {"gelu", "swiglu"}});
        v.field(normType, {.key = "norm_type",
                           .help = "Norm before each branch and the head: layernorm (GPT-2) or "
                                   "rmsnorm (Llama: no mean, no bias)",
                           .choices = {"layernorm", "rmsnorm"}});
        v.field(layerNormEpsilon,
                {.key = "layer_norm_epsilon", .help = "Epsilon inside every norm", .min = 0});
        v.field(attentionModule,
                {.key = "attention_module",
                 .help = "aiayn_attention: a key/value head per query head; "
                         "multiquery_attention: extra_attention_params.num_kv_groups of them",
                 .choices = {"aiayn_attention", "multiquery_attention"}});
        v.section(extraAttentionParams, {.key = "extra_attention_params",
                                         .help = "Grouped-query attention's key/value head count"});
        v.field(attentionInnerDim, {.key = "attention_inner_dim",
                                    .help = "Query width, num_heads x head size (0: hidden_size)",
                                    .min = 0});
        v.field(attentionSlidingWindowLength,
                {.key = "attention_sliding_window_length",
                 .help = "Mistral's sliding window (0: none). Sliding-window attention is not "
                         "implemented: sequences must be no longer than the window, where it "
                         "equals full attention",
                 .unit = "tokens",
                 .min = 0});
        v.field(useProjectionBiasInAttention,
                {.key = "use_projection_bias_in_attention",
                 .help = "Biases on the q/k/v projections (GPT-2, Qwen2: true; Llama: false)"});
        v.field(useFfnBiasInAttention,
                {.key = "use_ffn_bias_in_attention",
                 .help = "Bias on the attention output projection (GPT-2: true; Llama: false)"});
        v.field(useFfnBias, {.key = "use_ffn_bias",
                             .help = "Biases on the MLP projections (GPT-2: true; Llama: false)"});
        v.field(useBiasInOutput, {.key = "use_bias_in_output",
                                  .help = "A bias on the output logits (not implemented; false)"});
        v.section(embeddingInitializer, {.key = "embedding_initializer",
                                         .help = "Initializer of token and position embeddings"});
        v.section(initializer,
                  {.key = "initializer", .help = "Initializer of the attention and MLP weights"});
        v.optionalSection(outputLayerInitializer,
                          {.key = "output_layer_initializer",
                           .help = "Initializer of the residual-output projections (attn.c_proj, "
                                   "mlp.c_proj); default: initializer std / sqrt(2 * layers)"});
        v.field(mixedPrecision,
                {.key = "mixed_precision",
                 .help = "Compute in fp16_type; master weights and optimizer state stay fp32"});
        v.field(fp16Type, {.key = "fp16_type",
                           .help = "Reduced-precision type for compute",
                           .choices = {"bfloat16"},
                           .valueAliases = {{"cbfloat16", "bfloat16"}}});
        v.field(mupBaseHiddenSize,
                {.key = "mup_base_hidden_size",
                 .help = "muP base width d_base (0: muP off); hidden weights get init std / "
                         "sqrt(m) and LR / m with m = hidden_size / d_base",
                 .min = 0});
        v.field(mupBaseFilterSize,
                {.key = "mup_base_filter_size",
                 .help = "muP base MLP width (required with mup_base_hidden_size); mlp.c_proj "
                         "gets init std / sqrt(m_ffn) and LR / m_ffn, m_ffn = filter_size / this",
                 .min = 0});
        v.field(embeddingsScale,
                {.key = "embeddings_scale",
                 .help = "Multiplier m_emb of the embedding output (muP's tuned 10; 1 = none)",
                 .min = 0});
        v.field(outputLogitsAlpha,
                {.key = "output_logits_alpha",
                 .help = "muP only: output logits are multiplied by output_logits_alpha / m",
                 .min = 0});
        v.field(scaleOutputLogitsByD,
                {.key = "scale_output_logits_by_d",
                 .help = "muP only: divide the output logits by m (false: by sqrt(m))"});
        v.field(scaleQkDotByD,
                {.key = "scale_qk_dot_by_d",
                 .help = "Scale attention scores by 1 / head size instead of 1 / sqrt(head "
                         "size) (muP needs it)"});
        v.field(attentionLogitsAlpha, {.key = "attention_logits_alpha",
                                       .help = "Extra multiplier of the attention scores",
                                       .min = 0});
        v.section(sparsity, {.key = "sparsity",
                             .help = "Static weight sparsity: pruned weights stay zero and the "
                                     "wafer skips them"});
        v.optionalSection(moe, {.key = "moe",
                                .help = "Mixture of experts: MoE blocks get a router and "
                                        "num_experts MLPs (absent: dense)",
                                .aliases = {"moe_params"}});
    }
};

// One piece of a ModelZoo learning-rate schedule; pieces run one after the other.
struct SchedulerConfig {
    std::string scheduler = "Constant";  // Linear | Cosine | Constant
    double initialLearningRate = 0.0;    // Linear, Cosine
    double endLearningRate = 0.0;        // Linear, Cosine
    double learningRate = 0.0;           // Constant
    int64_t totalIters = 0;              // steps this piece lasts; 0 = until the end (last only)

    bool operator==(const SchedulerConfig&) const = default;

    template <class V>
    void visit(V& v) {
        v.field(scheduler, {.key = "scheduler",
                            .help = "Shape of this piece of the schedule",
                            .choices = {"Linear", "Cosine", "Constant"},
                            .valueAliases = {{"LinearLR", "Linear"},
                                             {"CosineDecay", "Cosine"},
                                             {"CosineDecayLR", "Cosine"},
                                             {"CosineAnnealing", "Cosine"},
                                             {"ConstantLR", "Constant"}}});
        v.field(initialLearningRate, {.key = "initial_learning_rate",
                                      .help = "Learning rate at the start of this piece",
                                      .min = 0});
        v.field(endLearningRate, {.key = "end_learning_rate",
                                  .help = "Learning rate at the end of this piece",
                                  .min = 0});
        v.field(learningRate,
                {.key = "learning_rate", .help = "Learning rate of a Constant piece", .min = 0});
        v.field(totalIters, {.key = "total_iters",
                             .help = "Steps this piece lasts (0: until the end of training)",
                             .unit = "steps",
                             .min = 0,
                             .aliases = {"steps", "decay_steps"}});
    }
};

// ModelZoo's learning_rate: a number, or a list of schedulers run in sequence.
struct LearningRate {
    double constant = 1e-3;                 // used when schedule is empty
    std::vector<SchedulerConfig> schedule;  // non-empty: the schedule wins

    // `constant` is unused while a schedule is set, and the YAML form cannot carry it then.
    bool operator==(const LearningRate& other) const {
        return schedule == other.schedule && (!schedule.empty() || constant == other.constant);
    }
};

struct OptimizerConfig {
    std::string optimizerType = "adamw";
    std::array<double, 2> betas = {0.9, 0.999};
    double eps = 1e-8;
    double weightDecay = 0.0;
    double momentum = 0.0;
    bool correctBias = true;
    double maxGradientNorm = 0.0;
    LearningRate learningRate;
    // Fine-tuning (ours): frozen tensors are never updated (see optim::ParamGroup::frozen).
    bool freezeEmbeddings = false;  // wte, wpe (and so the tied output layer)
    int freezeBlocks = 0;           // the first K transformer blocks h.0 .. h.{K-1}

    bool operator==(const OptimizerConfig&) const = default;

    template <class V>
    void visit(V& v) {
        v.field(optimizerType,
                {.key = "optimizer_type", .help = "Update rule", .choices = {"adamw", "sgd"}});
        v.field(
            betas,
            {.key = "betas", .help = "Adam moment decay rates [beta1, beta2]", .min = 0, .max = 1});
        v.field(
            eps,
            {.key = "eps", .help = "Adam denominator epsilon", .min = 0, .aliases = {"epsilon"}});
        v.field(weightDecay,
                {.key = "weight_decay",
                 .help = "Decoupled weight decay (not applied to biases and LayerNorm gains)",
                 .min = 0,
                 .aliases = {"weight_decay_rate"}});
        v.field(momentum,
                {.key = "momentum", .help = "SGD momentum (0: plain SGD)", .min = 0, .max = 1});
        v.field(correctBias, {.key = "correct_bias",
                              .help = "Adam bias correction",
                              .aliases = {"use_bias_correction"}});
        v.field(maxGradientNorm, {.key = "max_gradient_norm",
                                  .help = "Clip gradients to this global L2 norm (0: no clipping)",
                                  .min = 0});
        v.field(learningRate,
                {.key = "learning_rate",
                 .help = "A number, or a list of {scheduler: Linear|Cosine|Constant, ...} pieces"});
        v.field(freezeEmbeddings,
                {.key = "freeze_embeddings",
                 .help = "Fine-tuning: never update the token and position embeddings (with "
                         "tied embeddings this freezes the output layer too)"});
        v.field(freezeBlocks, {.key = "freeze_blocks",
                               .help = "Fine-tuning: never update the first N transformer blocks",
                               .unit = "blocks",
                               .min = 0});
    }
};

struct TokenizerConfig {
    std::string type = "byte";  // byte | bpe | train-bpe | hf
    std::string vocabFile;      // bpe: GPT-2 vocab.json
    std::string mergesFile;     // bpe: GPT-2 merges.txt
    std::string tokenizerFile;  // hf: a Hugging Face tokenizer.json
    int vocabSize = 4096;       // train-bpe: target vocabulary size

    bool operator==(const TokenizerConfig&) const = default;

    template <class V>
    void visit(V& v) {
        v.field(type, {.key = "type",
                       .help = "byte: 256 byte tokens; bpe: a GPT-2 vocab.json + merges.txt pair; "
                               "train-bpe: learn a byte-level BPE on the training corpus; hf: a "
                               "Hugging Face tokenizer.json (Llama, Qwen2, Mistral, ...)",
                       .choices = {"byte", "bpe", "train-bpe", "hf"}});
        v.field(vocabFile, {.key = "vocab_file", .help = "GPT-2 style vocab.json (type bpe)"});
        v.field(mergesFile, {.key = "merges_file", .help = "GPT-2 style merges.txt (type bpe)"});
        v.field(tokenizerFile,
                {.key = "tokenizer_file",
                 .help = "Hugging Face tokenizer.json (type hf); tokenizer_config.json beside it "
                         "is read too"});
        v.field(vocabSize, {.key = "vocab_size",
                            .help = "Vocabulary size to learn (type train-bpe)",
                            .unit = "tokens",
                            .min = 257});
    }
};

struct InputConfig {
    std::string dataProcessor = "TextFileDataProcessor";
    std::vector<std::string> dataDir;  // text files and/or folders of text files
    // Read data files that do not look like plain text (data/text_check.h) instead of refusing
    // them: the user insisted.
    bool allowBinary = false;
    int batchSize = 8;
    int maxSequenceLength = 128;
    bool shuffle = false;
    int64_t shuffleSeed = 0;
    int numWorkers = 0;
    TokenizerConfig tokenizer;
    double validationFraction = 0.1;  // train_input: share of tokens held out at the end
    // ModelZoo's micro_batch_size: "auto" (the largest per-system micro-batch whose activations
    // fit the wafer's SRAM), "none" (the whole per-system batch at once) or a number dividing it.
    std::string microBatchSize = "auto";
    // Variable sequence length (VSL), as ModelZoo's `use_vsl`: the data_dir files are separate
    // documents; a window that spans several keeps attention inside each and restarts positions
    // at each (ModelZoo's position_ids). Needs data_dir to hold two or more files.
    bool useVsl = false;
    // train_input only: a two-stage sequence-length schedule. The first short_sequence_steps
    // steps train on sequences of short_sequence_length tokens (max_sequence_length /
    // short_sequence_length of them packed in each row, so tokens per step stay the same), the
    // rest on max_sequence_length. 0 = one stage.
    int shortSequenceLength = 0;
    int64_t shortSequenceSteps = 0;
    // Instruction and chat data (data/record_format.h, chat/chat_template.h): the records'
    // format (auto: detected and shown), the CSV/TSV column mapping (H2O LLM Studio's keys), the
    // chat template that renders a conversation (auto: the model's own, else the built-in
    // ChatML), and what is trained on: the assistant's answers only unless train_on_inputs;
    // with mask_history only each conversation's last answer.
    std::string format = "auto";
    std::string promptColumn = "prompt";
    std::string answerColumn = "answer";
    std::string systemColumn = "system";
    std::string idColumn = "id";
    std::string parentIdColumn = "parent_id";
    std::string chatTemplate = "auto";
    bool trainOnInputs = false;
    bool maskHistory = false;
    // Whole examples packed into each row (positions restart at each; attention stays inside
    // it) or one example per row.
    bool packExamples = true;
    std::string longExamples = "truncate";  // an example longer than a row: truncate | refuse
    int64_t validationRecords = 0;          // records held out (0: validation_fraction of them)

    bool operator==(const InputConfig&) const = default;

    template <class V>
    void visit(V& v) {
        v.field(dataProcessor, {.key = "data_processor",
                                .help = "Data loader kind (text files, tokenized here)",
                                .choices = {"TextFileDataProcessor", "GptTextDataProcessor",
                                            "GptHDF5DataProcessor", "GptHDF5MapDataProcessor",
                                            "GptTfRecordsProcessor"}});
        v.field(dataDir, {.key = "data_dir",
                          .help = "A text file, a folder of text files, or a list of them"});
        v.field(allowBinary,
                {.key = "allow_binary",
                 .help = "Read data files that do not look like plain text (executables, PDF, "
                         "DOCX, images, archives) instead of refusing them"});
        v.field(batchSize, {.key = "batch_size",
                            .help = "Sequences per step (global batch)",
                            .unit = "sequences",
                            .min = 1});
        v.field(maxSequenceLength, {.key = "max_sequence_length",
                                    .help = "Tokens per sequence (T)",
                                    .unit = "tokens",
                                    .min = 1});
        v.field(microBatchSize,
                {.key = "micro_batch_size",
                 .help = "Sequences per micro-batch on each system (gradient accumulation): "
                         "auto = the largest that fits the wafer, none = no accumulation, or a "
                         "number dividing batch_size / num_csx"});
        v.field(shuffle,
                {.key = "shuffle", .help = "Seeded random windows instead of consecutive ones"});
        v.field(shuffleSeed, {.key = "shuffle_seed", .help = "Seed of the shuffled window order"});
        v.field(numWorkers, {.key = "num_workers",
                             .help = "Accepted for ModelZoo compatibility; unused",
                             .min = 0});
        v.section(tokenizer, {.key = "tokenizer", .help = "How text becomes tokens"});
        v.field(validationFraction,
                {.key = "validation_fraction",
                 .help = "Share of the corpus's tokens held out at its end for evaluation",
                 .min = 0,
                 .max = 0.5});
        v.field(useVsl, {.key = "use_vsl",
                         .help = "Variable sequence length: each data file is a document; "
                                 "attention stays inside it and positions restart at its start"});
        v.field(shortSequenceLength,
                {.key = "short_sequence_length",
                 .help = "Two-stage schedule (train_input): tokens per sequence for the first "
                         "short_sequence_steps steps; must divide max_sequence_length (0 = off)",
                 .unit = "tokens",
                 .min = 0});
        v.field(shortSequenceSteps,
                {.key = "short_sequence_steps",
                 .help = "Two-stage schedule (train_input): steps at short_sequence_length "
                         "before switching to max_sequence_length",
                 .unit = "steps",
                 .min = 0});
        v.field(format,
                {.key = "format",
                 .help = "What the data files hold: auto (detected from the files, and shown), "
                         "text, messages (OpenAI), sharegpt, alpaca, prompt_completion, "
                         "text_records ({\"text\": ...} lines) or columns (CSV/TSV)",
                 .choices = {"auto", "text", "messages", "sharegpt", "alpaca", "prompt_completion",
                             "text_records", "columns"}});
        v.field(promptColumn,
                {.key = "prompt_column", .help = "CSV/TSV data: the column holding the prompt"});
        v.field(answerColumn,
                {.key = "answer_column", .help = "CSV/TSV data: the column holding the answer"});
        v.field(systemColumn, {.key = "system_column",
                               .help = "CSV/TSV data: the column holding a system prompt "
                                       "(used when the file has it)"});
        v.field(idColumn, {.key = "id_column",
                           .help = "CSV/TSV data: the column holding each record's id, for "
                                   "multi-turn chains (used when the file has it)"});
        v.field(parentIdColumn,
                {.key = "parent_id_column",
                 .help = "CSV/TSV data: the column naming the record a turn follows (used when "
                         "the file has it)"});
        v.field(chatTemplate,
                {.key = "chat_template",
                 .help = "How a conversation becomes text: auto (the model's own chat template, "
                         "else ChatML), chatml, or a .jinja file"});
        v.field(trainOnInputs,
                {.key = "train_on_inputs",
                 .help = "Chat data: train on every token, prompts included (default: the "
                         "assistant's answers only)"});
        v.field(maskHistory, {.key = "mask_history",
                              .help = "Chat data: train on each conversation's last answer only"});
        v.field(packExamples,
                {.key = "pack_examples",
                 .help = "Chat data: pack whole examples into each sequence (each sees only "
                         "itself) instead of one example per sequence"});
        v.field(longExamples,
                {.key = "long_examples",
                 .help = "Chat data: an example longer than max_sequence_length is truncated "
                         "(and counted) or the data is refused",
                 .choices = {"truncate", "refuse"}});
        v.field(validationRecords,
                {.key = "validation_records",
                 .help = "Chat data: records held out for evaluation (0: validation_fraction of "
                         "them)",
                 .unit = "records",
                 .min = 0});
    }
};

struct RunConfig {
    int64_t maxSteps = 1000;
    int evalSteps = 10;
    int evalFrequency = 100;
    int logSteps = 10;
    int checkpointSteps = 0;
    bool saveInitialCheckpoint = false;
    int maxCheckpoints = 0;
    int64_t seed = 1;
    std::string modelDir;  // empty: a folder per run under the user data folder
    int numCsx = 1;
    std::string checkpointPath;
    bool loadCheckpointStates = false;
    bool checkLossValues = true;
    int numThreads = 0;

    bool operator==(const RunConfig&) const = default;

    template <class V>
    void visit(V& v) {
        v.field(maxSteps,
                {.key = "max_steps", .help = "Training steps", .unit = "steps", .min = 0});
        v.field(evalSteps, {.key = "eval_steps",
                            .help = "Validation batches per evaluation",
                            .unit = "batches",
                            .min = 0});
        v.field(evalFrequency, {.key = "eval_frequency",
                                .help = "Evaluate every N steps (0: only at the end)",
                                .unit = "steps",
                                .min = 0});
        v.field(logSteps, {.key = "log_steps",
                           .help = "Report metrics every N steps",
                           .unit = "steps",
                           .min = 1});
        v.field(checkpointSteps, {.key = "checkpoint_steps",
                                  .help = "Write a checkpoint every N steps (0: only at the end)",
                                  .unit = "steps",
                                  .min = 0,
                                  .aliases = {"save_checkpoints_steps"}});
        v.field(saveInitialCheckpoint,
                {.key = "save_initial_checkpoint", .help = "Also checkpoint step 0"});
        v.field(maxCheckpoints, {.key = "max_checkpoints",
                                 .help = "Keep the newest N checkpoints (0: keep all)",
                                 .min = 0,
                                 .aliases = {"keep_checkpoint_max"}});
        v.field(seed, {.key = "seed",
                       .help = "Seed of initialization, dropout and shuffling",
                       .aliases = {"tf_random_seed"}});
        v.field(modelDir, {.key = "model_dir",
                           .help = "Folder for this run's outputs (final model.safetensors, "
                                   "checkpoint-<step> folders)"});
        v.field(numCsx, {.key = "num_csx",
                         .help = "Emulated systems training data-parallel",
                         .unit = "systems",
                         .min = 1,
                         .max = 2048});
        v.field(checkpointPath, {.key = "checkpoint_path",
                                 .help = "Initialise the model from this model.safetensors"});
        v.field(loadCheckpointStates,
                {.key = "load_checkpoint_states",
                 .help = "Accepted for ModelZoo compatibility (to resume with optimizer "
                         "state: wafer train --resume)"});
        v.field(checkLossValues, {.key = "check_loss_values",
                                  .help = "Stop the run when the loss becomes NaN or infinite"});
        v.field(numThreads,
                {.key = "num_threads", .help = "CPU threads for compute (0: all cores)", .min = 0});
    }
};

// MemoryX: the external store that holds master weights and optimizer state and runs the update.
struct MemoryXConfig {
    std::string backing = "ram";  // ram | file
    std::string path;             // file backing: the store file (created; must not exist)
    int shards = 1;  // ranks that each hold whole layers of MemoryX (mpirun): 1 = rank 0 alone
    // Across processes, the tree of ranks gradients are reduced in (streaming/rank_tree.h):
    // 0 = every rank sends to the layer's MemoryX rank, 1 = a chain, F >= 2 = fan-in F.
    int reduceFanIn = 4;

    bool operator==(const MemoryXConfig&) const = default;

    template <class V>
    void visit(V& v) {
        v.field(backing, {.key = "backing",
                          .help = "Where weights and optimizer state live: ram, or a "
                                  "memory-mapped file for models larger than RAM",
                          .choices = {"ram", "file"}});
        v.field(path, {.key = "path",
                       .help = "The store file when backing is file (its folder must be "
                               "writable)"});
        v.field(shards,
                {.key = "shards",
                 .help = "Across processes (mpirun): split MemoryX over the first N ranks, each "
                         "holding whole layers' weights and optimizer state (1: all on rank 0)",
                 .min = 1,
                 .max = 4096});
        v.field(reduceFanIn,
                {.key = "reduce_fan_in",
                 .help = "Across processes (mpirun): the tree of ranks that sums gradients on "
                         "their way to MemoryX; each rank adds up what its systems and its "
                         "children hold in SwarmX's order, so results never change. 4 mirrors "
                         "SwarmX, 2 a binomial tree, 1 a chain, 0 sends every rank's slices "
                         "straight to MemoryX's rank",
                 .min = 0,
                 .max = 4096});
    }
};

// The emulated wafer each system streams layers onto.
struct WaferConfig {
    std::string spec = "wse2";   // a spec in presets/wafers/ (teaching-16x16, wse2, wse3)
    int weightBufferLayers = 2;  // layers' weights the wafer may hold at once (2: double buffer)
    int64_t sramBytes = 0;       // 0: the spec's; otherwise overrides the SRAM for activations
    bool emulate = true;         // attach emulated hardware time and utilization to the run
    std::vector<std::string> overrides;  // "grid_rows=64": figures of the spec's wafer: section

    bool operator==(const WaferConfig&) const = default;

    template <class V>
    void visit(V& v) {
        v.field(spec, {.key = "spec",
                       .help = "Wafer spec: teaching-16x16, wse2 or wse3 (presets/wafers/)"});
        v.field(weightBufferLayers,
                {.key = "weight_buffer_layers",
                 .help = "Layers whose weights the wafer holds at once; 2 = double buffering "
                         "(the next layer streams in while the current one computes)",
                 .unit = "layers",
                 .min = 1,
                 .max = 64});
        v.field(sramBytes, {.key = "sram_bytes",
                            .help = "On-wafer memory for activations (0: the spec's total SRAM)",
                            .unit = "bytes",
                            .min = 0});
        v.field(emulate, {.key = "emulate",
                          .help = "Run the cycle model beside training: emulated time for every "
                                  "span, per-core utilization frames, predicted throughput"});
        v.field(overrides,
                {.key = "overrides",
                 .help = "Change figures of the spec's wafer, e.g. [grid_rows=64, clock_ghz=1.2] "
                         "(keys of presets/wafers/*.yaml's wafer: section)"});
    }
};

// The cluster around the wafers (ours). How many systems train is ModelZoo's runconfig.num_csx;
// this section changes the spec's SwarmX / MemoryX figures.
struct ClusterConfig {
    std::vector<std::string> overrides;  // "max_systems=32": figures of the spec's cluster:

    bool operator==(const ClusterConfig&) const = default;

    template <class V>
    void visit(V& v) {
        v.field(overrides,
                {.key = "overrides",
                 .help = "Change figures of the spec's cluster, e.g. [max_systems=32, "
                         "swarmx_fan_out=2] (keys of presets/wafers/*.yaml's cluster: section)"});
    }
};

// LoRA fine-tuning (ours; ModelZoo has no LoRA keys): the base weights stay frozen and each
// targeted linear layer of every block gains a trained low-rank update, output += (alpha / rank) *
// B (A x) with A (rank x in) and B (out x rank), B starting at zero. Targets use the HF GPT-2
// module names or, on a Llama-shaped model, Llama's projection names (PEFT's target_modules; see
// engine/model/lora.h). Absent: no adapters (plain training or fine-tuning).
struct LoraConfig {
    int rank = 8;
    double alpha = 16.0;
    double dropout = 0.0;
    std::vector<std::string> targets = {"c_attn"};  // PEFT's default for GPT-2
    // > 0: the embedding rows (and untied lm_head rows) of token ids from this one to
    // vocab_size - 1 train beside the adapters, the rest of the base staying frozen (PEFT's
    // trainable_token_indices): the rows a fine-tune added for its chat template's special
    // tokens. 0: none.
    int trainableTokensFrom = 0;

    bool operator==(const LoraConfig&) const = default;

    template <class V>
    void visit(V& v) {
        v.field(rank, {.key = "rank",
                       .help = "Rank r of each adapter: A is r x in, B is out x r",
                       .min = 1,
                       .aliases = {"r"}});
        v.field(alpha, {.key = "alpha",
                        .help = "Adapter scale numerator: the update is (alpha / rank) * B A",
                        .min = 0,
                        .aliases = {"lora_alpha"}});
        v.field(dropout, {.key = "dropout",
                          .help = "Dropout on the adapter branch's input only (the base path "
                                  "is untouched)",
                          .min = 0,
                          .max = 0.99,
                          .aliases = {"lora_dropout"}});
        v.field(targets,
                {.key = "targets",
                 .help = "Linear layers of each block that get an adapter, by HF GPT-2 module "
                         "name (c_attn, attn.c_proj, c_fc, mlp.c_proj) or Llama projection "
                         "name (q_proj, k_proj, v_proj, o_proj, gate_proj, up_proj, down_proj; "
                         "q/k/v_proj adapt their columns of c_attn, gate/up_proj theirs of "
                         "c_fc with SwiGLU; o_proj is attn.c_proj, down_proj is mlp.c_proj)",
                 .choices = {"c_attn", "attn.c_proj", "c_fc", "mlp.c_proj", "q_proj", "k_proj",
                             "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"},
                 .aliases = {"target_modules"}});
        v.field(trainableTokensFrom,
                {.key = "trainable_tokens_from",
                 .help = "0: none. N > 0: the embedding (and untied lm_head) rows of token ids "
                         "N .. vocab_size - 1 train with the adapters, the rest of the base "
                         "frozen (PEFT's trainable_token_indices): the special tokens a "
                         "fine-tune added to the vocabulary",
                 .min = 0});
    }
};

struct Config {
    ModelConfig model;
    OptimizerConfig optimizer;
    InputConfig trainInput;
    InputConfig evalInput;
    RunConfig runconfig;
    MemoryXConfig memoryx;
    WaferConfig wafer;
    ClusterConfig cluster;
    std::optional<LoraConfig> lora;    // absent: no adapters
    std::optional<SweepConfig> sweep;  // sweep_config.h; absent in a plain run's config
    // sparsity_config.h: ModelZoo's top-level sparsity section; absent: dense (model.sparsity,
    // the older static form, still works alone)
    std::optional<SparsitySectionConfig> sparsity;

    bool operator==(const Config&) const = default;

    template <class V>
    void visit(V& v) {
        v.section(model, {.key = "model", .help = "The GPT model's shape and initialization"});
        v.section(optimizer, {.key = "optimizer", .help = "Update rule and learning rate"});
        v.section(trainInput, {.key = "train_input", .help = "Training data"});
        v.section(evalInput, {.key = "eval_input",
                              .help = "Evaluation data (empty data_dir: the training corpus's "
                                      "held-out end)"});
        v.section(runconfig, {.key = "runconfig", .help = "Steps, logging, seed, outputs"});
        v.section(memoryx,
                  {.key = "memoryx",
                   .help = "The external weight store (ours, beside ModelZoo's sections)"});
        v.section(wafer, {.key = "wafer", .help = "The emulated wafer (ours)"});
        v.section(cluster, {.key = "cluster",
                            .help = "The emulated cluster: SwarmX and MemoryX figures (ours)"});
        v.optionalSection(lora, {.key = "lora",
                                 .help = "LoRA fine-tuning (ours): freeze the base and train "
                                         "low-rank adapters on chosen linear layers"});
        v.optionalSection(sweep, {.key = "sweep",
                                  .help = "A hyperparameter sweep over this config (`wafer sweep`; "
                                          "ignored by `wafer train`)"});
        v.optionalSection(sparsity,
                          {.key = "sparsity",
                           .help = "Weight sparsity, ModelZoo's section: static, set, rigl or gmp "
                                   "masks over chosen matrices (sparsity_config.h)"});
    }
};

}  // namespace ws::config
