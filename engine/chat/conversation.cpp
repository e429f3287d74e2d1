// SPDX-License-Identifier: GPL-3.0-or-later
// Conversation: see conversation.h.
#include "engine/chat/conversation.h"

#include <string>

namespace ws::chat {

namespace {

bool blank(const std::string& text) {
    return text.find_first_not_of(" \t\r\n") == std::string::npos;
}

}  // namespace

Status checkTrainingTurns(const Conversation& conversation) {
    const std::string where = conversation.origin.empty() ? "a conversation" : conversation.origin;
    const auto& messages = conversation.messages;
    if (messages.empty())
        return Error{where +
                     ": the conversation has no messages; give it a user message and the "
                     "assistant's answer"};
    size_t first = 0;
    if (messages[0].role == kSystemRole) first = 1;
    if (first == messages.size())
        return Error{where +
                     ": the conversation holds only a system message; add a user message "
                     "and the assistant's answer"};
    for (size_t i = first; i < messages.size(); ++i) {
        const std::string& role = messages[i].role;
        const std::string_view expected = (i - first) % 2 == 0 ? kUserRole : kAssistantRole;
        const std::string at = where + ": message " + std::to_string(i + 1);
        if (role == kSystemRole)
            return Error{at + " is a system message; only the first message may be one"};
        if (role != kUserRole && role != kAssistantRole)
            return Error{at + " has the role \"" + role +
                         "\"; the roles are system, user and assistant"};
        if (role != expected)
            return Error{at + " is from the " + role + " where the " + std::string(expected) +
                         " speaks next; user and assistant messages must alternate, starting "
                         "with the user"};
        if (role == kAssistantRole && blank(messages[i].content))
            return Error{at +
                         ": the assistant's answer is empty; give it an answer or drop the "
                         "conversation"};
    }
    if (messages.back().role != kAssistantRole)
        return Error{where +
                     ": the conversation ends with the user's message; it needs the "
                     "assistant's answer to train on"};
    return {};
}

void setSystemMessage(Conversation& conversation, const std::string& text) {
    auto& messages = conversation.messages;
    const bool has = !messages.empty() && messages.front().role == kSystemRole;
    if (text.empty()) {
        if (has) messages.erase(messages.begin());
    } else if (has) {
        messages.front().content = text;
    } else {
        std::vector<ChatMessage> withSystem;
        withSystem.reserve(messages.size() + 1);
        withSystem.push_back({std::string(kSystemRole), text});
        for (ChatMessage& m : messages) withSystem.push_back(std::move(m));
        messages = std::move(withSystem);
    }
}

}  // namespace ws::chat
