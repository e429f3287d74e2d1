// SPDX-License-Identifier: GPL-3.0-or-later
// Tokenizers: text bytes <-> token ids. Three kinds exist: "byte" (256 tokens, id = byte value),
// "bpe", byte-level BPE exactly as GPT-2 does it (pre-tokenisation regex, bytes_to_unicode table,
// vocab.json + merges.txt files), which a GPT-2 vocabulary loads into or the trainer learns, and
// "hf", a Hugging Face tokenizer.json (hf_tokenizer.h) encoding as the tokenizers library does.
//
// Guarantees: for byte and bpe, decode(encode(x)) == x byte for byte for any input, including
// invalid UTF-8; for hf, decode(encode(x)) is what the library's decode gives (x, unless the
// file's normalizer changes the text, e.g. NFC, or characters map to the unknown token);
// encode is deterministic; identity() changes whenever anything that affects encoding changes.
// Thread-safety: a constructed Tokenizer is immutable; all const methods may run concurrently.
// Failures (unreadable or malformed files, bad config) come back as Result/Status errors naming
// the file, line or key and the fix; nothing here exits or aborts on bad input.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "engine/config/config.h"
#include "engine/core/progress.h"
#include "engine/core/result.h"

namespace ws::tokenizer {

// A byte range [begin, end) of a text.
struct ByteSpan {
    size_t begin = 0;
    size_t end = 0;
    bool operator==(const ByteSpan&) const = default;
};

// Token ids with, for each, the byte range of the ORIGINAL input text it stands for, as the
// Hugging Face tokenizers library's Encoding.offsets are (in bytes, where its Python and Node
// bindings convert them to characters). Special tokens a post-processor adds (BOS/EOS) have
// the empty range {0, 0}. byte and bpe ranges tile the text in order. hf ranges may overlap
// (byte-level tokens that split one character each carry that whole character's range), leave
// bytes uncovered (characters a normalizer composes away, e.g. NFC's combining accents), and with
// a ByteLevel post-processor's trim_offsets lose their spaces (a range of spaces only becomes
// empty at its end, so begins need not increase).
struct Encoding {
    std::vector<int32_t> ids;
    std::vector<ByteSpan> offsets;  // one per id
};

class Tokenizer {
public:
    virtual ~Tokenizer();

    virtual std::vector<int32_t> encode(std::string_view text) const = 0;
    // encode() for text a user hands over: fails (naming the byte offset) on text the
    // tokenizer's own library refuses (hf: invalid UTF-8), and with addSpecialTokens adds what
    // the tokenizer's post-processor adds (hf: BOS/EOS). byte and bpe add nothing and accept
    // any bytes.
    virtual Result<std::vector<int32_t>> encodeChecked(std::string_view text,
                                                       bool addSpecialTokens) const;
    // encodeChecked() plus each token's byte range in text (Encoding above). The ids are exactly
    // encodeChecked()'s. byte and bpe (no normalizer): the running sum of each token's bytes, so
    // the ranges tile the text. hf: mapped back through the added-token split, the normalizer
    // (Prepend, Replace, NFC/NFD/NFKC/NFKD) and the pre-tokenizer (ByteLevel, Metaspace) as the
    // library's alignments do, then trim_offsets; checked against the library
    // (hf_reference_test.cpp).
    virtual Result<Encoding> encodeWithOffsets(std::string_view text, bool addSpecialTokens) const;
    // The id of a token that is cut out of the text whole before anything else runs and never
    // merged with its neighbours (hf: an added token; see special_tokens.h for the others), or
    // nullopt.
    virtual std::optional<int32_t> specialTokenId(std::string_view content) const;
    // Byte-exact inverse of encode. Ids the tokenizer does not know (e.g. a model's padded
    // vocabulary rows) decode to U+FFFD so that sampled text shows them instead of hiding them.
    virtual std::string decode(std::span<const int32_t> tokens) const = 0;
    // One past the largest token id encode() can produce or decode() knows.
    // Bytes token id stands for inside a sequence (decode() of a sequence is their concatenation,
    // less what a decoder strips at its very start); unknown ids count as U+FFFD's 3 bytes.
    virtual int32_t tokenByteCount(int32_t id) const;
    // The vocabulary's spelling of id for display ("Ġthe", "<0x0A>", "<|im_end|>"); empty for
    // ids the tokenizer does not know. Default: decode() of the id alone.
    virtual std::string tokenName(int32_t id) const;
    virtual int vocabSize() const = 0;
    virtual std::string kind() const = 0;      // "byte" | "bpe" | "hf"
    virtual std::string identity() const = 0;  // SHA-256 hex of everything that affects encoding
    // Writes the tokenizer into dir (created if needed) so it can be loaded again:
    // bpe: vocab.json + merges.txt (GPT-2 format); byte: tokenizer.json {"type": "byte"};
    // hf: tokenizer.json (and tokenizer_config.json) as read.
    // Each file is written atomically (temp file, fsync, rename).
    virtual Status save(const std::filesystem::path& dir) const = 0;
};

std::unique_ptr<Tokenizer> makeByteTokenizer();

// How many bytes each token id decodes to (index = id, vocabSize() entries): decode() of a
// sequence is the concatenation of its tokens' bytes, so the bytes a run of tokens stands for is
// the sum of their entries. For bits per byte, the measure that compares models across
// tokenizers. Ids decode() does not know count as the replacement character's 3 bytes.
std::vector<int32_t> tokenByteCounts(const Tokenizer& tokenizer);

// Loads a GPT-2 style pair: vocab.json maps byte-level unicode strings to ids, merges.txt lists
// "a b" merges in rank order after an optional "#version" line. Every one of the 256 byte
// tokens must be present (so that any input can be encoded). An added_tokens.json beside
// vocab.json adds its special tokens (special_tokens.h).
Result<std::unique_ptr<Tokenizer>> loadGpt2Bpe(const std::filesystem::path& vocabJson,
                                               const std::filesystem::path& mergesTxt);

// Learns a byte-level BPE of (at most) vocabSize tokens on corpus: ids 0..255 are the bytes,
// then one token per merge, most frequent pair first (ties: smaller left id, then smaller right
// id). Stops early when no pair occurs twice. Deterministic. Fails when vocabSize < 256.
Result<std::unique_ptr<Tokenizer>> trainBpe(std::string_view corpus, int vocabSize,
                                            ProgressFn progress = {});

// Builds what the config asks for: byte, bpe (vocab_file + merges_file), hf (tokenizer_file, a
// Hugging Face tokenizer.json) or train-bpe. train-bpe
// trains on corpusText and keeps the result (vocab.json + merges.txt) in
// cacheDir/tokenizers/bpe1-<sha256(corpus)[:32]>-v<vocab_size>/, reusing it while corpus and
// size match; a damaged cached copy is retrained. progress reports training only.
Result<std::unique_ptr<Tokenizer>> makeTokenizer(const config::TokenizerConfig& config,
                                                 std::string_view corpusText,
                                                 const std::filesystem::path& cacheDir,
                                                 ProgressFn progress = {});

}  // namespace ws::tokenizer
