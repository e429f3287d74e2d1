// SPDX-License-Identifier: GPL-3.0-or-later
// JSON Lines and JSON arrays cut into records (see json_records.h).
#include "engine/data/json_records.h"

#include "engine/data/record_text.h"

namespace ws::data {

namespace {

using nlohmann::json;

bool blankLine(std::string_view line) {
    return line.find_first_not_of(" \t\r\n") == std::string_view::npos;
}

// nlohmann's "[json.exception.parse_error.101] parse error at line 1, column 5: syntax error
// while parsing object - ..." without its prefix and position (the caller names the position).
std::string parseProblem(const json::parse_error& e) {
    std::string what = e.what();
    const size_t column = what.find("column ");
    if (column != std::string::npos) {
        const size_t colon = what.find(": ", column);
        if (colon != std::string::npos) return what.substr(colon + 2);
    }
    const size_t bracket = what.find("] ");
    return bracket == std::string::npos ? what : what.substr(bracket + 2);
}

// Any other nlohmann exception's message without its "[json.exception.out_of_range.406] ".
std::string exceptionText(const json::exception& e) {
    const std::string what = e.what();
    const size_t bracket = what.find("] ");
    return bracket == std::string::npos ? what : what.substr(bracket + 2);
}

// Line and column (1-based) of byte `offset` in `text`.
std::string position(std::string_view text, size_t offset) {
    offset = std::min(offset, text.size());
    size_t line = 1, lineStart = 0;
    for (size_t i = 0; i < offset; ++i) {
        if (text[i] == '\n') {
            ++line;
            lineStart = i + 1;
        }
    }
    return std::to_string(line) + ":" + std::to_string(offset - lineStart + 1);
}

constexpr std::string_view kObjectHint =
    "each record is one JSON object such as {\"messages\": [...]} or {\"instruction\": ..., "
    "\"output\": ...}";

}  // namespace

std::string jsonKind(const json& value) {
    switch (value.type()) {
        case json::value_t::null:
            return "null";
        case json::value_t::object:
            return "an object";
        case json::value_t::array:
            return "a list";
        case json::value_t::string:
            return "text";
        case json::value_t::boolean:
            return "a boolean";
        case json::value_t::number_integer:
        case json::value_t::number_unsigned:
        case json::value_t::number_float:
            return "a number";
        default:
            return "a binary value";
    }
}

std::string jsonKeys(const json& object) {
    if (!object.is_object() || object.empty()) return "(none)";
    std::string out;
    for (const auto& [key, value] : object.items()) {
        if (!out.empty()) out += ", ";
        out += "`" + key + "`";
    }
    return out;
}

Result<JsonRecords> readJsonLines(std::string_view text, std::string_view source) {
    JsonRecords out;
    RecordErrors errors;
    size_t lineNumber = 0;
    size_t start = 0;
    while (start < text.size()) {
        size_t end = text.find('\n', start);
        if (end == std::string_view::npos) end = text.size();
        const std::string_view line = text.substr(start, end - start);
        start = end + 1;
        ++lineNumber;
        if (blankLine(line)) {
            ++out.blankLines;
            continue;
        }
        const std::string origin = std::string(source) + ":" + std::to_string(lineNumber);
        try {
            json value = json::parse(line);
            if (!value.is_object()) {
                errors.add(
                    origin + ": the line holds " + jsonKind(value) + ", not a record; " +
                    std::string(kObjectHint) +
                    (value.is_array() ? " (a file holding one JSON array is a .json file)" : ""));
                continue;
            }
            out.records.push_back({std::move(value), origin});
        } catch (const json::parse_error& e) {
            errors.add(origin + ":" + std::to_string(e.byte == 0 ? 1 : e.byte) +
                       ": not valid JSON (" + parseProblem(e) +
                       "); JSON Lines hold one complete JSON object per line");
        } catch (const json::exception& e) {  // a number past double's range (out_of_range.406)
            errors.add(origin + ": not valid JSON here (" + exceptionText(e) +
                       "); JSON Lines hold one complete JSON object per line");
        }
    }
    if (!errors.empty()) return errors.error();
    if (out.records.empty())
        return Error{std::string(source) +
                     ": the file holds no records (it is empty or blank); give it one JSON "
                     "object per line"};
    return out;
}

Result<JsonRecords> readJsonArray(std::string_view text, std::string_view source) {
    const size_t first = text.find_first_not_of(" \t\r\n");
    if (first == std::string_view::npos)
        return Error{std::string(source) +
                     ": the file is empty; give it a JSON array of records, [{...}, {...}]"};
    json value;
    std::string problem;  // where and what, when the text does not parse
    try {
        value = json::parse(text);
    } catch (const json::parse_error& e) {
        problem = ":" + position(text, e.byte == 0 ? 0 : size_t(e.byte - 1)) +
                  ": not valid JSON (" + parseProblem(e) + ")";
    } catch (const json::exception& e) {  // a number past double's range (out_of_range.406)
        problem = ": not valid JSON (" + exceptionText(e) + ")";
    }
    if (!problem.empty()) {
        // `datasets`' to_json writes JSON Lines under a .json name: objects, one per line.
        if (text[first] == '{') {
            auto lines = readJsonLines(text, source);
            if (lines.ok()) lines->jsonLinesInJsonFile = true;
            return lines;
        }
        return Error{std::string(source) + problem +
                     "; fix the file or write it again with a JSON library"};
    }
    if (!value.is_array()) {
        return Error{std::string(source) + ": the file holds " + jsonKind(value) +
                     (value.is_object() ? " with the keys " + jsonKeys(value) : std::string()) +
                     ", not a list of records; a .json data set is an array of records, [{...}, "
                     "{...}] (one record per line is a .jsonl file)"};
    }
    if (value.empty())
        return Error{std::string(source) +
                     ": the array holds no records; give it at least one record"};
    JsonRecords out;
    RecordErrors errors;
    out.records.reserve(value.size());
    for (size_t i = 0; i < value.size(); ++i) {
        const std::string origin = std::string(source) + ": record [" + std::to_string(i) + "]";
        if (!value[i].is_object()) {
            errors.add(origin + " is " + jsonKind(value[i]) + ", not a record; " +
                       std::string(kObjectHint));
            continue;
        }
        out.records.push_back({std::move(value[i]), origin});
    }
    if (!errors.empty()) return errors.error();
    return out;
}

}  // namespace ws::data
