// SPDX-License-Identifier: GPL-3.0-or-later
// Offsets for the Hugging Face pipeline (hf_tokenizer.h): each byte of the working text carries
// the byte range of the original text it came from, updated by every phase as the tokenizers
// library's NormalizedString::transform_range updates its alignments (a character replacing one
// takes that character's range; an inserted character the range of the byte before it). A
// token's offsets are then its first byte's begin and its last byte's end (convert_offsets).
// The functions keep text and align (one entry per byte of text) in step.
// Thread-safety: pure functions.
#pragma once

#include <unicode/normalizer2.h>

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "engine/tokenizer/tokenizer.h"

namespace ws::tokenizer {

// The starting alignment of text[begin, end) (valid UTF-8): each byte maps to its character.
std::vector<ByteSpan> characterAlignment(std::string_view text, size_t begin, size_t end);

// The Prepend normalizer, Metaspace's prepend and ByteLevel's add_prefix_space.
void prependAligned(std::string& text, std::vector<ByteSpan>& align, std::string_view prefix);

// The Replace normalizer (literal pattern) and Metaspace's " " -> "▁".
void replaceAligned(std::string& text, std::vector<ByteSpan>& align, std::string_view pattern,
                    std::string_view with);

// NFC/NFD/NFKC/NFKD; normalizer null leaves both as they are.
void unicodeNormalizeAligned(const icu::Normalizer2* normalizer, std::string& text,
                             std::vector<ByteSpan>& align);

// The alignment of the ByteLevel spelling of bytes (valid UTF-8, align one per byte).
std::vector<ByteSpan> byteLevelAlignment(std::string_view bytes, std::span<const ByteSpan> align);

}  // namespace ws::tokenizer
