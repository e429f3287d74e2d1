// SPDX-License-Identifier: GPL-3.0-or-later
// Conversations as `messages` JSON: see conversation_file.h.
#include "engine/chat/conversation_file.h"

#include <nlohmann/json.hpp>

#include "engine/fileio/atomic_file.h"

namespace ws::chat {

namespace {

using json = nlohmann::ordered_json;

std::string dump(const json& j) {
    return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

json messagesArray(const Conversation& conversation) {
    json messages = json::array();
    for (const ChatMessage& m : conversation.messages)
        messages.push_back({{"role", m.role}, {"content", m.content}});
    return messages;
}

// A message's content: a string, or text parts joined (as OpenAI's multi-part content).
Result<std::string> contentOf(const json& content, const std::string& where) {
    if (content.is_string()) return content.get<std::string>();
    if (content.is_null()) return std::string();
    if (!content.is_array())
        return Error{where + ": \"content\" is " + std::string(content.type_name()) +
                     "; give the message's text as a string"};
    std::string text;
    for (const json& part : content) {
        if (part.is_string()) {
            text += part.get<std::string>();
            continue;
        }
        if (!part.is_object() || !part.contains("text") || !part["text"].is_string())
            return Error{where +
                         ": a content part is not text ({\"type\": \"text\", \"text\": ...}); "
                         "only text can be chatted with"};
        text += part["text"].get<std::string>();
    }
    return text;
}

Result<Conversation> fromValue(const json& value, std::string_view origin) {
    const std::string where(origin);
    const json* messages = &value;
    if (value.is_object()) {
        if (!value.contains("messages"))
            return Error{where +
                         ": the object has no \"messages\"; give {\"messages\": [{\"role\": "
                         "\"user\", \"content\": \"...\"}]} or the array of messages"};
        messages = &value["messages"];
    }
    if (!messages->is_array())
        return Error{where + ": \"messages\" is " + std::string(messages->type_name()) +
                     ", not an array of {\"role\", \"content\"} objects"};
    Conversation out;
    out.origin = where;
    for (size_t i = 0; i < messages->size(); ++i) {
        const json& m = (*messages)[i];
        const std::string at = where + ": message " + std::to_string(i + 1);
        if (!m.is_object())
            return Error{at + " is " + std::string(m.type_name()) +
                         ", not a {\"role\", \"content\"} object"};
        if (!m.contains("role") || !m["role"].is_string())
            return Error{at + " has no \"role\" string (system, user or assistant)"};
        auto content = contentOf(m.contains("content") ? m["content"] : json(), at);
        if (!content.ok()) return content.error();
        out.messages.push_back({m["role"].get<std::string>(), std::move(content).value()});
    }
    return out;
}

Result<json> parse(std::string_view text, const std::string& where) {
    try {
        return json::parse(text);
    } catch (const json::parse_error& e) {
        return Error{where + ": not valid JSON (" + e.what() + ")"};
    }
}

}  // namespace

std::string messagesJsonLine(const Conversation& conversation) {
    return dump(json{{"messages", messagesArray(conversation)}});
}

std::string messagesJsonArray(const Conversation& conversation) {
    return dump(messagesArray(conversation));
}

Status saveConversations(const std::filesystem::path& file,
                         std::span<const Conversation> conversations) {
    std::string text;
    for (const Conversation& c : conversations) text += messagesJsonLine(c) + "\n";
    return fileio::writeFileAtomically(file, text);
}

Result<Conversation> parseMessagesJson(std::string_view json, std::string_view origin) {
    auto value = parse(json, std::string(origin));
    if (!value.ok()) return value.error();
    return fromValue(*value, origin);
}

Result<std::vector<Conversation>> loadConversations(const std::filesystem::path& file) {
    auto bytes = fileio::readWholeFile(file);
    if (!bytes.ok()) return bytes.error();
    const std::string name = file.string();
    std::vector<Conversation> out;
    // One JSON value (possibly pretty-printed over many lines) first; else JSON Lines.
    if (json::accept(*bytes)) {
        auto one = parseMessagesJson(*bytes, name);
        if (!one.ok()) return one.error();
        out.push_back(std::move(one).value());
        return out;
    }
    size_t begin = 0, lineNo = 0;
    while (begin < bytes->size()) {
        size_t end = bytes->find('\n', begin);
        if (end == std::string::npos) end = bytes->size();
        ++lineNo;
        const std::string_view line(bytes->data() + begin, end - begin);
        begin = end + 1;
        if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;
        auto c = parseMessagesJson(line, name + ":" + std::to_string(lineNo));
        if (!c.ok()) return c.error();
        out.push_back(std::move(c).value());
    }
    if (out.empty())
        return Error{name + ": no conversation in the file; give {\"messages\": [...]}"};
    return out;
}

}  // namespace ws::chat
