// SPDX-License-Identifier: GPL-3.0-or-later
// Writing a model folder: model.safetensors (the weights, saveWeights: Hugging Face GPT-2 names,
// the config in the metadata), config.yaml and the tokenizer's files. The one writer of that
// layout, used by a training run (session/), `wafer import` and the PEFT import (interop/);
// load_model.h reads it back. Every file is written atomically (temp file, fsync, rename), so a
// kill never leaves half of one; a folder built elsewhere and renamed into place whole
// (interop/output_folder.h) is atomic as a whole.
// Thread-safety: free functions over their arguments.
#pragma once

#include <cstdint>
#include <filesystem>

#include "engine/config/config.h"
#include "engine/core/result.h"
#include "engine/model/parameters.h"
#include "engine/modelio/weights_io.h"
#include "engine/tokenizer/tokenizer.h"

namespace ws::modelio {

// The tokenizer's files of a model folder: written by `tokenizer` (Tokenizer::save), or, when it
// is null, GPT-2's vocab.json and merges.txt copied byte for byte from `vocabFile` and
// `mergesFile` (a Hugging Face folder's, kept as published).
struct FolderTokenizer {
    const tokenizer::Tokenizer* tokenizer = nullptr;
    std::filesystem::path vocabFile, mergesFile;
};

// config.yaml and the tokenizer's files: what a model folder holds beside its weights. A run
// writes them when it starts, so that its checkpoints (whose tokenizer is the run folder's) load
// before the final weights exist.
Status writeModelFolderFiles(const std::filesystem::path& dir, const config::Config& config,
                             const FolderTokenizer& tokenizer);

// <dir>/model.safetensors: the weights after `step` steps.
Status writeModelWeights(const std::filesystem::path& dir, const model::ParameterTable& table,
                         const TensorReader& weights, const config::Config& config, int64_t step);

// A whole model folder from weights in one buffer (`params`, table layout): writeModelWeights,
// then writeModelFolderFiles.
Status writeModelFolder(const std::filesystem::path& dir, const model::ParameterTable& table,
                        const float* params, const config::Config& config, int64_t step,
                        const FolderTokenizer& tokenizer);

}  // namespace ws::modelio
