// SPDX-License-Identifier: GPL-3.0-or-later
// trainBpe: byte-level BPE training. Words are the GPT-2 pre-tokeniser's pieces, counted once;
// each step merges the most frequent adjacent pair across all words. Pair counts are updated
// incrementally, only in the words that contain the merged pair (an index pair -> words), and
// the best pair comes from a max-heap whose stale entries are corrected lazily when popped, so a
// 4096-token vocabulary on a few MB of text takes seconds.
#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <queue>
#include <unordered_map>

#include "engine/tokenizer/bpe_tokenizer.h"
#include "engine/tokenizer/byte_level.h"
#include "engine/tokenizer/pretokenize.h"

namespace ws::tokenizer {
namespace {

uint64_t pairKey(int32_t left, int32_t right) {
    return (uint64_t(uint32_t(left)) << 32) | uint32_t(right);
}
int32_t leftOf(uint64_t key) {
    return int32_t(key >> 32);
}
int32_t rightOf(uint64_t key) {
    return int32_t(key & 0xFFFFFFFFu);
}

struct Word {
    std::vector<int32_t> symbols;
    int64_t count = 0;
};

// Heap entry; count may be stale (checked against the live count when popped).
struct Entry {
    int64_t count;
    uint64_t pair;
};
// Priority: higher count, then smaller left id, then smaller right id.
struct LowerPriority {
    bool operator()(const Entry& a, const Entry& b) const {
        if (a.count != b.count) return a.count < b.count;
        return a.pair > b.pair;  // the key orders by (left, right)
    }
};

class Trainer {
public:
    explicit Trainer(std::string_view corpus) {
        std::unordered_map<std::string_view, int64_t> counts;
        forEachPretoken(corpus, [&](std::string_view piece) { ++counts[piece]; });
        std::vector<std::pair<std::string_view, int64_t>> sorted(counts.begin(), counts.end());
        std::sort(sorted.begin(), sorted.end());  // word order must not depend on hashing
        m_words.reserve(sorted.size());
        for (const auto& [piece, count] : sorted) {
            Word w;
            w.count = count;
            for (char c : piece) w.symbols.push_back(uint8_t(c));
            m_words.push_back(std::move(w));
        }
        for (int b = 0; b < 256; ++b) {
            m_tokenBytes.emplace_back(1, char(b));
            m_idOfBytes.emplace(m_tokenBytes.back(), b);
        }
        for (size_t w = 0; w < m_words.size(); ++w) {
            const auto& s = m_words[w].symbols;
            for (size_t i = 0; i + 1 < s.size(); ++i) {
                const uint64_t key = pairKey(s[i], s[i + 1]);
                m_pairCount[key] += m_words[w].count;
                noteWordHasPair(key, int32_t(w));
            }
        }
        for (const auto& [key, count] : m_pairCount) m_heap.push({count, key});
    }

    // Performs one merge; false when no pair occurs at least twice.
    bool mergeOnce() {
        const auto best = popBest();
        if (!best || best->count < 2) return false;
        const uint64_t key = best->pair;
        const int32_t a = leftOf(key);
        const int32_t b = rightOf(key);
        std::string bytes = m_tokenBytes[size_t(a)] + m_tokenBytes[size_t(b)];
        // The same string can arise from different pairs; it keeps one id, as in vocab.json.
        auto [it, added] = m_idOfBytes.emplace(bytes, int32_t(m_tokenBytes.size()));
        if (added) m_tokenBytes.push_back(std::move(bytes));
        const int32_t merged = it->second;
        m_merges.push_back({a, b, merged});

        std::vector<int32_t> words = std::move(m_wordsWithPair[key]);
        m_wordsWithPair.erase(key);
        std::sort(words.begin(), words.end());
        words.erase(std::unique(words.begin(), words.end()), words.end());
        m_delta.clear();
        for (const int32_t w : words) applyMerge(w, a, b, merged);
        m_pairCount.erase(key);
        for (const auto& [pair, change] : m_delta) {
            if (pair == key || change == 0) continue;
            int64_t& count = m_pairCount[pair];
            count += change;
            if (change > 0) m_heap.push({count, pair});
            if (count <= 0) m_pairCount.erase(pair);
        }
        return true;
    }

    int vocabSize() const { return int(m_tokenBytes.size()); }
    size_t mergeCount() const { return m_merges.size(); }

    Result<std::unique_ptr<Tokenizer>> finish() {
        std::vector<BpeTokenizer::Token> tokens;
        tokens.reserve(m_tokenBytes.size());
        for (auto& bytes : m_tokenBytes) {
            tokens.push_back({bytesToByteLevel(bytes), std::move(bytes), true});
        }
        auto bpe = BpeTokenizer::create(std::move(tokens), std::move(m_merges), "trained BPE");
        if (!bpe.ok()) return bpe.error();
        return std::unique_ptr<Tokenizer>(std::move(bpe).value());
    }

private:
    std::optional<Entry> popBest() {
        while (!m_heap.empty()) {
            const Entry top = m_heap.top();
            m_heap.pop();
            const auto it = m_pairCount.find(top.pair);
            const int64_t live = it == m_pairCount.end() ? 0 : it->second;
            if (live == top.count) return top;
            if (live > 0) m_heap.push({live, top.pair});
        }
        return std::nullopt;
    }

    void noteWordHasPair(uint64_t key, int32_t word) {
        auto& list = m_wordsWithPair[key];
        if (list.empty() || list.back() != word) list.push_back(word);
    }

    void change(int32_t left, int32_t right, int64_t by, int32_t word) {
        const uint64_t key = pairKey(left, right);
        m_delta[key] += by;
        if (by > 0) noteWordHasPair(key, word);
    }

    // Rewrites word w with every non-overlapping (a, b) replaced by merged, left to right,
    // recording how the counts of the neighbouring pairs change.
    void applyMerge(int32_t w, int32_t a, int32_t b, int32_t merged) {
        Word& word = m_words[size_t(w)];
        const auto& s = word.symbols;
        const int64_t c = word.count;
        m_scratch.clear();
        for (size_t i = 0; i < s.size();) {
            if (i + 1 < s.size() && s[i] == a && s[i + 1] == b) {
                if (!m_scratch.empty()) {
                    change(m_scratch.back(), a, -c, w);
                    change(m_scratch.back(), merged, c, w);
                }
                if (i + 2 < s.size()) {
                    change(b, s[i + 2], -c, w);
                    change(merged, s[i + 2], c, w);
                }
                m_scratch.push_back(merged);
                i += 2;
            } else {
                m_scratch.push_back(s[i]);
                ++i;
            }
        }
        word.symbols.swap(m_scratch);
    }

    std::vector<Word> m_words;
    std::vector<std::string> m_tokenBytes;  // id -> bytes
    std::unordered_map<std::string, int32_t> m_idOfBytes;
    std::vector<BpeTokenizer::Merge> m_merges;
    std::unordered_map<uint64_t, int64_t> m_pairCount;
    std::unordered_map<uint64_t, std::vector<int32_t>> m_wordsWithPair;  // may hold stale words
    std::priority_queue<Entry, std::vector<Entry>, LowerPriority> m_heap;
    std::unordered_map<uint64_t, int64_t> m_delta;
    std::vector<int32_t> m_scratch;
};

}  // namespace

Result<std::unique_ptr<Tokenizer>> trainBpe(std::string_view corpus, int vocabSize,
                                            ProgressFn progress) {
    if (vocabSize < 256) {
        return Error{fmt::format(
            "BPE vocabulary size {} is below the 256 byte tokens it starts from: choose at "
            "least 257",
            vocabSize)};
    }
    if (corpus.empty()) {
        return Error{"cannot train a BPE tokenizer on an empty corpus: add text to data_dir"};
    }
    constexpr std::string_view kWhat = "training BPE tokenizer";
    if (progress) progress(0.0, kWhat);
    Trainer trainer(corpus);
    const int wanted = vocabSize - 256;
    while (trainer.vocabSize() < vocabSize && trainer.mergeOnce()) {
        if (progress && trainer.mergeCount() % 64 == 0) {
            progress(double(trainer.vocabSize() - 256) / double(wanted), kWhat);
        }
    }
    if (progress) progress(1.0, kWhat);
    return trainer.finish();
}

}  // namespace ws::tokenizer
