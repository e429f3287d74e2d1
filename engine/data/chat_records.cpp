// SPDX-License-Identifier: GPL-3.0-or-later
// The record readers' front door: picks the reader, applies the format, checks every
// conversation (see chat_records.h).
#include "engine/data/chat_records.h"

#include <cctype>
#include <fstream>
#include <iterator>
#include <sstream>

#include "engine/data/column_records.h"
#include "engine/data/csv_table.h"
#include "engine/data/json_records.h"
#include "engine/data/json_shapes.h"
#include "engine/data/record_detect.h"
#include "engine/data/record_text.h"
#include "engine/data/zip_records.h"

namespace ws::data {

namespace {

enum class Container { JsonLines, JsonArray, Csv, Tsv, Zip, Other };

std::string lowerExtension(std::string_view name) {
    const size_t slash = name.find_last_of("/\\");
    const std::string_view base = slash == std::string_view::npos ? name : name.substr(slash + 1);
    const size_t dot = base.rfind('.');
    if (dot == std::string_view::npos || dot == 0) return "";
    std::string ext(base.substr(dot));
    for (char& c : ext) c = char(std::tolower(static_cast<unsigned char>(c)));
    return ext;
}

Container containerOf(std::string_view name) {
    const std::string ext = lowerExtension(name);
    if (ext == ".jsonl" || ext == ".ndjson") return Container::JsonLines;
    if (ext == ".json") return Container::JsonArray;
    if (ext == ".csv") return Container::Csv;
    if (ext == ".tsv" || ext == ".tab") return Container::Tsv;
    if (ext == ".zip") return Container::Zip;
    return Container::Other;
}

bool isJsonFormat(RecordFormat f) {
    return f == RecordFormat::Messages || f == RecordFormat::ShareGpt ||
           f == RecordFormat::Alpaca || f == RecordFormat::PromptCompletion ||
           f == RecordFormat::TextRecords;
}

Result<RecordSet> readPlainText(std::string_view bytes, std::string_view name,
                                const RecordOptions& options) {
    auto text = checkRecordText(bytes, name);
    if (!text) return text.error();
    if (text->find_first_not_of(" \t\r\n") == std::string_view::npos)
        return Error{std::string(name) + ": the file is empty; give it the text to train on"};
    RecordSet out;
    out.texts.push_back({std::string(*text), std::string(name)});
    out.report.format = RecordFormat::Text;
    out.report.records = 1;
    out.report.evidence =
        options.format == RecordFormat::Text
            ? "plain text: set by train_input.format (text), the whole file trained on"
            : "plain text: not a record file (.jsonl, .json, .csv, .tsv, .zip), the whole file "
              "trained on";
    return out;
}

Result<RecordSet> readJson(std::string_view text, std::string_view name, bool lines,
                           const RecordOptions& options) {
    auto read = lines ? readJsonLines(text, name) : readJsonArray(text, name);
    if (!read) return read.error();
    auto detected = detectJsonFormat(read->records, options.format, name);
    if (!detected) return detected.error();
    RecordSet out;
    RecordErrors errors;
    for (const auto& record : read->records) {
        if (detected->format == RecordFormat::TextRecords) {
            auto textRecord = textFromJson(record);
            if (!textRecord) {
                errors.add(textRecord.error());
                continue;
            }
            out.texts.push_back(std::move(*textRecord));
            continue;
        }
        auto conversation = conversationFromJson(record, detected->format);
        if (!conversation) {
            errors.add(conversation.error());
            continue;
        }
        if (Status turns = chat::checkTrainingTurns(*conversation); !turns) {
            errors.add(turns.error());
            continue;
        }
        out.conversationGroups.push_back(out.conversations.size());
        out.conversations.push_back(std::move(*conversation));
    }
    if (!errors.empty()) return errors.error();
    RecordReport& report = out.report;
    report.format = detected->format;
    report.evidence = detected->evidence;
    if (read->jsonLinesInJsonFile) report.evidence += " (JSON Lines in a .json file)";
    report.warnings = std::move(detected->warnings);
    report.records = read->records.size();
    report.conversations = out.conversations.size();
    report.blankLines = read->blankLines;
    return out;
}

Result<RecordSet> readColumns(std::string_view text, std::string_view name, char separator,
                              const RecordOptions& options) {
    if (options.format != RecordFormat::Auto && options.format != RecordFormat::Columns)
        return Error{std::string(name) + ": train_input.format is " +
                     std::string(recordFormatKey(options.format)) +
                     ", a JSON record format; this is a " + (separator == '\t' ? "TSV" : "CSV") +
                     " file: set the format to auto or columns (with train_input.prompt_column "
                     "and train_input.answer_column)"};
    auto table = readCsvTable(text, separator, name);
    if (!table) return table.error();
    auto set = conversationsFromColumns(*table, options, name);
    if (!set) return set.error();
    // Rows make alternating turns by construction; checked anyway, as for every other format.
    RecordErrors errors;
    for (const auto& conversation : set->conversations)
        if (Status turns = chat::checkTrainingTurns(conversation); !turns)
            errors.add(turns.error());
    if (!errors.empty()) return errors.error();
    return set;
}

// Appends one zip entry's records to `into`; all entries must share one format.
Status mergeEntry(RecordSet& into, RecordSet&& entry, const std::string& entryName,
                  std::string& firstName) {
    RecordReport& r = into.report;
    if (firstName.empty()) {
        firstName = entryName;
        r.format = entry.report.format;
    } else if (entry.report.format != r.format) {
        return Error{entryName + " holds " + std::string(recordFormatName(entry.report.format)) +
                     " but " + firstName + " holds " + std::string(recordFormatName(r.format)) +
                     "; a zip holds one data set in one format: remove or convert the odd "
                     "file"};
    }
    size_t groupBase = 0;
    for (size_t g : into.conversationGroups) groupBase = std::max(groupBase, g + 1);
    for (size_t g : entry.conversationGroups) into.conversationGroups.push_back(groupBase + g);
    std::move(entry.conversations.begin(), entry.conversations.end(),
              std::back_inserter(into.conversations));
    std::move(entry.texts.begin(), entry.texts.end(), std::back_inserter(into.texts));
    r.records += entry.report.records;
    r.conversations += entry.report.conversations;
    r.blankLines += entry.report.blankLines;
    r.evidence += (r.evidence.empty() ? "" : "; ") + entryName + ": " + entry.report.evidence;
    for (auto& w : entry.report.warnings) r.warnings.push_back(std::move(w));
    return {};
}

Result<RecordSet> readZip(std::string_view bytes, std::string_view name,
                          const RecordOptions& options) {
    auto contents = readZipRecordFiles(bytes, name);
    if (!contents) return contents.error();
    RecordSet out;
    std::string firstName;
    for (auto& entry : contents->files) {
        const std::string entryName = std::string(name) + "/" + entry.name;
        auto read = readRecordBytes(entry.bytes, entryName, options);
        if (!read) return read.error();
        if (Status merged = mergeEntry(out, std::move(*read), entryName, firstName); !merged)
            return merged.error();
    }
    if (!contents->skipped.empty()) {
        std::string list;
        for (const auto& s : contents->skipped) list += (list.empty() ? "" : ", ") + s;
        out.report.warnings.push_back(
            std::string(name) + ": files not read (not .csv, .tsv, .jsonl or .json): " + list);
    }
    return out;
}

}  // namespace

bool isRecordFile(const std::filesystem::path& file) {
    return containerOf(file.string()) != Container::Other;
}

Result<RecordSet> readRecordBytes(std::string_view bytes, std::string_view name,
                                  const RecordOptions& options) {
    Container container = containerOf(name);
    if (options.format == RecordFormat::Text) {
        if (container == Container::Zip)
            return Error{std::string(name) +
                         ": train_input.format is text, but a zip archive is not text; set the "
                         "format to auto (or unpack the archive)"};
        return readPlainText(bytes, name, options);
    }
    if (container == Container::Zip) return readZip(bytes, name, options);
    if (container == Container::Other) {
        if (isJsonFormat(options.format))
            container = Container::JsonLines;
        else if (options.format == RecordFormat::Columns)
            container = Container::Csv;
        else
            return readPlainText(bytes, name, options);
    }
    auto text = checkRecordText(bytes, name);
    if (!text) return text.error();
    switch (container) {
        case Container::JsonLines:
            return readJson(*text, name, true, options);
        case Container::JsonArray:
            return readJson(*text, name, false, options);
        case Container::Csv:
            return readColumns(*text, name, ',', options);
        default:
            return readColumns(*text, name, '\t', options);
    }
}

Result<RecordSet> readRecordFile(const std::filesystem::path& file, const RecordOptions& options) {
    std::error_code ec;
    if (!std::filesystem::is_regular_file(file, ec))
        return Error{file.string() + ": " +
                     (std::filesystem::exists(file, ec) ? "not a file" : "no such file") +
                     "; check the path in train_input.data_dir"};
    std::ifstream in(file, std::ios::binary);
    if (!in) return Error{file.string() + ": cannot be read; check its permissions"};
    std::ostringstream content;
    content << in.rdbuf();
    if (in.bad()) return Error{file.string() + ": read error"};
    const std::string bytes = std::move(content).str();
    return readRecordBytes(bytes, file.string(), options);
}

}  // namespace ws::data
