// SPDX-License-Identifier: GPL-3.0-or-later
// Chat examples: a conversation rendered with its template and encoded as one text trains on
// exactly the assistant's answers (with their end-of-turn marker) by default, on the last answer
// with mask_history, on everything with train_on_inputs; text records train on everything.
#include "engine/data/chat_examples.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "engine/tokenizer/special_tokens.h"

namespace ws::data {
namespace {

using chat::Conversation;

struct ChatMl {
    chat::ChatTemplate chatTemplate;
    std::shared_ptr<const tokenizer::Tokenizer> tokenizer;
};

// ChatML on the byte tokenizer, with the special tokens it needs.
ChatMl chatMl() {
    auto t = chat::ChatTemplate::builtin("chatml");
    EXPECT_TRUE(t.ok());
    std::shared_ptr<const tokenizer::Tokenizer> bytes = tokenizer::makeByteTokenizer();
    auto with = tokenizer::withSpecialTokens(bytes, t->specialTokens());
    EXPECT_TRUE(with.ok());
    return {std::move(t).value(), with->tokenizer};
}

Conversation twoTurns() {
    return {{{"system", "Be brief."},
             {"user", "Hi"},
             {"assistant", "Hello"},
             {"user", "Name a colour"},
             {"assistant", "Blue"}},
            "chat.jsonl:3"};
}

// The text of the trained tokens, runs joined with '|'.
std::string trainedText(const Example& e, const tokenizer::Tokenizer& t) {
    std::string out;
    bool in = false;
    for (size_t i = 0; i < e.ids.size(); ++i) {
        if (e.mask[i] && !in && !out.empty()) out += '|';
        if (e.mask[i]) out += t.decode(std::span<const int32_t>(&e.ids[i], 1));
        in = e.mask[i] != 0;
    }
    return out;
}

TEST(ChatExamples, TheAnswersAndTheirEndOfTurnAreTrainedOnAndNothingElse) {
    const ChatMl m = chatMl();
    auto r = renderExample(twoTurns(), m.chatTemplate, *m.tokenizer, {});
    ASSERT_TRUE(r.ok()) << r.error().message;
    EXPECT_EQ(r->example.ids, m.tokenizer->encode(r->text));
    EXPECT_EQ(r->example.origin, "chat.jsonl:3");
    EXPECT_EQ(trainedText(r->example, *m.tokenizer), "Hello<|im_end|>\n|Blue<|im_end|>\n");
    // The special tokens are single tokens, not their spelling in bytes.
    EXPECT_LT(r->example.ids.size(), r->text.size());
}

TEST(ChatExamples, MaskHistoryTrainsOnTheLastAnswerAndTrainOnInputsOnEverything) {
    const ChatMl m = chatMl();
    auto last = renderExample(twoTurns(), m.chatTemplate, *m.tokenizer, {.maskHistory = true});
    ASSERT_TRUE(last.ok()) << last.error().message;
    EXPECT_EQ(trainedText(last->example, *m.tokenizer), "Blue<|im_end|>\n");
    auto all = renderExample(twoTurns(), m.chatTemplate, *m.tokenizer, {.trainOnInputs = true});
    ASSERT_TRUE(all.ok()) << all.error().message;
    EXPECT_EQ(trainedText(all->example, *m.tokenizer), all->text);
    EXPECT_EQ(all->example.ids, last->example.ids);
}

TEST(ChatExamples, TextRecordsTrainOnEverythingAndConversationsComeFirst) {
    const ChatMl m = chatMl();
    RecordSet records;
    records.conversations.push_back(twoTurns());
    records.texts.push_back({"plain text", "notes.jsonl:9"});
    auto examples = makeExamples(records, m.chatTemplate, *m.tokenizer, {});
    ASSERT_TRUE(examples.ok()) << examples.error().message;
    ASSERT_EQ(examples->size(), 2u);
    EXPECT_EQ((*examples)[0].origin, "chat.jsonl:3");
    EXPECT_EQ((*examples)[1].ids, m.tokenizer->encode("plain text"));
    EXPECT_EQ((*examples)[1].mask, std::vector<uint8_t>(10, 1));
    EXPECT_EQ((*examples)[1].origin, "notes.jsonl:9");
}

TEST(ChatExamples, ATemplateThatFailsNamesTheRecord) {
    const ChatMl m = chatMl();
    auto broken = chat::ChatTemplate::fromSource(
        "broken.jinja", "{{ raise_exception('only user and assistant roles are supported') }}");
    ASSERT_TRUE(broken.ok()) << broken.error().message;
    auto r = renderExample(twoTurns(), *broken, *m.tokenizer, {});
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().message.find("chat.jsonl:3: "), 0u) << r.error().message;
    EXPECT_EQ(r.error().message.find("chat.jsonl:3", 1), std::string::npos) << r.error().message;
    EXPECT_NE(r.error().message.find("only user and assistant roles are supported"),
              std::string::npos)
        << r.error().message;
}

}  // namespace
}  // namespace ws::data
