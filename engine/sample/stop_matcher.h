// SPDX-License-Identifier: GPL-3.0-or-later
// StopMatcher: ends generated text at the first stop string (a chat template's end-of-turn
// marker when it is spelled out in text rather than one special token, e.g. "<|im_end|>" for a
// model whose tokenizer has no such token), for text that arrives in pieces. Text is released as
// soon as it cannot be the start of a stop string; a tail that could still become one is held
// back until the next piece decides it, so a stop string never shows even in part.
//
// Guarantee: the concatenation of everything push() and finish() return is the whole text up to
// (not including) the first occurrence of any stop string, or the whole text when none occurs.
// Thread-safety: one thread at a time (it holds the pending tail).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace ws::sample {

class StopMatcher {
public:
    // Empty strings are ignored.
    explicit StopMatcher(std::vector<std::string> stopStrings);

    // Takes the next piece; returns the text that can be shown now.
    std::string push(std::string_view piece);
    // Whether a stop string has been seen (everything after it is dropped).
    bool stopped() const { return !m_matched.empty(); }
    // The stop string seen (empty before one).
    const std::string& matched() const { return m_matched; }
    // At the end of generation: the held-back tail (nothing once stopped).
    std::string finish();

private:
    std::vector<std::string> m_stops;
    std::string m_pending;  // text not yet released: a possible start of a stop string
    std::string m_matched;
};

}  // namespace ws::sample
