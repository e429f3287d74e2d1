// SPDX-License-Identifier: GPL-3.0-or-later
// The sampling flags `wafer sample` and `wafer chat` share: -t/--temperature, --top-k, --top-p,
// -n/--max-tokens and --seed, written into one SamplingOptions (checked by its validate()).
#pragma once

#include <CLI/CLI.hpp>
#include <string>

#include "engine/sample/sampler.h"

namespace ws::cli {

// `maxTokensHelp` says what -n limits for the command (the text, one reply).
void addSamplingFlags(CLI::App* cmd, sample::SamplingOptions& options,
                      const std::string& maxTokensHelp);

}  // namespace ws::cli
