// SPDX-License-Identifier: GPL-3.0-or-later
// ChatTemplate: how a model wants a conversation written as text, and which part of that text
// the model learns to produce. Loaded from a model folder as transformers does (a
// `chat_template.jinja` file, else tokenizer_config.json's `chat_template`: a string, or a list
// of {name, template} of which "default" is taken; bos/eos tokens from tokenizer_config.json,
// strings or {"content": ...}), or one of the named built-ins for models without one (GPT-2, the
// studio's base): "chatml" (the default). Rendered by the engine's Jinja interpreter (jinja.h)
// with the variables transformers gives: messages, bos_token, eos_token, unk_token, pad_token,
// add_generation_prompt, and tools and documents as none. strftime_now is not defined, so a
// template's fallback date is used and a render never depends on the clock.
//
// The assistant spans (renderForTraining): for assistant message i, the span is the bytes that
// render(messages[:i+1]) adds to render(messages[:i], add_generation_prompt=true): the message's
// content, its end-of-turn marker and whatever the template writes after it up to where the next
// message's rendering begins (ChatML: "Hello<|im_end|>\n"; Llama 3: "Hello<|eot_id|>"; Mistral:
// "Hello</s>"). That prefix property, render(messages[:i+1]) being a prefix of the whole
// conversation's render and the render through the previous assistant message being a prefix of
// this one's prompt (so spans follow each other in order) are checked for every assistant message;
// a template that breaks it (e.g. one that rewrites earlier turns) is refused for training with an
// error naming the template, never approximated. Thread-safety: immutable after loading; render
// from any thread.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "engine/chat/conversation.h"
#include "engine/chat/jinja.h"
#include "engine/core/result.h"

namespace ws::chat {

// Bytes [begin, end) of a rendered conversation that assistant message `messageIndex` (an index
// into Conversation::messages) trains on.
struct AssistantSpan {
    size_t messageIndex = 0;
    size_t begin = 0;
    size_t end = 0;

    bool operator==(const AssistantSpan&) const = default;
};

struct RenderedConversation {
    std::string text;                  // render(conversation, add_generation_prompt=false)
    std::vector<AssistantSpan> spans;  // one per assistant message, in order
};

class ChatTemplate {
public:
    // The model folder's own template; an Error when it has none (naming the files looked at).
    static Result<ChatTemplate> fromModelFolder(const std::filesystem::path& folder);
    // The model folder's own template, or the built-in `fallback` when the folder has none
    // (isBuiltin() tells which).
    static Result<ChatTemplate> forModel(const std::filesystem::path& folder,
                                         std::string_view fallback = "chatml");
    // A named built-in ("chatml"); an Error listing the names for another.
    static Result<ChatTemplate> builtin(std::string_view name);
    static std::vector<std::string> builtinNames();
    // A template given as text; `name` is what errors call it.
    static Result<ChatTemplate> fromSource(std::string name, std::string source,
                                           std::string bosToken = {}, std::string eosToken = {});

    // "chatml", or "<folder>/tokenizer_config.json" / "<folder>/chat_template.jinja".
    const std::string& name() const { return m_name; }
    const std::string& source() const { return m_source; }
    bool isBuiltin() const { return m_builtin; }
    const std::string& bosToken() const { return m_bos; }
    const std::string& eosToken() const { return m_eos; }
    // The special tokens a built-in's text needs in the vocabulary (ChatML: <|im_start|>,
    // <|im_end|>); empty for a model's own template, whose tokenizer already has them.
    const std::vector<std::string>& specialTokens() const { return m_specialTokens; }
    // Where generation stops: the eos token and the end-of-turn markers the template writes
    // (<|im_end|>, <|eot_id|>, </s>, <|end|>, <end_of_turn>, <|endoftext|> where it uses them).
    const std::vector<std::string>& stopStrings() const { return m_stops; }

    Result<std::string> render(const Conversation& conversation, bool addGenerationPrompt) const;
    // The whole conversation and its assistant spans; see the header comment.
    Result<RenderedConversation> renderForTraining(const Conversation& conversation) const;

private:
    Result<std::string> renderMessages(const std::vector<ChatMessage>& messages,
                                       bool addGenerationPrompt) const;

    std::string m_name;
    std::string m_source;
    bool m_builtin = false;
    std::string m_bos;
    std::string m_eos;
    std::string m_unk;
    std::string m_pad;
    std::vector<std::string> m_specialTokens;
    std::vector<std::string> m_stops;
    jinja::Template m_template;
};

}  // namespace ws::chat
