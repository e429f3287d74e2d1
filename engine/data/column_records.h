// SPDX-License-Identifier: GPL-3.0-or-later
// CSV/TSV rows into conversations through a column mapping (RecordOptions: prompt, answer,
// system, id and parent id columns), as H2O LLM Studio reads them:
// - The prompt and answer columns must exist: a missing one is an error naming it and listing
//   the columns found. The system column is used when the file has it; so are the id and parent
//   id columns (a parent id column needs the id column).
// - Without a parent id column, each row is one conversation: [system], user prompt, assistant
//   answer. Origins: "data.csv:12" (the row's first line), with "(id `7`)" when ids exist.
// - With one, a row whose parent id names another row's id continues that row's conversation;
//   a conversation is the chain from a root (empty parent id) to a leaf (a row no other row
//   names as its parent), so a root with two continuations gives two conversations sharing
//   their first turns (one held-out group). The system prompt is the root's; a later row's
//   system cell must be empty or the same.
// Errors, all gathered and naming file:line: an empty answer, a duplicate id (both lines), an
// unknown parent id, a cycle of parent ids (its members), a system prompt changing in a chain.
// Columns the mapping does not name are a warning (they may hold part of the prompt).
// Thread-safety: pure functions.
#pragma once

#include <string_view>

#include "engine/core/result.h"
#include "engine/data/csv_table.h"
#include "engine/data/record_format.h"

namespace ws::data {

Result<RecordSet> conversationsFromColumns(const CsvTable& table, const RecordOptions& options,
                                           std::string_view source);

}  // namespace ws::data
