// SPDX-License-Identifier: GPL-3.0-or-later
// Loading a model folder: a run folder as `wafer train` writes it (model.safetensors,
// config.yaml, the tokenizer's files), or a model.safetensors inside one, or one of the run's
// training checkpoints (checkpoint-<step>/, whose weights carry their config in the metadata and
// whose tokenizer is the run folder's, one level up).
//
// The config comes from the folder's config.yaml, else from the safetensors metadata key
// config_yaml (which every file Wafer Studio writes carries), else from a Hugging Face GPT-2
// config.json (n_embd, n_layer, n_head, n_positions, vocab_size, ...), so a GPT-2 or
// Cerebras-GPT folder from the Hub (model.safetensors, config.json, vocab.json, merges.txt) loads
// as it is, its weights single or sharded, safetensors or pytorch_model.bin (hf_weights.h). The
// tokenizer comes from the folder: a Hugging Face tokenizer.json (Llama, Qwen2, Mistral, ...; with
// tokenizer_config.json), tokenizer.json {"type": "byte"} for the byte tokenizer, vocab.json +
// merges.txt for byte-level BPE (GPT-2 format; a GPT-2 folder that also has GPT-2's
// tokenizer.json keeps using these); a checkpoint-<step> folder's tokenizer is its run folder's.
// The weights must match the config's shape tensor for tensor.
//
// loadModelInfo() does all of that except reading the weights: it reads config and tokenizer and
// only the header of model.safetensors, where it checks that every tensor of the config's shape is
// present with that shape (the check loadWeights makes; dtypes and values are not read), so it is
// cheap enough for a GUI thread. loadModel() is loadModelInfo() plus the weights.
//
// Failure contract: every problem (missing file, unreadable config, shape mismatch, tokenizer
// larger than the model's vocabulary, ...) comes back as an Error naming the file and the fix.
// Thread-safety: both may run on any thread; a ModelInfo / LoadedModel is immutable once loaded
// and may be shared by concurrent generators.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <vector>

#include "engine/config/config.h"
#include "engine/core/result.h"
#include "engine/model/model_facts.h"
#include "engine/model/parameters.h"
#include "engine/tokenizer/tokenizer.h"

namespace ws::modelio {

// Everything about a model folder but its weights.
struct ModelInfo {
    config::Config config;
    model::GptShape shape;    // dropout rates are kept but generation never applies them
    model::ModelFacts facts;  // parameter count, FLOPs per token, memory (of `config`)
    std::shared_ptr<const tokenizer::Tokenizer> tokenizer;
    std::filesystem::path folder;           // the folder given (run or checkpoint-<step>)
    std::filesystem::path weightsFile;      // its model.safetensors (an HF folder: or its index)
    std::filesystem::path tokenizerFolder;  // `folder`, or the run folder above a checkpoint
    int64_t step = -1;                      // training step the weights are from (-1: unknown)
};

struct LoadedModel : ModelInfo {
    std::vector<float> params;  // ParameterTable(shape) layout, fp32 master weights
};

// path: a run folder, a checkpoint-<step> folder, or a .safetensors file inside either.
Result<ModelInfo> loadModelInfo(const std::filesystem::path& path);
Result<LoadedModel> loadModel(const std::filesystem::path& path);

// The tokenizer a run folder holds (see above), without the model.
Result<std::unique_ptr<tokenizer::Tokenizer>> loadFolderTokenizer(
    const std::filesystem::path& folder);
// A model folder (as loadFolderTokenizer) or a tokenizer file: a Hugging Face tokenizer.json
// (with tokenizer_config.json beside it when present), the byte tokenizer's tokenizer.json, or
// GPT-2's vocab.json / merges.txt (the pair beside each other). For `wafer tokenize`.
Result<std::unique_ptr<tokenizer::Tokenizer>> loadTokenizerAt(const std::filesystem::path& path);

}  // namespace ws::modelio
