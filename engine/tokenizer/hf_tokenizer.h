// SPDX-License-Identifier: GPL-3.0-or-later
// HfTokenizer: a Hugging Face tokenizer.json with a BPE model, encoding exactly as the tokenizers
// library does (checked id for id against it, tests/engine/tokenizer/hf_reference_test.cpp):
//   1. added tokens (specials such as <|im_end|>, </s>) are cut out of the raw text first, longest
//      match first, and never merged with their neighbours (normalized ones are matched after
//      normalization);
//   2. each remaining stretch is normalized (Prepend, Replace, NFC/NFD/NFKC/NFKD);
//   3. pre-tokenized (Split with a PCRE2 regex, ByteLevel, Metaspace) into pieces;
//   4. each piece is run through the BPE model (hf_bpe.h: byte-level BPE, or SentencePiece-style
//      BPE with <0xXX> byte fallback and an unknown token);
//   5. with special tokens asked for, the post-processor's template adds BOS/EOS (or
//      tokenizer_config.json's add_bos_token / add_eos_token, as transformers does).
// Anything else a file uses is refused when loading, naming its key path; text that is not
// valid UTF-8 is refused by encodeChecked() naming the byte offset.
//
// decode() runs the file's decoder chain (ByteLevel, Replace, ByteFallback, Fuse, Strip,
// Metaspace) and returns bytes: where the library shows U+FFFD for byte tokens that do not form
// UTF-8, this returns the bytes themselves, so decode(encode(x)) is x whenever the library's is,
// and byte counts add up. encode() (the Tokenizer interface) also accepts invalid UTF-8, which the
// library cannot take: each invalid byte becomes its byte-level or <0xXX> token.
// Thread-safety: immutable after loading; every const method may run concurrently.
#pragma once

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "engine/tokenizer/hf_bpe.h"
#include "engine/tokenizer/hf_regex.h"
#include "engine/tokenizer/hf_spec.h"
#include "engine/tokenizer/tokenizer.h"

namespace ws::tokenizer {

class HfTokenizer final : public Tokenizer {
public:
    // tokenizerJson: the file's text; configJson: tokenizer_config.json's text or empty.
    static Result<std::unique_ptr<HfTokenizer>> create(std::string tokenizerJson,
                                                       std::string configJson,
                                                       std::string_view origin);

    std::vector<int32_t> encode(std::string_view text) const override;
    Result<std::vector<int32_t>> encodeChecked(std::string_view text,
                                               bool addSpecialTokens) const override;
    Result<Encoding> encodeWithOffsets(std::string_view text, bool addSpecialTokens) const override;
    std::optional<int32_t> specialTokenId(std::string_view content) const override;
    std::string decode(std::span<const int32_t> tokens) const override;
    int32_t tokenByteCount(int32_t id) const override;
    std::string tokenName(int32_t id) const override;
    int vocabSize() const override { return m_vocabSize; }
    std::string kind() const override { return "hf"; }
    std::string identity() const override { return m_spec.identity; }
    // Writes tokenizer.json (and tokenizer_config.json when one was read) as they were read.
    Status save(const std::filesystem::path& dir) const override;

    // special_tokens.h for hf: contents it already has as added tokens keep their ids, the
    // others are appended to tokenizer.json's added_tokens (special, not normalized, no strip;
    // a model vocabulary entry keeps its id, the rest get ids from vocabSize() upwards) and to
    // tokenizer_config.json's added_tokens_decoder when present. ids gets one id per content;
    // the result is null when nothing had to be added.
    Result<std::unique_ptr<HfTokenizer>> withSpecialTokens(std::span<const std::string> contents,
                                                           std::vector<int32_t>& ids) const;

    // GPT-2's own pipeline: no normalizer, ByteLevel with GPT-2's regex alone, no template. A
    // folder that also has GPT-2's vocab.json + merges.txt keeps loading those (as before
    // tokenizer.json was read), so its token ids and cache keys do not change.
    bool isGpt2Pipeline() const;

private:
    struct Matcher;  // added tokens, leftmost-longest
    // Working text; with offsets asked for, align holds each byte's range in the original input
    // (the library's NormalizedString alignments), else it stays empty.
    struct Piece {
        std::string text;
        std::vector<ByteSpan> align;
        bool atStart = false;  // begins at offset 0 of the input (Metaspace "first")
    };
    struct CachedPiece {
        std::vector<int32_t> ids;
        std::vector<uint32_t> lengths;  // with offsets only
    };
    using PieceCache = std::unordered_map<std::string, CachedPiece>;

    HfTokenizer(HfSpec spec, HfBpe model, std::string json, std::string config);
    Status prepare(std::string_view origin);

    std::string normalize(std::string text) const;
    void normalizeAligned(Piece& piece) const;
    void preTokenize(std::vector<Piece>& pieces, bool aligned) const;
    void encodeStretch(Piece stretch, PieceCache& cache, std::vector<int32_t>& out,
                       std::vector<ByteSpan>* offsets) const;
    void trimOffsets(std::string_view text, std::span<const int32_t> ids,
                     std::vector<ByteSpan>& offsets) const;
    Status encodeInto(std::string_view text, bool addSpecialTokens, std::vector<int32_t>& ids,
                      std::vector<ByteSpan>* offsets) const;
    std::vector<std::string> decodeChain(std::vector<std::string> tokens, bool atStart) const;
    std::optional<int32_t> invalidByteToken(uint8_t byte) const;

    HfSpec m_spec;
    HfBpe m_model;
    std::string m_json;
    std::string m_config;
    std::vector<std::optional<HfRegex>> m_regexes;  // per pre-tokenizer step (Split regex)
    std::optional<HfRegex> m_gpt2Regex;             // ByteLevel use_regex
    std::shared_ptr<const Matcher> m_rawMatcher;
    std::shared_ptr<const Matcher> m_normalizedMatcher;
    std::unordered_map<int32_t, std::string> m_addedById;
    int m_vocabSize = 0;
    bool m_byteLevel = false;
};

// Loads path (a tokenizer.json, with tokenizer_config.json beside it when present). The second
// form takes the file's text when the caller has read it already.
Result<std::unique_ptr<Tokenizer>> loadHfTokenizer(const std::filesystem::path& tokenizerJson);
Result<std::unique_ptr<Tokenizer>> loadHfTokenizer(const std::filesystem::path& tokenizerJson,
                                                   std::string text);

// True when text is a Hugging Face tokenizer.json (it has a "model"), as opposed to the byte
// tokenizer's {"type": "byte"} file of the same name.
bool isHfTokenizerJson(std::string_view text);

}  // namespace ws::tokenizer
