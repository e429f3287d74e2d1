// SPDX-License-Identifier: GPL-3.0-or-later
// ChatSession: one conversation with one ChatModel, for `wafer chat` and the Chat tab. Each turn
// renders the whole conversation with the model's chat template and add_generation_prompt (so
// the model sees what a fine-tune on chat data trained it on), generates the assistant's reply
// until the template's end of turn (its end-of-turn tokens and eos as stop tokens, its markers
// as stop strings: sample/generator.h), streams the reply's text through the callback, and
// appends it to the conversation (its surrounding whitespace trimmed, as transformers' chat
// pipeline does). A cancelled reply is kept as far as it went; a failed one leaves the
// conversation as it was.
//
// The system prompt is the conversation's first message when set (setSystemPrompt replaces or
// removes it); reset() starts a new conversation keeping it.
// Thread-safety: one thread at a time (a worker thread in the GUI); cancel from any thread
// through the atomic flag given to reply().
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <string_view>

#include "engine/chat/conversation.h"
#include "engine/core/result.h"
#include "engine/sample/chat_model.h"
#include "engine/sample/generator.h"

namespace ws::sample {

struct ChatReply {
    std::string text;  // as appended to the conversation (trimmed)
    StopReason stop = StopReason::MaxTokens;
    std::string stoppedAt;  // the stop token's spelling or the stop string
    int tokens = 0;         // generated (the stop token not counted)
    int promptTokens = 0;   // the rendered conversation, encoded
    double tokensPerSecond = 0;
};

// Called with each piece of the reply's text as it is generated (raw: not yet trimmed).
using ReplyTextCallback = std::function<void(std::string_view piece)>;

class ChatSession {
public:
    // adapters: for a model with LoRA adapters, false chats with its base (generator.h).
    explicit ChatSession(std::shared_ptr<const ChatModel> model, bool adapters = true);

    const ChatModel& model() const { return *m_model; }
    const chat::Conversation& conversation() const { return m_conversation; }
    // Replaces the conversation (a loaded one; its system message, if any, becomes the prompt).
    void setConversation(chat::Conversation conversation);
    // Empty removes the system message.
    void setSystemPrompt(const std::string& text);
    std::string systemPrompt() const;
    // A new conversation: only the system prompt is kept.
    void reset();

    // Appends the user's message and answers it.
    Result<ChatReply> send(std::string_view userText, const SamplingOptions& options,
                           const ReplyTextCallback& onText = {},
                           const std::atomic<bool>* cancel = nullptr);
    // Answers the conversation as it is; its last message must be the user's.
    Result<ChatReply> answer(const SamplingOptions& options, const ReplyTextCallback& onText = {},
                             const std::atomic<bool>* cancel = nullptr);
    // The text the model is given for the next reply (render with add_generation_prompt).
    Result<std::string> prompt() const;

private:
    std::shared_ptr<const ChatModel> m_model;
    Generator m_generator;
    chat::Conversation m_conversation;
};

}  // namespace ws::sample
