// SPDX-License-Identifier: GPL-3.0-or-later
// Conversations saved as `messages` JSON Lines: they read back as they were, through this file's
// reader and through the data readers (data/chat_records.h) that turn them into training data;
// malformed files are refused naming the file, the line or message and the problem.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "engine/chat/conversation_file.h"
#include "engine/data/chat_records.h"

namespace ws::chat {
namespace {

namespace fs = std::filesystem;

fs::path tempFile(const std::string& name, const std::string& text = {}) {
    const fs::path dir = fs::temp_directory_path() / "wafer_conversation_file_test";
    fs::create_directories(dir);
    const fs::path p = dir / name;
    if (!text.empty()) std::ofstream(p) << text;
    return p;
}

Conversation sample(std::string answer) {
    return {{{"system", "Answer in one word."},
             {"user", "Capital of France? \"quoted\"\nand a newline"},
             {"assistant", std::move(answer)}},
            {}};
}

TEST(ConversationFile, SavedChatsReadBackThroughTheDataReadersAsTrainingData) {
    const std::vector<Conversation> chats = {sample("Paris"), sample("Paris, é ✓")};
    const fs::path file = tempFile("saved.jsonl");
    ASSERT_TRUE(saveConversations(file, chats).ok());

    auto back = loadConversations(file);
    ASSERT_TRUE(back.ok()) << back.error().message;
    ASSERT_EQ(back->size(), 2u);
    EXPECT_EQ((*back)[0].messages, chats[0].messages);
    EXPECT_EQ((*back)[1].messages, chats[1].messages);
    EXPECT_EQ((*back)[1].origin, file.string() + ":2");

    auto records = data::readRecordFile(file);
    ASSERT_TRUE(records.ok()) << records.error().message;
    EXPECT_EQ(records->report.format, data::RecordFormat::Messages);
    ASSERT_EQ(records->conversations.size(), 2u);
    EXPECT_EQ(records->conversations[0].messages, chats[0].messages);
    EXPECT_EQ(records->conversations[1].messages, chats[1].messages);
}

TEST(ConversationFile, AnObjectOrAnArrayOfMessagesIsOneConversation) {
    auto object = loadConversations(tempFile(
        "one.json", "{\n \"messages\": [\n  {\"role\": \"user\", \"content\": \"Hi\"}\n ]\n}\n"));
    ASSERT_TRUE(object.ok()) << object.error().message;
    ASSERT_EQ(object->size(), 1u);
    EXPECT_EQ(object->front().messages, (std::vector<ChatMessage>{{"user", "Hi"}}));
    auto array = parseMessagesJson(
        R"([{"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}])",
        "x");
    ASSERT_TRUE(array.ok()) << array.error().message;
    EXPECT_EQ(array->messages, (std::vector<ChatMessage>{{"user", "ab"}}));
}

TEST(ConversationFile, MalformedFilesNameTheFileThePlaceAndTheProblem) {
    const fs::path notJson = tempFile("bad.jsonl", "{\"messages\": []}\n{\"messages\": [\n");
    auto a = loadConversations(notJson);
    ASSERT_FALSE(a.ok());
    EXPECT_NE(a.error().message.find(notJson.string() + ":2: not valid JSON"), std::string::npos)
        << a.error().message;

    auto b = parseMessagesJson(R"({"msgs": []})", "f.json");
    ASSERT_FALSE(b.ok());
    EXPECT_NE(b.error().message.find("f.json: the object has no \"messages\""), std::string::npos)
        << b.error().message;

    auto c = parseMessagesJson(R"({"messages": [{"content": "x"}]})", "f.json");
    ASSERT_FALSE(c.ok());
    EXPECT_NE(c.error().message.find("f.json: message 1 has no \"role\""), std::string::npos)
        << c.error().message;

    auto d = parseMessagesJson(R"({"messages": [{"role": "user", "content": 3}]})", "f.json");
    ASSERT_FALSE(d.ok());
    EXPECT_NE(d.error().message.find("\"content\" is number"), std::string::npos)
        << d.error().message;

    auto e = loadConversations(tempFile("missing_never_written.jsonl"));
    ASSERT_FALSE(e.ok());
    EXPECT_NE(e.error().message.find("missing_never_written.jsonl"), std::string::npos);
}

}  // namespace
}  // namespace ws::chat
