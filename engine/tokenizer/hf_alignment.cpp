// SPDX-License-Identifier: GPL-3.0-or-later
// Alignment-keeping versions of the text transforms of the Hugging Face pipeline (hf_alignment.h).
#include "engine/tokenizer/hf_alignment.h"

#include <unicode/bytestream.h>
#include <unicode/stringpiece.h>

#include "engine/tokenizer/byte_level.h"

namespace ws::tokenizer {

// The starting alignment of text[begin, end): each byte maps to its whole character.
std::vector<ByteSpan> characterAlignment(std::string_view text, size_t begin, size_t end) {
    std::vector<ByteSpan> align;
    align.reserve(end - begin);
    for (size_t pos = begin; pos < end;) {
        const auto len = size_t(decodeUtf8(text.substr(pos, end - pos)).length);
        align.insert(align.end(), len, ByteSpan{pos, pos + len});
        pos += len;
    }
    return align;
}

// NormalizedString::prepend: the prefix's first character takes the first character's range,
// the rest of the prefix and the first character itself (re-inserted) its last byte's.
void prependAligned(std::string& text, std::vector<ByteSpan>& align, std::string_view prefix) {
    if (text.empty() || prefix.empty()) return;
    const auto firstLength = size_t(decodeUtf8(text).length);
    const auto prefixFirst = size_t(decodeUtf8(prefix).length);
    std::vector<ByteSpan> out;
    out.reserve(prefix.size() + align.size());
    out.insert(out.end(), prefixFirst, align[0]);
    out.insert(out.end(), prefix.size() - prefixFirst + firstLength, align[firstLength - 1]);
    out.insert(out.end(), align.begin() + long(firstLength), align.end());
    text.insert(0, prefix);
    align = std::move(out);
}

// NormalizedString::replace: every character of the replacement is an insertion after the
// removed match, so it takes the range of the match's last byte.
void replaceAligned(std::string& text, std::vector<ByteSpan>& align, std::string_view pattern,
                    std::string_view with) {
    if (pattern.empty()) return;
    std::string out;
    std::vector<ByteSpan> outAlign;
    out.reserve(text.size());
    outAlign.reserve(align.size());
    for (size_t pos = 0;;) {
        const size_t hit = text.find(pattern, pos);
        const size_t stop = hit == std::string::npos ? text.size() : hit;
        out.append(text, pos, stop - pos);
        outAlign.insert(outAlign.end(), align.begin() + long(pos), align.begin() + long(stop));
        if (hit == std::string::npos) break;
        out.append(with);
        outAlign.insert(outAlign.end(), with.size(), align[hit + pattern.size() - 1]);
        pos = hit + pattern.size();
    }
    text = std::move(out);
    align = std::move(outAlign);
}

// NFC/NFD/NFKC/NFKD with alignments. The text is normalized segment by segment (a segment
// starts at each character with a normalization boundary before it, so the concatenation is
// the normalization of the whole); within a changed segment output character j takes input
// character j's range (a composition keeps its first character's, as the library's does), and
// characters past the input's count (a decomposition's extra marks) the segment's last byte's.
void unicodeNormalizeAligned(const icu::Normalizer2* normalizer, std::string& text,
                             std::vector<ByteSpan>& align) {
    if (normalizer == nullptr) return;
    std::string out;
    std::vector<ByteSpan> outAlign;
    out.reserve(text.size());
    outAlign.reserve(align.size());
    std::vector<size_t> starts;
    for (size_t pos = 0; pos < text.size();) {
        starts.clear();
        size_t end = pos;
        do {
            starts.push_back(end);
            end += size_t(decodeUtf8(std::string_view(text).substr(end)).length);
        } while (end < text.size() &&
                 !normalizer->hasBoundaryBefore(
                     UChar32(decodeUtf8(std::string_view(text).substr(end)).codePoint)));
        const std::string_view segment = std::string_view(text).substr(pos, end - pos);
        UErrorCode status = U_ZERO_ERROR;
        std::string normalized;
        icu::StringByteSink<std::string> sink(&normalized, int32_t(segment.size()));
        normalizer->normalizeUTF8(0, icu::StringPiece(segment.data(), int32_t(segment.size())),
                                  sink, nullptr, status);
        if (U_FAILURE(status) || normalized == segment) {
            out.append(segment);
            outAlign.insert(outAlign.end(), align.begin() + long(pos), align.begin() + long(end));
        } else {
            out.append(normalized);
            size_t j = 0;
            for (size_t q = 0; q < normalized.size(); ++j) {
                const auto len = size_t(decodeUtf8(std::string_view(normalized).substr(q)).length);
                const ByteSpan range = j < starts.size() ? align[starts[j]] : align[end - 1];
                outAlign.insert(outAlign.end(), len, range);
                q += len;
            }
        }
        pos = end;
    }
    text = std::move(out);
    align = std::move(outAlign);
}

// The ByteLevel pre-tokenizer's alignment for bytes (with align, one per byte): each byte
// becomes one character of GPT-2's alphabet; a character's first byte keeps the range at its
// first byte, the others (insertions) take the range at its last byte.
std::vector<ByteSpan> byteLevelAlignment(std::string_view bytes, std::span<const ByteSpan> align) {
    std::vector<ByteSpan> out;
    out.reserve(bytes.size() * 2);
    for (size_t pos = 0; pos < bytes.size();) {
        const auto len = size_t(decodeUtf8(bytes.substr(pos)).length);
        for (size_t k = 0; k < len; ++k) {
            const size_t width = byteToUnicode(uint8_t(bytes[pos + k])) < 0x80 ? 1 : 2;
            out.insert(out.end(), width, k == 0 ? align[pos] : align[pos + len - 1]);
        }
        pos += len;
    }
    return out;
}

}  // namespace ws::tokenizer
