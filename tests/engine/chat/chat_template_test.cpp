// SPDX-License-Identifier: GPL-3.0-or-later
// ChatTemplate: the ChatML built-in, loading a model folder's template (string, named list,
// chat_template.jinja, token objects), the assistant spans of the incremental render, and the
// refusal of a template that does not render incrementally.
#include "engine/chat/chat_template.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace {

using ws::chat::ChatMessage;
using ws::chat::ChatTemplate;
using ws::chat::Conversation;

Conversation sample() {
    return Conversation{{{"system", "Be brief."},
                         {"user", "Hi"},
                         {"assistant", "Hello"},
                         {"user", "Bye"},
                         {"assistant", "Goodbye"}},
                        "chat.jsonl:3"};
}

class TempFolder {
public:
    TempFolder() {
        m_path = std::filesystem::temp_directory_path() /
                 ("wafer_chat_template_" +
                  std::to_string(::testing::UnitTest::GetInstance()->random_seed()) + "_" +
                  ::testing::UnitTest::GetInstance()->current_test_info()->name());
        std::filesystem::remove_all(m_path);
        std::filesystem::create_directories(m_path);
    }
    ~TempFolder() { std::filesystem::remove_all(m_path); }
    void write(const std::string& name, const std::string& text) const {
        std::ofstream(m_path / name, std::ios::binary) << text;
    }
    const std::filesystem::path& path() const { return m_path; }

private:
    std::filesystem::path m_path;
};

TEST(ChatTemplateBuiltin, ChatmlRendersTheFormat) {
    auto t = ChatTemplate::builtin("chatml");
    ASSERT_TRUE(t.ok()) << t.error().message;
    EXPECT_TRUE(t->isBuiltin());
    EXPECT_EQ(t->name(), "chatml");
    auto text = t->render(sample(), false);
    ASSERT_TRUE(text.ok()) << text.error().message;
    EXPECT_EQ(*text,
              "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n"
              "<|im_start|>assistant\nHello<|im_end|>\n<|im_start|>user\nBye<|im_end|>\n"
              "<|im_start|>assistant\nGoodbye<|im_end|>\n");
    Conversation prompt{{{"user", "Hi"}}, ""};
    EXPECT_EQ(*t->render(prompt, true), "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
    EXPECT_EQ(t->specialTokens(), (std::vector<std::string>{"<|im_start|>", "<|im_end|>"}));
    EXPECT_EQ(t->stopStrings(), (std::vector<std::string>{"<|im_end|>"}));
    EXPECT_EQ(ChatTemplate::builtinNames(), (std::vector<std::string>{"chatml"}));
}

TEST(ChatTemplateBuiltin, UnknownNameListsTheBuiltins) {
    auto t = ChatTemplate::builtin("alpaca");
    ASSERT_FALSE(t.ok());
    EXPECT_EQ(t.error().message,
              "there is no built-in chat template named \"alpaca\"; the built-ins are: chatml");
}

TEST(ChatTemplateSpans, EachAssistantTurnIsItsContentAndEndOfTurn) {
    auto t = ChatTemplate::builtin("chatml");
    ASSERT_TRUE(t.ok());
    auto r = t->renderForTraining(sample());
    ASSERT_TRUE(r.ok()) << r.error().message;
    EXPECT_EQ(r->text, *t->render(sample(), false));
    ASSERT_EQ(r->spans.size(), 2u);
    EXPECT_EQ(r->spans[0].messageIndex, 2u);
    EXPECT_EQ(r->spans[1].messageIndex, 4u);
    const auto spanText = [&](size_t k) {
        return r->text.substr(r->spans[k].begin, r->spans[k].end - r->spans[k].begin);
    };
    EXPECT_EQ(spanText(0), "Hello<|im_end|>\n");
    EXPECT_EQ(spanText(1), "Goodbye<|im_end|>\n");
    // What precedes each span is exactly the prompt the model sees at generation time.
    const Conversation all = sample();
    Conversation upToFirst{{all.messages.begin(), all.messages.begin() + 2}, ""};
    EXPECT_EQ(r->text.substr(0, r->spans[0].begin), *t->render(upToFirst, true));
}

TEST(ChatTemplateSpans, ANonIncrementalTemplateIsRefusedForTraining) {
    // Writes the number of messages first, so no shorter render is a prefix of a longer one.
    auto t = ChatTemplate::fromSource(
        "counting.jinja",
        "{{ messages|length }}{% for m in messages %}[{{ m.role }}:{{ m.content }}]{% endfor %}"
        "{% if add_generation_prompt %}[assistant:{% endif %}");
    ASSERT_TRUE(t.ok()) << t.error().message;
    EXPECT_TRUE(t->render(sample(), false).ok());
    auto r = t->renderForTraining(sample());
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(
        r.error().message.rfind("chat.jsonl:3: the chat template counting.jinja cannot be used "
                                "for training: it does not render a conversation "
                                "incrementally, so the assistant's part of message 3 cannot "
                                "be found exactly (",
                                0),
        0u)
        << r.error().message;
}

TEST(ChatTemplateSpans, SpansMustFollowEachOther) {
    // Ignores the messages (found by the fuzzer): every answer's "span" would be the same text.
    auto t = ChatTemplate::fromSource("constant.jinja",
                                      "{% if not add_generation_prompt %}same text{% endif %}");
    ASSERT_TRUE(t.ok()) << t.error().message;
    auto r = t->renderForTraining(sample());
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.error().message.find("message 5 cannot be found exactly (the render up to the "
                                     "previous answer is not the start of this answer's prompt"),
              std::string::npos)
        << r.error().message;
}

TEST(ChatTemplateSpans, ErrorsNameTheConversationAndTheTemplate) {
    auto t = ChatTemplate::fromSource("strict.jinja",
                                      "{% for m in messages %}{% if m.role == 'system' %}"
                                      "{{ raise_exception('no system messages') }}{% endif %}"
                                      "{% endfor %}");
    ASSERT_TRUE(t.ok());
    auto r = t->render(sample(), false);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(
        r.error().message,
        "chat.jsonl:3: the chat template strict.jinja: line 1, column 54: the template raised "
        "an error: no system messages");
    auto bad = ChatTemplate::fromSource("broken.jinja", "{% if %}");
    ASSERT_FALSE(bad.ok());
    EXPECT_EQ(bad.error().message,
              "the chat template broken.jinja cannot be used: line 1, column 7: expected an "
              "expression, found the end of the tag");
}

TEST(ChatTemplateFolder, TokenizerConfigStringAndTokenObjects) {
    TempFolder dir;
    dir.write("tokenizer_config.json",
              R"({"bos_token": {"content": "<s>", "lstrip": false}, "eos_token": "</s>",
                  "chat_template": "{{ bos_token }}{% for m in messages %}{{ m.content }}{{ eos_token }}{% endfor %}"})");
    auto t = ChatTemplate::fromModelFolder(dir.path());
    ASSERT_TRUE(t.ok()) << t.error().message;
    EXPECT_FALSE(t->isBuiltin());
    EXPECT_EQ(t->bosToken(), "<s>");
    EXPECT_EQ(t->eosToken(), "</s>");
    EXPECT_EQ(t->name(), (dir.path() / "tokenizer_config.json").string());
    EXPECT_EQ(*t->render(Conversation{{{"user", "a"}, {"assistant", "b"}}, ""}, false),
              "<s>a</s>b</s>");
    EXPECT_EQ(t->stopStrings(), (std::vector<std::string>{"</s>"}));
}

TEST(ChatTemplateFolder, NamedListTakesDefaultAndJinjaFileWins) {
    TempFolder dir;
    dir.write("tokenizer_config.json",
              R"({"chat_template": [{"name": "tool_use", "template": "tools"},
                                    {"name": "default", "template": "default:{{ messages|length }}"}]})");
    auto t = ChatTemplate::fromModelFolder(dir.path());
    ASSERT_TRUE(t.ok()) << t.error().message;
    EXPECT_EQ(*t->render(sample(), false), "default:5");
    dir.write("chat_template.jinja", "file:{{ messages[0].role }}");
    t = ChatTemplate::fromModelFolder(dir.path());
    ASSERT_TRUE(t.ok()) << t.error().message;
    EXPECT_EQ(t->name(), (dir.path() / "chat_template.jinja").string());
    EXPECT_EQ(*t->render(sample(), false), "file:system");
}

TEST(ChatTemplateFolder, MissingOrMalformedTemplatesAreNamed) {
    TempFolder dir;
    dir.write("tokenizer_config.json",
              R"({"chat_template": [{"name": "tool_use", "template": "x"}]})");
    auto t = ChatTemplate::fromModelFolder(dir.path());
    ASSERT_FALSE(t.ok());
    EXPECT_EQ(t.error().message, (dir.path() / "tokenizer_config.json").string() +
                                     ": \"chat_template\" lists templates (tool_use) but none "
                                     "named \"default\"; the studio renders the default one");
    dir.write("tokenizer_config.json", R"({"eos_token": "</s>"})");
    t = ChatTemplate::fromModelFolder(dir.path());
    ASSERT_FALSE(t.ok());
    EXPECT_EQ(t.error().message,
              dir.path().string() +
                  " has no chat template (no chat_template.jinja, and tokenizer_config.json has "
                  "no \"chat_template\"); use a built-in such as chatml");
    // A model without one (GPT-2, the studio's base) gets the built-in.
    auto fallback = ChatTemplate::forModel(dir.path());
    ASSERT_TRUE(fallback.ok()) << fallback.error().message;
    EXPECT_TRUE(fallback->isBuiltin());
    EXPECT_EQ(fallback->name(), "chatml");
    dir.write("tokenizer_config.json", "{not json");
    t = ChatTemplate::fromModelFolder(dir.path());
    ASSERT_FALSE(t.ok());
    EXPECT_EQ(t.error().message, (dir.path() / "tokenizer_config.json").string() +
                                     " is not a JSON object; fix or remove the file");
}

TEST(ChatTemplateFolder, RealQwen25Config) {
    auto t =
        ChatTemplate::fromModelFolder(std::filesystem::path(WAFER_TOKENIZER_FIXTURES) / "qwen2_5");
    ASSERT_TRUE(t.ok()) << t.error().message;
    EXPECT_EQ(t->eosToken(), "<|im_end|>");
    EXPECT_EQ(t->bosToken(), "");
    EXPECT_EQ(t->stopStrings(), (std::vector<std::string>{"<|im_end|>"}));
    Conversation c{{{"user", "Hi"}, {"assistant", "Hello"}}, ""};
    auto r = t->renderForTraining(c);
    ASSERT_TRUE(r.ok()) << r.error().message;
    EXPECT_EQ(r->text,
              "<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful "
              "assistant.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"
              "Hello<|im_end|>\n");
    ASSERT_EQ(r->spans.size(), 1u);
    EXPECT_EQ(r->text.substr(r->spans[0].begin), "Hello<|im_end|>\n");
}

}  // namespace
