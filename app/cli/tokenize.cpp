// SPDX-License-Identifier: GPL-3.0-or-later
// `wafer tokenize --tokenizer PATH [--json] [--add-special] (TEXT | --file F)`: shows the token ids
// a model sees for a text, so a user can check a tokenizer against the library it comes from.
// PATH is a model folder or a tokenizer file (loadTokenizerAt). Text output: the ids on one line,
// then one line per token with its id, its vocabulary spelling and the bytes it stands for;
// --json: one JSON array of the ids.
// `--chat MESSAGES.json [--add-generation-prompt] [--chat-template NAME|FILE]`: renders the
// conversation with the model's chat template (the folder's, else the built-in ChatML with the
// special tokens it needs) and shows the text, the ids and the training mask (1 = trained on:
// the assistant's answers); --json: {"text", "ids", "mask", "template"}.
#include <fmt/format.h>

#include <iostream>
#include <nlohmann/json.hpp>

#include "app/cli/commands.h"
#include "app/cli/output.h"
#include "engine/chat/chat_template.h"
#include "engine/fileio/atomic_file.h"
#include "engine/modelio/load_model.h"
#include "engine/tokenizer/masked_encoding.h"
#include "engine/tokenizer/special_tokens.h"

namespace ws::cli {
namespace {

struct TokenizeOptions {
    std::string tokenizer;
    std::string text;
    std::string file;
    bool addSpecial = false;
    std::string chat;  // a conversation file: render it with the chat template
    std::string chatTemplate;
    bool addGenerationPrompt = false;
};

// A token's bytes for the readable view: printable text as it is, the rest escaped.
std::string shownBytes(std::string_view bytes) {
    std::string out;
    for (const char c : bytes) {
        const auto b = uint8_t(c);
        if (c == '\n') {
            out += "\\n";
        } else if (c == '\t') {
            out += "\\t";
        } else if (c == '\\') {
            out += "\\\\";
        } else if (b < 0x20 || b == 0x7F) {
            out += fmt::format("\\x{:02x}", b);
        } else {
            out += c;
        }
    }
    return out;
}

// A conversation file: {"messages": [{"role", "content"}, ...]} or the bare list. Unlike training
// data it may end with the user's message (to render a generation prompt after it).
Result<chat::Conversation> readConversation(const std::string& file) {
    auto read = fileio::readWholeFile(file);
    if (!read.ok()) return read.error();
    const nlohmann::json j = nlohmann::json::parse(*read, nullptr, false);
    if (j.is_discarded())
        return Error{file +
                     ": not valid JSON; give {\"messages\": [{\"role\": \"user\", "
                     "\"content\": \"...\"}, ...]}"};
    const nlohmann::json* list = &j;
    if (j.is_object() && j.contains("messages")) list = &j["messages"];
    if (!list->is_array() || list->empty())
        return Error{file +
                     ": expected {\"messages\": [...]} or a list of messages, each "
                     "{\"role\": ..., \"content\": ...}"};
    chat::Conversation c;
    c.origin = file;
    for (size_t i = 0; i < list->size(); ++i) {
        const nlohmann::json& m = (*list)[i];
        if (!m.is_object() || !m.contains("role") || !m["role"].is_string() ||
            !m.contains("content") || !m["content"].is_string())
            return Error{
                fmt::format("{}: message {} needs a string \"role\" and a string "
                            "\"content\"",
                            file, i + 1)};
        c.messages.push_back({m["role"].get<std::string>(), m["content"].get<std::string>()});
    }
    return c;
}

Result<chat::ChatTemplate> chatTemplateFor(const TokenizeOptions& opt) {
    namespace fs = std::filesystem;
    if (!opt.chatTemplate.empty()) {
        if (opt.chatTemplate.ends_with(".jinja")) {
            auto source = fileio::readWholeFile(opt.chatTemplate);
            if (!source.ok()) return source.error();
            return chat::ChatTemplate::fromSource(opt.chatTemplate, std::move(source).value());
        }
        return chat::ChatTemplate::builtin(opt.chatTemplate);
    }
    const fs::path at(opt.tokenizer);
    return chat::ChatTemplate::forModel(fs::is_directory(at) ? at : at.parent_path());
}

int runChat(const TokenizeOptions& opt, const CommonOptions& common,
            std::unique_ptr<tokenizer::Tokenizer> loaded) {
    auto conversation = readConversation(opt.chat);
    if (!conversation.ok()) return fail(conversation.error().message);
    auto chatTemplate = chatTemplateFor(opt);
    if (!chatTemplate.ok()) return fail(chatTemplate.error().message);
    // A built-in template's markers become special tokens the tokenizer may lack.
    auto tokens = tokenizer::withSpecialTokens(std::move(loaded), chatTemplate->specialTokens());
    if (!tokens.ok()) return fail(tokens.error().message);
    const tokenizer::Tokenizer& tok = *tokens->tokenizer;
    auto rendered = chatTemplate->renderForTraining(*conversation);
    if (!rendered.ok()) return fail(rendered.error().message);
    std::string text = rendered->text;
    if (opt.addGenerationPrompt) {
        auto prompted = chatTemplate->render(*conversation, true);
        if (!prompted.ok()) return fail(prompted.error().message);
        text = std::move(prompted).value();
    }
    std::vector<tokenizer::ByteSpan> spans;
    for (const chat::AssistantSpan& s : rendered->spans) spans.push_back({s.begin, s.end});
    auto encoded = tokenizer::encodeWithMask(tok, text, spans, false);
    if (!encoded.ok()) return fail(opt.chat + ": " + encoded.error().message);
    if (common.json) {
        const nlohmann::json out = {{"text", text},
                                    {"ids", encoded->ids},
                                    {"mask", encoded->mask},
                                    {"template", chatTemplate->name()}};
        std::cout << out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
        return 0;
    }
    std::cout << text << (text.ends_with('\n') ? "" : "\n");
    size_t trained = 0;
    for (const uint8_t m : encoded->mask) trained += m != 0;
    std::cout << fmt::format("--- {} tokens, {} trained on (marked *); {} template, {} tokenizer\n",
                             encoded->ids.size(), trained, chatTemplate->name(), tok.kind());
    for (size_t i = 0; i < encoded->ids.size(); ++i) {
        const int32_t id = encoded->ids[i];
        std::cout << fmt::format("{} {:>8}  {:<24}  {}\n", encoded->mask[i] ? '*' : ' ', id,
                                 tok.tokenName(id),
                                 shownBytes(tok.decode(std::span<const int32_t>(&id, 1))));
    }
    return 0;
}

int runTokenize(const TokenizeOptions& opt, const CommonOptions& common) {
    std::string text = opt.text;
    if (!opt.file.empty()) {
        auto read = fileio::readWholeFile(opt.file);
        if (!read.ok()) return fail(read.error().message);
        text = std::move(read).value();
    }
    auto tokenizer = modelio::loadTokenizerAt(opt.tokenizer);
    if (!tokenizer.ok()) return fail(tokenizer.error().message);
    if (!opt.chat.empty()) return runChat(opt, common, std::move(tokenizer).value());
    auto ids = (*tokenizer)->encodeChecked(text, opt.addSpecial);
    if (!ids.ok()) {
        return fail(
            fmt::format("{}: {}", opt.file.empty() ? "TEXT" : opt.file, ids.error().message));
    }
    if (common.json) {
        std::cout << nlohmann::json(*ids).dump() << "\n";
        return 0;
    }
    std::string line;
    for (size_t i = 0; i < ids->size(); ++i) line += fmt::format("{}{}", i ? " " : "", (*ids)[i]);
    std::cout << line << "\n";
    std::cout << fmt::format("{} tokens, {} bytes ({} tokenizer)\n", ids->size(), text.size(),
                             (*tokenizer)->kind());
    for (const int32_t id : *ids) {
        std::cout << fmt::format(
            "{:>8}  {:<24}  {}\n", id, (*tokenizer)->tokenName(id),
            shownBytes((*tokenizer)->decode(std::span<const int32_t>(&id, 1))));
    }
    return 0;
}

}  // namespace

void addTokenizeCommand(CLI::App& app, CommonOptions& common, int& exitCode) {
    auto opt = std::make_shared<TokenizeOptions>();
    CLI::App* cmd = app.add_subcommand(
        "tokenize",
        "Print the token ids a tokenizer gives a text (a model folder or a tokenizer.json, e.g. "
        "a Llama, Qwen2 or Mistral tokenizer)");
    cmd->add_option("--tokenizer", opt->tokenizer,
                    "a model folder, or a tokenizer file (Hugging Face tokenizer.json, GPT-2 "
                    "vocab.json)")
        ->required();
    cmd->add_option("text", opt->text, "the text to tokenize");
    cmd->add_option("--file", opt->file, "read the text from this file instead");
    cmd->add_flag("--add-special", opt->addSpecial,
                  "add the special tokens the tokenizer's post-processor adds (BOS/EOS)");
    cmd->add_option("--chat", opt->chat,
                    "a conversation file ({\"messages\": [{\"role\", \"content\"}, ...]}): "
                    "render it with the model's chat template and show what is trained on");
    cmd->add_flag("--add-generation-prompt", opt->addGenerationPrompt,
                  "with --chat: end with the template's prompt for the assistant's answer");
    cmd->add_option("--chat-template", opt->chatTemplate,
                    "with --chat: a built-in template (chatml) or a .jinja file instead of the "
                    "model's own");
    cmd->add_flag("--json", common.json,
                  "print the ids as one JSON array (with --chat: {text, ids, mask, template})");
    cmd->callback([opt, &common, &exitCode] {
        if (!opt->chat.empty()) {
            if (!opt->text.empty() || !opt->file.empty()) {
                exitCode = fail("give --chat or a text, not both");
                return;
            }
            exitCode = runTokenize(*opt, common);
            return;
        }
        if (opt->addGenerationPrompt || !opt->chatTemplate.empty()) {
            exitCode = fail("--add-generation-prompt and --chat-template go with --chat FILE");
            return;
        }
        if (opt->file.empty() == opt->text.empty() && !(opt->file.empty() && opt->text.empty())) {
            exitCode = fail("give the text or --file, not both");
            return;
        }
        if (opt->file.empty() && opt->text.empty()) {
            exitCode = fail("nothing to tokenize: give TEXT or --file F");
            return;
        }
        exitCode = runTokenize(*opt, common);
    });
}

}  // namespace ws::cli
