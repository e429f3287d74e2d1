// SPDX-License-Identifier: GPL-3.0-or-later
// HfBpe: symbols in a linked list, candidate merges in a min-heap on (rank, position); a popped
// candidate whose pair has changed since it was pushed is skipped, as in the Rust Word::merge_all.
#include "engine/tokenizer/hf_bpe.h"

#include <fmt/format.h>

#include <algorithm>

#include "engine/tokenizer/byte_level.h"

namespace ws::tokenizer {

namespace {

uint64_t pairKey(int32_t left, int32_t right) {
    return (uint64_t(uint32_t(left)) << 32) | uint32_t(right);
}

}  // namespace

Result<HfBpe> HfBpe::create(const HfBpeSpec& spec, std::string_view origin) {
    HfBpe bpe;
    int32_t maxId = -1;
    for (const auto& [token, id] : spec.vocab) maxId = std::max(maxId, id);
    bpe.m_idToToken.resize(size_t(maxId + 1));
    bpe.m_present.assign(size_t(maxId + 1), false);
    bpe.m_vocab.reserve(spec.vocab.size());
    for (const auto& [token, id] : spec.vocab) {
        if (bpe.m_present[size_t(id)]) {
            return Error{fmt::format("{}: model.vocab: id {} is used by both \"{}\" and \"{}\"",
                                     origin, id, bpe.m_idToToken[size_t(id)], token)};
        }
        bpe.m_present[size_t(id)] = true;
        bpe.m_idToToken[size_t(id)] = token;
        bpe.m_vocab.emplace(token, id);
    }
    bpe.m_merges.reserve(spec.merges.size());
    for (size_t rank = 0; rank < spec.merges.size(); ++rank) {
        const auto& [a, b] = spec.merges[rank];
        const auto left = bpe.tokenToId(a);
        const auto right = bpe.tokenToId(b);
        const auto result = bpe.tokenToId(a + b);
        if (!left || !right || !result) {
            return Error{fmt::format("{}: model.merges[{}]: \"{}\" is not in model.vocab", origin,
                                     rank,
                                     !left    ? a
                                     : !right ? b
                                              : a + b)};
        }
        // Like the library's map, a pair listed twice keeps its last rank.
        bpe.m_merges[pairKey(*left, *right)] = {int32_t(rank), *result};
    }
    if (spec.unkToken) {
        bpe.m_unk = bpe.tokenToId(*spec.unkToken);
        if (!bpe.m_unk) {
            return Error{fmt::format("{}: model.unk_token: \"{}\" is not in model.vocab", origin,
                                     *spec.unkToken)};
        }
    }
    bpe.m_fuseUnk = spec.fuseUnk;
    bpe.m_byteFallback = spec.byteFallback;
    bpe.m_ignoreMerges = spec.ignoreMerges;
    for (int b = 0; b < 256; ++b) {
        const auto id = bpe.tokenToId(fmt::format("<0x{:02X}>", b));
        bpe.m_byteTokens[size_t(b)] = id ? *id : -1;
    }
    return bpe;
}

std::optional<int32_t> HfBpe::tokenToId(std::string_view token) const {
    const auto it = m_vocab.find(std::string(token));
    if (it == m_vocab.end()) return std::nullopt;
    return it->second;
}

const std::string* HfBpe::idToToken(int32_t id) const {
    if (id < 0 || size_t(id) >= m_present.size() || !m_present[size_t(id)]) return nullptr;
    return &m_idToToken[size_t(id)];
}

std::optional<HfBpe::MergeTarget> HfBpe::findMerge(int32_t left, int32_t right) const {
    const auto it = m_merges.find(pairKey(left, right));
    if (it == m_merges.end()) return std::nullopt;
    return it->second;
}

void HfBpe::tokenize(std::string_view piece, std::vector<int32_t>& out,
                     std::vector<uint32_t>* lengths) const {
    if (piece.empty()) return;
    if (m_ignoreMerges) {
        if (const auto id = tokenToId(piece)) {
            out.push_back(*id);
            if (lengths != nullptr) lengths->push_back(uint32_t(piece.size()));
            return;
        }
    }
    // Phase 1: one symbol per character (byte fallback / unknown token as the library does).
    // Each symbol's length in bytes of the piece, as the library's Word keeps it: a token's
    // offsets are the running sum of these, in symbol order.
    std::vector<int32_t> ids;
    std::vector<uint32_t> lens;
    ids.reserve(piece.size());
    lens.reserve(piece.size());
    int32_t pendingUnk = -1;  // an unknown token not yet emitted (fuse_unk grows it)
    uint32_t pendingUnkLen = 0;
    const auto add = [&](int32_t id, uint32_t len) {
        ids.push_back(id);
        lens.push_back(len);
    };
    for (size_t pos = 0; pos < piece.size();) {
        const Utf8Unit u = decodeUtf8(piece.substr(pos));
        const std::string_view ch = piece.substr(pos, size_t(u.length));
        pos += size_t(u.length);
        if (const auto id = tokenToId(ch)) {
            if (pendingUnk >= 0) add(pendingUnk, pendingUnkLen);
            pendingUnk = -1;
            add(*id, uint32_t(ch.size()));
            continue;
        }
        if (m_byteFallback && std::all_of(ch.begin(), ch.end(),
                                          [&](char c) { return m_byteTokens[uint8_t(c)] >= 0; })) {
            // The library adds byte tokens without flushing a pending unknown token first.
            for (const char c : ch) add(m_byteTokens[uint8_t(c)], 1);
            continue;
        }
        if (m_unk) {
            if (pendingUnk >= 0 && m_fuseUnk) {
                pendingUnkLen += uint32_t(ch.size());
                continue;
            }
            if (pendingUnk >= 0) add(pendingUnk, pendingUnkLen);
            pendingUnk = *m_unk;
            pendingUnkLen = uint32_t(ch.size());
        }
        // Without an unknown token the library drops the character; so does this.
    }
    if (pendingUnk >= 0) add(pendingUnk, pendingUnkLen);

    // Phase 2: merges, lowest rank first, then leftmost.
    struct Symbol {
        int32_t id;
        int32_t prev;
        int32_t next;
        uint32_t len;
        bool alive;
    };
    struct Candidate {
        int32_t rank;
        int32_t pos;
        int32_t result;
    };
    const auto later = [](const Candidate& a, const Candidate& b) {
        return a.rank != b.rank ? a.rank > b.rank : a.pos > b.pos;
    };
    const auto n = int32_t(ids.size());
    std::vector<Symbol> sym(static_cast<size_t>(n));
    for (int32_t i = 0; i < n; ++i)
        sym[size_t(i)] = {ids[size_t(i)], i - 1, i + 1 < n ? i + 1 : -1, lens[size_t(i)], true};
    std::vector<Candidate> heap;
    for (int32_t i = 0; i + 1 < n; ++i) {
        if (const auto m = findMerge(sym[size_t(i)].id, sym[size_t(i + 1)].id)) {
            heap.push_back({m->rank, i, m->result});
        }
    }
    std::make_heap(heap.begin(), heap.end(), later);
    const auto push = [&](int32_t pos) {
        const int32_t next = sym[size_t(pos)].next;
        if (next < 0) return;
        if (const auto m = findMerge(sym[size_t(pos)].id, sym[size_t(next)].id)) {
            heap.push_back({m->rank, pos, m->result});
            std::push_heap(heap.begin(), heap.end(), later);
        }
    };
    while (!heap.empty()) {
        std::pop_heap(heap.begin(), heap.end(), later);
        const Candidate top = heap.back();
        heap.pop_back();
        Symbol& s = sym[size_t(top.pos)];
        if (!s.alive || s.next < 0) continue;
        Symbol& right = sym[size_t(s.next)];
        const auto current = findMerge(s.id, right.id);
        if (!current || current->result != top.result) continue;  // an outdated candidate
        s.id = top.result;
        s.len += right.len;
        right.alive = false;
        s.next = right.next;
        if (right.next >= 0) sym[size_t(right.next)].prev = top.pos;
        if (s.prev >= 0) push(s.prev);
        push(top.pos);
    }
    for (int32_t i = 0; i >= 0 && n > 0; i = sym[size_t(i)].next) {
        out.push_back(sym[size_t(i)].id);
        if (lengths != nullptr) lengths->push_back(sym[size_t(i)].len);
    }
}

}  // namespace ws::tokenizer
