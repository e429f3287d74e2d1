// SPDX-License-Identifier: GPL-3.0-or-later
// Chat examples: see chat_examples.h.
#include "engine/data/chat_examples.h"

#include "engine/tokenizer/masked_encoding.h"

namespace ws::data {

Result<RenderedExample> renderExample(const chat::Conversation& conversation,
                                      const chat::ChatTemplate& chatTemplate,
                                      const tokenizer::Tokenizer& tokenizer,
                                      const ChatMaskOptions& options) {
    const std::string where = conversation.origin.empty() ? "a conversation" : conversation.origin;
    auto rendered = chatTemplate.renderForTraining(conversation);
    if (!rendered.ok()) return rendered.error();  // it names the conversation's origin
    RenderedExample out;
    out.text = std::move(rendered->text);
    if (options.trainOnInputs) {
        out.trainedSpans.push_back({0, out.text.size()});
    } else if (options.maskHistory && !rendered->spans.empty()) {
        const chat::AssistantSpan& last = rendered->spans.back();
        out.trainedSpans.push_back({last.begin, last.end});
    } else {
        for (const chat::AssistantSpan& s : rendered->spans)
            out.trainedSpans.push_back({s.begin, s.end});
    }
    auto encoded = tokenizer::encodeWithMask(tokenizer, out.text, out.trainedSpans, false);
    if (!encoded.ok()) return Error{where + ": " + encoded.error().message};
    out.example.ids = std::move(encoded->ids);
    out.example.mask = std::move(encoded->mask);
    out.example.origin = conversation.origin;
    return out;
}

Result<std::vector<Example>> makeExamples(const RecordSet& records,
                                          const chat::ChatTemplate& chatTemplate,
                                          const tokenizer::Tokenizer& tokenizer,
                                          const ChatMaskOptions& options) {
    std::vector<Example> examples;
    examples.reserve(records.conversations.size() + records.texts.size());
    for (const chat::Conversation& c : records.conversations) {
        auto one = renderExample(c, chatTemplate, tokenizer, options);
        if (!one.ok()) return one.error();
        examples.push_back(std::move(one->example));
    }
    for (const TextRecord& t : records.texts) {
        auto ids = tokenizer.encodeChecked(t.text, false);
        if (!ids.ok()) return Error{t.origin + ": " + ids.error().message};
        Example e;
        e.mask.assign(ids->size(), 1);
        e.ids = std::move(ids).value();
        e.origin = t.origin;
        examples.push_back(std::move(e));
    }
    return examples;
}

}  // namespace ws::data
