// SPDX-License-Identifier: GPL-3.0-or-later
// GPT2Config <-> ModelConfig (see hf_config.h).
#include "engine/modelio/hf_config.h"

#include <fmt/format.h>

#include <cstdint>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>

#include "engine/fileio/atomic_file.h"
#include "engine/model/parameters.h"
#include "engine/modelio/hf_keys.h"
#include "engine/tokenizer/byte_level.h"

namespace ws::modelio {
namespace {

using nlohmann::json;

// Byte offset of the first byte that is not part of valid UTF-8, or npos.
size_t firstInvalidUtf8(std::string_view text) {
    for (size_t at = 0; at < text.size();) {
        const auto unit = tokenizer::decodeUtf8(text.substr(at));
        if (!unit.valid) return at;
        at += size_t(unit.length);
    }
    return std::string_view::npos;
}

}  // namespace

namespace {

using detail::HfKeys;

// The text as a JSON object, or why it is not one.
Result<json> parseConfigObject(std::string_view text, const std::string& where) {
    if (const size_t bad = firstInvalidUtf8(text); bad != std::string_view::npos) {
        return Error{
            fmt::format("{}: not UTF-8 text (invalid byte 0x{:02x} at offset {}); a "
                        "config.json is UTF-8 JSON",
                        where, uint8_t(text[bad]), bad)};
    }
    json j;
    try {
        j = json::parse(text);
    } catch (const json::parse_error& e) {
        return Error{fmt::format("{}: not valid JSON (at byte {}): {}", where, e.byte, e.what())};
    } catch (const json::exception& e) {
        // A number too large for a double ("1e400") is out_of_range, not a parse_error; it used
        // to escape and end the program (found by fuzz_hf_config).
        return Error{fmt::format("{}: not valid JSON: {}", where, e.what())};
    }
    if (!j.is_object()) return Error{where + ": expected a JSON object (a GPT2Config)"};
    return j;
}

// model_type / architectures name GPT-2, and the attention variants the engine does not compute
// are off.
Status checkArchitecture(const json& j, const HfKeys& keys, const std::string& where) {
    if (auto it = j.find("model_type"); it != j.end()) {
        if (!it->is_string() || it->get<std::string>() != "gpt2") {
            return keys.error("model_type",
                              fmt::format("is {}; the supported architectures are GPT-2 "
                                          "(model_type \"gpt2\": GPT-2, Cerebras-GPT) and the "
                                          "Llama family (\"llama\", \"mistral\", \"qwen2\")",
                                          it->dump()));
        }
    }
    if (auto it = j.find("architectures"); it != j.end() && it->is_array()) {
        for (const auto& a : *it) {
            if (!a.is_string() || !a.get<std::string>().starts_with("GPT2")) {
                return keys.error("architectures",
                                  fmt::format("lists {}; only GPT2LMHeadModel / GPT2Model, "
                                              "LlamaForCausalLM, MistralForCausalLM and "
                                              "Qwen2ForCausalLM checkpoints are supported",
                                              a.dump()));
            }
        }
    } else if (j.find("model_type") == j.end()) {
        return Error{where +
                     ": neither model_type nor architectures is set; is this a Hugging Face "
                     "GPT-2 config.json?"};
    }
    // Keys whose non-default values change the computation in ways the engine does not do.
    for (auto [key, fallback, needed, why] :
         {std::tuple{"scale_attn_weights", true, true,
                     "false (unscaled attention scores) is not supported"},
          std::tuple{"scale_attn_by_inverse_layer_idx", false, false,
                     "true (scores divided by the layer index) is not supported"},
          std::tuple{"add_cross_attention", false, false,
                     "true (encoder-decoder cross attention) is not supported"}}) {
        auto value = keys.boolean(key, fallback);
        if (!value.ok()) return value.error();
        if (*value != needed) return keys.error(key, why);
    }
    return Status::success();
}

// The network's shape: vocabulary, width, depth, heads, positions, MLP width, the tied head.
Status readShape(const HfKeys& keys, config::ModelConfig& m) {
    struct IntField {
        const char* key;
        int fallback;
        int* target;
    };
    for (auto [key, fallback, target] :
         {IntField{"vocab_size", 50257, &m.vocabSize}, IntField{"n_embd", 768, &m.hiddenSize},
          IntField{"n_layer", 12, &m.numHiddenLayers}, IntField{"n_head", 12, &m.numHeads}}) {
        auto v = keys.positive(key, fallback);
        if (!v.ok()) return v.error();
        *target = *v;
    }
    auto positions = keys.positive("n_positions", 0);
    if (!positions.ok()) return positions.error();
    auto ctx = keys.positive("n_ctx", 1024);
    if (!ctx.ok()) return ctx.error();
    m.maxPositionEmbeddings = *positions > 0 ? *positions : *ctx;
    // null in GPT-2's files: 4 x n_embd, which must fit an int (fuzz_hf_config).
    if (int64_t(m.hiddenSize) * 4 > std::numeric_limits<int>::max())
        return keys.error("n_embd", fmt::format("({}) is too large: the MLP width, 4 x n_embd, "
                                                "does not fit a 32-bit size",
                                                m.hiddenSize));
    auto inner = keys.positive("n_inner", 4 * m.hiddenSize);
    if (!inner.ok()) return inner.error();
    m.filterSize = *inner;
    if (m.hiddenSize % m.numHeads != 0) {
        return keys.error(
            "n_head", fmt::format("({}) does not divide n_embd ({})", m.numHeads, m.hiddenSize));
    }
    auto eps = keys.number("layer_norm_epsilon", 1e-5, 0.0, 1.0);
    if (!eps.ok()) return eps.error();
    m.layerNormEpsilon = *eps;
    auto tied = keys.boolean("tie_word_embeddings", true);
    if (!tied.ok()) return tied.error();
    m.shareEmbeddingWeights = *tied;
    return Status::success();
}

// Dropout rates and the initializer's range.
Status readTraining(const HfKeys& keys, HfModelConfig& out) {
    config::ModelConfig& m = out.model;
    auto resid = keys.number("resid_pdrop", 0.1, 0.0, 0.99);
    auto embd = keys.number("embd_pdrop", 0.1, 0.0, 0.99);
    auto attn = keys.number("attn_pdrop", 0.1, 0.0, 0.99);
    if (!resid.ok()) return resid.error();
    if (!embd.ok()) return embd.error();
    if (!attn.ok()) return attn.error();
    m.dropoutRate = *resid;
    m.attentionDropoutRate = *attn;
    if (*embd != *resid) {
        out.notes.push_back(fmt::format(
            "embd_pdrop {} differs from resid_pdrop {}; the engine has one rate for both "
            "(model.dropout_rate = {})",
            *embd, *resid, *resid));
    }
    if (auto range = keys.number("initializer_range", 0.02, 0.0, 10.0); range.ok()) {
        m.initializer.std = m.embeddingInitializer.std = *range;
        m.initializer.a = m.embeddingInitializer.a = -2 * *range;
        m.initializer.b = m.embeddingInitializer.b = 2 * *range;
    }
    return Status::success();
}

// activation_function: GPT-2's tanh GELU (exact GELU accepted with a note).
Status readActivation(const json& j, const HfKeys& keys, HfModelConfig& out) {
    std::string activation = "gelu_new";
    if (auto it = j.find("activation_function"); it != j.end()) {
        if (!it->is_string()) return keys.error("activation_function", "must be a string");
        activation = it->get<std::string>();
    }
    if (activation == "gelu") {
        out.notes.push_back(
            "activation_function \"gelu\" (exact erf GELU) is computed as GPT-2's tanh "
            "approximation, which differs by at most 4.8e-4 per activation; logits will differ "
            "slightly from the original's");
    } else if (activation != "gelu_new" && activation != "gelu_pytorch_tanh" &&
               activation != "gelu_fast") {
        return keys.error("activation_function",
                          fmt::format("is \"{}\"; the engine computes GPT-2's tanh GELU "
                                      "(gelu_new, gelu_pytorch_tanh, gelu_fast; gelu is accepted "
                                      "as a close approximation)",
                                      activation));
    }
    out.model.nonlinearity = "gelu";
    return Status::success();
}

// "llama", "mistral" or "qwen2" when model_type (or, without it, the first architecture) names a
// Llama-family model; nothing for GPT-2 and everything else (which checkArchitecture refuses).
std::optional<std::string> llamaFamily(const json& j) {
    static const std::map<std::string, std::string> byArchitecture = {
        {"LlamaForCausalLM", "llama"},
        {"MistralForCausalLM", "mistral"},
        {"Qwen2ForCausalLM", "qwen2"}};
    if (auto it = j.find("model_type"); it != j.end()) {
        if (!it->is_string()) return std::nullopt;
        const std::string type = it->get<std::string>();
        if (type == "llama" || type == "mistral" || type == "qwen2") return type;
        return std::nullopt;
    }
    if (auto it = j.find("architectures");
        it != j.end() && it->is_array() && !it->empty() && it->front().is_string()) {
        if (auto found = byArchitecture.find(it->front().get<std::string>());
            found != byArchitecture.end())
            return found->second;
    }
    return std::nullopt;
}

}  // namespace

Result<HfModelConfig> parseHfConfig(std::string_view text, const std::filesystem::path& file) {
    const std::string where = file.string();
    auto j = parseConfigObject(text, where);
    if (!j.ok()) return j.error();
    const HfKeys keys(*j, where);
    if (auto family = llamaFamily(*j)) return detail::parseHfLlamaConfig(keys, *family);
    if (Status st = checkArchitecture(*j, keys, where); !st.ok()) return st.error();
    HfModelConfig out;
    config::ModelConfig& m = out.model;
    m.name = "gpt2";
    if (auto it = j->find("_name_or_path"); it != j->end() && it->is_string() && !it->empty())
        m.name = it->get<std::string>();
    if (Status st = readShape(keys, m); !st.ok()) return st.error();
    if (Status st = readTraining(keys, out); !st.ok()) return st.error();
    if (Status st = readActivation(*j, keys, out); !st.ok()) return st.error();
    return out;
}

Result<HfModelConfig> readHfConfig(const std::filesystem::path& file) {
    auto text = fileio::readWholeFile(file);
    if (!text.ok()) return text.error();
    return parseHfConfig(*text, file);
}

Status checkHfExportable(const config::ModelConfig& m) {
    auto refuse = [](std::string_view key, std::string_view value) {
        return Error{fmt::format(
            "model.{} is {}, which Hugging Face's GPT2Config cannot express; GPT-2 tooling would "
            "compute a different model. Only standard-parameterization models export",
            key, value)};
    };
    if (m.moe)
        return Error{fmt::format(
            "model.moe is set ({} experts, top_k {}): Hugging Face's GPT-2 has no "
            "mixture-of-experts layout (no router, no per-expert MLPs), so this model cannot be "
            "exported as GPT-2; keep it as a Wafer Studio model folder, which samples, fine-tunes "
            "and resumes here",
            m.moe->numExperts, m.moe->topK)};
    if (m.mupEnabled()) return refuse("mup_base_hidden_size", std::to_string(m.mupBaseHiddenSize));
    if (m.embeddingsScale != 1.0)
        return refuse("embeddings_scale", fmt::format("{}", m.embeddingsScale));
    if (m.scaleQkDotByD) return refuse("scale_qk_dot_by_d", "true");
    if (m.attentionLogitsAlpha != 1.0)
        return refuse("attention_logits_alpha", fmt::format("{}", m.attentionLogitsAlpha));
    if (!model::GptShape::fromConfig(m).gpt2Blocks()) return detail::checkHfLlamaExportable(m);
    return Status::success();
}

std::string hfConfigJson(const config::ModelConfig& m, std::optional<int> eosTokenId) {
    if (!model::GptShape::fromConfig(m).gpt2Blocks())
        return detail::hfLlamaConfigJson(m, eosTokenId);
    json j = {
        {"architectures", {"GPT2LMHeadModel"}},
        {"model_type", "gpt2"},
        {"activation_function", "gelu_new"},
        {"vocab_size", m.vocabSize},
        {"n_embd", m.hiddenSize},
        {"n_layer", m.numHiddenLayers},
        {"n_head", m.numHeads},
        {"n_inner", m.filterSize},
        {"n_positions", m.maxPositionEmbeddings},
        {"n_ctx", m.maxPositionEmbeddings},
        {"layer_norm_epsilon", m.layerNormEpsilon},
        {"tie_word_embeddings", m.shareEmbeddingWeights},
        {"resid_pdrop", m.dropoutRate},
        {"embd_pdrop", m.dropoutRate},
        {"attn_pdrop", m.attentionDropoutRate},
        {"initializer_range", m.initializer.std},
        {"scale_attn_weights", true},
        {"scale_attn_by_inverse_layer_idx", false},
        {"reorder_and_upcast_attn", false},
        {"use_cache", true},
        {"torch_dtype", "float32"},
    };
    j["bos_token_id"] = eosTokenId ? json(*eosTokenId) : json(nullptr);
    j["eos_token_id"] = eosTokenId ? json(*eosTokenId) : json(nullptr);
    return j.dump(2) + "\n";
}

}  // namespace ws::modelio
