// SPDX-License-Identifier: GPL-3.0-or-later
// BpeTokenizer: GPT-2 file loading/saving and the merge loop. The merge loop keeps the piece as
// a linked list with a min-heap of candidate pairs keyed by (rank, position); all candidates of
// the lowest rank are applied as one left-to-right pass before pairs they create are considered,
// which is what encoder.py's "merge every occurrence of the best bigram" does, in O(n log n)
// instead of O(n^2) for long pieces (runs of punctuation, binary files).
#include "engine/tokenizer/bpe_tokenizer.h"

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "engine/core/hash.h"
#include "engine/fileio/atomic_file.h"
#include "engine/tokenizer/byte_level.h"
#include "engine/tokenizer/pretokenize.h"
#include "engine/tokenizer/special_tokens.h"

namespace ws::tokenizer {
namespace fs = std::filesystem;

namespace {

// Bump when pre-tokenisation or merge semantics change: cached token files keyed by identity()
// must then be rebuilt.
constexpr std::string_view kAlgorithmVersion = "wafer-bpe/1 gpt2-pretokenizer/1";
constexpr int64_t kMaxVocabulary = int64_t(1) << 24;  // guards against absurd ids in vocab.json
constexpr size_t kMaxCachedPiece = 64;                // longer pieces are rare; not worth caching
constexpr std::string_view kReplacementCharacter = "\xEF\xBF\xBD";  // U+FFFD

uint64_t pairKey(int32_t left, int32_t right) {
    return (uint64_t(uint32_t(left)) << 32) | uint32_t(right);
}

// A token or line quoted for an error message, shortened when long.
std::string shown(std::string_view s) {
    constexpr size_t kShown = 60;
    return s.size() > kShown ? fmt::format("'{}...'", s.substr(0, kShown)) : fmt::format("'{}'", s);
}

std::string computeIdentity(const std::vector<BpeTokenizer::Token>& tokens,
                            const std::vector<BpeTokenizer::Merge>& merges) {
    Sha256 h;
    h.update(kAlgorithmVersion);
    for (size_t id = 0; id < tokens.size(); ++id) {
        if (!tokens[id].present) continue;
        h.update(fmt::format("\n{} {} ", id, tokens[id].key.size()));
        h.update(tokens[id].key);
    }
    h.update("\nmerges");
    for (const auto& m : merges) {
        h.update(fmt::format("\n{} {}", m.left, m.right));
    }
    return h.hexDigest();
}

}  // namespace

struct BpeTokenizer::Workspace {
    struct Symbol {
        int32_t id;  // -1 once merged into its left neighbour
        int32_t prev;
        int32_t next;  // -1 at the end of the piece
    };
    struct Candidate {
        int32_t rank;
        int32_t pos;  // index of the left symbol
        int32_t left;
        int32_t right;
        int32_t result;
    };
    // Min-heap order on (rank, pos): lowest rank first, then left to right.
    static bool later(const Candidate& a, const Candidate& b) {
        return a.rank != b.rank ? a.rank > b.rank : a.pos > b.pos;
    }
    std::vector<Symbol> symbols;
    std::vector<Candidate> heap;
    std::vector<Candidate> batch;
    std::vector<Candidate> created;
};

BpeTokenizer::BpeTokenizer(std::vector<Token> tokens, std::vector<Merge> merges,
                           std::array<int32_t, 256> byteToken,
                           std::unordered_map<uint64_t, RankedMerge> ranks)
    : m_tokens(std::move(tokens)),
      m_merges(std::move(merges)),
      m_byteToken(byteToken),
      m_ranks(std::move(ranks)) {
    m_identity = computeIdentity(m_tokens, m_merges);
}

Result<std::unique_ptr<BpeTokenizer>> BpeTokenizer::create(std::vector<Token> tokens,
                                                           std::vector<Merge> merges,
                                                           std::string_view origin) {
    const std::string where(origin);
    std::unordered_map<std::string_view, int32_t> keyToId;
    for (size_t id = 0; id < tokens.size(); ++id) {
        if (tokens[id].present) keyToId.emplace(tokens[id].key, int32_t(id));
    }
    std::array<int32_t, 256> byteToken{};
    for (int b = 0; b < 256; ++b) {
        const std::string key = bytesToByteLevel(std::string(1, char(b)));
        const auto it = keyToId.find(key);
        if (it == keyToId.end()) {
            return Error{fmt::format(
                "{}: the vocabulary has no token for byte 0x{:02X} (spelled {}); a byte-level "
                "BPE vocabulary needs all 256 byte tokens so that any text can be encoded",
                where, b, shown(key))};
        }
        byteToken[size_t(b)] = it->second;
    }
    const auto valid = [&](int32_t id) {
        return id >= 0 && size_t(id) < tokens.size() && tokens[size_t(id)].present;
    };
    std::unordered_map<uint64_t, RankedMerge> ranks;
    ranks.reserve(merges.size());
    for (size_t rank = 0; rank < merges.size(); ++rank) {
        const Merge& m = merges[rank];
        const std::string at = fmt::format("{}: merge {}", where, rank + 1);
        if (!valid(m.left) || !valid(m.right) || !valid(m.result)) {
            return Error{fmt::format("{} refers to a token id missing from the vocabulary", at)};
        }
        const Token& result = tokens[size_t(m.result)];
        if (result.key != tokens[size_t(m.left)].key + tokens[size_t(m.right)].key) {
            return Error{fmt::format("{}: result {} is not {} + {}", at, shown(result.key),
                                     shown(tokens[size_t(m.left)].key),
                                     shown(tokens[size_t(m.right)].key))};
        }
        if (!ranks.emplace(pairKey(m.left, m.right), RankedMerge{int32_t(rank), m.result}).second) {
            return Error{
                fmt::format("{} ({} {}) repeats an earlier merge; each pair may be "
                            "listed once",
                            at, tokens[size_t(m.left)].key, tokens[size_t(m.right)].key)};
        }
    }
    return std::unique_ptr<BpeTokenizer>(
        new BpeTokenizer(std::move(tokens), std::move(merges), byteToken, std::move(ranks)));
}

Result<std::unique_ptr<BpeTokenizer>> BpeTokenizer::load(const fs::path& vocabJson,
                                                         const fs::path& mergesTxt) {
    auto vocabText = fileio::readWholeFile(vocabJson);
    if (!vocabText.ok()) return Error{fmt::format("vocab file: {}", vocabText.error().message)};
    auto mergesText = fileio::readWholeFile(mergesTxt);
    if (!mergesText.ok()) {
        return Error{fmt::format("merges file: {}", mergesText.error().message)};
    }
    const std::string vocabName = fmt::format("'{}'", vocabJson.string());
    const std::string mergesName = fmt::format("'{}'", mergesTxt.string());

    nlohmann::json vocab;
    try {
        vocab = nlohmann::json::parse(*vocabText);
    } catch (const nlohmann::json::exception& e) {
        return Error{fmt::format(
            "{} is not valid JSON ({}); expected GPT-2's vocab.json, an object mapping tokens "
            "to ids",
            vocabName, e.what())};
    }
    if (!vocab.is_object() || vocab.empty()) {
        return Error{fmt::format(
            "{} must be a non-empty JSON object mapping token strings to integer ids (GPT-2's "
            "vocab.json / encoder.json)",
            vocabName)};
    }
    int64_t maxId = -1;
    for (const auto& [key, value] : vocab.items()) {
        if (!value.is_number_integer() || value.get<int64_t>() < 0 ||
            value.get<int64_t>() >= kMaxVocabulary) {
            return Error{fmt::format("{}: token {} has id {}; ids must be integers from 0 to {}",
                                     vocabName, shown(key), value.dump(), kMaxVocabulary - 1)};
        }
        maxId = std::max(maxId, value.get<int64_t>());
    }
    std::vector<Token> tokens(size_t(maxId + 1));
    std::unordered_map<std::string, int32_t> keyToId;
    keyToId.reserve(vocab.size());
    for (const auto& [key, value] : vocab.items()) {
        const auto id = value.get<int32_t>();
        Token& t = tokens[size_t(id)];
        if (t.present) {
            return Error{fmt::format("{}: id {} is used by both {} and {}; ids must be unique",
                                     vocabName, id, shown(t.key), shown(key))};
        }
        t.key = key;
        t.bytes = byteLevelToBytes(key).value_or(key);  // verbatim: added/special tokens
        t.present = true;
        keyToId.emplace(key, id);
    }

    std::vector<Merge> merges;
    std::string_view text = *mergesText;
    for (size_t lineNo = 1; !text.empty(); ++lineNo) {
        const size_t eol = text.find('\n');
        std::string_view line = text.substr(0, eol);
        text.remove_prefix(eol == std::string_view::npos ? text.size() : eol + 1);
        if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
        if (line.empty() || (lineNo == 1 && line.starts_with("#version"))) continue;
        const std::string at = fmt::format("{} line {}", mergesName, lineNo);
        const size_t space = line.find(' ');
        if (space == 0 || space == std::string_view::npos || space + 1 == line.size() ||
            line.find(' ', space + 1) != std::string_view::npos) {
            return Error{fmt::format("{}: expected two tokens separated by one space, got {}", at,
                                     shown(line))};
        }
        const std::string left(line.substr(0, space));
        const std::string right(line.substr(space + 1));
        const auto l = keyToId.find(left);
        const auto r = keyToId.find(right);
        const auto m = keyToId.find(left + right);
        if (l == keyToId.end() || r == keyToId.end() || m == keyToId.end()) {
            const std::string missing = l == keyToId.end()   ? left
                                        : r == keyToId.end() ? right
                                                             : left + right;
            return Error{
                fmt::format("{}: {} is not in {}; the two files must come from the same tokenizer",
                            at, shown(missing), vocabName)};
        }
        merges.push_back({l->second, r->second, m->second});
    }
    return create(std::move(tokens), std::move(merges), mergesName);
}

const BpeTokenizer::RankedMerge* BpeTokenizer::findMerge(int32_t left, int32_t right) const {
    const auto it = m_ranks.find(pairKey(left, right));
    return it == m_ranks.end() ? nullptr : &it->second;
}

void BpeTokenizer::encodePiece(std::string_view piece, Workspace& ws,
                               std::vector<int32_t>& out) const {
    const auto n = int32_t(piece.size());
    if (n == 1) {
        out.push_back(m_byteToken[uint8_t(piece[0])]);
        return;
    }
    auto& sym = ws.symbols;
    sym.resize(size_t(n));
    for (int32_t i = 0; i < n; ++i) {
        sym[size_t(i)] = {m_byteToken[uint8_t(piece[size_t(i)])], i - 1, i + 1 < n ? i + 1 : -1};
    }
    const auto consider = [&](int32_t pos, std::vector<Workspace::Candidate>& into) {
        const int32_t next = sym[size_t(pos)].next;
        if (next < 0) return;
        const int32_t left = sym[size_t(pos)].id;
        const int32_t right = sym[size_t(next)].id;
        if (const RankedMerge* m = findMerge(left, right)) {
            into.push_back({m->rank, pos, left, right, m->result});
        }
    };
    ws.heap.clear();
    for (int32_t i = 0; i + 1 < n; ++i) consider(i, ws.heap);
    std::make_heap(ws.heap.begin(), ws.heap.end(), Workspace::later);

    while (!ws.heap.empty()) {
        const int32_t rank = ws.heap.front().rank;
        ws.batch.clear();
        while (!ws.heap.empty() && ws.heap.front().rank == rank) {
            std::pop_heap(ws.heap.begin(), ws.heap.end(), Workspace::later);
            ws.batch.push_back(ws.heap.back());
            ws.heap.pop_back();
        }
        ws.created.clear();
        for (const auto& c : ws.batch) {  // ascending positions: a left-to-right pass
            auto& s = sym[size_t(c.pos)];
            if (s.id != c.left || s.next < 0 || sym[size_t(s.next)].id != c.right) continue;
            auto& absorbed = sym[size_t(s.next)];
            s.id = c.result;
            s.next = absorbed.next;
            if (absorbed.next >= 0) sym[size_t(absorbed.next)].prev = c.pos;
            absorbed.id = -1;
            if (s.prev >= 0) consider(s.prev, ws.created);
            consider(c.pos, ws.created);
        }
        for (const auto& c : ws.created) {
            ws.heap.push_back(c);
            std::push_heap(ws.heap.begin(), ws.heap.end(), Workspace::later);
        }
    }
    for (int32_t i = 0; i >= 0; i = sym[size_t(i)].next) out.push_back(sym[size_t(i)].id);
}

std::vector<int32_t> BpeTokenizer::encode(std::string_view text) const {
    std::vector<int32_t> out;
    out.reserve(text.size() / 3 + 16);
    Workspace ws;
    // Natural text repeats its words; remember where each short piece's tokens first went.
    std::unordered_map<std::string_view, std::pair<size_t, size_t>> seen;
    forEachPretoken(text, [&](std::string_view piece) {
        const bool cacheable = piece.size() > 1 && piece.size() <= kMaxCachedPiece;
        if (cacheable) {
            if (const auto it = seen.find(piece); it != seen.end()) {
                const auto [first, count] = it->second;
                for (size_t k = 0; k < count; ++k) out.push_back(out[first + k]);
                return;
            }
        }
        const size_t first = out.size();
        encodePiece(piece, ws, out);
        if (cacheable) seen.emplace(piece, std::pair{first, out.size() - first});
    });
    return out;
}

std::string BpeTokenizer::decode(std::span<const int32_t> tokens) const {
    std::string out;
    out.reserve(tokens.size() * 4);
    for (const int32_t id : tokens) {
        if (id >= 0 && size_t(id) < m_tokens.size() && m_tokens[size_t(id)].present) {
            out += m_tokens[size_t(id)].bytes;
        } else {
            out += kReplacementCharacter;
        }
    }
    return out;
}

Status BpeTokenizer::save(const fs::path& dir) const {
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec) {
        return Error{fmt::format("cannot create folder '{}': {}", dir.string(), ec.message())};
    }
    nlohmann::ordered_json vocab = nlohmann::ordered_json::object();
    for (size_t id = 0; id < m_tokens.size(); ++id) {
        if (m_tokens[id].present) vocab[m_tokens[id].key] = id;
    }
    std::string vocabText;
    try {
        vocabText = vocab.dump();
    } catch (const nlohmann::json::exception& e) {
        return Error{fmt::format("cannot write vocab.json: {}", e.what())};
    }
    std::string mergesText = "#version: 0.2\n";
    for (const Merge& m : m_merges) {
        mergesText += m_tokens[size_t(m.left)].key;
        mergesText += ' ';
        mergesText += m_tokens[size_t(m.right)].key;
        mergesText += '\n';
    }
    if (Status s = fileio::writeFileAtomically(dir / "vocab.json", vocabText); !s.ok()) return s;
    return fileio::writeFileAtomically(dir / "merges.txt", mergesText);
}

Result<std::unique_ptr<Tokenizer>> loadGpt2Bpe(const fs::path& vocabJson,
                                               const fs::path& mergesTxt) {
    auto loaded = BpeTokenizer::load(vocabJson, mergesTxt);
    if (!loaded.ok()) return loaded.error();
    // Special tokens added for a chat format live beside vocab.json (special_tokens.h).
    return loadAddedTokens(std::unique_ptr<Tokenizer>(std::move(loaded).value()),
                           vocabJson.parent_path());
}

}  // namespace ws::tokenizer
