// SPDX-License-Identifier: GPL-3.0-or-later
// HfBpe: the tokenizers library's BPE model on one pre-tokenized piece (model/bpe in the Rust
// crate): the piece starts as one symbol per character (a character missing from the vocabulary
// becomes its <0xXX> byte tokens with byte_fallback, else the unknown token, fused when
// fuse_unk), then merges are applied one at a time, always the lowest rank and among equal ranks
// the leftmost, until no adjacent pair has a merge (Word::merge_all). With ignore_merges a piece
// that is itself in the vocabulary is emitted as that one token.
// Thread-safety: immutable after create(); tokenize() may run concurrently.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "engine/core/result.h"
#include "engine/tokenizer/hf_spec.h"

namespace ws::tokenizer {

class HfBpe {
public:
    // Errors name the key path in origin's tokenizer.json (a merge whose parts or result are
    // not in the vocabulary, a missing unknown token).
    static Result<HfBpe> create(const HfBpeSpec& spec, std::string_view origin);

    // Appends the piece's tokens to out and, when lengths is given, each token's length in bytes
    // of the piece (the library's Word offsets: a token's byte range in the piece is the running
    // sum; byte-fallback tokens count 1 each, an unknown token the characters it stands for).
    void tokenize(std::string_view piece, std::vector<int32_t>& out,
                  std::vector<uint32_t>* lengths = nullptr) const;

    std::optional<int32_t> tokenToId(std::string_view token) const;
    const std::string* idToToken(int32_t id) const;  // nullptr for ids outside the vocabulary
    int32_t vocabSize() const { return int32_t(m_idToToken.size()); }  // one past the largest id
    size_t tokenCount() const { return m_vocab.size(); }

private:
    struct MergeTarget {
        int32_t rank;
        int32_t result;
    };
    std::optional<MergeTarget> findMerge(int32_t left, int32_t right) const;

    std::unordered_map<std::string, int32_t> m_vocab;
    std::vector<std::string> m_idToToken;
    std::vector<bool> m_present;
    std::unordered_map<uint64_t, MergeTarget> m_merges;  // (left << 32 | right)
    std::optional<int32_t> m_unk;
    bool m_fuseUnk = false;
    bool m_byteFallback = false;
    bool m_ignoreMerges = false;
    std::array<int32_t, 256> m_byteTokens{};  // <0xXX> ids, -1 where absent
};

}  // namespace ws::tokenizer
