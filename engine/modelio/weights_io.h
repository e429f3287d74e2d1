// SPDX-License-Identifier: GPL-3.0-or-later
// Model weights <-> a safetensors file in Hugging Face GPT-2's tensor names and layouts
// (wte.weight, h.0.attn.c_attn.weight as (in, out), ...), with the run's config YAML in the
// metadata, so files exchange with the wider ecosystem without renaming. Training checkpoints
// (optimizer state, trainer state) build on this: see checkpoints.h. Thread-safety: pure functions.
#pragma once

#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "engine/config/config.h"
#include "engine/core/result.h"
#include "engine/fileio/safetensors.h"
#include "engine/model/parameters.h"

namespace ws::modelio {

class HfWeights;

// Writes atomically (temporary file, fsync, rename): an existing file is never half-replaced.
// `sha256Out`, when given, receives the SHA-256 of the bytes written (for the run store).
Status saveWeights(const std::filesystem::path& file, const model::ParameterTable& table,
                   const float* params, const config::Config& config, int64_t step,
                   std::string* sha256Out = nullptr);

// Where a writer finds buffer b's tensor t (b 0: the weights, 1...: the optimizer state copies;
// t an index into table.tensors()): a pointer valid until the next call. For weights that are
// not in one buffer (a sharded MemoryX gathers them tensor by tensor as the file is written).
using TensorReader = std::function<const float*(int buffer, size_t tensor)>;
Status saveWeights(const std::filesystem::path& file, const model::ParameterTable& table,
                   const TensorReader& read, const config::Config& config, int64_t step,
                   std::string* sha256Out = nullptr);

// Fills `params` (table.totalSize() floats, table layout) from `file`. Every tensor of the table
// must be present with the same shape (an optional "transformer." prefix is accepted, as Hugging
// Face writes it for GPT2LMHeadModel); an error names the file and the first missing or mismatched
// tensor. A Llama-family table also reads Hugging Face's own names (model.embed_tokens.weight,
// q/k/v/o_proj, gate/up/down_proj: hf_llama_weights.h) when the file holds those instead of the
// table's. A PyTorch pytorch_model.bin (torch.save's zip format) is read the same way, through the
// restricted reader of torch_checkpoint.h (nothing in it is executed), and a shard index
// (*.index.json, hf_weights.h) through its shards.
Status loadWeights(const std::filesystem::path& file, const model::ParameterTable& table,
                   float* params);

// The same from a file already opened.
Status readWeights(const fileio::SafetensorsFile& file, const model::ParameterTable& table,
                   float* params);

// The check loadWeights makes before it reads a value, from the header alone: every tensor of
// `table` present with its shape. Gives the name each has in the file, in table order.
Result<std::vector<std::string>> matchWeights(const fileio::SafetensorsFile& file,
                                              const model::ParameterTable& table);

// The same two over a Hugging Face folder's weights, single or sharded (hf_weights.h).
Status readWeights(const HfWeights& weights, const model::ParameterTable& table, float* params);
Result<std::vector<std::string>> matchWeights(const HfWeights& weights,
                                              const model::ParameterTable& table);

}  // namespace ws::modelio
