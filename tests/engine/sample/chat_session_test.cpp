// SPDX-License-Identifier: GPL-3.0-or-later
// ChatModel and ChatSession: which template a model chats with and why, the refusal of a
// vocabulary without the template's tokens, the rendered prompt, the end-of-turn stop, and the
// conversation a turn leaves (user and assistant appended; a failed turn leaves nothing).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "engine/model/parameters.h"
#include "engine/sample/chat_session.h"
#include "sample_test_util.h"

namespace ws::sample {
namespace {

using testing::alwaysPredict;
using testing::greedy;
using testing::samplingShape;
using testing::tinyModel;

// A byte model with room for ChatML's two tokens (ids 256 and 257).
modelio::LoadedModel chatmlRoomModel(uint64_t seed = 1) {
    return tinyModel(samplingShape(258, 96, /*tied=*/false), seed);
}

TEST(ChatModel, AModelWithoutChatTokensIsRefusedNamingTemplateTokensAndFix) {
    const auto refused = prepareChatModel(tinyModel(samplingShape(256, 64)), "auto");
    ASSERT_FALSE(refused.ok());
    const std::string& m = refused.error().message;
    EXPECT_NE(m.find("chatml"), std::string::npos) << m;
    EXPECT_NE(m.find("<|im_start|>, <|im_end|>"), std::string::npos) << m;
    EXPECT_NE(m.find("256 tokens"), std::string::npos) << m;
    EXPECT_NE(m.find("\"plain\""), std::string::npos) << m;
    EXPECT_NE(m.find("fine-tune"), std::string::npos) << m;
}

TEST(ChatModel, ChatmlTokensTakeTheIdsAFineTuneGivesThemAndEndTheTurn) {
    auto made = prepareChatModel(chatmlRoomModel(), "auto");
    ASSERT_TRUE(made.ok()) << made.error().message;
    const ChatModel& cm = **made;
    EXPECT_EQ(cm.chatTemplate.name(), "chatml");
    EXPECT_EQ(cm.templateWhy, "built-in: the model has no chat template of its own");
    EXPECT_EQ(cm.model.tokenizer->vocabSize(), 258);
    EXPECT_EQ(cm.model.tokenizer->encode("<|im_start|>"), std::vector<int32_t>{256});
    EXPECT_EQ(cm.stopTokens, std::vector<int32_t>{257});
    EXPECT_EQ(cm.addedTokens, (std::vector<std::string>{"<|im_start|>", "<|im_end|>"}));
}

TEST(ChatModel, TheRunsTrainedTemplateWinsThenTheModelsOwnThenChatml) {
    modelio::LoadedModel run = chatmlRoomModel();
    run.config.trainInput.chatTemplate = "chatml";
    auto fromRun = resolveChatTemplate(run, "auto");
    ASSERT_TRUE(fromRun.ok()) << fromRun.error().message;
    EXPECT_EQ(fromRun->why, "the run's train_input.chat_template");

    const auto folder = std::filesystem::temp_directory_path() / "wafer_chat_own_template";
    std::filesystem::create_directories(folder);
    std::ofstream(folder / "tokenizer_config.json")
        << R"({"eos_token": "</s>", "chat_template": "{% for m in messages %}[{{ m.role }}] )"
           R"({{ m.content }}</s>{% endfor %}{% if add_generation_prompt %}[assistant] )"
           R"({% endif %}"})";
    modelio::LoadedModel own = chatmlRoomModel();
    own.tokenizerFolder = folder;
    auto fromFolder = resolveChatTemplate(own, "");
    ASSERT_TRUE(fromFolder.ok()) << fromFolder.error().message;
    EXPECT_EQ(fromFolder->why, "the model's own");
    EXPECT_EQ(fromFolder->chatTemplate.name(), (folder / "tokenizer_config.json").string());
    // The model's own template ends its turns with </s>: a stop string for the byte tokenizer.
    auto cm = prepareChatModel(std::move(own), "auto");
    ASSERT_TRUE(cm.ok()) << cm.error().message;
    EXPECT_EQ((*cm)->stopStrings, std::vector<std::string>{"</s>"});
    EXPECT_TRUE((*cm)->stopTokens.empty());

    auto chosen = resolveChatTemplate(run, "plain");
    ASSERT_TRUE(chosen.ok()) << chosen.error().message;
    EXPECT_EQ(chosen->why, "chosen");
    EXPECT_EQ(chosen->chatTemplate.name(), "plain");
    std::filesystem::remove_all(folder);
}

TEST(ChatModel, AnUnknownTemplateNameListsTheNames) {
    const auto bad = resolveChatTemplate(chatmlRoomModel(), "llama9");
    ASSERT_FALSE(bad.ok());
    EXPECT_NE(bad.error().message.find("\"llama9\""), std::string::npos);
    EXPECT_NE(bad.error().message.find("chatml, plain"), std::string::npos) << bad.error().message;
    const auto missing = resolveChatTemplate(chatmlRoomModel(), "/nonexistent/t.jinja");
    ASSERT_FALSE(missing.ok());
    EXPECT_NE(missing.error().message.find("/nonexistent/t.jinja"), std::string::npos);
}

TEST(ChatSession, AReplyStopsAtTheEndOfTurnTokenAndJoinsTheConversation) {
    modelio::LoadedModel m = chatmlRoomModel();
    alwaysPredict(m, 257);  // <|im_end|>: the reply ends at once
    auto cm = prepareChatModel(std::move(m), "chatml");
    ASSERT_TRUE(cm.ok()) << cm.error().message;
    ChatSession chat(*cm);
    chat.setSystemPrompt("Be brief.");
    auto reply = chat.send("Hi", greedy(20));
    ASSERT_TRUE(reply.ok()) << reply.error().message;
    EXPECT_EQ(reply->stop, StopReason::StopToken);
    EXPECT_EQ(reply->stoppedAt, "<|im_end|>");
    EXPECT_EQ(reply->tokens, 0);
    const auto& msgs = chat.conversation().messages;
    ASSERT_EQ(msgs.size(), 3u);
    EXPECT_EQ(msgs[0], (chat::ChatMessage{"system", "Be brief."}));
    EXPECT_EQ(msgs[1], (chat::ChatMessage{"user", "Hi"}));
    EXPECT_EQ(msgs[2].role, "assistant");
    // The next prompt holds the whole conversation in ChatML and asks for the assistant.
    auto prompt = chat.prompt();
    ASSERT_TRUE(prompt.ok());
    EXPECT_EQ(*prompt,
              "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n"
              "<|im_start|>assistant\n<|im_end|>\n<|im_start|>assistant\n");
}

TEST(ChatSession, ARepliesTextIsStreamedAndKeptTrimmed) {
    modelio::LoadedModel m = chatmlRoomModel(3);
    alwaysPredict(m, 'x');
    auto cm = prepareChatModel(std::move(m), "chatml");
    ASSERT_TRUE(cm.ok()) << cm.error().message;
    ChatSession chat(*cm);
    std::string streamed;
    auto reply = chat.send("Say x", greedy(5), [&](std::string_view p) { streamed += p; });
    ASSERT_TRUE(reply.ok()) << reply.error().message;
    EXPECT_EQ(streamed, "xxxxx");
    EXPECT_EQ(reply->text, "xxxxx");
    EXPECT_EQ(reply->stop, StopReason::MaxTokens);
    EXPECT_EQ(reply->tokens, 5);
    EXPECT_EQ(chat.conversation().messages.back(), (chat::ChatMessage{"assistant", "xxxxx"}));

    // New conversation: the system prompt stays, the turns go.
    chat.setSystemPrompt("S");
    chat.reset();
    EXPECT_EQ(chat.conversation().messages, (std::vector<chat::ChatMessage>{{"system", "S"}}));
    chat.setSystemPrompt("");
    EXPECT_TRUE(chat.conversation().messages.empty());
}

TEST(ChatSession, AFailedTurnLeavesTheConversationAsItWas) {
    auto cm = prepareChatModel(chatmlRoomModel(), "chatml");
    ASSERT_TRUE(cm.ok()) << cm.error().message;
    ChatSession chat(*cm);
    SamplingOptions bad = greedy(5);
    bad.topP = 2.0;
    EXPECT_FALSE(chat.send("Hi", bad).ok());
    EXPECT_TRUE(chat.conversation().messages.empty());
    // answer() needs the user's message last.
    const auto none = chat.answer(greedy(5));
    ASSERT_FALSE(none.ok());
    EXPECT_NE(none.error().message.find("must end with the user's message"), std::string::npos);
}

TEST(ChatSession, ThePlainTemplateChatsWithAModelThatHasNoChatTokens) {
    auto cm = prepareChatModel(tinyModel(samplingShape(256, 96)), "plain");
    ASSERT_TRUE(cm.ok()) << cm.error().message;
    EXPECT_TRUE((*cm)->addedTokens.empty());
    EXPECT_EQ((*cm)->stopStrings, std::vector<std::string>{"\nUser:"});
    ChatSession chat(*cm);
    chat.setSystemPrompt("A chat.");
    auto reply = chat.send("Hello", greedy(8));
    ASSERT_TRUE(reply.ok()) << reply.error().message;
    EXPECT_EQ(reply->promptTokens, int(std::string("A chat.\n\nUser: Hello\n\nAssistant:").size()));
    EXPECT_EQ(chat.conversation().messages.size(), 3u);
}

}  // namespace
}  // namespace ws::sample
