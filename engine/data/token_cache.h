// SPDX-License-Identifier: GPL-3.0-or-later
// TokenCache: a corpus tokenized once and kept as a memory-mapped file in the user's cache
// folder (never beside the corpus, so read-only corpora work).
//
// Keying and reuse: the file is cacheDir/tokens/<sha256(corpus)[:24]>-<sha256(identity)[:24]>
// .tokens, and its header repeats both full digests. build() reuses a file only when both match,
// the payload checksum verifies, and the header's vocabulary and every token id fit the
// tokenizer; a change of corpus or tokenizer, or a damaged file, means a rebuild (note() says
// why). Files are written to a temp name, fsynced, then renamed, so a
// crash never leaves a half file under the real name.
//
// File format (version 1, native little-endian, 256-byte header then the payload):
//   0  char[8]  magic "WSTOKENS"          8 uint32 version = 1      12 uint32 byte-order mark
//   16 uint32   bytes per token (2 | 4)  20 uint32 vocabulary size  24 uint64 token count
//   32 char[64] sha256 hex of the corpus bytes
//   96 char[64] sha256 hex of the tokenizer's identity()
//  160 char[64] sha256 hex of the payload;  224..255 zero
//  256 payload: count tokens, uint16 when the vocabulary has at most 65536 ids, else int32.
//
// Thread-safety: immutable once built; copies share the mapping; all const methods may run
// concurrently. Failures (unwritable cache folder, disk full) are Result errors naming the path.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "engine/core/progress.h"
#include "engine/core/result.h"
#include "engine/tokenizer/tokenizer.h"

namespace ws::data {

class TokenCache {
public:
    static Result<TokenCache> build(std::string_view corpusText,
                                    const tokenizer::Tokenizer& tokenizer,
                                    const std::filesystem::path& cacheDir,
                                    ProgressFn progress = {});

    size_t size() const { return m_count; }  // tokens in the corpus
    int32_t token(size_t i) const;           // i < size()
    // Copies tokens [first, first + count) into out (count int32s); the range must lie inside.
    void copyTokens(size_t first, size_t count, int32_t* out) const;
    int vocabSize() const { return m_vocabSize; }
    int bytesPerToken() const { return m_bytesPerToken; }
    bool reused() const { return m_reused; }  // true: an existing valid file was used
    // Why an existing file was not reused (empty when it was, or when there was none).
    const std::string& note() const { return m_note; }
    const std::filesystem::path& path() const { return m_path; }

private:
    struct Mapping;
    TokenCache() = default;
    static Result<TokenCache> open(const std::filesystem::path& file, std::string_view corpusSha,
                                   std::string_view tokenizerSha, int vocabSize);

    std::shared_ptr<const Mapping> m_mapping;
    const unsigned char* m_payload = nullptr;
    size_t m_count = 0;
    int m_vocabSize = 0;
    int m_bytesPerToken = 4;
    bool m_reused = false;
    std::string m_note;
    std::filesystem::path m_path;
};

// Encodes text in pieces that end where GPT-2 pre-tokenisation always splits (an ASCII letter,
// a space, an ASCII letter: the space starts a new piece either way), so the concatenated
// result equals tokenizer.encode(text) for the byte and BPE tokenizers, while progress can be
// reported and memory stays bounded. A Hugging Face tokenizer gets the whole text in one call:
// its normalizer may prepend to each call's text ("▁") and a file without a pre-tokenizer
// (SentencePiece-style) merges across spaces, so no cut is safe for every file. sink receives
// the tokens in order.
void encodeInChunks(std::string_view text, const tokenizer::Tokenizer& tokenizer, size_t chunkBytes,
                    const std::function<void(std::span<const int32_t>)>& sink,
                    const ProgressFn& progress = {});

}  // namespace ws::data
