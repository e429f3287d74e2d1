// SPDX-License-Identifier: GPL-3.0-or-later
// Record formats: names and config keys (see record_format.h).
#include "engine/data/record_format.h"

#include <array>
#include <utility>

namespace ws::data {

namespace {

struct FormatNames {
    RecordFormat format;
    std::string_view key;
    std::string_view name;
};

constexpr std::array<FormatNames, 8> kFormats{{
    {RecordFormat::Auto, "auto", "detected"},
    {RecordFormat::Text, "text", "plain text"},
    {RecordFormat::Messages, "messages", "OpenAI messages"},
    {RecordFormat::ShareGpt, "sharegpt", "ShareGPT conversations"},
    {RecordFormat::Alpaca, "alpaca", "Alpaca instructions"},
    {RecordFormat::PromptCompletion, "prompt_completion", "prompt/completion pairs"},
    {RecordFormat::TextRecords, "text_records", "text records"},
    {RecordFormat::Columns, "columns", "CSV/TSV columns"},
}};

}  // namespace

std::string_view recordFormatKey(RecordFormat format) {
    for (const auto& f : kFormats)
        if (f.format == format) return f.key;
    return "auto";
}

std::string_view recordFormatName(RecordFormat format) {
    for (const auto& f : kFormats)
        if (f.format == format) return f.name;
    return "detected";
}

std::string_view recordFormatJsonKeys(RecordFormat format) {
    switch (format) {
        case RecordFormat::Messages:
            return "a `messages` list";
        case RecordFormat::ShareGpt:
            return "a `conversations` list";
        case RecordFormat::Alpaca:
            return "`instruction` and `output`";
        case RecordFormat::PromptCompletion:
            return "`prompt` and `completion`";
        case RecordFormat::TextRecords:
            return "`text`";
        default:
            return "";
    }
}

std::optional<RecordFormat> parseRecordFormat(std::string_view key) {
    for (const auto& f : kFormats)
        if (f.key == key) return f.format;
    return std::nullopt;
}

std::string recordFormatKeys() {
    std::string out;
    for (const auto& f : kFormats) {
        if (!out.empty()) out += ", ";
        out += f.key;
    }
    return out;
}

}  // namespace ws::data
