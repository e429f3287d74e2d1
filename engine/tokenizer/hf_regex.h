// SPDX-License-Identifier: GPL-3.0-or-later
// HfRegex: the regular expressions of Hugging Face tokenizer.json files (`Split` pre-tokenizers,
// e.g. Llama 3's and Qwen2's with \p{L}, \p{N}, (?i:...) and (?!\S)), compiled with PCRE2 in UTF
// and Unicode-property mode (JIT-compiled where the platform has it). std::regex knows none of
// these constructs.
//
// The tokenizers library runs such patterns with Oniguruma, whose \s is Unicode's White_Space
// property; PCRE2's \s also matches U+180E (MONGOLIAN VOWEL SEPARATOR, no longer a space since
// Unicode 6.3). compile() therefore rewrites \s and \S into the explicit White_Space set, so both
// engines split text the same way. A \S inside a character class cannot be rewritten that way
// and is refused.
// Thread-safety: a compiled HfRegex is immutable; findAll() may run concurrently (each call uses
// its own match data).
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "engine/core/result.h"

namespace ws::tokenizer {

class HfRegex {
public:
    ~HfRegex();
    HfRegex(HfRegex&&) noexcept;
    HfRegex& operator=(HfRegex&&) noexcept;

    // pattern: the regex as written in tokenizer.json. Errors carry PCRE2's message and offset.
    static Result<HfRegex> compile(std::string_view pattern);
    // The PCRE2 form compile() uses (with \s spelled out); exposed for tests.
    static Result<std::string> onigurumaCompatible(std::string_view pattern);

    // Non-overlapping matches left to right as (begin, end) byte offsets, empty matches skipped
    // as the library's splitter drops empty pieces. text must be valid UTF-8.
    std::vector<std::pair<size_t, size_t>> findAll(std::string_view text) const;

private:
    struct Compiled;
    explicit HfRegex(std::unique_ptr<Compiled> compiled);
    std::unique_ptr<Compiled> m_compiled;
};

}  // namespace ws::tokenizer
