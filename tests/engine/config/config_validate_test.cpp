// SPDX-License-Identifier: GPL-3.0-or-later
// validate(): every cross-field rule with its message, per-field ranges for configs built in
// code, and checkVocab().
#include <gtest/gtest.h>

#include "config_test_util.h"

#include "engine/config/validate.h"

namespace ws::config {
namespace {

// The defaults plus a training corpus: the smallest config that can run.
Config runnable() {
    Config c;
    c.trainInput.dataDir = {"/data/corpus"};
    return c;
}

// The only error of `c` (test failure if there is not exactly one).
std::string onlyError(const Config& c) {
    const std::vector<std::string> errors = validate(c);
    EXPECT_EQ(errors.size(), 1u);
    if (errors.size() != 1)
        for (const std::string& e : errors) ADD_FAILURE() << "error: " << e;
    return errors.empty() ? std::string() : errors.front();
}

TEST(ConfigValidate, DefaultsWithDataAreValid) {
    EXPECT_TRUE(validate(runnable()).empty());
}

TEST(ConfigValidate, HiddenSizeMustDivideByHeads) {
    Config c = runnable();
    c.model.hiddenSize = 130;
    c.model.numHeads = 4;
    c.model.filterSize = 520;
    const std::vector<std::string> errors = validate(c);
    ASSERT_EQ(errors.size(), 1u);
    EXPECT_EQ(errors[0],
              "model.hidden_size (130) is not divisible by model.num_heads (4): every head gets "
              "hidden_size / num_heads channels; use hidden_size 128 or 132, or a num_heads that "
              "divides 130");
}

TEST(ConfigValidate, MupBaseShapeIsChecked) {
    Config c = runnable();
    c.model.hiddenSize = 256;
    c.model.numHeads = 4;
    c.model.filterSize = 1024;
    c.model.mupBaseHiddenSize = 32;
    c.model.mupBaseFilterSize = 128;
    EXPECT_TRUE(validate(c).empty());
    // Multipliers need not be integers (Cerebras-GPT 256M: 1088 on a base of 256).
    c.model.mupBaseHiddenSize = 48;
    EXPECT_TRUE(validate(c).empty());

    c.model.mupBaseHiddenSize = 512;
    EXPECT_EQ(onlyError(c),
              "model.mup_base_hidden_size (512) is larger than model.hidden_size (256): muP "
              "scales up from a narrower base model; set mup_base_hidden_size to the width you "
              "tuned on (at most 256) or raise hidden_size");
    c.model.mupBaseHiddenSize = 32;
    c.model.mupBaseFilterSize = 2048;
    EXPECT_EQ(onlyError(c),
              "model.mup_base_filter_size (2048) is larger than model.filter_size (1024): set it "
              "to the base model's filter_size (at most 1024) or raise filter_size");
    c.model.mupBaseFilterSize = 0;
    EXPECT_EQ(onlyError(c),
              "model.mup_base_hidden_size is set but model.mup_base_filter_size is not: muP "
              "needs both base dimensions (as in ModelZoo); set mup_base_filter_size to the base "
              "model's filter_size (128 keeps this model's ratio)");
    c.model.mupBaseHiddenSize = 0;
    c.model.mupBaseFilterSize = 128;
    EXPECT_EQ(onlyError(c),
              "model.mup_base_filter_size (128) is set but model.mup_base_hidden_size is 0, so "
              "muP is off; set mup_base_hidden_size to the base width too, or remove "
              "mup_base_filter_size");
    c.model.mupBaseFilterSize = 0;
    c.model.mupBaseHiddenSize = -1;
    EXPECT_EQ(onlyError(c), "model.mup_base_hidden_size = -1: must be >= 0");
}

TEST(ConfigValidate, SequenceMustFitThePositionTable) {
    Config c = runnable();
    c.trainInput.maxSequenceLength = 2048;
    c.model.maxPositionEmbeddings = 1024;
    const std::vector<std::string> errors = validate(c);
    ASSERT_EQ(errors.size(), 1u);
    EXPECT_EQ(errors[0],
              "train_input.max_sequence_length (2048) is longer than model.max_position_embeddings "
              "(1024), the longest sequence the model can place; raise "
              "model.max_position_embeddings to 2048 or lower train_input.max_sequence_length");
    // Evaluation runs at train_input's length, so eval_input's value does not matter.
    c = runnable();
    c.evalInput.maxSequenceLength = 4096;
    c.evalInput.tokenizer.type = "bpe";
    EXPECT_TRUE(validate(c).empty());
}

TEST(ConfigValidate, BetasBelowOneForAdamButAnythingForSgd) {
    Config c = runnable();
    c.optimizer.betas = {0.9, 1.0};
    const std::vector<std::string> errors = validate(c);
    ASSERT_EQ(errors.size(), 1u);
    EXPECT_EQ(errors[0],
              "optimizer.betas[1] = 1: must be below 1 (with 1 the moment never updates); typical "
              "values are [0.9, 0.95] or [0.9, 0.999]");
    c.optimizer.optimizerType = "sgd";
    EXPECT_TRUE(validate(c).empty());
    c.optimizer.betas = {-0.1, 0.9};
    const std::vector<std::string> negative = validate(c);
    ASSERT_EQ(negative.size(), 1u);
    EXPECT_EQ(negative[0], "optimizer.betas[0] = -0.1: must be between 0 and 1");
}

TEST(ConfigValidate, ScheduleMustBeWellFormed) {
    Config c = runnable();
    c.optimizer.learningRate.schedule = {{.scheduler = "Linear",
                                          .initialLearningRate = 0,
                                          .endLearningRate = 1e-3,
                                          .learningRate = 0,
                                          .totalIters = 0},
                                         {.scheduler = "Cosine",
                                          .initialLearningRate = 0,
                                          .endLearningRate = 0,
                                          .learningRate = 0,
                                          .totalIters = 0},
                                         {.scheduler = "Constant",
                                          .initialLearningRate = 1e-3,
                                          .endLearningRate = 0,
                                          .learningRate = 0,
                                          .totalIters = 0}};
    const std::vector<std::string> errors = validate(c);
    ASSERT_EQ(errors.size(), 4u);
    EXPECT_EQ(errors[0],
              "optimizer.learning_rate[0].total_iters = 0: only the last piece may run until the "
              "end of training; give this piece its length in steps");
    EXPECT_EQ(errors[1].rfind("optimizer.learning_rate[1].total_iters = 0", 0), 0u);
    EXPECT_EQ(errors[2],
              "optimizer.learning_rate[1]: a Cosine piece from 0 to 0 never trains; set "
              "initial_learning_rate and end_learning_rate");
    EXPECT_EQ(errors[3],
              "optimizer.learning_rate[2]: a Constant piece uses learning_rate, which is 0 here; "
              "move the value of initial_learning_rate/end_learning_rate to learning_rate");
}

TEST(ConfigValidate, HfNeedsItsTokenizerFile) {
    Config c = runnable();
    c.trainInput.tokenizer.type = "hf";
    EXPECT_EQ(onlyError(c),
              "train_input.tokenizer: type hf needs tokenizer_file (a Hugging Face "
              "tokenizer.json, e.g. the model folder's); set it");
    c.trainInput.tokenizer.tokenizerFile = "/models/qwen2.5/tokenizer.json";
    EXPECT_TRUE(validate(c).empty());
}

TEST(ConfigValidate, BpeNeedsItsFiles) {
    Config c = runnable();
    c.trainInput.tokenizer.type = "bpe";
    c.trainInput.tokenizer.vocabFile = "/gpt2/vocab.json";
    EXPECT_EQ(onlyError(c),
              "train_input.tokenizer: type bpe needs both vocab_file (GPT-2 vocab.json) and "
              "merges_file (merges.txt); set them, or use type train-bpe to learn a vocabulary "
              "from the corpus");
    c.trainInput.tokenizer.mergesFile = "/gpt2/merges.txt";
    EXPECT_TRUE(validate(c).empty());
}

TEST(ConfigValidate, TrainedVocabularyMustFitTheEmbedding) {
    Config c = runnable();
    c.trainInput.tokenizer.type = "train-bpe";
    c.trainInput.tokenizer.vocabSize = 4096;
    c.model.vocabSize = 2048;
    EXPECT_EQ(onlyError(c),
              "train_input.tokenizer.vocab_size (4096) is larger than model.vocab_size (2048): "
              "every token needs an embedding row; raise model.vocab_size to 4096 or lower "
              "train_input.tokenizer.vocab_size");
}

TEST(ConfigValidate, ByteTokenizerNeeds256Rows) {
    Config c = runnable();
    c.model.vocabSize = 200;
    EXPECT_EQ(onlyError(c),
              "model.vocab_size (200) is below 256, but train_input.tokenizer.type byte has 256 "
              "tokens; set model.vocab_size to 256 or more");
}

TEST(ConfigValidate, TrainingNeedsData) {
    Config c;
    EXPECT_EQ(onlyError(c),
              "train_input.data_dir is empty: give a text file, a folder of .txt files, or a list "
              "of them (e.g. data_dir: ../resources/corpus)");
}

TEST(ConfigValidate, EvaluationNeedsSteps) {
    Config c = runnable();
    c.runconfig.evalSteps = 0;
    c.runconfig.evalFrequency = 50;
    EXPECT_EQ(onlyError(c),
              "runconfig.eval_steps is 0 but runconfig.eval_frequency is 50: an evaluation needs "
              "at least one batch; set eval_steps >= 1, or eval_frequency 0 to evaluate only at "
              "the end");
    c.runconfig.evalFrequency = 0;
    EXPECT_TRUE(validate(c).empty());
}

TEST(ConfigValidate, Float16IsRefusedButMixedPrecisionIsFine) {
    Config c = runnable();
    c.model.mixedPrecision = true;
    EXPECT_TRUE(validate(c).empty());
    c.model.fp16Type = "float16";
    const std::vector<std::string> errors = validate(c);
    ASSERT_EQ(errors.size(), 2u);  // not a declared choice, and the specific advice
    EXPECT_EQ(errors[0], "model.fp16_type = \"float16\": must be one of bfloat16");
    EXPECT_EQ(errors[1],
              "model.fp16_type = \"float16\": float16 needs loss scaling, which Wafer Studio does "
              "not implement; use bfloat16");
}

TEST(ConfigValidate, BatchSplitsEvenlyAcrossSystems) {
    Config c = runnable();
    c.trainInput.batchSize = 10;
    c.runconfig.numCsx = 4;
    EXPECT_EQ(onlyError(c),
              "train_input.batch_size (10) is not divisible by runconfig.num_csx (4): the global "
              "batch is split evenly across systems; use batch_size 8 or 12");
}

TEST(ConfigValidate, TruncationBoundsMustBeOrdered) {
    Config c = runnable();
    c.model.initializer.a = 0.1;
    c.model.initializer.b = -0.1;
    EXPECT_EQ(onlyError(c),
              "model.initializer: a (0.1) must be below b (-0.1) for truncated_normal, e.g. a = "
              "-2 * std and b = 2 * std");
}

TEST(ConfigValidate, FieldRangesAndChoicesApplyToConfigsBuiltInCode) {
    Config c = runnable();
    c.model.numHiddenLayers = 0;
    c.trainInput.tokenizer.type = "sentencepiece";
    c.optimizer.learningRate.constant = -1;
    const std::vector<std::string> errors = validate(c);
    ASSERT_EQ(errors.size(), 3u);
    EXPECT_EQ(errors[0], "model.num_hidden_layers = 0: must be >= 1");
    EXPECT_EQ(errors[1], "optimizer.learning_rate = -1.0: must be a number >= 0");
    EXPECT_EQ(errors[2],
              "train_input.tokenizer.type = \"sentencepiece\": must be one of byte, bpe, "
              "train-bpe, hf");
}

TEST(ConfigValidate, LoraIsOffByDefaultAndItsDefaultsAreValid) {
    Config c = runnable();
    EXPECT_FALSE(c.lora.has_value());
    c.lora.emplace();
    EXPECT_TRUE(validate(c).empty());
    EXPECT_EQ(c.lora->targets, std::vector<std::string>{"c_attn"});
}

TEST(ConfigValidate, LoraRankTargetsAndDropoutAreChecked) {
    Config c = runnable();
    c.lora = LoraConfig{.rank = 0, .alpha = 16, .dropout = 1.5, .targets = {"c_attn", "wte"}};
    const std::vector<std::string> errors = validate(c);
    ASSERT_EQ(errors.size(), 3u);
    EXPECT_EQ(errors[0], "lora.rank = 0: must be >= 1");
    EXPECT_EQ(errors[1], "lora.dropout = 1.5: must be between 0 and 0.99");
    EXPECT_EQ(errors[2],
              "lora.targets[1] = \"wte\": must be one of c_attn, attn.c_proj, c_fc, mlp.c_proj, "
              "q_proj, k_proj, v_proj, o_proj, gate_proj, up_proj, down_proj");

    c.lora = LoraConfig{.targets = {}};
    EXPECT_EQ(onlyError(c),
              "lora.targets is empty: name at least one linear layer to adapt, e.g. targets: "
              "[c_attn] (choices: c_attn, attn.c_proj, c_fc, mlp.c_proj)");
    c.lora = LoraConfig{.targets = {"c_fc", "mlp.c_proj", "c_fc"}};
    EXPECT_EQ(onlyError(c), "lora.targets[2] = \"c_fc\": listed twice; name each layer once");
    c.model.hiddenSize = 64;
    c.model.numHeads = 4;
    c.lora = LoraConfig{.rank = 65};
    EXPECT_EQ(onlyError(c),
              "lora.rank (65) is more than model.hidden_size (64): a low-rank adapter must be "
              "narrower than the layer; use rank <= 64 (typical: 4 to 64)");
    c.lora->rank = 64;
    EXPECT_TRUE(validate(c).empty());
}

// Issue 33: Llama's projection names; slices that overlap their fused linear, gate/up_proj
// without SwiGLU and the two spellings of one adapter are refused naming the keys.
TEST(ConfigValidate, LlamaLoraTargetsOverlapsAndAliasesAreChecked) {
    Config c = runnable();
    c.model.nonlinearity = "swiglu";
    c.lora = LoraConfig{
        .targets = {"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"}};
    EXPECT_TRUE(validate(c).empty());
    c.lora = LoraConfig{.targets = {"c_attn", "v_proj"}};
    EXPECT_EQ(onlyError(c),
              "lora.targets lists c_attn and v_proj: c_attn is the fused [q | k | v] linear, so "
              "both would adapt the same columns; keep c_attn or the separate q_proj / k_proj / "
              "v_proj, not both");
    c.lora = LoraConfig{.targets = {"up_proj", "c_fc"}};
    EXPECT_NE(onlyError(c).find("lora.targets lists c_fc and up_proj"), std::string::npos);
    c.lora = LoraConfig{.targets = {"o_proj", "attn.c_proj"}};
    EXPECT_EQ(onlyError(c),
              "lora.targets[1] = \"attn.c_proj\": the same layer as lora.targets[0] = "
              "\"o_proj\"; name each layer once");
    c.model.nonlinearity = "gelu";
    c.lora = LoraConfig{.targets = {"gate_proj", "q_proj"}};
    EXPECT_EQ(onlyError(c),
              "lora.targets lists gate_proj but model.nonlinearity is gelu: only a SwiGLU MLP has "
              "gate and up projections; adapt c_fc instead, or set model.nonlinearity: swiglu");
}

TEST(ConfigValidate, MoeRulesNameTheirKeys) {
    Config c = runnable();
    c.model.moe = MoeConfig{.numExperts = 4, .topK = 2};
    EXPECT_TRUE(validate(c).empty());
    c.model.moe->topK = 5;
    EXPECT_EQ(onlyError(c),
              "model.moe.top_k (5) is more than model.moe.num_experts (4): a token cannot go to "
              "more experts than there are; use top_k <= 4");
    // The trap of Cerebras' MoE write-up: renormalising one selected weight makes it 1.
    c.model.moe->topK = 1;
    c.model.moe->expertWeightingNormalization = true;
    EXPECT_NE(onlyError(c).find("model.moe.expert_weighting_normalization with top_k 1"),
              std::string::npos);
    c.model.moe->topK = 2;
    EXPECT_TRUE(validate(c).empty());
    c.model.moe->numExperts = 0;
    EXPECT_EQ(onlyError(c).rfind("model.moe.num_experts = 0", 0), 0u);
    c.model.moe->numExperts = 4;
    c.model.moe->routerFp32 = false;
    EXPECT_NE(onlyError(c).find("model.moe.router_fp32"), std::string::npos);
    c.model.moe->routerFp32 = true;
    c.lora = LoraConfig{};
    EXPECT_EQ(onlyError(c).rfind("lora with model.moe", 0), 0u);
    c.lora.reset();
    c.model.sparsity.level = 0.5;
    EXPECT_EQ(onlyError(c).rfind("model.sparsity.level > 0 with model.moe", 0), 0u);
    c.model.sparsity.level = 0;
    c.sparsity = SparsitySectionConfig{};
    c.sparsity->sparsity = 0.75;
    EXPECT_EQ(onlyError(c).rfind("sparsity with model.moe", 0), 0u);
}

TEST(ConfigValidate, CheckVocabNamesBothNumbers) {
    Config c = runnable();
    c.model.vocabSize = 256;
    EXPECT_TRUE(checkVocab(c, 256).ok());
    const Status tooBig = checkVocab(c, 300);
    ASSERT_FALSE(tooBig.ok());
    EXPECT_EQ(tooBig.error().message,
              "the tokenizer has 300 tokens but model.vocab_size is 256: every token needs an "
              "embedding row; set model.vocab_size to at least 300");
    c.trainInput.tokenizer.type = "train-bpe";
    EXPECT_EQ(checkVocab(c, 300).error().message,
              "the tokenizer has 300 tokens but model.vocab_size is 256: every token needs an "
              "embedding row; set model.vocab_size to at least 300 or lower "
              "train_input.tokenizer.vocab_size");
}

// ModelZoo's Llama-family keys (params_llama2_70b.yaml's shape): they load, round-trip and pass.
TEST(ConfigValidate, LlamaFamilyKeysLoadFromModelZooYaml) {
    Result<LoadedConfig> loaded = test::parseText(R"(model:
  vocab_size: 32000
  hidden_size: 8192
  num_hidden_layers: 80
  num_heads: 64
  filter_size: 28672
  max_position_embeddings: 4096
  position_embedding_type: rotary
  rotary_dim: 128
  rope_theta: 10000.0
  norm_type: rmsnorm
  nonlinearity: swiglu
  layer_norm_epsilon: 1.0e-5
  attention_module: multiquery_attention
  extra_attention_params:
    num_kv_groups: 8
  use_projection_bias_in_attention: false
  use_ffn_bias_in_attention: false
  use_ffn_bias: false
  use_bias_in_output: false
  share_embedding_weights: false
  pos_scaling_factor: 8.0
  pos_scaling_type: llama3
  pos_scaling_extra_args:
    low_freq_factor: 1.0
    high_freq_factor: 4.0
    original_max_position_embeddings: 8192
train_input:
  data_dir: /data/corpus
  max_sequence_length: 4096
)");
    ASSERT_TRUE(loaded.ok()) << loaded.error().message;
    const ModelConfig& m = loaded.value().config.model;
    EXPECT_EQ(m.positionEmbeddingType, "rotary");
    EXPECT_EQ(m.normType, "rmsnorm");
    EXPECT_EQ(m.nonlinearity, "swiglu");
    EXPECT_EQ(m.extraAttentionParams.numKvGroups, 8);
    EXPECT_FALSE(m.useProjectionBiasInAttention);
    ASSERT_TRUE(m.posScalingExtraArgs.has_value());
    EXPECT_EQ(m.posScalingExtraArgs->originalMaxPositionEmbeddings, 8192);
    EXPECT_TRUE(validate(loaded.value().config).empty());
    // Written and read back: the same config.
    Result<LoadedConfig> again =
        test::parseText(saveConfigYaml(loaded.value().config, YamlStyle::Plain));
    ASSERT_TRUE(again.ok()) << again.error().message;
    EXPECT_EQ(again.value().config, loaded.value().config);
}

TEST(ConfigValidate, GroupedQueryAttentionNeedsADivisorAndTheModule) {
    Config c = runnable();
    c.model.attentionModule = "multiquery_attention";
    EXPECT_EQ(onlyError(c),
              "model.attention_module is multiquery_attention but "
              "model.extra_attention_params.num_kv_groups is not set; set it to the number of "
              "key/value heads (1: multi-query, e.g. 8 for Llama 2 70B)");
    c.model.extraAttentionParams.numKvGroups = 5;  // GPT-2 small has 12 heads
    EXPECT_EQ(onlyError(c),
              "model.extra_attention_params.num_kv_groups (5) does not divide model.num_heads "
              "(12): each key/value head serves the same number of query heads; use a divisor "
              "of 12");
    c.model.extraAttentionParams.numKvGroups = 4;
    EXPECT_TRUE(validate(c).empty());
    c.model.attentionModule = "aiayn_attention";
    EXPECT_EQ(onlyError(c),
              "model.extra_attention_params.num_kv_groups (4) only applies with "
              "model.attention_module: multiquery_attention; set that, or remove num_kv_groups");
}

TEST(ConfigValidate, RotaryDimAndUnsupportedOptionsAreNamed) {
    Config c = runnable();
    c.model.positionEmbeddingType = "rotary";
    c.model.rotaryDim = 66;  // GPT-2 small's head size is 64
    EXPECT_EQ(onlyError(c),
              "model.rotary_dim (66) must be even and at most the head size (64); 0 rotates "
              "the whole head");
    c.model.rotaryDim = 32;  // partial rotary
    EXPECT_TRUE(validate(c).empty());
    c.model.useBiasInOutput = true;
    EXPECT_EQ(onlyError(c),
              "model.use_bias_in_output: a bias on the output logits is not implemented; set it "
              "to false");
    c.model.useBiasInOutput = false;
    c.model.attentionSlidingWindowLength = 64;  // the default sequence is 128
    EXPECT_EQ(onlyError(c),
              "train_input.max_sequence_length (128) is longer than "
              "model.attention_sliding_window_length (64): sliding-window attention is not "
              "implemented, and up to the window it equals full attention; lower "
              "train_input.max_sequence_length to 64 or less");
    c.model.attentionSlidingWindowLength = 128;  // as long as the sequence: full attention
    EXPECT_TRUE(validate(c).empty());
}

TEST(ConfigValidate, UnknownBlockChoicesListWhatIsAllowed) {
    const std::string norm = test::parseError("model:\n  norm_type: batchnorm\n");
    EXPECT_NE(norm.find("layernorm"), std::string::npos) << norm;
    EXPECT_NE(norm.find("rmsnorm"), std::string::npos) << norm;
    EXPECT_NE(norm.find("test.yaml:2:"), std::string::npos) << norm;
    const std::string scaling = test::parseError("model:\n  pos_scaling_type: YaRN\n");
    EXPECT_NE(scaling.find("llama3"), std::string::npos) << scaling;
}

}  // namespace
}  // namespace ws::config
