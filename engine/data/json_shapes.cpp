// SPDX-License-Identifier: GPL-3.0-or-later
// JSON records into conversations and text records (see json_shapes.h).
#include "engine/data/json_shapes.h"

#include <string>

namespace ws::data {

namespace {

using chat::ChatMessage;
using chat::Conversation;
using nlohmann::json;

// The format's keys, for "the record has no `output` (Alpaca instructions need ...)".
std::string neededKeys(RecordFormat format) {
    std::string keys(recordFormatJsonKeys(format));
    if (format == RecordFormat::Alpaca) keys += " (and optionally `input`, `system`, `history`)";
    return keys;
}

Error missingKey(const JsonRecord& record, std::string_view key, RecordFormat format) {
    return Error{record.origin + ": the record has no `" + std::string(key) + "` (" +
                 std::string(recordFormatName(format)) + " need " + neededKeys(format) +
                 "); its keys: " + jsonKeys(record.value) +
                 ". Fix the record, or set train_input.format to the format the file is in"};
}

Error wrongKind(const JsonRecord& record, std::string_view what, const json& value,
                std::string_view wanted) {
    return Error{record.origin + ": " + std::string(what) + " is " + jsonKind(value) + ", not " +
                 std::string(wanted)};
}

std::string mapRole(const std::string& role) {
    if (role == "human" || role == "user") return "user";
    if (role == "gpt" || role == "assistant" || role == "model") return "assistant";
    if (role == "system" || role == "developer") return "system";
    return role;
}

// A message's content: text, or a list of text parts joined with "\n".
Result<std::string> contentText(const JsonRecord& record, const std::string& what,
                                const json& content) {
    if (content.is_string()) return content.get<std::string>();
    if (content.is_null())
        return Error{record.origin + ": " + what +
                     " has no content (null; a tool call?); tool and function calls are not "
                     "read: remove those messages or the record"};
    if (!content.is_array())
        return wrongKind(record, what + "'s content", content, "text or a list of text parts");
    std::string out;
    for (size_t p = 0; p < content.size(); ++p) {
        const json& part = content[p];
        const std::string partName = what + " part " + std::to_string(p + 1);
        if (part.is_string()) {
            if (!out.empty()) out += "\n";
            out += part.get<std::string>();
            continue;
        }
        if (!part.is_object() || !part.contains("type") || !part["type"].is_string())
            return Error{record.origin + ": " + partName + " is " + jsonKind(part) +
                         " without a `type`; content parts are {\"type\": \"text\", \"text\": "
                         "...}"};
        const std::string type = part["type"].get<std::string>();
        if (type != "text") {
            return Error{record.origin + ": " + partName + " is of type \"" + type +
                         "\"; only text is trained on (models here read no images, audio or "
                         "files): remove the part or the record"};
        }
        if (!part.contains("text") || !part["text"].is_string())
            return Error{record.origin + ": " + partName +
                         " is a text part without a `text` string"};
        if (!out.empty()) out += "\n";
        out += part["text"].get<std::string>();
    }
    return out;
}

// A list of {"role", "content"} or {"from", "value"} items.
Status appendMessages(const JsonRecord& record, std::string_view listName, const json& list,
                      Conversation& out) {
    for (size_t m = 0; m < list.size(); ++m) {
        const json& item = list[m];
        std::string what = "`";
        what.append(listName).append("` message ").append(std::to_string(m + 1));
        if (!item.is_object()) return wrongKind(record, what, item, "an object");
        const char* roleKey = item.contains("role") ? "role" : "from";
        const char* contentKey = item.contains("role") ? "content" : "value";
        if (!item.contains(roleKey))
            return Error{record.origin + ": " + what +
                         " has no `role` (or ShareGPT's `from`); its keys: " + jsonKeys(item)};
        if (!item[roleKey].is_string())
            return wrongKind(record, what + "'s `" + roleKey + "`", item[roleKey], "text");
        if (!item.contains(contentKey))
            return Error{record.origin + ": " + what + " has no `" + contentKey +
                         "`; its keys: " + jsonKeys(item)};
        auto text = contentText(record, what, item[contentKey]);
        if (!text) return text.error();
        out.messages.push_back({mapRole(item[roleKey].get<std::string>()), std::move(*text)});
    }
    return {};
}

Result<std::string> stringKey(const JsonRecord& record, const char* key, RecordFormat format,
                              bool optional) {
    const json& v = record.value;
    if (!v.contains(key) || (optional && v[key].is_null())) {
        if (optional) return std::string();
        return missingKey(record, key, format);
    }
    if (!v[key].is_string()) return wrongKind(record, std::string("`") + key + "`", v[key], "text");
    return v[key].get<std::string>();
}

Status readMessages(const JsonRecord& record, RecordFormat format, Conversation& out) {
    const char* listKey = format == RecordFormat::Messages ? "messages" : "conversations";
    const json& v = record.value;
    if (!v.contains(listKey)) return missingKey(record, listKey, format);
    if (!v[listKey].is_array())
        return wrongKind(record, std::string("`") + listKey + "`", v[listKey],
                         "a list of messages");
    if (format == RecordFormat::ShareGpt) {
        auto system = stringKey(record, "system", format, true);
        if (!system) return system.error();
        if (!system->empty()) out.messages.push_back({"system", *system});
    }
    return appendMessages(record, listKey, v[listKey], out);
}

Status readAlpaca(const JsonRecord& record, Conversation& out) {
    constexpr auto format = RecordFormat::Alpaca;
    auto instruction = stringKey(record, "instruction", format, false);
    if (!instruction) return instruction.error();
    auto input = stringKey(record, "input", format, true);
    if (!input) return input.error();
    if (!record.value.contains("output")) return missingKey(record, "output", format);
    const json& output = record.value["output"];
    if (!output.is_string())
        return Error{record.origin + ": `output` is " + jsonKind(output) + ", not text" +
                     (output.is_array() ? " (several outputs: a preference or ranking data set, "
                                          "which is not read here)"
                                        : std::string())};
    auto system = stringKey(record, "system", format, true);
    if (!system) return system.error();
    if (!system->empty()) out.messages.push_back({"system", *system});
    if (record.value.contains("history") && !record.value["history"].is_null()) {
        const json& history = record.value["history"];
        if (!history.is_array())
            return wrongKind(record, "`history`", history, "a list of [prompt, answer] pairs");
        for (size_t h = 0; h < history.size(); ++h) {
            const json& pair = history[h];
            if (!pair.is_array() || pair.size() != 2 || !pair[0].is_string() ||
                !pair[1].is_string())
                return Error{record.origin + ": `history` entry " + std::to_string(h + 1) +
                             " is not a [prompt, answer] pair of texts"};
            out.messages.push_back({"user", pair[0].get<std::string>()});
            out.messages.push_back({"assistant", pair[1].get<std::string>()});
        }
    }
    std::string prompt = *instruction;
    if (!input->empty()) {
        if (!prompt.empty()) prompt += '\n';
        prompt += *input;
    }
    out.messages.push_back({"user", std::move(prompt)});
    out.messages.push_back({"assistant", output.get<std::string>()});
    return {};
}

Status readPromptCompletion(const JsonRecord& record, Conversation& out) {
    constexpr auto format = RecordFormat::PromptCompletion;
    for (const char* key : {"prompt", "completion"}) {
        if (!record.value.contains(key)) return missingKey(record, key, format);
        const json& part = record.value[key];
        if (part.is_string()) {
            out.messages.push_back(
                {std::string(key) == "prompt" ? "user" : "assistant", part.get<std::string>()});
        } else if (part.is_array()) {
            if (Status s = appendMessages(record, key, part, out); !s) return s;
        } else {
            return wrongKind(record, std::string("`") + key + "`", part,
                             "text or a list of messages");
        }
    }
    return {};
}

}  // namespace

Result<chat::Conversation> conversationFromJson(const JsonRecord& record, RecordFormat format) {
    Conversation out;
    out.origin = record.origin;
    Status read;
    switch (format) {
        case RecordFormat::Messages:
        case RecordFormat::ShareGpt:
            read = readMessages(record, format, out);
            break;
        case RecordFormat::Alpaca:
            read = readAlpaca(record, out);
            break;
        case RecordFormat::PromptCompletion:
            read = readPromptCompletion(record, out);
            break;
        default:
            return Error{record.origin + ": " + std::string(recordFormatName(format)) +
                         " records are not conversations"};
    }
    if (!read) return read.error();
    return out;
}

Result<TextRecord> textFromJson(const JsonRecord& record) {
    auto text = stringKey(record, "text", RecordFormat::TextRecords, false);
    if (!text) return text.error();
    if (text->find_first_not_of(" \t\r\n") == std::string::npos)
        return Error{record.origin + ": the record's `text` is empty; give it text or remove it"};
    return TextRecord{std::move(*text), record.origin};
}

}  // namespace ws::data
