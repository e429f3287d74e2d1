// SPDX-License-Identifier: GPL-3.0-or-later
// Hugging Face GPT2Config (config.json) <-> our model config. GPT-2 and Cerebras-GPT use this
// architecture: learned positions, pre-LayerNorm blocks, Conv1D weights stored (in, out), a GELU
// MLP and (usually) an output layer tied to the token embedding. model_type "llama", "mistral"
// and "qwen2" (or architectures LlamaForCausalLM, MistralForCausalLM, Qwen2ForCausalLM) are read
// and written by hf_llama_config.cpp instead: rotary, rmsnorm, swiglu, grouped-query heads,
// head_dim, rope_scaling (linear, llama3), the biases and the sliding window; what the engine does
// not compute (other activations and rope types, MoE, q/k norms, partial rotary) is refused
// naming the key and value. hfConfigJson and checkHfExportable dispatch on the block options.
//
// Reading is strict about what changes the computation (model_type, architectures,
// activation_function, scale_attn_weights, scale_attn_by_inverse_layer_idx, add_cross_attention,
// the shape keys and their types) and ignores the rest (task_specific_params, token ids, ...), as
// transformers does. Missing keys take GPT2Config's defaults. Every error names the file and key.
// Thread-safety: pure functions.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/config/config.h"
#include "engine/core/result.h"

namespace ws::modelio {

struct HfModelConfig {
    config::ModelConfig model;
    std::vector<std::string> notes;  // what was approximated or defaulted, for the user
};

// `text` is the content of `file` (named in errors). Refuses non-UTF-8 bytes and invalid JSON
// with the byte offset, non-GPT-2 architectures and activations the engine does not compute.
// activation_function "gelu" (exact erf GELU, Cerebras-GPT's) is accepted with a note: the engine
// computes GPT-2's tanh approximation, which differs from it by at most 4.8e-4 per activation.
Result<HfModelConfig> parseHfConfig(std::string_view text, const std::filesystem::path& file);
Result<HfModelConfig> readHfConfig(const std::filesystem::path& file);

// Refuses models GPT2Config cannot express (μP multipliers, attention score scaling other than
// 1/sqrt(head size)), naming the config key.
Status checkHfExportable(const config::ModelConfig& model);

// config.json for GPT2LMHeadModel (pretty-printed JSON text). eosTokenId: the id of
// "<|endoftext|>" when the tokenizer has it (also used as bos), else null in the file.
std::string hfConfigJson(const config::ModelConfig& model, std::optional<int> eosTokenId);

}  // namespace ws::modelio
