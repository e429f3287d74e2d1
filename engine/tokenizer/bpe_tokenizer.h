// SPDX-License-Identifier: GPL-3.0-or-later
// BpeTokenizer: byte-level BPE with GPT-2's semantics. Text is cut into pieces by the GPT-2
// pre-tokeniser (pretokenize.h); each piece starts as one token per byte and the merge with the
// lowest rank among adjacent pairs is applied everywhere in the piece, left to right without
// overlap, until no adjacent pair has a merge: exactly encoder.py's bpe(). Files are GPT-2's
// vocab.json + merges.txt (byte_level.h spells bytes as printable characters).
//
// Exposed beyond tokenizer.h so tests and views can inspect merges and token bytes.
// Thread-safety: immutable after construction; every const method may run concurrently.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "engine/tokenizer/tokenizer.h"

namespace ws::tokenizer {

class BpeTokenizer final : public Tokenizer {
public:
    struct Token {
        std::string key;       // vocab.json spelling (byte-level text, or verbatim for specials)
        std::string bytes;     // what the token decodes to
        bool present = false;  // ids need not be dense; absent ids decode to U+FFFD
    };
    struct Merge {
        int32_t left = 0;
        int32_t right = 0;
        int32_t result = 0;  // id of the token spelled key(left) + key(right)
    };

    // Checks what the files cannot guarantee: all 256 byte tokens present, merge parts and
    // results existing, no merge listed twice. origin names the source in error messages.
    static Result<std::unique_ptr<BpeTokenizer>> create(std::vector<Token> tokens,
                                                        std::vector<Merge> merges,
                                                        std::string_view origin);
    // Reads GPT-2 vocab.json + merges.txt; errors name the file and the line or key.
    static Result<std::unique_ptr<BpeTokenizer>> load(const std::filesystem::path& vocabJson,
                                                      const std::filesystem::path& mergesTxt);

    std::vector<int32_t> encode(std::string_view text) const override;
    std::string decode(std::span<const int32_t> tokens) const override;
    std::string tokenName(int32_t id) const override {
        return id >= 0 && size_t(id) < m_tokens.size() ? m_tokens[size_t(id)].key : std::string();
    }
    int vocabSize() const override { return int(m_tokens.size()); }
    std::string kind() const override { return "bpe"; }
    std::string identity() const override { return m_identity; }
    Status save(const std::filesystem::path& dir) const override;

    const std::vector<Merge>& merges() const { return m_merges; }  // in rank order
    const Token& token(int32_t id) const { return m_tokens[size_t(id)]; }
    int32_t byteToken(uint8_t b) const { return m_byteToken[b]; }

private:
    struct RankedMerge {
        int32_t rank;
        int32_t result;
    };
    struct Workspace;

    BpeTokenizer(std::vector<Token> tokens, std::vector<Merge> merges,
                 std::array<int32_t, 256> byteToken,
                 std::unordered_map<uint64_t, RankedMerge> ranks);
    void encodePiece(std::string_view piece, Workspace& ws, std::vector<int32_t>& out) const;
    const RankedMerge* findMerge(int32_t left, int32_t right) const;

    std::vector<Token> m_tokens;                        // indexed by id
    std::vector<Merge> m_merges;                        // rank order
    std::array<int32_t, 256> m_byteToken{};             // byte value -> id
    std::unordered_map<uint64_t, RankedMerge> m_ranks;  // (left << 32 | right) -> merge
    std::string m_identity;
};

}  // namespace ws::tokenizer
