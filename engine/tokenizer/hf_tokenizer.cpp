// SPDX-License-Identifier: GPL-3.0-or-later
// HfTokenizer: the encode pipeline (added tokens -> normalizer -> pre-tokenizer -> BPE ->
// template) and the decoder chain, each phase mirroring the tokenizers library's own.
#include "engine/tokenizer/hf_tokenizer.h"

#include <fmt/format.h>
#include <unicode/bytestream.h>
#include <unicode/normalizer2.h>
#include <unicode/stringpiece.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>
#include <tuple>

#include "engine/fileio/atomic_file.h"
#include "engine/tokenizer/byte_level.h"
#include "engine/tokenizer/hf_alignment.h"

namespace ws::tokenizer {
namespace fs = std::filesystem;

namespace {

// The regex the ByteLevel pre-tokenizer uses with use_regex (GPT-2's).
constexpr std::string_view kGpt2Pattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";
constexpr std::string_view kReplacementCharacter = "\xEF\xBF\xBD";

// Unicode White_Space, Rust's char::is_whitespace (lstrip/rstrip of added tokens).
bool isWhiteSpace(char32_t c) {
    return (c >= 0x09 && c <= 0x0D) || c == 0x20 || c == 0x85 || c == 0xA0 || c == 0x1680 ||
           (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F ||
           c == 0x205F || c == 0x3000;
}

std::string replaceAll(std::string_view text, std::string_view pattern, std::string_view with) {
    std::string out;
    out.reserve(text.size());
    for (size_t pos = 0;;) {
        const size_t hit = text.find(pattern, pos);
        if (hit == std::string_view::npos) {
            out.append(text.substr(pos));
            return out;
        }
        out.append(text.substr(pos, hit - pos));
        out.append(with);
        pos = hit + pattern.size();
    }
}

std::optional<size_t> firstInvalidUtf8(std::string_view text) {
    for (size_t pos = 0; pos < text.size();) {
        const Utf8Unit u = decodeUtf8(text.substr(pos));
        if (!u.valid) return pos;
        pos += size_t(u.length);
    }
    return std::nullopt;
}

const icu::Normalizer2* normalizerFor(HfNormalizer::Kind kind) {
    UErrorCode status = U_ZERO_ERROR;
    const icu::Normalizer2* n = nullptr;
    switch (kind) {
        case HfNormalizer::Kind::Nfc:
            n = icu::Normalizer2::getNFCInstance(status);
            break;
        case HfNormalizer::Kind::Nfd:
            n = icu::Normalizer2::getNFDInstance(status);
            break;
        case HfNormalizer::Kind::Nfkc:
            n = icu::Normalizer2::getNFKCInstance(status);
            break;
        case HfNormalizer::Kind::Nfkd:
            n = icu::Normalizer2::getNFKDInstance(status);
            break;
        default:
            break;
    }
    return U_SUCCESS(status) ? n : nullptr;
}

// (begin, end, isMatch) stretches covering the text, as the library's Pattern::find_matches.
using Stretches = std::vector<std::tuple<size_t, size_t, bool>>;

Stretches withGaps(const std::vector<std::pair<size_t, size_t>>& matches, size_t size) {
    Stretches out;
    size_t prev = 0;
    for (const auto& [b, e] : matches) {
        if (b > prev) out.emplace_back(prev, b, false);
        out.emplace_back(b, e, true);
        prev = e;
    }
    if (prev < size) out.emplace_back(prev, size, false);
    return out;
}

// SplitDelimiterBehavior: which stretches become pieces (all of them non-matching afterwards).
std::vector<std::pair<size_t, size_t>> applyBehavior(Stretches s, HfSplitBehavior behavior) {
    std::vector<std::pair<size_t, size_t>> out;
    switch (behavior) {
        case HfSplitBehavior::Isolated:
            for (const auto& [b, e, m] : s) out.emplace_back(b, e);
            break;
        case HfSplitBehavior::Removed:
            for (const auto& [b, e, m] : s) {
                if (!m) out.emplace_back(b, e);
            }
            break;
        case HfSplitBehavior::MergedWithPrevious: {
            bool previousMatch = false;
            for (const auto& [b, e, m] : s) {
                if (m && !previousMatch && !out.empty()) {
                    out.back().second = e;
                } else {
                    out.emplace_back(b, e);
                }
                previousMatch = m;
            }
            break;
        }
        case HfSplitBehavior::MergedWithNext: {
            bool previousMatch = false;
            for (auto it = s.rbegin(); it != s.rend(); ++it) {
                const auto& [b, e, m] = *it;
                if (m && !previousMatch && !out.empty()) {
                    out.back().first = b;
                } else {
                    out.emplace_back(b, e);
                }
                previousMatch = m;
            }
            std::reverse(out.begin(), out.end());
            break;
        }
    }
    return out;
}

}  // namespace

// Added tokens, matched leftmost-longest as the library's Aho-Corasick automaton does.
struct HfTokenizer::Matcher {
    struct Entry {
        std::string content;  // as matched (normalized for normalized tokens)
        const HfAddedToken* token;
    };
    std::map<uint8_t, std::vector<Entry>> byFirstByte;  // longest first

    bool empty() const { return byFirstByte.empty(); }

    struct Cut {
        size_t begin, end;
        int32_t id;  // -1: ordinary text
    };
    std::vector<Cut> split(std::string_view text) const {
        std::vector<Cut> cuts;
        size_t from = 0;
        for (size_t pos = 0; pos < text.size();) {
            const auto it = byFirstByte.find(uint8_t(text[pos]));
            const Entry* hit = nullptr;
            if (it != byFirstByte.end()) {
                for (const Entry& e : it->second) {
                    if (text.substr(pos).starts_with(e.content)) {
                        hit = &e;
                        break;
                    }
                }
            }
            if (hit == nullptr) {
                ++pos;
                continue;
            }
            size_t begin = pos, end = pos + hit->content.size();
            if (hit->token->lstrip) {
                size_t b = begin;
                while (b > from) {
                    size_t s = b - 1;
                    while (s > from && (uint8_t(text[s]) & 0xC0) == 0x80) --s;
                    if (!isWhiteSpace(decodeUtf8(text.substr(s)).codePoint)) break;
                    b = s;
                }
                begin = b;
            }
            if (hit->token->rstrip) {
                while (end < text.size()) {
                    const Utf8Unit u = decodeUtf8(text.substr(end));
                    if (!isWhiteSpace(u.codePoint)) break;
                    end += size_t(u.length);
                }
            }
            if (begin > from) cuts.push_back({from, begin, -1});
            cuts.push_back({begin, end, hit->token->id});
            from = pos = end;
        }
        if (from < text.size()) cuts.push_back({from, text.size(), -1});
        return cuts;
    }
};

HfTokenizer::HfTokenizer(HfSpec spec, HfBpe model, std::string json, std::string config)
    : m_spec(std::move(spec)),
      m_model(std::move(model)),
      m_json(std::move(json)),
      m_config(std::move(config)) {}

Status HfTokenizer::prepare(std::string_view origin) {
    // Ids of added tokens: the library keeps a token's vocabulary id, else gives the next free id
    // past the vocabulary; a file stating other ids would not encode as it reads.
    int32_t maxId = m_model.vocabSize() - 1;
    for (size_t i = 0; i < m_spec.addedTokens.size(); ++i) {
        const HfAddedToken& a = m_spec.addedTokens[i];
        if (const auto inVocab = m_model.tokenToId(a.content); inVocab && *inVocab != a.id) {
            return Error{fmt::format(
                "{}: added_tokens[{}].id: {} but model.vocab has \"{}\" as {}; the library "
                "would use {}, so the file is inconsistent",
                origin, i, a.id, a.content, *inVocab, *inVocab)};
        }
        if (!m_model.tokenToId(a.content) && m_model.idToToken(a.id) != nullptr) {
            return Error{fmt::format("{}: added_tokens[{}].id: {} is model.vocab's \"{}\"", origin,
                                     i, a.id, *m_model.idToToken(a.id))};
        }
        // The library spells a normalized token as its normalized content ("▁<unk>" after a
        // Prepend("▁") normalizer), which is also what decode() gives back for it.
        const std::string spelling =
            a.normalized && !m_spec.normalizers.empty() ? normalize(a.content) : a.content;
        if (!m_addedById.emplace(a.id, spelling).second) {
            return Error{fmt::format("{}: added_tokens[{}].id: {} is used twice", origin, i, a.id)};
        }
        maxId = std::max(maxId, a.id);
    }
    m_vocabSize = maxId + 1;

    auto raw = std::make_shared<Matcher>();
    auto normalized = std::make_shared<Matcher>();
    const bool hasNormalizer = !m_spec.normalizers.empty();
    for (const HfAddedToken& a : m_spec.addedTokens) {
        if (a.normalized && hasNormalizer) {
            const std::string content = normalize(a.content);
            if (!content.empty())
                normalized->byFirstByte[uint8_t(content[0])].push_back({content, &a});
        } else {
            raw->byFirstByte[uint8_t(a.content[0])].push_back({a.content, &a});
        }
    }
    for (auto* m : {raw.get(), normalized.get()}) {
        for (auto& [byte, entries] : m->byFirstByte) {
            std::stable_sort(entries.begin(), entries.end(), [](const auto& x, const auto& y) {
                return x.content.size() > y.content.size();
            });
        }
    }
    m_rawMatcher = std::move(raw);
    m_normalizedMatcher = std::move(normalized);

    m_regexes.resize(m_spec.preTokenizers.size());
    for (size_t i = 0; i < m_spec.preTokenizers.size(); ++i) {
        const HfPreTokenizer& p = m_spec.preTokenizers[i];
        if (p.kind == HfPreTokenizer::Kind::SplitRegex) {
            auto re = HfRegex::compile(p.pattern);
            if (!re.ok()) {
                return Error{fmt::format("{}: pre_tokenizer (step {}) Split pattern: {}", origin, i,
                                         re.error().message)};
            }
            m_regexes[i] = std::move(re).value();
        }
        if (p.kind == HfPreTokenizer::Kind::ByteLevel) {
            m_byteLevel = true;
            if (p.useRegex && !m_gpt2Regex)
                m_gpt2Regex = std::move(HfRegex::compile(kGpt2Pattern)).value();
        }
    }
    for (const HfNormalizer& n : m_spec.normalizers) {
        if (n.kind != HfNormalizer::Kind::Prepend && n.kind != HfNormalizer::Kind::Replace &&
            normalizerFor(n.kind) == nullptr) {
            return Error{
                fmt::format("{}: normalizer: ICU's normalization data is not available", origin)};
        }
    }
    return Status::success();
}

Result<std::unique_ptr<HfTokenizer>> HfTokenizer::create(std::string tokenizerJson,
                                                         std::string configJson,
                                                         std::string_view origin) {
    auto spec = parseHfTokenizerJson(tokenizerJson, configJson, origin);
    if (!spec.ok()) return spec.error();
    auto model = HfBpe::create(spec->model, origin);
    if (!model.ok()) return model.error();
    std::unique_ptr<HfTokenizer> t(
        new HfTokenizer(std::move(spec).value(), std::move(model).value(), std::move(tokenizerJson),
                        std::move(configJson)));
    if (Status s = t->prepare(origin); !s.ok()) return s.error();
    return t;
}

std::string HfTokenizer::normalize(std::string text) const {
    for (const HfNormalizer& n : m_spec.normalizers) {
        switch (n.kind) {
            case HfNormalizer::Kind::Prepend:
                if (!text.empty()) text = n.pattern + text;
                break;
            case HfNormalizer::Kind::Replace:
                text = replaceAll(text, n.pattern, n.content);
                break;
            default: {
                UErrorCode status = U_ZERO_ERROR;
                std::string out;
                icu::StringByteSink<std::string> sink(&out, int32_t(text.size()));
                normalizerFor(n.kind)->normalizeUTF8(
                    0, icu::StringPiece(text.data(), int32_t(text.size())), sink, nullptr, status);
                if (U_SUCCESS(status)) text = std::move(out);
                break;
            }
        }
    }
    return text;
}

void HfTokenizer::normalizeAligned(Piece& piece) const {
    for (const HfNormalizer& n : m_spec.normalizers) {
        switch (n.kind) {
            case HfNormalizer::Kind::Prepend:
                prependAligned(piece.text, piece.align, n.pattern);
                break;
            case HfNormalizer::Kind::Replace:
                replaceAligned(piece.text, piece.align, n.pattern, n.content);
                break;
            default:
                unicodeNormalizeAligned(normalizerFor(n.kind), piece.text, piece.align);
                break;
        }
    }
}

void HfTokenizer::preTokenize(std::vector<Piece>& pieces, bool aligned) const {
    for (size_t step = 0; step < m_spec.preTokenizers.size(); ++step) {
        const HfPreTokenizer& p = m_spec.preTokenizers[step];
        std::vector<Piece> next;
        next.reserve(pieces.size() * 2);
        const auto emit = [&](const Piece& from, size_t b, size_t e) {
            if (e <= b) return;
            Piece out{from.text.substr(b, e - b), {}, from.atStart && b == 0};
            if (aligned)
                out.align.assign(from.align.begin() + long(b), from.align.begin() + long(e));
            next.push_back(std::move(out));
        };
        for (Piece& piece : pieces) {
            switch (p.kind) {
                case HfPreTokenizer::Kind::SplitRegex:
                case HfPreTokenizer::Kind::SplitString: {
                    std::vector<std::pair<size_t, size_t>> matches;
                    if (p.kind == HfPreTokenizer::Kind::SplitRegex) {
                        matches = m_regexes[step]->findAll(piece.text);
                    } else if (!p.pattern.empty()) {
                        for (size_t pos = piece.text.find(p.pattern); pos != std::string::npos;
                             pos = piece.text.find(p.pattern, pos + p.pattern.size())) {
                            matches.emplace_back(pos, pos + p.pattern.size());
                        }
                    }
                    Stretches s = withGaps(matches, piece.text.size());
                    if (p.invert) {
                        for (auto& [b, e, m] : s) m = !m;
                    }
                    for (const auto& [b, e] : applyBehavior(std::move(s), p.behavior)) {
                        emit(piece, b, e);
                    }
                    break;
                }
                case HfPreTokenizer::Kind::ByteLevel: {
                    if (p.addPrefixSpace && !piece.text.starts_with(' ')) {
                        if (aligned) {
                            prependAligned(piece.text, piece.align, " ");
                        } else {
                            piece.text = std::string(1, ' ').append(piece.text);
                        }
                    }
                    std::vector<std::pair<size_t, size_t>> parts;
                    if (p.useRegex) {
                        for (const auto& [b, e] : applyBehavior(
                                 withGaps(m_gpt2Regex->findAll(piece.text), piece.text.size()),
                                 HfSplitBehavior::Isolated)) {
                            parts.emplace_back(b, e);
                        }
                    } else {
                        parts.emplace_back(0, piece.text.size());
                    }
                    for (const auto& [b, e] : parts) {
                        if (e <= b) continue;
                        const std::string_view bytes =
                            std::string_view(piece.text).substr(b, e - b);
                        Piece out{bytesToByteLevel(bytes), {}, piece.atStart && b == 0};
                        if (aligned) {
                            out.align =
                                byteLevelAlignment(bytes, std::span(piece.align).subspan(b, e - b));
                        }
                        next.push_back(std::move(out));
                    }
                    break;
                }
                case HfPreTokenizer::Kind::Metaspace: {
                    Piece replaced{{}, {}, piece.atStart};
                    const bool prepend =
                        p.prepend == HfPreTokenizer::Prepend::Always ||
                        (p.prepend == HfPreTokenizer::Prepend::First && piece.atStart);
                    if (aligned) {
                        replaced.text = piece.text;
                        replaced.align = piece.align;
                        replaceAligned(replaced.text, replaced.align, " ", p.replacement);
                        if (prepend && !replaced.text.starts_with(p.replacement)) {
                            prependAligned(replaced.text, replaced.align, p.replacement);
                        }
                    } else {
                        replaced.text = replaceAll(piece.text, " ", p.replacement);
                        if (prepend && !replaced.text.starts_with(p.replacement)) {
                            replaced.text = p.replacement + replaced.text;
                        }
                    }
                    if (!p.split) {
                        emit(replaced, 0, replaced.text.size());
                        break;
                    }
                    std::vector<std::pair<size_t, size_t>> marks;
                    for (size_t pos = replaced.text.find(p.replacement); pos != std::string::npos;
                         pos = replaced.text.find(p.replacement, pos + p.replacement.size())) {
                        marks.emplace_back(pos, pos + p.replacement.size());
                    }
                    for (const auto& [b, e] : applyBehavior(withGaps(marks, replaced.text.size()),
                                                            HfSplitBehavior::MergedWithNext)) {
                        emit(replaced, b, e);
                    }
                    break;
                }
            }
        }
        pieces = std::move(next);
    }
}

void HfTokenizer::encodeStretch(Piece stretch, PieceCache& cache, std::vector<int32_t>& out,
                                std::vector<ByteSpan>* offsets) const {
    if (stretch.text.empty()) return;
    const bool aligned = offsets != nullptr;
    std::vector<Piece> pieces;
    pieces.push_back(std::move(stretch));
    preTokenize(pieces, aligned);
    std::vector<uint32_t> lengths;
    for (const Piece& p : pieces) {
        const size_t first = out.size();
        lengths.clear();
        const auto cached = p.text.size() <= 64 ? cache.find(p.text) : cache.end();
        if (cached != cache.end()) {
            out.insert(out.end(), cached->second.ids.begin(), cached->second.ids.end());
            lengths = cached->second.lengths;
        } else {
            m_model.tokenize(p.text, out, aligned ? &lengths : nullptr);
            if (p.text.size() <= 64) {
                cache.emplace(
                    p.text, CachedPiece{std::vector<int32_t>(out.begin() + long(first), out.end()),
                                        lengths});
            }
        }
        if (!aligned) continue;
        // The library's convert_offsets: a token spans from its first byte's original start to
        // its last byte's original end.
        size_t pos = 0;
        for (const uint32_t len : lengths) {
            if (len == 0 || pos + len > p.align.size()) {
                const size_t at = pos < p.align.size() ? p.align[pos].begin
                                  : p.align.empty()    ? 0
                                                       : p.align.back().end;
                offsets->push_back({at, at});
            } else {
                offsets->push_back({p.align[pos].begin, p.align[pos + len - 1].end});
            }
            pos += len;
        }
    }
}

Status HfTokenizer::encodeInto(std::string_view text, bool addSpecialTokens,
                               std::vector<int32_t>& ids, std::vector<ByteSpan>* offsets) const {
    if (const auto bad = firstInvalidUtf8(text)) {
        return Error{fmt::format(
            "the text is not valid UTF-8 at byte offset {} (byte 0x{:02X}); Hugging Face "
            "tokenizers take Unicode text only: convert the file to UTF-8",
            *bad, uint8_t(text[*bad]))};
    }
    const bool aligned = offsets != nullptr;
    ids.reserve(text.size() / 3 + 8);
    PieceCache cache;
    for (const Matcher::Cut& cut : m_rawMatcher->split(text)) {
        if (cut.id >= 0) {
            ids.push_back(cut.id);
            if (aligned) offsets->push_back({cut.begin, cut.end});
            continue;
        }
        Piece normalized{std::string(text.substr(cut.begin, cut.end - cut.begin)), {}, false};
        if (aligned) {
            normalized.align = characterAlignment(text, cut.begin, cut.end);
            normalizeAligned(normalized);
        } else {
            normalized.text = normalize(std::move(normalized.text));
        }
        for (const Matcher::Cut& inner : m_normalizedMatcher->split(normalized.text)) {
            if (inner.id >= 0) {
                ids.push_back(inner.id);
                if (aligned) {
                    offsets->push_back(
                        {normalized.align[inner.begin].begin, normalized.align[inner.end - 1].end});
                }
                continue;
            }
            Piece stretch{normalized.text.substr(inner.begin, inner.end - inner.begin),
                          {},
                          cut.begin == 0 && inner.begin == 0};
            if (aligned) {
                stretch.align.assign(normalized.align.begin() + long(inner.begin),
                                     normalized.align.begin() + long(inner.end));
            }
            encodeStretch(std::move(stretch), cache, ids, offsets);
        }
    }
    if (aligned && m_spec.offsetTrim.enabled) trimOffsets(text, ids, *offsets);
    if (addSpecialTokens && m_spec.single) {
        std::vector<int32_t> templated;
        std::vector<ByteSpan> templatedOffsets;
        templated.reserve(ids.size() + 4);
        for (const HfTemplatePiece& p : *m_spec.single) {
            if (p.isSequence) {
                templated.insert(templated.end(), ids.begin(), ids.end());
                if (aligned) {
                    templatedOffsets.insert(templatedOffsets.end(), offsets->begin(),
                                            offsets->end());
                }
            } else {
                templated.insert(templated.end(), p.ids.begin(), p.ids.end());
                if (aligned) templatedOffsets.insert(templatedOffsets.end(), p.ids.size(), {0, 0});
            }
        }
        ids = std::move(templated);
        if (aligned) *offsets = std::move(templatedOffsets);
    }
    return Status::success();
}

// process_offsets of the library's ByteLevel post-processor, counted in characters of text as
// the Python and Node bindings apply it (they convert offsets to characters first; the Rust
// byte form would move by bytes and could cut a character that a prefix space was aligned to).
void HfTokenizer::trimOffsets(std::string_view text, std::span<const int32_t> ids,
                              std::vector<ByteSpan>& offsets) const {
    const auto isSpace = [](char32_t c) { return c == byteToUnicode(' ') || isWhiteSpace(c); };
    const auto nextChar = [&](size_t pos) {
        return std::min(text.size(), pos + size_t(decodeUtf8(text.substr(pos)).length));
    };
    const auto previousChar = [&](size_t pos) {
        do --pos;
        while (pos > 0 && (uint8_t(text[pos]) & 0xC0) == 0x80);
        return pos;
    };
    std::vector<char32_t> chars;
    for (size_t i = 0; i < ids.size(); ++i) {
        chars.clear();
        const std::string name = tokenName(ids[i]);
        for (size_t pos = 0; pos < name.size();) {
            const Utf8Unit u = decodeUtf8(std::string_view(name).substr(pos));
            chars.push_back(u.codePoint);
            pos += size_t(u.length);
        }
        size_t leading = 0, trailing = 0;
        while (leading < chars.size() && isSpace(chars[leading])) ++leading;
        while (trailing < chars.size() && isSpace(chars[chars.size() - 1 - trailing])) ++trailing;
        ByteSpan& o = offsets[i];
        if (leading > 0) {
            const bool first = i == 0 || o.begin == 0;
            if (first && m_spec.offsetTrim.addPrefixSpace && leading == 1) leading = 0;
            for (size_t k = 0; k < leading && o.begin < o.end; ++k) o.begin = nextChar(o.begin);
            o.begin = std::min(o.begin, o.end);
        }
        if (trailing > 0) {
            size_t end = o.end, k = 0;
            for (; k < trailing && end > 0; ++k) end = previousChar(end);
            if (k == trailing) o.end = std::max(end, o.begin);  // the library's end >= trailing
        }
    }
}

Result<std::vector<int32_t>> HfTokenizer::encodeChecked(std::string_view text,
                                                        bool addSpecialTokens) const {
    std::vector<int32_t> ids;
    if (Status s = encodeInto(text, addSpecialTokens, ids, nullptr); !s.ok()) return s.error();
    return ids;
}

Result<Encoding> HfTokenizer::encodeWithOffsets(std::string_view text,
                                                bool addSpecialTokens) const {
    Encoding out;
    if (Status s = encodeInto(text, addSpecialTokens, out.ids, &out.offsets); !s.ok()) {
        return s.error();
    }
    return out;
}

std::optional<int32_t> HfTokenizer::specialTokenId(std::string_view content) const {
    for (const HfAddedToken& a : m_spec.addedTokens) {
        if (a.content == content) return a.id;
    }
    return std::nullopt;
}
std::optional<int32_t> HfTokenizer::invalidByteToken(uint8_t byte) const {
    if (m_byteLevel) return m_model.tokenToId(bytesToByteLevel(std::string(1, char(byte))));
    if (auto id = m_model.tokenToId(fmt::format("<0x{:02X}>", byte))) return id;
    if (m_spec.model.unkToken) return m_model.tokenToId(*m_spec.model.unkToken);
    return std::nullopt;
}

std::vector<int32_t> HfTokenizer::encode(std::string_view text) const {
    std::vector<int32_t> out;
    // Valid stretches as the library would; each invalid byte on its own (see the header).
    while (!text.empty()) {
        const size_t bad = firstInvalidUtf8(text).value_or(text.size());
        if (bad > 0) {
            auto ids = encodeChecked(text.substr(0, bad), false);
            out.insert(out.end(), ids->begin(), ids->end());
        }
        if (bad < text.size()) {
            if (const auto id = invalidByteToken(uint8_t(text[bad]))) out.push_back(*id);
            text.remove_prefix(bad + 1);
        } else {
            break;
        }
    }
    return out;
}

std::vector<std::string> HfTokenizer::decodeChain(std::vector<std::string> tokens,
                                                  bool atStart) const {
    for (const HfDecoder& d : m_spec.decoders) {
        switch (d.kind) {
            case HfDecoder::Kind::ByteLevel: {
                std::string joined;
                for (const std::string& t : tokens) {
                    const auto bytes = byteLevelToBytes(t);
                    joined += bytes ? *bytes : t;
                }
                tokens.assign(1, std::move(joined));
                break;
            }
            case HfDecoder::Kind::Replace:
                for (std::string& t : tokens) t = replaceAll(t, d.pattern, d.content);
                break;
            case HfDecoder::Kind::ByteFallback: {
                std::vector<std::string> next;
                std::string bytes;
                const auto flush = [&] {
                    if (!bytes.empty()) next.push_back(std::move(bytes));
                    bytes.clear();
                };
                for (std::string& t : tokens) {
                    unsigned value = 0;
                    if (t.size() == 6 && t.starts_with("<0x") && t.ends_with('>') &&
                        std::sscanf(t.c_str() + 3, "%2x", &value) == 1 &&
                        std::isxdigit(uint8_t(t[3])) && std::isxdigit(uint8_t(t[4]))) {
                        bytes.push_back(char(value));
                    } else {
                        flush();
                        next.push_back(std::move(t));
                    }
                }
                flush();
                tokens = std::move(next);
                break;
            }
            case HfDecoder::Kind::Fuse: {
                std::string joined;
                for (const std::string& t : tokens) joined += t;
                tokens.assign(1, std::move(joined));
                break;
            }
            case HfDecoder::Kind::Strip: {
                if (!atStart) break;  // per-token byte counts: a token mid-sequence keeps all
                for (std::string& t : tokens) {
                    for (int i = 0; i < d.start && t.starts_with(d.content); ++i) {
                        t.erase(0, d.content.size());
                    }
                    for (int i = 0; i < d.stop && t.ends_with(d.content); ++i) {
                        t.erase(t.size() - d.content.size());
                    }
                }
                break;
            }
            case HfDecoder::Kind::Metaspace:
                for (size_t i = 0; i < tokens.size(); ++i) {
                    const bool drop = i == 0 && atStart && d.prependFirst;
                    tokens[i] = replaceAll(tokens[i], d.replacement, drop ? "" : " ");
                }
                break;
        }
    }
    return tokens;
}

std::string HfTokenizer::decode(std::span<const int32_t> ids) const {
    std::vector<std::string> tokens;
    tokens.reserve(ids.size());
    std::string out;
    const auto flush = [&](bool atStart) {
        if (tokens.empty()) return;
        if (m_spec.decoders.empty()) {
            for (size_t i = 0; i < tokens.size(); ++i) {
                if (i > 0) out += ' ';
                out += tokens[i];
            }
        } else {
            for (const std::string& t : decodeChain(std::move(tokens), atStart)) out += t;
        }
        tokens.clear();
    };
    bool atStart = true;
    for (const int32_t id : ids) {
        const std::string name = tokenName(id);
        if (name.empty() && m_addedById.find(id) == m_addedById.end() &&
            m_model.idToToken(id) == nullptr) {
            // An id the tokenizer does not know: shown, not hidden (tokenizer.h).
            flush(atStart);
            atStart = false;
            out += kReplacementCharacter;
            continue;
        }
        tokens.push_back(name);
    }
    flush(atStart);
    return out;
}

int32_t HfTokenizer::tokenByteCount(int32_t id) const {
    if (m_addedById.find(id) == m_addedById.end() && m_model.idToToken(id) == nullptr) {
        return int32_t(kReplacementCharacter.size());
    }
    std::string bytes;
    for (const std::string& t : decodeChain({tokenName(id)}, false)) bytes += t;
    return int32_t(bytes.size());
}

std::string HfTokenizer::tokenName(int32_t id) const {
    if (const auto it = m_addedById.find(id); it != m_addedById.end()) return it->second;
    if (const std::string* t = m_model.idToToken(id)) return *t;
    return {};
}

Status HfTokenizer::save(const fs::path& dir) const {
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec) {
        return Error{fmt::format("cannot create folder '{}': {}", dir.string(), ec.message())};
    }
    if (Status s = fileio::writeFileAtomically(dir / "tokenizer.json", m_json); !s.ok()) return s;
    if (m_config.empty()) return Status::success();
    return fileio::writeFileAtomically(dir / "tokenizer_config.json", m_config);
}

Result<std::unique_ptr<HfTokenizer>> HfTokenizer::withSpecialTokens(
    std::span<const std::string> contents, std::vector<int32_t>& ids) const {
    std::vector<std::pair<std::string, int32_t>> fresh;
    int32_t next = m_vocabSize;
    for (const std::string& content : contents) {
        if (const auto id = specialTokenId(content)) {
            ids.push_back(*id);
            continue;
        }
        const auto earlier = std::find_if(fresh.begin(), fresh.end(),
                                          [&](const auto& f) { return f.first == content; });
        if (earlier != fresh.end()) {
            ids.push_back(earlier->second);
            continue;
        }
        const int32_t id = m_model.tokenToId(content).value_or(next);
        if (id == next) ++next;
        fresh.emplace_back(content, id);
        ids.push_back(id);
    }
    if (fresh.empty()) return std::unique_ptr<HfTokenizer>();
    // Both texts parsed when this tokenizer was made; a plain json (keys sorted) keeps the
    // rewrite linear in the vocabulary.
    nlohmann::json json = nlohmann::json::parse(m_json, nullptr, false);
    nlohmann::json config =
        m_config.empty() ? nlohmann::json() : nlohmann::json::parse(m_config, nullptr, false);
    if (!json.is_object()) return Error{"tokenizer.json is not a JSON object"};
    if (!json.contains("added_tokens") || !json["added_tokens"].is_array()) {
        json["added_tokens"] = nlohmann::json::array();
    }
    const bool configDecoder = config.is_object() && config.contains("added_tokens_decoder") &&
                               config["added_tokens_decoder"].is_object();
    for (const auto& [content, id] : fresh) {
        nlohmann::json flags = {{"content", content}, {"single_word", false}, {"lstrip", false},
                                {"rstrip", false},    {"normalized", false},  {"special", true}};
        if (configDecoder) config["added_tokens_decoder"][std::to_string(id)] = flags;
        flags["id"] = id;
        json["added_tokens"].push_back(std::move(flags));
    }
    return create(json.dump(), configDecoder ? config.dump(2) + "\n" : m_config,
                  "tokenizer.json with added special tokens");
}

bool HfTokenizer::isGpt2Pipeline() const {
    return m_spec.normalizers.empty() && m_spec.preTokenizers.size() == 1 &&
           m_spec.preTokenizers[0].kind == HfPreTokenizer::Kind::ByteLevel &&
           m_spec.preTokenizers[0].useRegex && !m_spec.preTokenizers[0].addPrefixSpace;
}

bool isHfTokenizerJson(std::string_view text) {
    // Cheap on multi-megabyte files: a byte tokenizer file is tiny and has no "model" key.
    return text.find("\"model\"") != std::string_view::npos;
}

Result<std::unique_ptr<Tokenizer>> loadHfTokenizer(const fs::path& tokenizerJson) {
    auto json = fileio::readWholeFile(tokenizerJson);
    if (!json.ok()) return json.error();
    return loadHfTokenizer(tokenizerJson, std::move(json).value());
}

Result<std::unique_ptr<Tokenizer>> loadHfTokenizer(const fs::path& tokenizerJson,
                                                   std::string text) {
    std::string config;
    const fs::path configFile = tokenizerJson.parent_path() / "tokenizer_config.json";
    std::error_code ec;
    if (fs::exists(configFile, ec)) {
        auto read = fileio::readWholeFile(configFile);
        if (!read.ok()) return read.error();
        config = std::move(read).value();
    }
    auto t = HfTokenizer::create(std::move(text), std::move(config), tokenizerJson.string());
    if (!t.ok()) return t.error();
    return std::unique_ptr<Tokenizer>(std::move(t).value());
}

}  // namespace ws::tokenizer
