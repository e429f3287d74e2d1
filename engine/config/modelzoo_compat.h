// SPDX-License-Identifier: GPL-3.0-or-later
// ModelZoo compatibility steps that need the whole file, run by parseConfig() after reading and
// before overrides: ModelZoo's older muP keys (model.output_logits_scale and
// optimizer.adjust_learning_rate.decoder_kernel, Cerebras-GPT's *_mup.yaml of releases 1.7 to
// 2.1) become the current mup_base_* keys of the same model, and a sequence length ModelZoo would
// take from HDF5 data is chosen visibly. Each step says what it did in a warning; what cannot be
// translated exactly is an error, never a different model. Internal to wafer::config.
// Thread-safe: works on its arguments only.
#pragma once

#include "engine/config/config.h"
#include "engine/config/yaml_reader.h"

namespace ws::config::detail {

// Marks train_input/eval_input max_sequence_length as "not given" before reading, so that
// resolveSequenceLength() can tell a missing key (after overrides too) from a written one.
void markSequenceLengthUnset(Config& config);

// The older muP keys kept in ctx (see ReadContext) -> mup_base_hidden_size, mup_base_filter_size,
// output_logits_alpha and initializers rescaled so the weights start as the file gives them.
void translateLegacyMup(Config& config, ReadContext& ctx);

// A max_sequence_length still unset: model.max_position_embeddings for ModelZoo's HDF5 data
// processors (their files were written at the model's context length), else the default 128;
// a warning says which and why unless the processor is Wafer Studio's own text reader.
void resolveSequenceLength(Config& config, ReadContext& ctx);

}  // namespace ws::config::detail
