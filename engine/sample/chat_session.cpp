// SPDX-License-Identifier: GPL-3.0-or-later
// ChatSession: see chat_session.h.
#include "engine/sample/chat_session.h"

#include <utility>

namespace ws::sample {

namespace {

std::string trimmed(std::string_view text) {
    const auto begin = text.find_first_not_of(" \t\r\n");
    if (begin == std::string_view::npos) return {};
    const auto end = text.find_last_not_of(" \t\r\n");
    return std::string(text.substr(begin, end - begin + 1));
}

bool isSystem(const chat::ChatMessage& m) {
    return m.role == chat::kSystemRole;
}

}  // namespace

ChatSession::ChatSession(std::shared_ptr<const ChatModel> model, bool adapters)
    : m_model(std::move(model)), m_generator(m_model->model, adapters) {}

void ChatSession::setConversation(chat::Conversation conversation) {
    m_conversation = std::move(conversation);
}

void ChatSession::setSystemPrompt(const std::string& text) {
    chat::setSystemMessage(m_conversation, text);
}

std::string ChatSession::systemPrompt() const {
    const auto& messages = m_conversation.messages;
    return !messages.empty() && isSystem(messages.front()) ? messages.front().content
                                                           : std::string();
}

void ChatSession::reset() {
    const std::string system = systemPrompt();
    m_conversation = {};
    setSystemPrompt(system);
}

Result<std::string> ChatSession::prompt() const {
    return m_model->chatTemplate.render(m_conversation, /*addGenerationPrompt=*/true);
}

Result<ChatReply> ChatSession::send(std::string_view userText, const SamplingOptions& options,
                                    const ReplyTextCallback& onText,
                                    const std::atomic<bool>* cancel) {
    m_conversation.messages.push_back({std::string(chat::kUserRole), std::string(userText)});
    auto reply = answer(options, onText, cancel);
    if (!reply.ok()) m_conversation.messages.pop_back();
    return reply;
}

Result<ChatReply> ChatSession::answer(const SamplingOptions& options,
                                      const ReplyTextCallback& onText,
                                      const std::atomic<bool>* cancel) {
    const auto& messages = m_conversation.messages;
    if (messages.empty() || messages.back().role != chat::kUserRole)
        return Error{std::string("the conversation must end with the user's message to be "
                                 "answered; it ends with ") +
                     (messages.empty() ? "nothing" : "a " + messages.back().role + " message")};
    auto text = prompt();
    if (!text.ok()) return text.error();
    SamplingOptions withStops = options;
    withStops.stopTokens.insert(withStops.stopTokens.end(), m_model->stopTokens.begin(),
                                m_model->stopTokens.end());
    withStops.stopStrings.insert(withStops.stopStrings.end(), m_model->stopStrings.begin(),
                                 m_model->stopStrings.end());
    auto generated = m_generator.generate(
        *text, withStops,
        [&](const TokenEvent& e) {
            if (onText && !e.text.empty()) onText(e.text);
        },
        cancel);
    if (!generated.ok()) return generated.error();
    ChatReply reply;
    reply.text = trimmed(generated->text);
    reply.stop = generated->stop;
    reply.stoppedAt = generated->stoppedAt;
    reply.tokens = int(generated->tokens.size());
    reply.promptTokens = int(generated->promptTokens.size());
    reply.tokensPerSecond = generated->tokensPerSecond();
    m_conversation.messages.push_back({std::string(chat::kAssistantRole), reply.text});
    return reply;
}

}  // namespace ws::sample
