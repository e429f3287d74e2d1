// SPDX-License-Identifier: GPL-3.0-or-later
// validate() and checkVocab() (see validate.h): a field-range visitor plus the cross-field rules.
#include "engine/config/validate.h"

#include <algorithm>
#include <cmath>
#include <type_traits>

#include "engine/config/text_format.h"
#include "engine/config/yaml_flow.h"

namespace ws::config {

namespace {

std::string rangeWords(const FieldInfo& info) {
    const bool lo = std::isfinite(info.min);
    const bool hi = std::isfinite(info.max);
    if (lo && hi)
        return "between " + formatNumberShort(info.min) + " and " + formatNumberShort(info.max);
    if (lo) return ">= " + formatNumberShort(info.min);
    return "<= " + formatNumberShort(info.max);
}

// Per-field checks over the declarations: ranges, choices, schedule pieces.
class FieldChecker {
public:
    FieldChecker(std::string prefix, std::vector<std::string>& errors)
        : m_prefix(std::move(prefix)), m_errors(errors) {}

    template <class T>
    void field(T& member, const FieldInfo& info) {
        const std::string p = path(info);
        if constexpr (std::is_arithmetic_v<T> && !std::is_same_v<T, bool>) {
            checkNumber(static_cast<double>(member), info, p);
        } else if constexpr (std::is_same_v<T, std::array<double, 2>>) {
            checkNumber(member[0], info, p + "[0]");
            checkNumber(member[1], info, p + "[1]");
        } else if constexpr (std::is_same_v<T, std::string>) {
            if (info.choices.empty()) return;
            for (std::string_view choice : info.choices)
                if (member == choice) return;
            std::vector<std::string> choices(info.choices.begin(), info.choices.end());
            m_errors.push_back(p + " = " + quoteYaml(member) + ": must be one of " +
                               joinStrings(choices, ", "));
        } else if constexpr (std::is_same_v<T, std::vector<std::string>>) {
            if (info.choices.empty()) return;
            std::vector<std::string> choices(info.choices.begin(), info.choices.end());
            for (size_t i = 0; i < member.size(); ++i) {
                if (std::find(choices.begin(), choices.end(), member[i]) != choices.end()) continue;
                m_errors.push_back(p + "[" + std::to_string(i) + "] = " + quoteYaml(member[i]) +
                                   ": must be one of " + joinStrings(choices, ", "));
            }
        } else if constexpr (std::is_same_v<T, LearningRate>) {
            if (!(member.constant >= 0) || !std::isfinite(member.constant))
                m_errors.push_back(p + " = " + formatDouble(member.constant) +
                                   ": must be a number >= 0");
            for (size_t i = 0; i < member.schedule.size(); ++i) {
                FieldChecker inner(p + "[" + std::to_string(i) + "]", m_errors);
                SchedulerConfig piece = member.schedule[i];
                piece.visit(inner);
            }
        }
    }
    template <class S>
    void section(S& member, const FieldInfo& info) {
        FieldChecker inner(path(info), m_errors);
        member.visit(inner);
    }
    template <class S>
    void optionalSection(std::optional<S>& member, const FieldInfo& info) {
        if (member) section(*member, info);
    }

private:
    std::string path(const FieldInfo& info) const {
        return m_prefix.empty() ? std::string(info.key) : m_prefix + "." + std::string(info.key);
    }
    void checkNumber(double value, const FieldInfo& info, const std::string& p) {
        if (std::isfinite(value) && value >= info.min && value <= info.max) return;
        m_errors.push_back(p + " = " + formatNumberShort(value) + ": must be " +
                           (std::isfinite(value) ? rangeWords(info) : std::string("finite")));
    }

    std::string m_prefix;
    std::vector<std::string>& m_errors;
};

// Nearest values of `value` that are multiples of `divisor`, for the fix in a message.
std::string divisorsText(int n) {
    std::string text;
    for (int d = 1; d <= n; ++d) {
        if (n % d != 0) continue;
        if (!text.empty()) text += ", ";
        text += std::to_string(d);
    }
    return text;
}

std::string nearbyMultiples(int value, int divisor) {
    const int below = value / divisor * divisor;
    const int above = below + divisor;
    return below > 0 ? std::to_string(below) + " or " + std::to_string(above)
                     : std::to_string(above);
}

// lora: at least one target, each once, and a rank no wider than the narrower side of every
// targeted matrix (each has hidden_size on one side, so rank <= hidden_size).
void checkLora(const LoraConfig& lora, const ModelConfig& model, std::vector<std::string>& errors) {
    if (lora.targets.empty())
        errors.push_back(
            "lora.targets is empty: name at least one linear layer to adapt, e.g. targets: "
            "[c_attn] (choices: c_attn, attn.c_proj, c_fc, mlp.c_proj)");
    // o_proj / down_proj are Llama's names of attn.c_proj / mlp.c_proj: one adapter each.
    auto canonical = [](const std::string& name) -> std::string {
        if (name == "o_proj") return "attn.c_proj";
        if (name == "down_proj") return "mlp.c_proj";
        return name;
    };
    for (size_t i = 0; i < lora.targets.size(); ++i)
        for (size_t j = 0; j < i; ++j)
            if (canonical(lora.targets[i]) == canonical(lora.targets[j]))
                errors.push_back(
                    "lora.targets[" + std::to_string(i) + "] = " + quoteYaml(lora.targets[i]) +
                    (lora.targets[i] == lora.targets[j]
                         ? std::string(": listed twice; name each layer once")
                         : ": the same layer as lora.targets[" + std::to_string(j) +
                               "] = " + quoteYaml(lora.targets[j]) + "; name each layer once"));
    // The slice targets (engine/model/lora.h) adapt columns of the fused linears.
    auto listed = [&](std::initializer_list<const char*> names) {
        std::string out;
        for (const char* name : names)
            if (std::find(lora.targets.begin(), lora.targets.end(), name) != lora.targets.end())
                out += (out.empty() ? "" : ", ") + std::string(name);
        return out;
    };
    auto has = [&](const char* name) {
        return std::find(lora.targets.begin(), lora.targets.end(), name) != lora.targets.end();
    };
    if (const std::string qkv = listed({"q_proj", "k_proj", "v_proj"});
        has("c_attn") && !qkv.empty())
        errors.push_back("lora.targets lists c_attn and " + qkv +
                         ": c_attn is the fused [q | k | v] linear, so both would adapt the same "
                         "columns; keep c_attn or the separate q_proj / k_proj / v_proj, not both");
    const std::string gateUp = listed({"gate_proj", "up_proj"});
    if (has("c_fc") && !gateUp.empty())
        errors.push_back("lora.targets lists c_fc and " + gateUp +
                         ": c_fc is the fused [gate | up] linear, so both would adapt the same "
                         "columns; keep c_fc or the separate gate_proj / up_proj, not both");
    if (!gateUp.empty() && model.nonlinearity != "swiglu")
        errors.push_back("lora.targets lists " + gateUp + " but model.nonlinearity is " +
                         model.nonlinearity +
                         ": only a SwiGLU MLP has gate and up projections; adapt c_fc instead, "
                         "or set model.nonlinearity: swiglu");
    if (lora.trainableTokensFrom >= model.vocabSize && lora.trainableTokensFrom > 0)
        errors.push_back("lora.trainable_tokens_from (" + std::to_string(lora.trainableTokensFrom) +
                         ") is not below model.vocab_size (" + std::to_string(model.vocabSize) +
                         "): it names the first of the token ids whose rows train; use a value "
                         "below vocab_size, or 0 for none");
    if (lora.rank > model.hiddenSize && model.hiddenSize > 0)
        errors.push_back("lora.rank (" + std::to_string(lora.rank) +
                         ") is more than model.hidden_size (" + std::to_string(model.hiddenSize) +
                         "): a low-rank adapter must be narrower than the layer; use rank <= " +
                         std::to_string(model.hiddenSize) + " (typical: 4 to 64)");
}

// model.moe: top_k within the experts, the top_k-1 normalisation trap, and the features the MoE
// layout does not combine with (each names its keys).
void checkMoe(const Config& config, std::vector<std::string>& errors) {
    const MoeConfig& moe = *config.model.moe;
    if (moe.numExperts >= 1 && moe.topK > moe.numExperts)
        errors.push_back("model.moe.top_k (" + std::to_string(moe.topK) +
                         ") is more than model.moe.num_experts (" + std::to_string(moe.numExperts) +
                         "): a token cannot go to more experts than there are; use top_k <= " +
                         std::to_string(moe.numExperts));
    if (moe.expertWeightingNormalization && moe.topK == 1)
        errors.push_back(
            "model.moe.expert_weighting_normalization with top_k 1: dividing the one selected "
            "probability by itself makes every weight 1, so the router gets no gradient from the "
            "loss and never learns; set expert_weighting_normalization: false (Switch uses the "
            "softmax probability) or top_k >= 2");
    if (!moe.routerFp32)
        errors.push_back(
            "model.moe.router_fp32 is false: the router always computes in fp32 here; remove "
            "the key or set it to true");
    if (config.lora)
        errors.push_back(
            "lora with model.moe: adapters on expert MLPs are not supported; remove the lora: "
            "section or model.moe");
    if (config.model.sparsity.level > 0)
        errors.push_back(
            "model.sparsity.level > 0 with model.moe: static sparsity does not prune expert "
            "MLPs; set model.sparsity.level: 0 or remove model.moe");
    if (config.sparsity && config.sparsity->sparsity > 0)
        errors.push_back(
            "sparsity with model.moe: dynamic sparsity of expert MLPs is not supported yet (the "
            "emulator re-plans an MoE step for its routing but not for changing masks); remove "
            "the top-level sparsity: section or model.moe");
}

void checkSchedule(const OptimizerConfig& optimizer, std::vector<std::string>& errors) {
    const std::vector<SchedulerConfig>& schedule = optimizer.learningRate.schedule;
    for (size_t i = 0; i < schedule.size(); ++i) {
        const SchedulerConfig& piece = schedule[i];
        const std::string p = "optimizer.learning_rate[" + std::to_string(i) + "]";
        if (piece.totalIters == 0 && i + 1 < schedule.size())
            errors.push_back(p +
                             ".total_iters = 0: only the last piece may run until the end "
                             "of training; give this piece its length in steps");
        if ((piece.scheduler == "Linear" || piece.scheduler == "Cosine") &&
            piece.initialLearningRate == 0 && piece.endLearningRate == 0)
            errors.push_back(p + ": a " + piece.scheduler +
                             " piece from 0 to 0 never trains; set initial_learning_rate and "
                             "end_learning_rate");
        if (piece.scheduler == "Constant" && piece.learningRate == 0 &&
            (piece.initialLearningRate != 0 || piece.endLearningRate != 0))
            errors.push_back(p +
                             ": a Constant piece uses learning_rate, which is 0 here; move "
                             "the value of initial_learning_rate/end_learning_rate to "
                             "learning_rate");
    }
}

// The block options (Llama family): grouped-query heads, the rotary dimensions, the head size,
// and the combinations the engine does not implement, each named with its fix.
void checkArchitecture(const ModelConfig& model, std::vector<std::string>& errors) {
    const int groups = model.extraAttentionParams.numKvGroups;
    if (model.attentionModule == "multiquery_attention") {
        if (groups < 1)
            errors.push_back(
                "model.attention_module is multiquery_attention but "
                "model.extra_attention_params.num_kv_groups is not set; set it to the number of "
                "key/value heads (1: multi-query, e.g. 8 for Llama 2 70B)");
        else if (model.numHeads > 0 && model.numHeads % groups != 0)
            errors.push_back("model.extra_attention_params.num_kv_groups (" +
                             std::to_string(groups) + ") does not divide model.num_heads (" +
                             std::to_string(model.numHeads) +
                             "): each key/value head serves the same number of query heads; "
                             "use a divisor of " +
                             std::to_string(model.numHeads));
    } else if (groups > 0 && groups != model.numHeads) {
        errors.push_back("model.extra_attention_params.num_kv_groups (" + std::to_string(groups) +
                         ") only applies with model.attention_module: multiquery_attention; set "
                         "that, or remove num_kv_groups");
    }
    if (model.attentionInnerDim > 0 && model.numHeads > 0 &&
        model.attentionInnerDim % model.numHeads != 0)
        errors.push_back("model.attention_inner_dim (" + std::to_string(model.attentionInnerDim) +
                         ") is not divisible by model.num_heads (" +
                         std::to_string(model.numHeads) + "); it is num_heads x the head size");
    const int inner = model.attentionInnerDim > 0 ? model.attentionInnerDim : model.hiddenSize;
    const int headSize = model.numHeads > 0 ? inner / model.numHeads : 0;
    if (model.positionEmbeddingType == "rotary") {
        if (model.rotaryDim % 2 != 0 || model.rotaryDim > headSize)
            errors.push_back("model.rotary_dim (" + std::to_string(model.rotaryDim) +
                             ") must be even and at most the head size (" +
                             std::to_string(headSize) + "); 0 rotates the whole head");
        else if (model.rotaryDim == 0 && headSize % 2 != 0)
            errors.push_back("the head size (" + std::to_string(headSize) +
                             ") is odd, so rotary embeddings cannot rotate it whole; set "
                             "model.rotary_dim to an even number below it");
    }
    if (model.useBiasInOutput)
        errors.push_back(
            "model.use_bias_in_output: a bias on the output logits is not implemented; set it "
            "to false");
    if (model.moe && model.nonlinearity != "gelu")
        errors.push_back("model.moe with model.nonlinearity: " + model.nonlinearity +
                         ": experts are GPT-2 MLPs (gelu); set nonlinearity: gelu or remove "
                         "model.moe");
    if (model.moe && !model.useFfnBias)
        errors.push_back(
            "model.moe with model.use_ffn_bias: false: experts always have biases; set "
            "use_ffn_bias: true or remove model.moe");
}

// μP's base shape: the proxy model the hyperparameters were tuned on. The width multipliers must
// be >= 1 (μP scales hidden init and LR *down* from the base as the model widens); they need not
// be integers (Cerebras-GPT 256M is 1088 wide on a base of 256).
void checkMup(const ModelConfig& model, std::vector<std::string>& errors) {
    if (!model.mupEnabled()) {
        if (model.mupBaseFilterSize > 0)
            errors.push_back("model.mup_base_filter_size (" +
                             std::to_string(model.mupBaseFilterSize) +
                             ") is set but model.mup_base_hidden_size is 0, so muP is off; set "
                             "mup_base_hidden_size to the base width too, or remove "
                             "mup_base_filter_size");
        return;
    }
    if (model.mupBaseHiddenSize > model.hiddenSize)
        errors.push_back("model.mup_base_hidden_size (" + std::to_string(model.mupBaseHiddenSize) +
                         ") is larger than model.hidden_size (" + std::to_string(model.hiddenSize) +
                         "): muP scales up from a narrower base model; set mup_base_hidden_size "
                         "to the width you tuned on (at most " +
                         std::to_string(model.hiddenSize) + ") or raise hidden_size");
    if (model.mupBaseFilterSize <= 0) {
        const int suggested = model.hiddenSize > 0
                                  ? static_cast<int>(static_cast<int64_t>(model.filterSize) *
                                                     model.mupBaseHiddenSize / model.hiddenSize)
                                  : 0;
        errors.push_back(
            "model.mup_base_hidden_size is set but model.mup_base_filter_size is not: muP needs "
            "both base dimensions (as in ModelZoo); set mup_base_filter_size to the base model's "
            "filter_size" +
            (suggested > 0 ? " (" + std::to_string(suggested) + " keeps this model's ratio)"
                           : std::string()));
    } else if (model.mupBaseFilterSize > model.filterSize) {
        errors.push_back("model.mup_base_filter_size (" + std::to_string(model.mupBaseFilterSize) +
                         ") is larger than model.filter_size (" + std::to_string(model.filterSize) +
                         "): set it to the base model's filter_size (at most " +
                         std::to_string(model.filterSize) + ") or raise filter_size");
    }
}

void checkTokenizer(const TokenizerConfig& tokenizer, const std::string& prefix,
                    const ModelConfig& model, std::vector<std::string>& errors) {
    const std::string p = prefix + ".tokenizer";
    if (tokenizer.type == "bpe") {
        if (tokenizer.vocabFile.empty() || tokenizer.mergesFile.empty())
            errors.push_back(p +
                             ": type bpe needs both vocab_file (GPT-2 vocab.json) and "
                             "merges_file (merges.txt); set them, or use type train-bpe to "
                             "learn a vocabulary from the corpus");
    } else if (tokenizer.type == "hf") {
        if (tokenizer.tokenizerFile.empty())
            errors.push_back(p +
                             ": type hf needs tokenizer_file (a Hugging Face tokenizer.json, "
                             "e.g. the model folder's); set it");
    } else if (tokenizer.type == "train-bpe") {
        if (tokenizer.vocabSize > model.vocabSize)
            errors.push_back(
                p + ".vocab_size (" + std::to_string(tokenizer.vocabSize) +
                ") is larger than model.vocab_size (" + std::to_string(model.vocabSize) +
                "): every token needs an embedding row; raise model.vocab_size to " +
                std::to_string(tokenizer.vocabSize) + " or lower " + p + ".vocab_size");
    } else if (tokenizer.type == "byte") {
        if (model.vocabSize < 256)
            errors.push_back("model.vocab_size (" + std::to_string(model.vocabSize) +
                             ") is below "
                             "256, but " +
                             p +
                             ".type byte has 256 tokens; set model.vocab_size "
                             "to 256 or more");
    }
}

void checkInput(const InputConfig& input, const std::string& prefix, const ModelConfig& model,
                std::vector<std::string>& errors) {
    if (model.attentionSlidingWindowLength > 0 &&
        input.maxSequenceLength > model.attentionSlidingWindowLength)
        errors.push_back(prefix + ".max_sequence_length (" +
                         std::to_string(input.maxSequenceLength) +
                         ") is longer than model.attention_sliding_window_length (" +
                         std::to_string(model.attentionSlidingWindowLength) +
                         "): sliding-window attention is not implemented, and up to the window "
                         "it equals full attention; lower " +
                         prefix + ".max_sequence_length to " +
                         std::to_string(model.attentionSlidingWindowLength) + " or less");
    if (input.maxSequenceLength > model.maxPositionEmbeddings)
        errors.push_back(prefix + ".max_sequence_length (" +
                         std::to_string(input.maxSequenceLength) +
                         ") is longer than model.max_position_embeddings (" +
                         std::to_string(model.maxPositionEmbeddings) +
                         "), the longest sequence the model can place; raise "
                         "model.max_position_embeddings to " +
                         std::to_string(input.maxSequenceLength) + " or lower " + prefix +
                         ".max_sequence_length");
}

}  // namespace

namespace {

// The top-level sparsity section against the rest of the config (sparsity_config.h).
void checkSparsitySection(const Config& config, std::vector<std::string>& errors) {
    const SparsitySectionConfig& sp = *config.sparsity;
    if (config.model.sparsity.level > 0)
        errors.push_back(
            "sparsity (the top-level section) and model.sparsity.level are both set: they are two "
            "ways of saying the same thing; keep the top-level section (e.g. sparsity: "
            "{sparsity: " +
            formatNumberShort(config.model.sparsity.level) +
            ", type: static, init_method: topk}) and delete model.sparsity");
    if (sp.sparsity > 0 && config.memoryx.shards > 1)
        errors.push_back(
            "sparsity with memoryx.shards > 1: the masks live beside the whole model in rank 0's "
            "MemoryX; use memoryx.shards: 1 for a sparse model");
    if (sp.sparsity > 0 && config.lora)
        errors.push_back(
            "sparsity with lora: LoRA freezes the base weights that the masks would prune; "
            "delete one of the two sections");
    if (sp.type == "gmp" && sp.initSparsity > sp.sparsity)
        errors.push_back("sparsity.init_sparsity (" + formatNumberShort(sp.initSparsity) +
                         ") is above sparsity.sparsity (" + formatNumberShort(sp.sparsity) +
                         "): gradual magnitude pruning only adds zeros; swap them");
    if (sp.type != "gmp" && sp.initSparsity > 0)
        errors.push_back("sparsity.init_sparsity is for type gmp only (type is " + sp.type +
                         "); delete it or set type: gmp");
    if (sp.type == "gmp" && sp.sparsity > 0 && sp.schedule.stop == 0)
        errors.push_back(
            "sparsity.type gmp needs sparsity.schedule.stop: the step where pruning reaches "
            "sparsity.sparsity (e.g. 3/4 of runconfig.max_steps)");
    if (sp.schedule.stop > 0 && sp.schedule.stop <= sp.schedule.start && sp.dynamic())
        errors.push_back("sparsity.schedule.stop (" + std::to_string(sp.schedule.stop) +
                         ") must come after sparsity.schedule.start (" +
                         std::to_string(sp.schedule.start) + ")");
}

}  // namespace

std::vector<std::string> validate(const Config& config) {
    std::vector<std::string> errors;
    Config copy = config;  // visit() is non-const
    FieldChecker checker("", errors);
    copy.visit(checker);

    const ModelConfig& model = config.model;
    checkArchitecture(model, errors);
    if (model.numHeads > 0 && model.attentionInnerDim == 0 &&
        model.hiddenSize % model.numHeads != 0)
        errors.push_back("model.hidden_size (" + std::to_string(model.hiddenSize) +
                         ") is not divisible by model.num_heads (" +
                         std::to_string(model.numHeads) +
                         "): every head gets hidden_size / num_heads channels; use hidden_size " +
                         nearbyMultiples(model.hiddenSize, model.numHeads) +
                         ", or a num_heads that divides " + std::to_string(model.hiddenSize));
    if (model.fp16Type == "float16")
        errors.push_back(
            "model.fp16_type = \"float16\": float16 needs loss scaling, which Wafer "
            "Studio does not implement; use bfloat16");
    for (const auto& [initializer, p] :
         {std::pair{&model.embeddingInitializer, "model.embedding_initializer"},
          std::pair{&model.initializer, "model.initializer"}}) {
        if (initializer->name == "truncated_normal" && !(initializer->a < initializer->b))
            errors.push_back(std::string(p) + ": a (" + formatNumberShort(initializer->a) +
                             ") must be below b (" + formatNumberShort(initializer->b) +
                             ") for truncated_normal, e.g. a = -2 * std and b = 2 * std");
    }
    if (model.outputLayerInitializer && model.outputLayerInitializer->name == "truncated_normal" &&
        !(model.outputLayerInitializer->a < model.outputLayerInitializer->b))
        errors.push_back(
            "model.output_layer_initializer: a must be below b for truncated_normal, "
            "e.g. a = -2 * std and b = 2 * std");

    checkMup(model, errors);
    if (config.optimizer.freezeBlocks > model.numHiddenLayers)
        errors.push_back("optimizer.freeze_blocks (" +
                         std::to_string(config.optimizer.freezeBlocks) +
                         ") is more than model.num_hidden_layers (" +
                         std::to_string(model.numHiddenLayers) + "); freeze at most every block");

    if (config.lora) checkLora(*config.lora, model, errors);
    if (model.moe) checkMoe(config, errors);

    const OptimizerConfig& optimizer = config.optimizer;
    if (optimizer.optimizerType == "adamw") {
        // Sgd ignores betas, so any value is fine there.
        for (size_t i = 0; i < 2; ++i)
            if (optimizer.betas[i] >= 1.0)
                errors.push_back("optimizer.betas[" + std::to_string(i) +
                                 "] = " + formatNumberShort(optimizer.betas[i]) +
                                 ": must be below 1 (with 1 the moment never updates); typical "
                                 "values are [0.9, 0.95] or [0.9, 0.999]");
    }
    checkSchedule(optimizer, errors);

    // Evaluation reuses train_input's tokenizer and sequence length (the session evaluates the
    // model it trains), so eval_input's copies of those keys are not checked: ModelZoo files
    // often leave them at values that do not apply here.
    checkInput(config.trainInput, "train_input", model, errors);
    checkTokenizer(config.trainInput.tokenizer, "train_input", model, errors);
    detail::checkVariableSequenceLength(config, errors);
    if (config.trainInput.dataDir.empty())
        errors.push_back(
            "train_input.data_dir is empty: give a text file, a folder of .txt "
            "files, or a list of them (e.g. data_dir: ../resources/corpus)");

    const RunConfig& run = config.runconfig;
    if (run.evalFrequency > 0 && run.evalSteps <= 0)
        errors.push_back("runconfig.eval_steps is 0 but runconfig.eval_frequency is " +
                         std::to_string(run.evalFrequency) +
                         ": an evaluation needs at least one batch; set eval_steps >= 1, or "
                         "eval_frequency 0 to evaluate only at the end");
    if (run.numCsx > 0 && config.trainInput.batchSize % run.numCsx != 0)
        errors.push_back("train_input.batch_size (" + std::to_string(config.trainInput.batchSize) +
                         ") is not divisible by runconfig.num_csx (" + std::to_string(run.numCsx) +
                         "): the global batch is split evenly across systems; use batch_size " +
                         nearbyMultiples(config.trainInput.batchSize, run.numCsx));
    const std::string& micro = config.trainInput.microBatchSize;
    if (micro != "auto" && micro != "none") {
        const int perSystem =
            run.numCsx > 0 ? config.trainInput.batchSize / run.numCsx : config.trainInput.batchSize;
        const auto value = parseInteger(micro);
        if (!value || *value < 1) {
            errors.push_back("train_input.micro_batch_size is \"" + micro +
                             "\": use auto, none, or a positive number of sequences");
        } else if (perSystem > 0 && perSystem % *value != 0) {
            errors.push_back("train_input.micro_batch_size (" + micro +
                             ") does not divide the per-system batch (batch_size / num_csx = " +
                             std::to_string(perSystem) + "); use one of " +
                             divisorsText(perSystem) + ", or auto");
        }
    }
    if (config.memoryx.backing == "file" && config.memoryx.path.empty())
        errors.push_back(
            "memoryx.backing is file but memoryx.path is empty: name the store file, e.g. "
            "memoryx.path: /var/tmp/model.memoryx");
    if (config.memoryx.shards > 1 && config.memoryx.shards > config.runconfig.numCsx)
        errors.push_back("memoryx.shards is " + std::to_string(config.memoryx.shards) +
                         " but runconfig.num_csx is " + std::to_string(config.runconfig.numCsx) +
                         ": a job runs at most one process per system and each shard needs its "
                         "own process; lower memoryx.shards or raise runconfig.num_csx");
    if (config.memoryx.shards > 1 && config.model.sparsity.level > 0)
        errors.push_back(
            "memoryx.shards > 1 with model.sparsity.level > 0: static sparsity prunes the whole "
            "model at once on rank 0; use memoryx.shards: 1 for a sparse model");
    if (config.sparsity) checkSparsitySection(config, errors);
    return errors;
}

Status checkVocab(const Config& config, int tokenizerVocab) {
    if (tokenizerVocab <= config.model.vocabSize) return Status::success();
    return Error{"the tokenizer has " + std::to_string(tokenizerVocab) +
                 " tokens but model.vocab_size is " + std::to_string(config.model.vocabSize) +
                 ": every token needs an embedding row; set model.vocab_size to at least " +
                 std::to_string(tokenizerVocab) +
                 (config.trainInput.tokenizer.type == "train-bpe"
                      ? " or lower train_input.tokenizer.vocab_size"
                      : std::string())};
}

}  // namespace ws::config
