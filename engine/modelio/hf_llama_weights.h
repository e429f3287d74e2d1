// SPDX-License-Identifier: GPL-3.0-or-later
// Llama-family weights in Hugging Face names (LlamaForCausalLM, MistralForCausalLM,
// Qwen2ForCausalLM) <-> the parameter table's GPT-2-named layout (parameters.h):
//   model.embed_tokens.weight (V,C)                      -> wte.weight (V,C)
//   model.layers.N.input_layernorm.weight (C)            -> h.N.ln_1.weight
//   model.layers.N.self_attn.{q,k,v}_proj.weight (out,in) -> h.N.attn.c_attn.weight (C, Q+2K),
//                                                           columns [q | k | v], transposed
//   model.layers.N.self_attn.{q,k,v}_proj.bias           -> h.N.attn.c_attn.bias (Q+2K)
//   model.layers.N.self_attn.o_proj.weight (C,Q) [+bias] -> h.N.attn.c_proj.weight (Q,C) [+bias]
//   model.layers.N.post_attention_layernorm.weight       -> h.N.ln_2.weight
//   model.layers.N.mlp.{gate,up}_proj.weight (F,C) [+b]  -> h.N.mlp.c_fc.weight (C,2F) [gate|up]
//   model.layers.N.mlp.down_proj.weight (C,F) [+bias]    -> h.N.mlp.c_proj.weight (F,C) [+bias]
//   model.norm.weight (C)                                -> ln_f.weight
//   lm_head.weight (V,C)                                 -> lm_head.weight (only when untied)
// Values are copied, never permuted: HF checkpoints already hold the half-rotation rotary layout
// the engine computes (transformers issue 25199). Copies are exact in both directions, so a
// float32 file read and written back is bit-identical.
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/core/result.h"
#include "engine/model/parameters.h"

namespace ws::modelio {

// One Hugging Face tensor that fills part of a table tensor.
struct HfPart {
    std::string name;            // e.g. "model.layers.0.self_attn.k_proj.weight"
    std::vector<int64_t> shape;  // its shape in the HF file, e.g. {K, C}
};

// How one table tensor is made of HF tensors: concatenated (1-D, or a 2-D tensor stored the same
// way), or, when `transposed`, each part (out_p, in) transposed and placed side by side as
// columns of the table's (in, sum out_p) tensor.
struct HfTensorMap {
    size_t tensor = 0;  // index into ParameterTable::tensors()
    std::vector<HfPart> parts;
    bool transposed = false;
};

// Whether the table's tensors are named and laid out as a Llama-family model (every shape whose
// blocks are not GPT-2's).
bool usesHfLlamaNames(const model::GptShape& shape);

// The map of every tensor of `table` (a Llama-family shape), in table order; an error for a table
// HF cannot hold (LoRA adapters, experts, LayerNorm biases, learned positions).
Result<std::vector<HfTensorMap>> hfLlamaTensorMap(const model::ParameterTable& table);

// Fills the table tensor `map` describes at `dst` from its parts' values (each in HF layout).
void gatherHfTensor(const model::ParameterTable& table, const HfTensorMap& map,
                    const std::vector<std::vector<float>>& parts, float* dst);

// One tensor as the HF file holds it.
struct HfTensor {
    std::string name;
    std::vector<int64_t> shape;
    std::vector<float> values;
};

// Every HF tensor of the model in `params` (table layout), in table order.
Result<std::vector<HfTensor>> toHfLlamaTensors(const model::ParameterTable& table,
                                               const float* params);

// Reads a Llama-family model from `file` (a fileio::SafetensorsFile or a TorchCheckpoint: names(),
// find(name)->shape, readAsFloat(name)) into `params` (table layout). Every HF tensor must be
// present with its shape; an error names the file and the first missing or mismatched one.
template <typename WeightsFile>
Status readHfLlamaWeights(const WeightsFile& file, const model::ParameterTable& table,
                          float* params);

// The check readHfLlamaWeights makes before it reads a value.
template <typename WeightsFile>
Status matchHfLlamaWeights(const WeightsFile& file, const model::ParameterTable& table);

}  // namespace ws::modelio
