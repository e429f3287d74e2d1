// SPDX-License-Identifier: GPL-3.0-or-later
// Special tokens on byte and bpe tokenizers (a wrapper that cuts them out of the text before the
// wrapped tokenizer sees it, and its added_tokens.json), and the entry point that also covers hf
// (which rewrites its own tokenizer.json, HfTokenizer::withSpecialTokens).
#include "engine/tokenizer/special_tokens.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <unordered_map>

#include "engine/core/hash.h"
#include "engine/fileio/atomic_file.h"
#include "engine/tokenizer/bpe_tokenizer.h"
#include "engine/tokenizer/byte_level.h"
#include "engine/tokenizer/hf_tokenizer.h"

namespace ws::tokenizer {
namespace fs = std::filesystem;

namespace {

constexpr int64_t kMaxTokenId = int64_t(1) << 25;  // room above vocab.json's 2^24
constexpr std::string_view kReplacementCharacter = "\xEF\xBF\xBD";

struct SpecialToken {
    std::string content;
    int32_t id = 0;
};

// A verbatim vocabulary entry spelled content (GPT-2's <|endoftext|>): that id, else nullopt.
std::optional<int32_t> verbatimVocabularyId(const Tokenizer& base, std::string_view content) {
    const auto* bpe = dynamic_cast<const BpeTokenizer*>(&base);
    if (bpe == nullptr) return std::nullopt;
    for (int32_t id = 0; id < bpe->vocabSize(); ++id) {
        const BpeTokenizer::Token& t = bpe->token(id);
        if (t.present && t.key == content && t.bytes == content) return id;
    }
    return std::nullopt;
}

class SpecialTokenTokenizer final : public Tokenizer {
public:
    SpecialTokenTokenizer(std::shared_ptr<const Tokenizer> base, std::vector<SpecialToken> tokens)
        : m_base(std::move(base)), m_tokens(std::move(tokens)) {
        // Id order, so that the identity does not depend on the order tokens were added in.
        std::sort(m_tokens.begin(), m_tokens.end(),
                  [](const auto& a, const auto& b) { return a.id < b.id; });
        m_vocabSize = m_base->vocabSize();
        Sha256 h;
        h.update("wafer-special-tokens/1\n");
        h.update(m_base->identity());
        for (size_t i = 0; i < m_tokens.size(); ++i) {
            const SpecialToken& t = m_tokens[i];
            m_byId.emplace(t.id, i);
            m_byFirstByte[uint8_t(t.content[0])].push_back(i);
            m_vocabSize = std::max(m_vocabSize, t.id + 1);
            h.update(fmt::format("\n{} {} ", t.id, t.content.size()));
            h.update(t.content);
        }
        for (auto& [byte, list] : m_byFirstByte) {  // longest first: leftmost-longest matching
            std::stable_sort(list.begin(), list.end(), [&](size_t a, size_t b) {
                return m_tokens[a].content.size() > m_tokens[b].content.size();
            });
        }
        m_identity = h.hexDigest();
    }

    const Tokenizer& base() const { return *m_base; }
    const std::shared_ptr<const Tokenizer>& sharedBase() const { return m_base; }
    const std::vector<SpecialToken>& tokens() const { return m_tokens; }

    std::vector<int32_t> encode(std::string_view text) const override {
        std::vector<int32_t> out;
        forEachStretch(text, [&](std::string_view stretch, int32_t special) {
            if (special >= 0) {
                out.push_back(special);
                return;
            }
            const auto ids = m_base->encode(stretch);
            out.insert(out.end(), ids.begin(), ids.end());
        });
        return out;
    }

    // byte and bpe, the only tokenizers wrapped here, add no BOS/EOS: the flag changes nothing.
    Result<std::vector<int32_t>> encodeChecked(std::string_view text, bool) const override {
        std::vector<int32_t> out;
        std::optional<Error> failed;
        size_t at = 0;
        forEachStretch(text, [&](std::string_view stretch, int32_t special) {
            const size_t begin = at;
            at += stretch.size();
            if (failed) return;
            if (special >= 0) {
                out.push_back(special);
                return;
            }
            auto ids = m_base->encodeChecked(stretch, false);
            if (!ids.ok()) {
                failed = Error{fmt::format("at byte offset {}: {}", begin, ids.error().message)};
                return;
            }
            out.insert(out.end(), ids->begin(), ids->end());
        });
        if (failed) return *failed;
        return out;
    }

    std::string decode(std::span<const int32_t> tokens) const override {
        std::string out;
        size_t runStart = 0;
        for (size_t i = 0; i <= tokens.size(); ++i) {
            const auto it = i < tokens.size() ? m_byId.find(tokens[i]) : m_byId.end();
            if (i < tokens.size() && it == m_byId.end()) continue;
            if (i > runStart) out += m_base->decode(tokens.subspan(runStart, i - runStart));
            if (i < tokens.size()) out += m_tokens[it->second].content;
            runStart = i + 1;
        }
        return out;
    }

    int32_t tokenByteCount(int32_t id) const override {
        if (const auto it = m_byId.find(id); it != m_byId.end()) {
            return int32_t(m_tokens[it->second].content.size());
        }
        if (id >= m_base->vocabSize()) return int32_t(kReplacementCharacter.size());
        return m_base->tokenByteCount(id);
    }

    std::string tokenName(int32_t id) const override {
        if (const auto it = m_byId.find(id); it != m_byId.end()) {
            return m_tokens[it->second].content;
        }
        return m_base->tokenName(id);
    }

    std::optional<int32_t> specialTokenId(std::string_view content) const override {
        for (const SpecialToken& t : m_tokens) {
            if (t.content == content) return t.id;
        }
        return std::nullopt;
    }

    int vocabSize() const override { return m_vocabSize; }
    std::string kind() const override { return m_base->kind(); }
    std::string identity() const override { return m_identity; }

    // The base's files, then added_tokens.json ({content: id} in id order).
    Status save(const fs::path& dir) const override {
        if (Status s = m_base->save(dir); !s.ok()) return s;
        nlohmann::ordered_json added = nlohmann::ordered_json::object();
        for (const SpecialToken& t : m_tokens) added[t.content] = t.id;
        return fileio::writeFileAtomically(dir / kAddedTokensFile, added.dump(2) + "\n");
    }

private:
    // fn(stretch, id): id >= 0 for a special token, -1 for the text between them.
    template <class Fn>
    void forEachStretch(std::string_view text, Fn&& fn) const {
        size_t from = 0;
        for (size_t pos = 0; pos < text.size();) {
            const auto it = m_byFirstByte.find(uint8_t(text[pos]));
            const SpecialToken* hit = nullptr;
            if (it != m_byFirstByte.end()) {
                for (const size_t i : it->second) {
                    if (text.substr(pos).starts_with(m_tokens[i].content)) {
                        hit = &m_tokens[i];
                        break;
                    }
                }
            }
            if (hit == nullptr) {
                ++pos;
                continue;
            }
            if (pos > from) fn(text.substr(from, pos - from), -1);
            fn(text.substr(pos, hit->content.size()), hit->id);
            from = pos = pos + hit->content.size();
        }
        if (from < text.size()) fn(text.substr(from), -1);
    }

    std::shared_ptr<const Tokenizer> m_base;
    std::vector<SpecialToken> m_tokens;
    std::unordered_map<int32_t, size_t> m_byId;
    std::map<uint8_t, std::vector<size_t>> m_byFirstByte;
    int32_t m_vocabSize = 0;
    std::string m_identity;
};

Status checkContent(const std::string& content) {
    if (content.empty()) return Error{"a special token cannot be empty"};
    for (size_t pos = 0; pos < content.size();) {
        const Utf8Unit u = decodeUtf8(std::string_view(content).substr(pos));
        if (!u.valid) {
            return Error{fmt::format(
                "special token '{}' is not valid UTF-8 at byte {}; give its text as UTF-8", content,
                pos)};
        }
        pos += size_t(u.length);
    }
    return Status::success();
}

}  // namespace

Result<WithSpecialTokens> withSpecialTokens(std::shared_ptr<const Tokenizer> tokenizer,
                                            std::span<const std::string> contents) {
    for (const std::string& c : contents) {
        if (Status s = checkContent(c); !s.ok()) return s.error();
    }
    WithSpecialTokens out;
    if (const auto* hf = dynamic_cast<const HfTokenizer*>(tokenizer.get())) {
        auto added = hf->withSpecialTokens(contents, out.ids);
        if (!added.ok()) return added.error();
        out.tokenizer = *added ? std::shared_ptr<const Tokenizer>(std::move(*added)) : tokenizer;
        return out;
    }
    // Wrapping a wrapper: one wrapper over the original base, with the tokens of both.
    std::shared_ptr<const Tokenizer> base = tokenizer;
    std::vector<SpecialToken> tokens;
    if (const auto* wrapped = dynamic_cast<const SpecialTokenTokenizer*>(tokenizer.get())) {
        base = wrapped->sharedBase();
        tokens = wrapped->tokens();
    }
    int32_t next = tokenizer->vocabSize();
    bool changed = false;
    for (const std::string& content : contents) {
        const auto existing = std::find_if(tokens.begin(), tokens.end(),
                                           [&](const auto& t) { return t.content == content; });
        if (existing != tokens.end()) {
            out.ids.push_back(existing->id);
            continue;
        }
        const int32_t id = verbatimVocabularyId(*base, content).value_or(next);
        if (id == next) ++next;
        tokens.push_back({content, id});
        out.ids.push_back(id);
        changed = true;
    }
    out.tokenizer =
        changed ? std::make_shared<SpecialTokenTokenizer>(std::move(base), std::move(tokens))
                : tokenizer;
    return out;
}

Result<std::unique_ptr<Tokenizer>> loadAddedTokens(std::unique_ptr<Tokenizer> base,
                                                   const fs::path& folder) {
    const fs::path file = folder / kAddedTokensFile;
    std::error_code ec;
    if (!fs::exists(file, ec)) return base;
    auto text = fileio::readWholeFile(file);
    if (!text.ok()) return text.error();
    const std::string name = file.string();
    const auto json = nlohmann::json::parse(*text, nullptr, false);
    if (!json.is_object()) {
        return Error{fmt::format(
            "{}: expected a JSON object mapping each added special token to its id, e.g. "
            "{{\"<|im_start|>\": 50257}}; fix or delete the file",
            name)};
    }
    std::vector<SpecialToken> tokens;
    std::map<int32_t, std::string> seen;
    for (const auto& [content, value] : json.items()) {
        if (Status s = checkContent(content); !s.ok()) {
            return Error{fmt::format("{}: {}", name, s.error().message)};
        }
        if (!value.is_number_integer() || value.get<int64_t>() < 0 ||
            value.get<int64_t>() >= kMaxTokenId) {
            return Error{fmt::format("{}: \"{}\" has id {}; ids are integers from 0 to {}", name,
                                     content, value.dump(), kMaxTokenId - 1)};
        }
        const auto id = value.get<int32_t>();
        if (!seen.emplace(id, content).second) {
            return Error{fmt::format("{}: id {} is given to both \"{}\" and \"{}\"", name, id,
                                     seen[id], content)};
        }
        if (id < base->vocabSize() && verbatimVocabularyId(*base, content) != id) {
            return Error{fmt::format(
                "{}: \"{}\" has id {}, which the tokenizer beside it already uses for another "
                "token; added tokens take ids from {} upwards (or a vocabulary entry spelled the "
                "same); the file does not belong to this tokenizer",
                name, content, id, base->vocabSize())};
        }
        tokens.push_back({content, id});
    }
    if (tokens.empty()) return base;
    return std::unique_ptr<Tokenizer>(std::make_unique<SpecialTokenTokenizer>(
        std::shared_ptr<const Tokenizer>(std::move(base)), std::move(tokens)));
}

Result<std::unique_ptr<Tokenizer>> loadByteTokenizerFolder(const fs::path& folder) {
    return loadAddedTokens(makeByteTokenizer(), folder);
}

}  // namespace ws::tokenizer
