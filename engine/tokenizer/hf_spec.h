// SPDX-License-Identifier: GPL-3.0-or-later
// HfSpec: what a Hugging Face tokenizer.json (plus tokenizer_config.json) asks for, as plain
// structs, after parseHfTokenizerJson() has checked every key it reads. Only what the
// tokenizers library's BPE pipeline needs for the files people fine-tune with is representable;
// everything else is refused while parsing, naming the JSON key path (see hf_tokenizer.h).
// Thread-safety: plain values.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "engine/core/result.h"

namespace ws::tokenizer {

struct HfAddedToken {
    int32_t id = 0;
    std::string content;
    bool lstrip = false;      // also swallows the whitespace before it
    bool rstrip = false;      // also swallows the whitespace after it
    bool normalized = false;  // matched in the normalized text instead of the raw text
    bool special = false;
};

struct HfNormalizer {  // one step of the normalizer chain
    enum class Kind { Prepend, Replace, Nfc, Nfd, Nfkc, Nfkd };
    Kind kind = Kind::Replace;
    std::string pattern;  // Replace: the literal pattern; Prepend: the prefix
    std::string content;  // Replace: its replacement
};

enum class HfSplitBehavior { Isolated, Removed, MergedWithPrevious, MergedWithNext };

struct HfPreTokenizer {  // one step of the pre-tokenizer chain
    enum class Kind { SplitRegex, SplitString, ByteLevel, Metaspace };
    Kind kind = Kind::SplitRegex;
    std::string pattern;  // Split: regex or literal string
    HfSplitBehavior behavior = HfSplitBehavior::Isolated;
    bool invert = false;
    bool addPrefixSpace = false;  // ByteLevel
    bool useRegex = false;        // ByteLevel: split with GPT-2's regex first
    std::string replacement;      // Metaspace: "▁"
    enum class Prepend { Always, First, Never } prepend = Prepend::Always;  // Metaspace
    bool split = true;                                                      // Metaspace
};

struct HfDecoder {  // one step of the decoder chain
    enum class Kind { ByteLevel, Replace, ByteFallback, Fuse, Strip, Metaspace };
    Kind kind = Kind::Fuse;
    std::string pattern;       // Replace
    std::string content;       // Replace: replacement; Strip: the character (UTF-8)
    int start = 0, stop = 0;   // Strip
    std::string replacement;   // Metaspace
    bool prependFirst = true;  // Metaspace: a leading replacement of the first token is dropped
};

struct HfTemplatePiece {  // TemplateProcessing "single": a special token or the sequence
    bool isSequence = false;
    std::vector<int32_t> ids;  // the special token's ids
};

// The ByteLevel post-processor's trim_offsets: each token's offsets lose its leading and trailing
// spaces ("Ġ" or white space), except one leading space of the first token that add_prefix_space
// put there; counted in characters, as the library's bindings apply it. Offsets only.
struct HfOffsetTrim {
    bool enabled = false;
    bool addPrefixSpace = false;
};

struct HfBpeSpec {
    std::vector<std::pair<std::string, int32_t>> vocab;       // token -> id
    std::vector<std::pair<std::string, std::string>> merges;  // rank order
    std::optional<std::string> unkToken;
    bool fuseUnk = false;
    bool byteFallback = false;
    bool ignoreMerges = false;
};

struct HfSpec {
    HfBpeSpec model;
    std::vector<HfAddedToken> addedTokens;
    std::vector<HfNormalizer> normalizers;
    std::vector<HfPreTokenizer> preTokenizers;
    std::vector<HfDecoder> decoders;
    std::optional<std::vector<HfTemplatePiece>> single;  // none: no special tokens are added
    HfOffsetTrim offsetTrim;
    std::string identity;  // SHA-256 over the canonical JSON of both files
};

// json: tokenizer.json's text; configJson: tokenizer_config.json's text or empty (its
// add_bos_token / add_eos_token, where present, rebuild the template as transformers does);
// origin names the file in errors, which read "<origin>: <key path>: <problem>".
Result<HfSpec> parseHfTokenizerJson(std::string_view json, std::string_view configJson,
                                    std::string_view origin);

}  // namespace ws::tokenizer
