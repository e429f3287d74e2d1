// SPDX-License-Identifier: GPL-3.0-or-later
// The shared sampling flags: see sampling_flags.h.
#include "app/cli/sampling_flags.h"

namespace ws::cli {

void addSamplingFlags(CLI::App* cmd, sample::SamplingOptions& options,
                      const std::string& maxTokensHelp) {
    cmd->add_option("--temperature,-t", options.temperature,
                    "Sampling temperature; 0 = greedy (always the most likely token)")
        ->capture_default_str();
    cmd->add_option("--top-k", options.topK, "Keep the k most likely tokens; 0 = all")
        ->capture_default_str();
    cmd->add_option("--top-p", options.topP,
                    "Nucleus sampling: keep the most likely tokens up to this probability mass")
        ->capture_default_str();
    cmd->add_option("--max-tokens,-n", options.maxTokens, maxTokensHelp)->capture_default_str();
    cmd->add_option("--seed", options.seed,
                    "Random seed; the same seed, options and prompt give the same text")
        ->capture_default_str();
}

}  // namespace ws::cli
