// SPDX-License-Identifier: GPL-3.0-or-later
// Which format a JSON/JSONL data set is in, decided from the keys of every record (not the
// first line only) and reported with its evidence; a detection that could be wrong is an error
// or a warning, never silent.
//
// A record's shapes are the formats whose keys it holds:
//   messages          `messages` (a list)
//   sharegpt          `conversations` (a list)
//   alpaca            `instruction` and `output`
//   prompt_completion `prompt` and `completion`
//   text_records      `text` (a string), and none of the four above
// With format auto:
// - every record has exactly one shape, the same for all: that format. Evidence: "OpenAI
//   messages: 120 records with a `messages` list".
// - a record with two or more shapes (`prompt` and `messages`) is ambiguous: an error naming the
//   records and their keys, and the train_input.format values that would read them.
// - records of different shapes (100 messages, 3 Alpaca) are an error naming how many of each
//   and the first records of the minority shapes.
// - a record with no shape is an error naming its keys and the keys each format needs.
// - a record of one of the four shapes that also carries `text` (Alpaca dumps often do, with
//   the prompt already rendered): read in that shape, with a warning that `text` is ignored.
// With a format set, every record is read in it (a record missing its keys is an error when it
// is converted, json_shapes.h) and the evidence says the format was set.
// Internal to the data module. Thread-safety: pure functions.
#pragma once

#include <string>
#include <vector>

#include "engine/core/result.h"
#include "engine/data/json_records.h"
#include "engine/data/record_format.h"

namespace ws::data {

struct Detection {
    RecordFormat format = RecordFormat::Auto;
    std::string evidence;
    std::vector<std::string> warnings;
};

// The formats (among messages, sharegpt, alpaca, prompt_completion, text_records) whose keys
// `record` holds, per the rules above.
std::vector<RecordFormat> recordShapes(const nlohmann::json& record);

// `requested` is the configured format (Auto to detect; Text and Columns are not JSON record
// formats and are refused here). `source` names the file in messages.
Result<Detection> detectJsonFormat(const std::vector<JsonRecord>& records, RecordFormat requested,
                                   std::string_view source);

}  // namespace ws::data
