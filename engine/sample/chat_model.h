// SPDX-License-Identifier: GPL-3.0-or-later
// ChatModel: a loaded model made ready to chat: its chat template chosen and the tokenizer given
// the template's special tokens, with the ids and strings where a reply ends.
//
// Which template (resolveChatTemplate), unless one is chosen by name or file:
//   1. the run's train_input.chat_template when it names one (a run fine-tuned on chat records
//      with chatml, or a .jinja file): the template the model learned;
//   2. the model's own: chat_template.jinja or tokenizer_config.json's chat_template beside its
//      tokenizer (a Hugging Face folder, or a run whose train_input.tokenizer folder has one);
//   3. the built-in ChatML.
// A choice: "auto" (the above), a built-in name ("chatml"; "plain", this file's template for
// models that know no chat tokens: "User: ...\n\nAssistant:" written as plain text), a .jinja
// file, or a model folder (its own template).
//
// The vocabulary: a built-in's special tokens (ChatML's <|im_start|>, <|im_end|>) join the
// tokenizer as a fine-tune adds them (tokenizer/special_tokens.h: the same ids); a model whose
// vocab_size does not cover them (the shipped base, any model not fine-tuned on ChatML) is
// refused with an error naming the template, the tokens and the fixes, never run with ids past its
// embedding.
// Thread-safety: pure functions; a ChatModel is immutable once made and may be shared.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "engine/chat/chat_template.h"
#include "engine/core/result.h"
#include "engine/modelio/load_model.h"

namespace ws::sample {

// The name of the template without special tokens, for models that have no chat tokens.
inline constexpr std::string_view kPlainTemplateName = "plain";

// Every template name a choice may give (the engine's built-ins and "plain").
std::vector<std::string> chatTemplateNames();

struct ResolvedTemplate {
    chat::ChatTemplate chatTemplate;
    // Why this one, for the user: "the run's train_input.chat_template", "the model's own",
    // "built-in: the model has no chat template of its own", "chosen".
    std::string why;
};

// `choice` as above ("auto" or empty: the model's). Errors name the choice and what is allowed.
Result<ResolvedTemplate> resolveChatTemplate(const modelio::ModelInfo& model,
                                             std::string_view choice);

// Everything chatting needs but the weights: cheap enough for a GUI thread (from
// modelio::loadModelInfo), so a picker can say which template a model chats with, or why it
// cannot, before loading it.
struct ChatSetup {
    chat::ChatTemplate chatTemplate;
    std::string templateWhy;                                // ResolvedTemplate::why
    std::shared_ptr<const tokenizer::Tokenizer> tokenizer;  // with the template's tokens
    std::vector<int32_t> stopTokens;
    std::vector<std::string> stopStrings;
    std::vector<std::string> addedTokens;
};

// The template chosen by `choice` and the vocabulary check above.
Result<ChatSetup> chatSetup(const modelio::ModelInfo& model, std::string_view choice);

struct ChatModel {
    modelio::LoadedModel model;  // its tokenizer holds the template's special tokens
    chat::ChatTemplate chatTemplate;
    std::string templateWhy;               // ResolvedTemplate::why
    std::vector<int32_t> stopTokens;       // end-of-turn markers that are one token
    std::vector<std::string> stopStrings;  // every end-of-turn marker, as text
    std::vector<std::string> addedTokens;  // special tokens the template added (may be empty)
};

// The model, the template chosen by `choice`, and the checks above.
Result<std::shared_ptr<const ChatModel>> prepareChatModel(modelio::LoadedModel model,
                                                          std::string_view choice);

// The same, except that with `auto` (or empty) a model that cannot hold its template's tokens
// (the base a chat fine-tune started from) chats through the plain template instead, so it can
// still be compared with its fine-tune; `note` (when given) then says why, else is cleared.
Result<std::shared_ptr<const ChatModel>> prepareChatModelOrPlain(modelio::LoadedModel model,
                                                                 std::string_view choice,
                                                                 std::string* note = nullptr);

}  // namespace ws::sample
