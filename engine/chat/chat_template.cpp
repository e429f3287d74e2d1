// SPDX-License-Identifier: GPL-3.0-or-later
// ChatTemplate: see chat_template.h. Loading (model folder, built-ins), rendering, and the
// incremental render that finds the assistant spans.
#include "engine/chat/chat_template.h"

#include <nlohmann/json.hpp>

#include <system_error>

#include "engine/fileio/atomic_file.h"

namespace ws::chat {

namespace {

// ChatML (a format: `<|im_start|>{role}\n{content}<|im_end|>\n`), written for this project.
constexpr std::string_view kChatmlSource =
    "{%- for message in messages -%}\n"
    "{{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>\\n' -}}\n"
    "{%- endfor -%}\n"
    "{%- if add_generation_prompt -%}\n"
    "{{- '<|im_start|>assistant\\n' -}}\n"
    "{%- endif -%}\n";

// End-of-turn markers of the common templates; those a template's text holds stop generation.
constexpr std::string_view kTurnMarkers[] = {"<|im_end|>", "<|eot_id|>",    "</s>",
                                             "<|end|>",    "<end_of_turn>", "<|endoftext|>"};

// A token entry of tokenizer_config.json: a string, {"content": ...}, null or absent.
Result<std::string> tokenText(const nlohmann::json& config, const char* key,
                              const std::string& where) {
    if (!config.contains(key) || config[key].is_null()) return std::string();
    const auto& t = config[key];
    if (t.is_string()) return t.get<std::string>();
    if (t.is_object() && t.contains("content") && t["content"].is_string())
        return t["content"].get<std::string>();
    return Error{where + ": \"" + key +
                 "\" is neither a string nor an object with a \"content\" string"};
}

Result<std::string> templateFromConfig(const nlohmann::json& config, const std::string& where) {
    if (!config.contains("chat_template") || config["chat_template"].is_null())
        return std::string();
    const auto& t = config["chat_template"];
    if (t.is_string()) return t.get<std::string>();
    if (t.is_array()) {
        std::string names;
        for (const auto& entry : t) {
            if (!entry.is_object() || !entry.contains("name") || !entry["name"].is_string() ||
                !entry.contains("template") || !entry["template"].is_string())
                return Error{where +
                             ": \"chat_template\" is a list whose entries must be "
                             "{\"name\": ..., \"template\": ...}"};
            const std::string name = entry["name"].get<std::string>();
            if (name == "default") return entry["template"].get<std::string>();
            names += (names.empty() ? "" : ", ") + name;
        }
        return Error{where + ": \"chat_template\" lists templates (" + names +
                     ") but none named \"default\"; the studio renders the default one"};
    }
    return Error{where + ": \"chat_template\" must be a string or a list of named templates"};
}

}  // namespace

Result<ChatTemplate> ChatTemplate::fromSource(std::string name, std::string source,
                                              std::string bosToken, std::string eosToken) {
    auto parsed = jinja::Template::parse(source);
    if (!parsed)
        return Error{"the chat template " + name + " cannot be used: " + parsed.error().message};
    ChatTemplate t;
    t.m_name = std::move(name);
    t.m_source = std::move(source);
    t.m_bos = std::move(bosToken);
    t.m_eos = std::move(eosToken);
    t.m_template = std::move(*parsed);
    if (!t.m_eos.empty()) t.m_stops.push_back(t.m_eos);
    for (std::string_view marker : kTurnMarkers)
        if (t.m_source.find(marker) != std::string::npos && marker != t.m_eos)
            t.m_stops.emplace_back(marker);
    return t;
}

std::vector<std::string> ChatTemplate::builtinNames() {
    return {"chatml"};
}

Result<ChatTemplate> ChatTemplate::builtin(std::string_view name) {
    if (name != "chatml")
        return Error{"there is no built-in chat template named \"" + std::string(name) +
                     "\"; the built-ins are: chatml"};
    auto t = fromSource("chatml", std::string(kChatmlSource));
    if (!t) return t;
    t->m_builtin = true;
    t->m_specialTokens = {"<|im_start|>", "<|im_end|>"};
    return t;
}

Result<ChatTemplate> ChatTemplate::fromModelFolder(const std::filesystem::path& folder) {
    const auto configPath = folder / "tokenizer_config.json";
    const auto jinjaPath = folder / "chat_template.jinja";
    std::error_code ec;
    nlohmann::json config = nlohmann::json::object();
    if (std::filesystem::exists(configPath, ec)) {
        auto text = fileio::readWholeFile(configPath);
        if (!text) return text.error();
        config = nlohmann::json::parse(*text, nullptr, false);
        if (config.is_discarded() || !config.is_object())
            return Error{configPath.string() + " is not a JSON object; fix or remove the file"};
    }
    auto bos = tokenText(config, "bos_token", configPath.string());
    if (!bos) return bos.error();
    auto eos = tokenText(config, "eos_token", configPath.string());
    if (!eos) return eos.error();
    auto unk = tokenText(config, "unk_token", configPath.string());
    if (!unk) return unk.error();
    auto pad = tokenText(config, "pad_token", configPath.string());
    if (!pad) return pad.error();
    std::string name;
    std::string source;
    if (std::filesystem::exists(jinjaPath, ec)) {
        auto text = fileio::readWholeFile(jinjaPath);
        if (!text) return text.error();
        name = jinjaPath.string();
        source = std::move(*text);
    } else {
        auto text = templateFromConfig(config, configPath.string());
        if (!text) return text.error();
        name = configPath.string();
        source = std::move(*text);
    }
    if (source.empty())
        return Error{folder.string() +
                     " has no chat template (no chat_template.jinja, and "
                     "tokenizer_config.json has no \"chat_template\"); use a "
                     "built-in such as chatml"};
    auto t = fromSource(std::move(name), std::move(source), std::move(*bos), std::move(*eos));
    if (!t) return t;
    t->m_unk = std::move(*unk);
    t->m_pad = std::move(*pad);
    return t;
}

Result<ChatTemplate> ChatTemplate::forModel(const std::filesystem::path& folder,
                                            std::string_view fallback) {
    std::error_code ec;
    const bool hasConfig = std::filesystem::exists(folder / "tokenizer_config.json", ec);
    const bool hasJinja = std::filesystem::exists(folder / "chat_template.jinja", ec);
    if (hasJinja) return fromModelFolder(folder);
    if (hasConfig) {
        auto text = fileio::readWholeFile(folder / "tokenizer_config.json");
        if (!text) return text.error();
        const auto config = nlohmann::json::parse(*text, nullptr, false);
        if (!config.is_discarded() && config.is_object() && config.contains("chat_template") &&
            !config["chat_template"].is_null())
            return fromModelFolder(folder);
    }
    return builtin(fallback);
}

Result<std::string> ChatTemplate::renderMessages(const std::vector<ChatMessage>& messages,
                                                 bool addGenerationPrompt) const {
    jinja::ValueList list;
    for (const auto& m : messages) {
        jinja::ValueDict message;
        message.set("role", jinja::Value::string(m.role));
        message.set("content", jinja::Value::string(m.content));
        list.push_back(jinja::Value::dict(std::move(message)));
    }
    jinja::ValueDict context;
    context.set("messages", jinja::Value::list(std::move(list)));
    context.set("bos_token", jinja::Value::string(m_bos));
    context.set("eos_token", jinja::Value::string(m_eos));
    if (!m_unk.empty()) context.set("unk_token", jinja::Value::string(m_unk));
    if (!m_pad.empty()) context.set("pad_token", jinja::Value::string(m_pad));
    context.set("add_generation_prompt", jinja::Value::boolean(addGenerationPrompt));
    // transformers passes these as None when a chat has no tools or documents.
    context.set("tools", jinja::Value::none());
    context.set("documents", jinja::Value::none());
    auto text = m_template.render(context);
    if (!text) return Error{"the chat template " + m_name + ": " + text.error().message};
    return text;
}

Result<std::string> ChatTemplate::render(const Conversation& conversation,
                                         bool addGenerationPrompt) const {
    auto text = renderMessages(conversation.messages, addGenerationPrompt);
    if (!text && !conversation.origin.empty())
        return Error{conversation.origin + ": " + text.error().message};
    return text;
}

namespace {

// The first byte where `a` and `b` differ, shown briefly for an error.
std::string divergence(const std::string& prefix, const std::string& text) {
    size_t at = 0;
    while (at < prefix.size() && at < text.size() && prefix[at] == text[at]) ++at;
    const auto excerpt = [&](const std::string& s) {
        std::string e = s.substr(at, 40);
        for (char& c : e)
            if (c == '\n') c = ' ';
        return "\"" + e + "\"";
    };
    return "at byte " + std::to_string(at) + " one has " + excerpt(prefix) + ", the other " +
           excerpt(text);
}

}  // namespace

Result<RenderedConversation> ChatTemplate::renderForTraining(
    const Conversation& conversation) const {
    const std::string where = conversation.origin.empty() ? "" : conversation.origin + ": ";
    const auto& messages = conversation.messages;
    RenderedConversation out;
    auto whole = renderMessages(messages, false);
    if (!whole) return Error{where + whole.error().message};
    out.text = std::move(*whole);
    std::string previousTurn;  // the render through the previous assistant message
    for (size_t i = 0; i < messages.size(); ++i) {
        if (messages[i].role != kAssistantRole) continue;
        const std::vector<ChatMessage> before(messages.begin(),
                                              messages.begin() + static_cast<ptrdiff_t>(i));
        const std::vector<ChatMessage> through(messages.begin(),
                                               messages.begin() + static_cast<ptrdiff_t>(i + 1));
        auto prompt = renderMessages(before, true);
        if (!prompt) return Error{where + prompt.error().message};
        auto turn = renderMessages(through, false);
        if (!turn) return Error{where + turn.error().message};
        const std::string refusal = where + "the chat template " + m_name +
                                    " cannot be used for training: it does not render a "
                                    "conversation incrementally, so the assistant's part of "
                                    "message " +
                                    std::to_string(i + 1) + " cannot be found exactly (";
        if (prompt->compare(0, previousTurn.size(), previousTurn) != 0 ||
            prompt->size() < previousTurn.size())
            return Error{refusal +
                         "the render up to the previous answer is not the start of "
                         "this answer's prompt; " +
                         divergence(previousTurn, *prompt) + ")"};
        if (turn->compare(0, prompt->size(), *prompt) != 0 || turn->size() < prompt->size())
            return Error{refusal +
                         "the prompt rendered with add_generation_prompt is not the "
                         "start of the render that adds the answer; " +
                         divergence(*prompt, *turn) + ")"};
        if (out.text.compare(0, turn->size(), *turn) != 0 || out.text.size() < turn->size())
            return Error{refusal +
                         "the render up to this answer is not the start of the whole "
                         "conversation's render; " +
                         divergence(*turn, out.text) + ")"};
        out.spans.push_back({i, prompt->size(), turn->size()});
        previousTurn = std::move(*turn);
    }
    return out;
}

}  // namespace ws::chat
