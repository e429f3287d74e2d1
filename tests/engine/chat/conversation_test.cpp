// SPDX-License-Identifier: GPL-3.0-or-later
// The training conversation rules: each broken one is refused naming where and why; the system
// prompt set, replaced or removed without touching the turns.
#include "engine/chat/conversation.h"

#include <gtest/gtest.h>

using ws::chat::ChatMessage;
using ws::chat::checkTrainingTurns;
using ws::chat::Conversation;

namespace {

Conversation make(std::vector<ChatMessage> messages) {
    return Conversation{std::move(messages), "chat.jsonl:7"};
}

std::string errorOf(const Conversation& c) {
    const ws::Status s = checkTrainingTurns(c);
    return s.ok() ? std::string() : s.error().message;
}

}  // namespace

TEST(Conversation, SystemThenAlternatingTurnsEndingWithTheAssistantTrain) {
    EXPECT_TRUE(checkTrainingTurns(make({{"user", "Hi"}, {"assistant", "Hello"}})).ok());
    EXPECT_TRUE(checkTrainingTurns(make({{"system", "Be brief"},
                                         {"user", "Hi"},
                                         {"assistant", "Hello"},
                                         {"user", "And?"},
                                         {"assistant", "Bye"}}))
                    .ok());
}

TEST(Conversation, BrokenTurnsNameTheRecordTheMessageAndTheFix) {
    EXPECT_NE(errorOf(make({})).find("chat.jsonl:7: the conversation has no messages"),
              std::string::npos);
    EXPECT_NE(errorOf(make({{"system", "x"}})).find("only a system message"), std::string::npos);
    const std::string order = errorOf(make({{"assistant", "Hello"}, {"user", "Hi"}}));
    EXPECT_NE(order.find("chat.jsonl:7: message 1 is from the assistant where the user speaks"),
              std::string::npos)
        << order;
    EXPECT_NE(errorOf(make({{"user", "a"}, {"user", "b"}})).find("message 2 is from the user"),
              std::string::npos);
    EXPECT_NE(errorOf(make({{"user", "a"}, {"assistant", " \n"}}))
                  .find("message 2: the assistant's answer is empty"),
              std::string::npos);
    EXPECT_NE(errorOf(make({{"user", "a"}, {"assistant", "b"}, {"user", "c"}}))
                  .find("ends with the user's message"),
              std::string::npos);
    EXPECT_NE(errorOf(make({{"user", "a"}, {"bot", "b"}})).find("has the role \"bot\""),
              std::string::npos);
    EXPECT_NE(errorOf(make({{"user", "a"}, {"assistant", "b"}, {"system", "c"}}))
                  .find("only the first message may be one"),
              std::string::npos);
}

TEST(SystemMessage, ReplacesAddsOrRemovesTheFirstMessageAndKeepsTheTurns) {
    using ws::chat::setSystemMessage;
    Conversation c{{{"user", "a"}, {"assistant", "b"}}, {}};
    setSystemMessage(c, "S");
    EXPECT_EQ(c.messages,
              (std::vector<ChatMessage>{{"system", "S"}, {"user", "a"}, {"assistant", "b"}}));
    setSystemMessage(c, "T");
    EXPECT_EQ(c.messages,
              (std::vector<ChatMessage>{{"system", "T"}, {"user", "a"}, {"assistant", "b"}}));
    setSystemMessage(c, "");
    EXPECT_EQ(c.messages, (std::vector<ChatMessage>{{"user", "a"}, {"assistant", "b"}}));
    setSystemMessage(c, "");
    EXPECT_EQ(c.messages.size(), 2u);
}
