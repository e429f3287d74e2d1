// SPDX-License-Identifier: GPL-3.0-or-later
// CSV/TSV rows into conversations, with parent-id chains (see column_records.h).
#include "engine/data/column_records.h"

#include <algorithm>
#include <map>
#include <unordered_map>

#include "engine/data/record_text.h"

namespace ws::data {

namespace {

constexpr size_t npos = std::string_view::npos;

struct Columns {
    size_t prompt = npos, answer = npos, system = npos, id = npos, parent = npos;
};

Result<Columns> mapColumns(const CsvTable& table, const RecordOptions& options,
                           const std::string& file) {
    Columns c;
    const std::pair<const std::string*, std::string_view> required[] = {
        {&options.promptColumn, "prompt_column"}, {&options.answerColumn, "answer_column"}};
    for (const auto& [name, key] : required) {
        if (table.column(*name) == npos)
            return Error{file + ": no column `" + *name + "` (train_input." + std::string(key) +
                         "); the columns are " + table.columnList() +
                         ": set train_input.prompt_column and train_input.answer_column to the "
                         "columns holding the prompt and the answer"};
    }
    c.prompt = table.column(options.promptColumn);
    c.answer = table.column(options.answerColumn);
    if (c.prompt == c.answer)
        return Error{file + ": the prompt and the answer are both column `" + options.promptColumn +
                     "`; map them to two columns"};
    c.system = table.column(options.systemColumn);
    c.id = table.column(options.idColumn);
    c.parent = table.column(options.parentIdColumn);
    if (c.parent != npos && c.id == npos)
        return Error{file + ": a parent id column `" + options.parentIdColumn +
                     "` but no id column `" + options.idColumn + "` (train_input.id_column); the " +
                     "columns are " + table.columnList() + ": set train_input.id_column"};
    return c;
}

std::string rowOrigin(const std::string& file, const CsvRow& row, const Columns& c) {
    std::string out = file + ":" + std::to_string(row.line);
    if (c.id != npos && !row.fields[c.id].empty()) out += " (id `" + row.fields[c.id] + "`)";
    return out;
}

std::string plural(size_t n, const char* one, const char* many) {
    return std::to_string(n) + " " + (n == 1 ? one : many);
}

bool blank(const std::string& s) {
    return s.find_first_not_of(" \t\r\n") == std::string::npos;
}

// The parent row of each row (npos for a root), from the id and parent id columns; duplicate
// ids, unknown parent ids and cycles go to `errors`.
std::vector<size_t> linkParents(const CsvTable& table, const Columns& c, const std::string& file,
                                RecordErrors& errors) {
    const auto& rows = table.rows;
    std::unordered_map<std::string, size_t> byId;
    for (size_t r = 0; r < rows.size(); ++r) {
        const std::string& id = rows[r].fields[c.id];
        if (id.empty()) continue;
        if (auto [it, fresh] = byId.emplace(id, r); !fresh)
            errors.add(file + ":" + std::to_string(rows[r].line) + ": the id `" + id +
                       "` is used again (first on line " + std::to_string(rows[it->second].line) +
                       "); ids must be unique");
    }
    std::vector<size_t> parent(rows.size(), npos);
    for (size_t r = 0; r < rows.size(); ++r) {
        const std::string& p = rows[r].fields[c.parent];
        if (p.empty()) continue;
        const auto it = byId.find(p);
        if (it == byId.end()) {
            errors.add(rowOrigin(file, rows[r], c) + ": the parent id `" + p +
                       "` names no record's id; fix it, or leave it empty where a conversation "
                       "starts");
            continue;
        }
        parent[r] = it->second;
    }
    // Cycles: walk up from every row; a row met twice on one walk closes a cycle.
    std::vector<int> state(rows.size(), 0);  // 0 unseen, 1 on the current walk, 2 done
    for (size_t start = 0; start < rows.size(); ++start) {
        std::vector<size_t> walk;
        size_t r = start;
        while (r != npos && state[r] == 0) {
            state[r] = 1;
            walk.push_back(r);
            r = parent[r];
        }
        if (r != npos && state[r] == 1) {
            std::string members;
            const auto from = std::find(walk.begin(), walk.end(), r);
            for (auto it = from; it != walk.end(); ++it)
                members += "`" + rows[*it].fields[c.id] + "` (line " +
                           std::to_string(rows[*it].line) + ") -> ";
            members += "`" + rows[r].fields[c.id] + "`";
            errors.add(file + ": the parent ids form a cycle: " + members +
                       "; a conversation's first record has an empty parent id");
        }
        for (size_t w : walk) state[w] = 2;
    }
    return parent;
}

}  // namespace

Result<RecordSet> conversationsFromColumns(const CsvTable& table, const RecordOptions& options,
                                           std::string_view source) {
    const std::string file(source);
    auto mapped = mapColumns(table, options, file);
    if (!mapped) return mapped.error();
    const Columns c = *mapped;
    const auto& rows = table.rows;

    RecordErrors errors;
    for (const auto& row : rows) {
        if (blank(row.fields[c.answer]))
            errors.add(rowOrigin(file, row, c) + ": the answer (column `" + options.answerColumn +
                       "`) is empty; give it an answer or remove the row");
    }
    std::vector<size_t> parent(rows.size(), npos);
    if (c.parent != npos) parent = linkParents(table, c, file, errors);
    if (!errors.empty()) return errors.error();
    std::vector<bool> isParent(rows.size(), false);
    for (size_t p : parent)
        if (p != npos) isParent[p] = true;

    RecordSet out;
    std::map<size_t, size_t> groupOfRoot;
    for (size_t leaf = 0; leaf < rows.size(); ++leaf) {
        if (isParent[leaf]) continue;
        std::vector<size_t> chain;
        for (size_t r = leaf; r != npos; r = parent[r]) chain.push_back(r);
        std::reverse(chain.begin(), chain.end());
        chat::Conversation conversation;
        conversation.origin = rowOrigin(file, rows[leaf], c);
        if (chain.size() > 1)
            conversation.origin += " (a chain of " + std::to_string(chain.size()) +
                                   " records from line " + std::to_string(rows[chain[0]].line) +
                                   ")";
        const std::string system = c.system != npos ? rows[chain[0]].fields[c.system] : "";
        if (!system.empty()) conversation.messages.push_back({"system", system});
        bool bad = false;
        for (size_t k = 1; k < chain.size() && c.system != npos; ++k) {
            const std::string& later = rows[chain[k]].fields[c.system];
            if (!later.empty() && later != system) {
                errors.add(rowOrigin(file, rows[chain[k]], c) + ": the system prompt (column `" +
                           options.systemColumn +
                           "`) differs from the one its conversation starts with (line " +
                           std::to_string(rows[chain[0]].line) +
                           "); only a conversation's first record sets it: leave it empty or "
                           "the same");
                bad = true;
                break;
            }
        }
        if (bad) continue;
        for (size_t r : chain) {
            conversation.messages.push_back({"user", rows[r].fields[c.prompt]});
            conversation.messages.push_back({"assistant", rows[r].fields[c.answer]});
        }
        const auto [group, fresh] = groupOfRoot.emplace(chain[0], groupOfRoot.size());
        (void)fresh;
        out.conversations.push_back(std::move(conversation));
        out.conversationGroups.push_back(group->second);
    }
    if (!errors.empty()) return errors.error();

    RecordReport& report = out.report;
    report.format = RecordFormat::Columns;
    report.records = rows.size();
    report.conversations = out.conversations.size();
    report.blankLines = table.blankRows;
    report.evidence = std::string(recordFormatName(RecordFormat::Columns)) + ": " +
                      plural(rows.size(), "row", "rows") + ", prompt `" + options.promptColumn +
                      "`, answer `" + options.answerColumn + "`";
    if (c.system != npos) report.evidence += ", system `" + options.systemColumn + "`";
    if (c.parent != npos)
        report.evidence +=
            "; " + plural(out.conversations.size(), "conversation", "conversations") +
            " chained by `" + options.parentIdColumn + "` -> `" + options.idColumn + "`";
    std::string unused;
    for (size_t i = 0; i < table.columns.size(); ++i) {
        if (i == c.prompt || i == c.answer || i == c.system || i == c.id || i == c.parent) continue;
        if (!unused.empty()) unused += ", ";
        unused += "`" + table.columns[i] + "`";
    }
    if (!unused.empty())
        report.warnings.push_back(file + ": columns not read: " + unused + " (only prompt `" +
                                  options.promptColumn + "` and answer `" + options.answerColumn +
                                  "` are trained on); if they belong to the prompt, join them "
                                  "into one column or map train_input.prompt_column to it");
    return out;
}

}  // namespace ws::data
