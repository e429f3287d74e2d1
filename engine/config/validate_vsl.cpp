// SPDX-License-Identifier: GPL-3.0-or-later
// The variable-sequence-length rules of validate() (validate.h): train_input's two-stage
// schedule (short_sequence_length, short_sequence_steps) must be complete, shorter than and a
// divisor of max_sequence_length, and switch before max_steps; eval_input has no schedule.
#include <algorithm>
#include <string>
#include <vector>

#include "engine/config/validate.h"

namespace ws::config::detail {

namespace {

std::string divisorsBelow(int n) {
    std::string text;
    for (int d = 1; d < n; ++d) {
        if (n % d != 0) continue;
        if (!text.empty()) text += ", ";
        text += std::to_string(d);
    }
    return text;
}

}  // namespace

void checkVariableSequenceLength(const Config& config, std::vector<std::string>& errors) {
    const InputConfig& in = config.trainInput;
    const int shortT = in.shortSequenceLength, longT = in.maxSequenceLength;
    const int64_t steps = in.shortSequenceSteps, maxSteps = config.runconfig.maxSteps;
    if (shortT > 0 && steps == 0)
        errors.push_back("train_input.short_sequence_length is " + std::to_string(shortT) +
                         " but train_input.short_sequence_steps is 0: set short_sequence_steps "
                         "to the number of steps at the short length (Cerebras' VSL recipe uses "
                         "75 to 90% of runconfig.max_steps), or short_sequence_length: 0 to "
                         "train at max_sequence_length throughout");
    if (shortT == 0 && steps > 0)
        errors.push_back("train_input.short_sequence_steps is " + std::to_string(steps) +
                         " but train_input.short_sequence_length is 0: set short_sequence_length "
                         "to the short stage's tokens per sequence (a divisor of "
                         "max_sequence_length), or short_sequence_steps: 0");
    if (shortT > 0 && shortT >= longT)
        errors.push_back("train_input.short_sequence_length (" + std::to_string(shortT) +
                         ") is not shorter than train_input.max_sequence_length (" +
                         std::to_string(longT) +
                         "): the first stage must train on shorter sequences; lower "
                         "short_sequence_length (one of " +
                         divisorsBelow(longT) + ") or raise max_sequence_length");
    else if (shortT > 0 && longT % shortT != 0)
        errors.push_back("train_input.short_sequence_length (" + std::to_string(shortT) +
                         ") does not divide train_input.max_sequence_length (" +
                         std::to_string(longT) +
                         "): each row of max_sequence_length tokens packs a whole number of "
                         "short sequences; use one of " +
                         divisorsBelow(longT));
    if (shortT > 0 && steps > 0 && maxSteps > 0 && steps >= maxSteps)
        errors.push_back("train_input.short_sequence_steps (" + std::to_string(steps) +
                         ") is not below runconfig.max_steps (" + std::to_string(maxSteps) +
                         "): the switch to max_sequence_length would never happen; use fewer "
                         "steps (e.g. " +
                         std::to_string(std::max<int64_t>(1, maxSteps * 4 / 5)) +
                         ", 80%) or raise max_steps");
    const InputConfig& eval = config.evalInput;
    if (eval.shortSequenceLength != 0 || eval.shortSequenceSteps != 0)
        errors.push_back(
            "eval_input.short_sequence_length / short_sequence_steps: only train_input has a "
            "sequence-length schedule (evaluation always uses max_sequence_length); remove them "
            "from eval_input");
    // Each of these re-plans the emulated step its own way (per step routing, changing masks,
    // per step attention length); the session does not combine them yet.
    const bool packs = in.useVsl || shortT > 0;
    if (packs && config.model.moe)
        errors.push_back(
            "train_input.use_vsl / short_sequence_length with model.moe: variable sequence length "
            "is not supported with mixture of experts yet; remove model.moe or set use_vsl: false "
            "and short_sequence_length: 0");
    if (packs && config.sparsity && config.sparsity->sparsity > 0)
        errors.push_back(
            "train_input.use_vsl / short_sequence_length with the top-level sparsity section: "
            "variable sequence length is not supported with those masks yet; remove the "
            "sparsity: section (model.sparsity works with VSL) or set use_vsl: false and "
            "short_sequence_length: 0");
}

}  // namespace ws::config::detail
