// SPDX-License-Identifier: GPL-3.0-or-later
// encodeWithMask: the spans checked, the text encoded with offsets, each token's range laid over
// the spans.
#include "engine/tokenizer/masked_encoding.h"

#include <fmt/format.h>

#include <algorithm>

namespace ws::tokenizer {

bool overlapsTrainedSpan(ByteSpan token, std::span<const ByteSpan> trainedSpans) {
    if (token.end <= token.begin) return false;
    return std::any_of(trainedSpans.begin(), trainedSpans.end(), [&](const ByteSpan& s) {
        return token.begin < s.end && token.end > s.begin;
    });
}

Result<MaskedEncoding> encodeWithMask(const Tokenizer& tokenizer, std::string_view text,
                                      std::span<const ByteSpan> trainedSpans,
                                      bool addSpecialTokens) {
    for (size_t i = 0; i < trainedSpans.size(); ++i) {
        const ByteSpan& s = trainedSpans[i];
        if (s.begin > s.end || s.end > text.size()) {
            return Error{fmt::format(
                "trained span {} [{}, {}) is not inside the text ({} bytes): spans are byte "
                "ranges [begin, end) of the rendered text with begin <= end <= its size",
                i, s.begin, s.end, text.size())};
        }
    }
    auto encoded = tokenizer.encodeWithOffsets(text, addSpecialTokens);
    if (!encoded.ok()) return encoded.error();
    MaskedEncoding out;
    out.ids = std::move(encoded->ids);
    out.mask.reserve(out.ids.size());
    for (const ByteSpan& o : encoded->offsets) {
        out.mask.push_back(overlapsTrainedSpan(o, trainedSpans) ? 1 : 0);
    }
    return out;
}

}  // namespace ws::tokenizer
