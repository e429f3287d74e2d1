// SPDX-License-Identifier: GPL-3.0-or-later
// Instruction and chat data sets: the formats the readers know (chat_records.h is the front door),
// the options a config sets (train_input.format and the column keys, wired by the config layer),
// and what a read returns: conversations (chat::Conversation) or plain text records, with a
// report saying which format was found, on what evidence, and anything the user should see.
// Thread-safety: plain values and pure functions.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/chat/conversation.h"

namespace ws::data {

enum class RecordFormat {
    Auto,              // detected from the file's extension and its records (record_detect.h)
    Text,              // plain text, trained on whole (what corpus.h reads)
    Messages,          // OpenAI: {"messages": [{"role", "content"}, ...]}
    ShareGpt,          // {"conversations": [{"from", "value"}, ...]}
    Alpaca,            // {"instruction", "input", "output", "system"?, "history"?}
    PromptCompletion,  // {"prompt", "completion"}
    TextRecords,       // {"text": ...}: each record's text trained on whole, no roles
    Columns,           // CSV/TSV with a column mapping
};

// The config spelling: "auto", "text", "messages", "sharegpt", "alpaca", "prompt_completion",
// "text_records", "columns".
std::string_view recordFormatKey(RecordFormat format);
std::optional<RecordFormat> parseRecordFormat(std::string_view key);
// What a user reads: "OpenAI messages", "ShareGPT conversations", "CSV/TSV columns", ...
std::string_view recordFormatName(RecordFormat format);
// The keys a JSON record of the format holds, for evidence and errors: "a `messages` list",
// "`instruction` and `output`", "`text`"; empty for text, columns and auto.
std::string_view recordFormatJsonKeys(RecordFormat format);
// "auto, text, messages, ..." for error messages.
std::string recordFormatKeys();

struct RecordOptions {
    RecordFormat format = RecordFormat::Auto;
    // CSV/TSV columns (H2O LLM Studio's prompt_column, answer_column, system_column,
    // id_column, parent_id_column). The system, id and parent id columns are optional: used when
    // the file has them.
    std::string promptColumn = "prompt";
    std::string answerColumn = "answer";
    std::string systemColumn = "system";
    std::string idColumn = "id";
    std::string parentIdColumn = "parent_id";
};

// A record trained on whole (format text or text_records).
struct TextRecord {
    std::string text;
    std::string origin;  // "data.jsonl:12"
    bool operator==(const TextRecord&) const = default;
};

struct RecordReport {
    RecordFormat format = RecordFormat::Auto;  // the format read (never Auto after a read)
    // Why: "OpenAI messages: 120 records with a `messages` list".
    std::string evidence;
    size_t records = 0;        // records read (JSON objects, CSV rows, text files)
    size_t conversations = 0;  // conversations made of them (CSV chains: one per leaf)
    size_t blankLines = 0;     // blank JSONL lines and blank CSV rows, skipped
    // Things a user should see before training (a key ignored, a column unused, ...).
    std::vector<std::string> warnings;
};

struct RecordSet {
    std::vector<chat::Conversation> conversations;  // chat and instruction formats
    // conversationGroups[i]: conversations sharing a group come from one chain of records
    // (CSV parent ids: one root, several leaves); a held-out split keeps a group together.
    // Numbered 0, 1, ... in file order.
    std::vector<size_t> conversationGroups;
    std::vector<TextRecord> texts;  // text and text_records
    RecordReport report;
};

}  // namespace ws::data
