// SPDX-License-Identifier: GPL-3.0-or-later
// A chat conversation as instruction and chat data sets and chat templates see it: a list of
// messages, each a role and its text, in the shape of OpenAI's `messages` (and of the `messages`
// variable a Hugging Face chat template renders). Every data reader (data/chat_records.h) turns
// its records into these; the chat template (chat_template.h) renders them into the text a model
// trains on, the training mask keeps the assistant's part.
//
// A conversation for training (checkTrainingTurns): an optional first "system" message, then
// "user" and "assistant" alternating, starting with "user" and ending with "assistant"; no
// assistant message empty. Errors name the conversation's origin (file:line or record id), the
// message and the fix. Thread-safety: plain values and pure functions.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "engine/core/result.h"

namespace ws::chat {

struct ChatMessage {
    std::string role;  // "system", "user" or "assistant" (templates may know others)
    std::string content;

    bool operator==(const ChatMessage&) const = default;
};

struct Conversation {
    std::vector<ChatMessage> messages;
    // Where it came from, for errors: "data.jsonl:12", "chat.csv: record id 7".
    std::string origin;

    bool operator==(const Conversation&) const = default;
};

// The rules above; ok for a conversation that can be trained on.
Status checkTrainingTurns(const Conversation& conversation);

// Makes `text` the conversation's system prompt: its first message when it is a system message,
// replaced, else a new first message; an empty text removes it.
void setSystemMessage(Conversation& conversation, const std::string& text);

// The roles a training conversation may hold.
inline constexpr std::string_view kSystemRole = "system";
inline constexpr std::string_view kUserRole = "user";
inline constexpr std::string_view kAssistantRole = "assistant";

}  // namespace ws::chat
