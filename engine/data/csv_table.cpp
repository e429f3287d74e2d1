// SPDX-License-Identifier: GPL-3.0-or-later
// CSV/TSV parsing (see csv_table.h).
#include "engine/data/csv_table.h"

#include <map>

#include "engine/data/record_text.h"

namespace ws::data {

namespace {

struct RawRow {
    std::vector<std::string> fields;
    size_t line = 0;
};

// Cuts the text into rows of fields. Errors name the line where the problem is.
class CsvScanner {
public:
    CsvScanner(std::string_view text, char separator, std::string_view source)
        : m_text(text), m_sep(separator), m_source(source) {}

    Result<std::vector<RawRow>> rows() {
        std::vector<RawRow> out;
        while (m_pos < m_text.size()) {
            auto row = nextRow();
            if (!row) return row.error();
            out.push_back(std::move(*row));
        }
        return out;
    }

private:
    Error errorAt(size_t line, const std::string& what) const {
        return Error{std::string(m_source) + ":" + std::to_string(line) + ": " + what};
    }

    Result<RawRow> nextRow() {
        RawRow row;
        row.line = m_line;
        std::string field;
        while (true) {
            if (m_pos < m_text.size() && m_text[m_pos] == '"' && field.empty()) {
                const size_t openLine = m_line;
                ++m_pos;
                while (true) {
                    if (m_pos >= m_text.size())
                        return errorAt(openLine,
                                       "a quoted field opens here (column " +
                                           std::to_string(row.fields.size() + 1) +
                                           ") and is never closed; close it with \" (a quote "
                                           "inside a field is written twice: \"\")");
                    const char c = m_text[m_pos++];
                    if (c == '"') {
                        if (m_pos < m_text.size() && m_text[m_pos] == '"') {
                            field += '"';
                            ++m_pos;
                            continue;
                        }
                        break;
                    }
                    if (c == '\n') ++m_line;
                    field += c;
                }
                // After the closing quote: a separator, a line end, or the end of the file.
                if (m_pos < m_text.size() && m_text[m_pos] == '\r' &&
                    (m_pos + 1 == m_text.size() || m_text[m_pos + 1] == '\n'))
                    ++m_pos;
                if (m_pos < m_text.size() && m_text[m_pos] != m_sep && m_text[m_pos] != '\n')
                    return errorAt(m_line, "text after the closing quote of column " +
                                               std::to_string(row.fields.size() + 1) +
                                               "; a quote inside a quoted field is written twice "
                                               "(\"\")");
            } else {
                while (m_pos < m_text.size() && m_text[m_pos] != m_sep && m_text[m_pos] != '\n') {
                    field += m_text[m_pos++];
                }
                if (!field.empty() && field.back() == '\r' &&
                    (m_pos >= m_text.size() || m_text[m_pos] == '\n'))
                    field.pop_back();
            }
            row.fields.push_back(std::move(field));
            field.clear();
            if (m_pos >= m_text.size()) return row;
            const char end = m_text[m_pos++];
            if (end == '\n') {
                ++m_line;
                return row;
            }
            if (m_pos >= m_text.size()) {  // a separator at the very end: one more empty field
                row.fields.emplace_back();
                return row;
            }
        }
    }

    std::string_view m_text;
    char m_sep;
    std::string_view m_source;
    size_t m_pos = 0;
    size_t m_line = 1;
};

bool blankRow(const RawRow& row) {
    for (const auto& f : row.fields)
        if (!f.empty()) return false;
    return true;
}

}  // namespace

size_t CsvTable::column(std::string_view name) const {
    for (size_t i = 0; i < columns.size(); ++i)
        if (columns[i] == name) return i;
    return std::string_view::npos;
}

std::string CsvTable::columnList() const {
    std::string out;
    for (const auto& c : columns) {
        if (!out.empty()) out += ", ";
        out += "`" + c + "`";
    }
    return out;
}

Result<CsvTable> readCsvTable(std::string_view text, char separator, std::string_view source) {
    const std::string file(source);
    const std::string kind = separator == '\t' ? "TSV" : "CSV";
    auto raw = CsvScanner(text, separator, source).rows();
    if (!raw) return raw.error();
    CsvTable table;
    size_t first = 0;
    while (first < raw->size() && blankRow((*raw)[first])) ++first;
    if (first == raw->size())
        return Error{file + ": the file is empty; a " + kind +
                     " data set starts with a header row naming its columns (prompt" +
                     (separator == '\t' ? "\\t" : ",") + "answer), then one row per record"};
    table.columns = std::move((*raw)[first].fields);
    const size_t headerLine = (*raw)[first].line;
    std::map<std::string, size_t> seen;
    for (size_t c = 0; c < table.columns.size(); ++c) {
        const std::string& name = table.columns[c];
        if (name.empty())
            return Error{file + ":" + std::to_string(headerLine) + ": column " +
                         std::to_string(c + 1) +
                         " of the header has no name; the first row names every column"};
        if (auto [it, fresh] = seen.emplace(name, c); !fresh)
            return Error{file + ":" + std::to_string(headerLine) + ": the header names `" + name +
                         "` twice (columns " + std::to_string(it->second + 1) + " and " +
                         std::to_string(c + 1) + "); rename one"};
    }
    RecordErrors errors;
    for (size_t r = first + 1; r < raw->size(); ++r) {
        RawRow& row = (*raw)[r];
        if (blankRow(row)) {
            ++table.blankRows;
            continue;
        }
        if (row.fields.size() != table.columns.size()) {
            errors.add(file + ":" + std::to_string(row.line) + ": the row has " +
                       std::to_string(row.fields.size()) + " fields but the header has " +
                       std::to_string(table.columns.size()) + " columns (" + table.columnList() +
                       "); a field holding " + (separator == '\t' ? "a tab" : "a comma") +
                       " or a line break must be in double quotes");
            continue;
        }
        table.rows.push_back({std::move(row.fields), row.line});
    }
    if (!errors.empty()) return errors.error();
    if (table.rows.empty())
        return Error{file + ": the file has a header (" + table.columnList() +
                     ") but no rows; add one row per record"};
    return table;
}

}  // namespace ws::data
