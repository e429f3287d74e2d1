// SPDX-License-Identifier: GPL-3.0-or-later
// Special tokens a chat format needs (ChatML's <|im_start|>, <|im_end|>) on a tokenizer that lacks
// them: GPT-2's BPE, the studio's own trained BPE, the byte tokenizer, or a Hugging Face file.
// As the tokenizers library's added tokens: they are cut out of the text first (leftmost, then
// longest), never merged with their neighbours, and everything between them is encoded as
// before; decode() and tokenName() give their text back.
//
// Ids: a content the tokenizer already splits out (Qwen2.5's <|im_end|>) keeps its id; a content
// that is a verbatim vocabulary entry (GPT-2's <|endoftext|>, 50256) keeps that id and is from
// now on split out; any other gets the next id from vocabSize() upwards, in the order given. So
// a model's vocab_size must grow to cover the new ids (the embedding rows are the model's
// business). identity() changes whenever the special tokens do.
//
// Files: byte and bpe keep their own files unchanged and add added_tokens.json beside them, a
// JSON object {content: id} as transformers' slow tokenizers save theirs; loadGpt2Bpe() and
// loadByteTokenizerFolder() read it back, so save() then loading the folder gives the same
// tokenizer (same identity, same ids). hf adds the tokens to tokenizer.json's added_tokens
// (special, not normalized, no strip) and to tokenizer_config.json's added_tokens_decoder when
// it has one, as transformers' add_special_tokens() then save_pretrained() would.
// Thread-safety: the returned tokenizers are immutable, like every Tokenizer.
#pragma once

#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "engine/core/result.h"
#include "engine/tokenizer/tokenizer.h"

namespace ws::tokenizer {

struct WithSpecialTokens {
    std::shared_ptr<const Tokenizer> tokenizer;  // the given one when nothing had to be added
    std::vector<int32_t> ids;                    // one per content, in the order given
};

// Fails (naming the content) on an empty content or one that is not valid UTF-8.
Result<WithSpecialTokens> withSpecialTokens(std::shared_ptr<const Tokenizer> tokenizer,
                                            std::span<const std::string> contents);

// The name of the file byte and bpe folders keep their added special tokens in.
inline constexpr const char* kAddedTokensFile = "added_tokens.json";

// base plus the special tokens of folder/added_tokens.json, or base itself when there is no
// such file. Errors name the file and the entry (not an object of content -> id, an id that is
// neither the next free one nor a vocabulary entry spelled as the content).
Result<std::unique_ptr<Tokenizer>> loadAddedTokens(std::unique_ptr<Tokenizer> base,
                                                   const std::filesystem::path& folder);

// The byte tokenizer of a folder (its tokenizer.json says {"type": "byte"}), with the special
// tokens of its added_tokens.json when present.
Result<std::unique_ptr<Tokenizer>> loadByteTokenizerFolder(const std::filesystem::path& folder);

}  // namespace ws::tokenizer
