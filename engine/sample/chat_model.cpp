// SPDX-License-Identifier: GPL-3.0-or-later
// ChatModel: see chat_model.h.
#include "engine/sample/chat_model.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <filesystem>

#include "engine/fileio/atomic_file.h"
#include "engine/tokenizer/special_tokens.h"

namespace ws::sample {

namespace fs = std::filesystem;

namespace {

// A conversation as plain text, for models without chat tokens: what a base model trained on
// prose can continue ("Assistant:" then its words), ending where it starts the user's next turn.
constexpr std::string_view kPlainSource =
    "{%- for message in messages -%}\n"
    "{%- if message.role == 'system' -%}\n"
    "{{- message.content + '\\n\\n' -}}\n"
    "{%- elif message.role == 'user' -%}\n"
    "{{- 'User: ' + message.content + '\\n\\n' -}}\n"
    "{%- else -%}\n"
    "{{- 'Assistant: ' + message.content + '\\n\\n' -}}\n"
    "{%- endif -%}\n"
    "{%- endfor -%}\n"
    "{%- if add_generation_prompt -%}\n"
    "{{- 'Assistant:' -}}\n"
    "{%- endif -%}\n";

// Where the plain template's reply ends: the model writing the user's next turn.
const std::vector<std::string> kPlainStops = {"\nUser:"};

Result<chat::ChatTemplate> namedTemplate(std::string_view name) {
    if (name == kPlainTemplateName) {
        auto t = chat::ChatTemplate::fromSource(std::string(kPlainTemplateName),
                                                std::string(kPlainSource));
        if (!t.ok()) return Error{"the plain chat template: " + t.error().message};
        return t;
    }
    for (const std::string& builtin : chat::ChatTemplate::builtinNames())
        if (name == builtin) return chat::ChatTemplate::builtin(name);
    return Error{fmt::format(
        "no chat template \"{}\": give one of {}, a .jinja file, or a model folder with its own "
        "template",
        name, fmt::join(chatTemplateNames(), ", "))};
}

Result<chat::ChatTemplate> templateFromPath(const fs::path& path) {
    std::error_code ec;
    if (fs::is_directory(path, ec)) return chat::ChatTemplate::fromModelFolder(path);
    auto source = fileio::readWholeFile(path);
    if (!source.ok()) return Error{"chat template: " + source.error().message};
    return chat::ChatTemplate::fromSource(path.string(), std::move(source).value());
}

Result<chat::ChatTemplate> chosenTemplate(std::string_view choice) {
    std::error_code ec;
    if (choice.ends_with(".jinja") || choice.find('/') != std::string_view::npos ||
        fs::exists(fs::path(choice), ec))
        return templateFromPath(fs::path(choice));
    return namedTemplate(choice);
}

// The folders whose tokenizer files may carry the model's own template.
std::vector<fs::path> templateFolders(const modelio::ModelInfo& model) {
    std::vector<fs::path> out;
    if (!model.tokenizerFolder.empty()) out.push_back(model.tokenizerFolder);
    const config::TokenizerConfig& t = model.config.trainInput.tokenizer;
    const std::string file = t.type == "hf" ? t.tokenizerFile : t.vocabFile;
    if (!file.empty()) out.push_back(fs::path(file).parent_path());
    return out;
}

bool hasOwnTemplate(const fs::path& folder) {
    std::error_code ec;
    if (fs::exists(folder / "chat_template.jinja", ec)) return true;
    if (!fs::exists(folder / "tokenizer_config.json", ec)) return false;
    auto t = chat::ChatTemplate::fromModelFolder(folder);
    return t.ok();
}

}  // namespace

std::vector<std::string> chatTemplateNames() {
    std::vector<std::string> names = chat::ChatTemplate::builtinNames();
    names.emplace_back(kPlainTemplateName);
    return names;
}

Result<ResolvedTemplate> resolveChatTemplate(const modelio::ModelInfo& model,
                                             std::string_view choice) {
    if (!choice.empty() && choice != "auto") {
        auto t = chosenTemplate(choice);
        if (!t.ok()) return t.error();
        return ResolvedTemplate{std::move(t).value(), "chosen"};
    }
    const std::string& trained = model.config.trainInput.chatTemplate;
    if (!trained.empty() && trained != "auto") {
        auto t = chosenTemplate(trained);
        if (!t.ok()) return Error{"the run's train_input.chat_template: " + t.error().message};
        return ResolvedTemplate{std::move(t).value(), "the run's train_input.chat_template"};
    }
    for (const fs::path& folder : templateFolders(model)) {
        if (!hasOwnTemplate(folder)) continue;
        auto t = chat::ChatTemplate::fromModelFolder(folder);
        if (!t.ok()) return t.error();
        return ResolvedTemplate{std::move(t).value(), "the model's own"};
    }
    auto t = chat::ChatTemplate::builtin("chatml");
    if (!t.ok()) return t.error();
    return ResolvedTemplate{std::move(t).value(),
                            "built-in: the model has no chat template of its own"};
}

Result<ChatSetup> chatSetup(const modelio::ModelInfo& model, std::string_view choice) {
    auto resolved = resolveChatTemplate(model, choice);
    if (!resolved.ok()) return resolved.error();
    const chat::ChatTemplate& tmpl = resolved->chatTemplate;
    const int before = model.tokenizer->vocabSize();
    auto with = tokenizer::withSpecialTokens(model.tokenizer, tmpl.specialTokens());
    if (!with.ok()) return Error{"chat template " + tmpl.name() + ": " + with.error().message};
    const int V = model.shape.vocab;
    if (with->tokenizer->vocabSize() > V) {
        std::vector<std::string> missing;
        for (size_t i = 0; i < with->ids.size(); ++i)
            if (with->ids[i] >= V) missing.push_back(tmpl.specialTokens()[i]);
        return Error{fmt::format(
            "the chat template {} ({}) needs the special token(s) {}, which this model's "
            "vocabulary ({} tokens; its tokenizer has {}) does not hold: it was not fine-tuned "
            "on chat data with this template. Chat with a template that needs no new tokens "
            "(the built-in \"{}\", or a .jinja file of your own), or fine-tune the model on "
            "chat data with {} first (the fine-tune adds the tokens)",
            tmpl.name(), resolved->why, fmt::join(missing, ", "), V, before, kPlainTemplateName,
            tmpl.name())};
    }
    ChatSetup out;
    out.addedTokens.assign(tmpl.specialTokens().begin(), tmpl.specialTokens().end());
    out.stopStrings = tmpl.stopStrings();
    if (tmpl.name() == kPlainTemplateName)
        out.stopStrings.insert(out.stopStrings.end(), kPlainStops.begin(), kPlainStops.end());
    for (const std::string& stop : out.stopStrings) {
        const std::vector<int32_t> ids = with->tokenizer->encode(stop);
        if (ids.size() == 1 && with->tokenizer->decode(ids) == stop)
            out.stopTokens.push_back(ids[0]);
    }
    out.tokenizer = with->tokenizer;
    out.chatTemplate = std::move(resolved->chatTemplate);
    out.templateWhy = std::move(resolved->why);
    return out;
}

Result<std::shared_ptr<const ChatModel>> prepareChatModel(modelio::LoadedModel model,
                                                          std::string_view choice) {
    auto setup = chatSetup(model, choice);
    if (!setup.ok()) return setup.error();
    auto out = std::make_shared<ChatModel>();
    model.tokenizer = setup->tokenizer;
    out->model = std::move(model);
    out->chatTemplate = std::move(setup->chatTemplate);
    out->templateWhy = std::move(setup->templateWhy);
    out->stopTokens = std::move(setup->stopTokens);
    out->stopStrings = std::move(setup->stopStrings);
    out->addedTokens = std::move(setup->addedTokens);
    return std::shared_ptr<const ChatModel>(std::move(out));
}

Result<std::shared_ptr<const ChatModel>> prepareChatModelOrPlain(modelio::LoadedModel model,
                                                                 std::string_view choice,
                                                                 std::string* note) {
    if (note) note->clear();
    if (!choice.empty() && choice != "auto") return prepareChatModel(std::move(model), choice);
    auto chatModel = prepareChatModel(model, choice);
    if (chatModel.ok()) return chatModel;
    auto plain = prepareChatModel(std::move(model), kPlainTemplateName);
    if (!plain.ok()) return chatModel;  // the first reason is the one that matters
    if (note) *note = "its vocabulary has no room for its own template's tokens";
    return plain;
}

}  // namespace ws::sample
