// SPDX-License-Identifier: GPL-3.0-or-later
// Chat and instruction records become training examples: each conversation is rendered with the
// chat template (chat/chat_template.h), encoded as one text by the tokenizer, and masked so that
// only what the model must learn to produce is trained on (tokenizer/masked_encoding.h):
//   - default: every assistant answer (its span: the content and the template's end-of-turn
//     marker), nothing of the system prompt, the user's turns or the template's headers;
//   - mask_history: only each conversation's last answer;
//   - train_on_inputs: every token of the rendered conversation.
// Text records (format text / text_records) are trained on whole. The ids equal the tokenizer's
// encode of the whole rendered text (what the Hugging Face tokenizers library gives for the
// same text), so `wafer tokenize --chat` shows exactly what is trained on.
// Errors name the record (its origin) and the fix. Thread-safety: pure functions.
#pragma once

#include <string>
#include <vector>

#include "engine/chat/chat_template.h"
#include "engine/core/result.h"
#include "engine/data/examples.h"
#include "engine/data/record_format.h"
#include "engine/tokenizer/tokenizer.h"

namespace ws::data {

struct ChatMaskOptions {
    bool trainOnInputs = false;  // train_input.train_on_inputs
    bool maskHistory = false;    // train_input.mask_history
};

// One conversation: the rendered text, its ids and mask (the Example), and the trained spans.
struct RenderedExample {
    std::string text;
    std::vector<tokenizer::ByteSpan> trainedSpans;
    Example example;
};

Result<RenderedExample> renderExample(const chat::Conversation& conversation,
                                      const chat::ChatTemplate& chatTemplate,
                                      const tokenizer::Tokenizer& tokenizer,
                                      const ChatMaskOptions& options);

// Every conversation and text record of `records`, in order (conversations first).
Result<std::vector<Example>> makeExamples(const RecordSet& records,
                                          const chat::ChatTemplate& chatTemplate,
                                          const tokenizer::Tokenizer& tokenizer,
                                          const ChatMaskOptions& options);

}  // namespace ws::data
