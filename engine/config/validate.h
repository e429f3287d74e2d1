// SPDX-License-Identifier: GPL-3.0-or-later
// Validation of a whole Config: every field's range and choices (so a Config built in code or in
// the GUI gets the same checks as a loaded file) and the rules that tie fields together
// (hidden_size divisible by num_heads, sequence length within the position table, a well formed
// learning-rate schedule, tokenizer needs, ...). Thread-safe: pure functions.
#pragma once

#include <string>
#include <vector>

#include "engine/config/config.h"
#include "engine/core/result.h"

namespace ws::config {

// Every problem found, one message each, naming the key paths involved and the fix; empty when
// the config can run. Does not touch the file system (data_dir existence is checked by the data
// loader when the run starts).
std::vector<std::string> validate(const Config& config);

namespace detail {
// validate()'s rules for train_input's variable-sequence-length keys (validate_vsl.cpp).
void checkVariableSequenceLength(const Config& config, std::vector<std::string>& errors);
}  // namespace detail

// Once the tokenizer is built: its vocabulary must fit in model.vocab_size embedding rows.
Status checkVocab(const Config& config, int tokenizerVocab);

}  // namespace ws::config
