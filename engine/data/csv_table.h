// SPDX-License-Identifier: GPL-3.0-or-later
// CSV and TSV files read into a table (RFC 4180): the first row names the columns; fields are
// separated by ',' (CSV) or a tab (TSV); a field in double quotes may hold separators, line
// breaks and quotes written twice (""); rows end in LF or CRLF (a CR before the LF is dropped).
// Strict where a mistake would shift text into the wrong column: a quote left open, text after
// a closing quote, a row with more or fewer fields than the header, a header with an empty or
// repeated column name are errors naming file:line and the fix. A row whose fields are all
// empty (a blank line) is skipped and counted. The text has passed checkRecordText (UTF-8, no
// BOM). Thread-safety: pure functions.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "engine/core/result.h"

namespace ws::data {

struct CsvRow {
    std::vector<std::string> fields;  // one per column
    size_t line = 0;                  // the line the row starts on (1-based; the header is 1)
};

struct CsvTable {
    std::vector<std::string> columns;
    std::vector<CsvRow> rows;
    size_t blankRows = 0;

    // The column's index, or npos.
    size_t column(std::string_view name) const;
    // "`prompt`, `answer`, `id`" for messages.
    std::string columnList() const;
};

Result<CsvTable> readCsvTable(std::string_view text, char separator, std::string_view source);

}  // namespace ws::data
