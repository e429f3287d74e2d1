// SPDX-License-Identifier: GPL-3.0-or-later
// Instruction and chat data sets: the front door. One file in, conversations (chat::Conversation)
// or plain text records out, with a report of the format read and why (record_format.h).
//
// Which reader, by the file's extension (any letter case):
//   .jsonl .ndjson  JSON Lines (json_records.h)    .json  a JSON array (or JSON Lines inside)
//   .csv            CSV (csv_table.h)              .tsv .tab  TSV
//   .zip            the record files inside (zip_records.h), each read by its own extension;
//                   they must all be in one format
//   anything else   plain text (format text), the whole file one text record, as corpus.h
//                   reads it; a set JSON format reads it as JSON Lines, columns as CSV
// The format: options.format, or detected (auto): JSON records by their keys (record_detect.h),
// CSV/TSV by the column mapping (column_records.h). format text reads any file as plain text.
//
// What is refused and what is skipped: nothing is trained on garbage, so every bad record
// refuses the whole file (all of them named, up to RecordErrors::kMaxShown, with file:line, the
// JSON record index or the CSV line, and the fix): malformed JSON, a record missing its
// format's keys (naming the keys found), a missing CSV column (listing the columns found), a
// conversation breaking the turn rules (chat::checkTrainingTurns: roles out of order, an empty
// answer), unknown parent ids, parent-id cycles, duplicate ids, an empty file, text that is not
// UTF-8, an image part. Skipped and counted in the report: blank JSONL lines and blank CSV rows
// (nothing in them); in a zip, files that are not record files (named in a warning).
// Thread-safety: pure functions.
#pragma once

#include <filesystem>
#include <string_view>

#include "engine/core/result.h"
#include "engine/data/record_format.h"

namespace ws::data {

// Is the file read as records (.jsonl, .ndjson, .json, .csv, .tsv, .tab, .zip) when the format is
// auto? Other files are plain text.
bool isRecordFile(const std::filesystem::path& file);

Result<RecordSet> readRecordFile(const std::filesystem::path& file,
                                 const RecordOptions& options = {});

// The same for bytes already in memory; `name` (its extension) picks the reader and names the
// records' origins.
Result<RecordSet> readRecordBytes(std::string_view bytes, std::string_view name,
                                  const RecordOptions& options = {});

}  // namespace ws::data
