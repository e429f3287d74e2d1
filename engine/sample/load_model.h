// Loading a trained model for generation: a run folder as `wafer train` writes it
// (model.safetensors, config.yaml, the tokenizer's files), or a model.safetensors inside one, or
// one of the run's training checkpoints (checkpoint-<step>/, whose weights carry their config in
// the metadata and whose tokenizer is the run folder's, one level up).
//
// The config comes from the folder's config.yaml, else from the safetensors metadata key
// config_yaml (which every file Wafer Studio writes carries), else from a Hugging Face GPT-2
// config.json (n_embd, n_layer, n_head, n_positions, vocab_size, ...), so a GPT-2 or
// Cerebras-GPT folder from the Hub (model.safetensors, config.json, vocab.json, merges.txt) loads
// as it is. The tokenizer comes from the folder:
// tokenizer.json {"type": "byte"} for the byte tokenizer, vocab.json + merges.txt for byte-level
// BPE (GPT-2 format); a checkpoint-<step> folder's tokenizer is its run folder's. The weights must
// match the config's shape tensor for tensor.
//
// Failure contract: every problem (missing file, unreadable config, shape mismatch, tokenizer
// larger than the model's vocabulary, ...) comes back as an Error naming the file and the fix.
// Thread-safety: loadModel() may run on any thread; a LoadedModel is immutable once loaded and
// may be shared by concurrent generators.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <vector>

#include "engine/config/config.h"
#include "engine/core/result.h"
#include "engine/model/parameters.h"
#include "engine/tokenizer/tokenizer.h"

namespace ws::sample {

struct LoadedModel {
    config::Config config;
    model::GptShape shape;  // dropout rates are kept but generation never applies them
    std::shared_ptr<const tokenizer::Tokenizer> tokenizer;
    std::vector<float> params;          // ParameterTable(shape) layout, fp32 master weights
    std::filesystem::path folder;       // the run folder
    std::filesystem::path weightsFile;  // its model.safetensors
    int64_t step = -1;                  // training step the weights are from (-1: unknown)
};

// path: a run folder, a checkpoint-<step> folder, or a .safetensors file inside either.
Result<LoadedModel> loadModel(const std::filesystem::path& path);

// The tokenizer a run folder holds (see above), without the model.
Result<std::unique_ptr<tokenizer::Tokenizer>> loadFolderTokenizer(
    const std::filesystem::path& folder);

}  // namespace ws::sample
