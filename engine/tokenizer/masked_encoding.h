// SPDX-License-Identifier: GPL-3.0-or-later
// Encoding a rendered chat with its training mask: the chat template renderer (engine/chat)
// hands over the text and the byte spans that are trained on (the assistant's turns); this
// encodes the whole text exactly as encodeChecked() does (so the ids equal the tokenizers
// library's encode of the whole text) and marks each token trained on or not from its byte range
// (Tokenizer::encodeWithOffsets).
//
// The rule: a token is trained on when its byte range [begin, end) overlaps a trained span
// (begin < span.end and end > span.begin), the rule transformers' return_assistant_tokens_mask
// follows (every token holding a character of the span). So with ChatML and a span that covers
// the answer and its <|im_end|>:
//   - the <|im_start|>assistant\n header before the span is not trained on (it ends where the
//     span begins), nor is the "\n" after <|im_end|> when the span stops there;
//   - a token straddling an edge (one that merged the last header byte with the answer's first,
//     possible where the pre-tokenizer does not split them, e.g. SentencePiece files without
//     one) is trained on: it holds answer text the model must produce.
// Tokens with an empty range (BOS/EOS a post-processor adds with addSpecialTokens) are never
// trained on. The mask is per token, mask[i] saying whether ids[i] counts as a target (the
// trainer shifts it with the labels).
// Thread-safety: pure function of its arguments.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "engine/core/result.h"
#include "engine/tokenizer/tokenizer.h"

namespace ws::tokenizer {

struct MaskedEncoding {
    std::vector<int32_t> ids;
    std::vector<uint8_t> mask;  // one per id: 1 = trained on
};

// Errors: a span that runs backwards or past the text (naming the span and the text's size), and
// whatever encodeChecked() refuses (hf: invalid UTF-8, naming the byte offset).
Result<MaskedEncoding> encodeWithMask(const Tokenizer& tokenizer, std::string_view text,
                                      std::span<const ByteSpan> trainedSpans,
                                      bool addSpecialTokens = false);

// The rule above for one token range.
bool overlapsTrainedSpan(ByteSpan token, std::span<const ByteSpan> trainedSpans);

}  // namespace ws::tokenizer
