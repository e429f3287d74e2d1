// Model weights <-> a safetensors file in Hugging Face GPT-2's tensor names and layouts
// (wte.weight, h.0.attn.c_attn.weight as (in, out), ...), with the run's config YAML in the
// metadata, so files exchange with the wider ecosystem without renaming. Full checkpoints with
// optimizer state are a later issue. Thread-safe: pure functions.
#pragma once

#include <filesystem>
#include <vector>

#include "engine/config/config.h"
#include "engine/core/result.h"
#include "engine/model/parameters.h"

namespace ws::session {

// Writes atomically (temporary file, fsync, rename): an existing file is never half-replaced.
Status saveWeights(const std::filesystem::path& file, const model::ParameterTable& table,
                   const float* params, const config::Config& config, int64_t step);

// Fills `params` (table.totalSize() floats, table layout) from `file`. Every tensor of the table
// must be present with the same shape (an optional "transformer." prefix is accepted, as Hugging
// Face writes it for GPT2LMHeadModel); an error names the file and the first missing or mismatched
// tensor.
Status loadWeights(const std::filesystem::path& file, const model::ParameterTable& table,
                   float* params);

}  // namespace ws::session
