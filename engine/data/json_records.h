// SPDX-License-Identifier: GPL-3.0-or-later
// JSON Lines and JSON files cut into records (JSON objects), each with where it came from, before
// any format is applied (record_detect.h decides the format, json_shapes.h converts).
// - JSONL: one object per line; blank lines are skipped and counted; a line that is not valid
//   JSON, or valid JSON but not an object, is an error naming file:line (all such lines are
//   gathered, record_text.h). Origins: "data.jsonl:12".
// - JSON: an array of objects; an element that is not an object is an error naming its index.
//   Origins: "data.json: record [3]" (0-based, as the array is indexed). A .json file that is
//   really JSON Lines (what `datasets`' to_json writes) is read as JSONL and said so.
// Internal to the data module (nlohmann::json in the interface). Thread-safety: pure functions.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "engine/core/result.h"

namespace ws::data {

struct JsonRecord {
    nlohmann::json value;  // an object
    std::string origin;
};

struct JsonRecords {
    std::vector<JsonRecord> records;
    size_t blankLines = 0;
    bool jsonLinesInJsonFile = false;  // a .json file read as JSON Lines
};

// `text` has passed checkRecordText (UTF-8, no BOM). `source` names the file in origins.
Result<JsonRecords> readJsonLines(std::string_view text, std::string_view source);
Result<JsonRecords> readJsonArray(std::string_view text, std::string_view source);

// "a string", "a number", "a list", ... for messages about a value of the wrong kind.
std::string jsonKind(const nlohmann::json& value);
// "instruction, output, text": an object's keys, for messages naming what a record holds.
std::string jsonKeys(const nlohmann::json& object);

}  // namespace ws::data
