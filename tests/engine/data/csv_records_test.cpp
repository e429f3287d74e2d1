// SPDX-License-Identifier: GPL-3.0-or-later
// CSV/TSV data sets: RFC 4180 quoting, CRLF, BOM, the column mapping, H2O-style parent-id chains,
// and every error naming file:line and the fix.
#include "engine/data/csv_table.h"

#include <gtest/gtest.h>

#include "record_test_support.h"

namespace ws::data {
namespace {
using chat::ChatMessage;
using testing::contains;
using testing::readError;
using testing::readOk;

TEST(CsvTable, QuotesSeparatorsLineBreaksAndCrlf) {
    auto table = readCsvTable(
        "prompt,answer\r\n\"Say \"\"hi\"\", twice\",\"hi\r\nhi\"\r\nplain,\"\"\r\n\r\nlast,x", ',',
        "d.csv");
    ASSERT_TRUE(table.ok()) << table.error().message;
    EXPECT_EQ(table->columns, (std::vector<std::string>{"prompt", "answer"}));
    ASSERT_EQ(table->rows.size(), 3u);
    EXPECT_EQ(table->rows[0].fields, (std::vector<std::string>{"Say \"hi\", twice", "hi\r\nhi"}));
    EXPECT_EQ(table->rows[0].line, 2u);
    EXPECT_EQ(table->rows[1].fields, (std::vector<std::string>{"plain", ""}));
    EXPECT_EQ(table->rows[1].line, 4u);  // the quoted line break moved it down one line
    EXPECT_EQ(table->rows[2].line, 6u);
    EXPECT_EQ(table->blankRows, 1u);
    EXPECT_EQ(table->columnList(), "`prompt`, `answer`");
}

TEST(CsvTable, TsvUsesTabsAndAFinalSeparatorGivesAnEmptyField) {
    auto table = readCsvTable("a\tb\tc\nx\t\"y\tz\"\t", '\t', "d.tsv");
    ASSERT_TRUE(table.ok()) << table.error().message;
    EXPECT_EQ(table->rows[0].fields, (std::vector<std::string>{"x", "y\tz", ""}));
}

TEST(CsvRecords, RowsBecomeConversationsWithTheSystemColumnWhenPresent) {
    const auto set =
        readOk("\xEF\xBB\xBFsystem,prompt,answer\nBe brief.,Hi,Hello\n,Q,A\n", "chat.csv");
    ASSERT_EQ(set.conversations.size(), 2u);
    EXPECT_EQ(set.conversations[0].messages,
              (std::vector<ChatMessage>{
                  {"system", "Be brief."}, {"user", "Hi"}, {"assistant", "Hello"}}));
    EXPECT_EQ(set.conversations[0].origin, "chat.csv:2");
    EXPECT_EQ(set.conversations[1].messages,
              (std::vector<ChatMessage>{{"user", "Q"}, {"assistant", "A"}}));
    EXPECT_EQ(set.report.format, RecordFormat::Columns);
    EXPECT_EQ(set.report.evidence,
              "CSV/TSV columns: 2 rows, prompt `prompt`, answer `answer`, system `system`");
    EXPECT_TRUE(set.report.warnings.empty());
}

TEST(CsvRecords, AColumnMappingNamesOtherColumnsAndUnreadColumnsAreAWarning) {
    RecordOptions options;
    options.promptColumn = "instruction";
    options.answerColumn = "response";
    const auto set =
        readOk("instruction\tcontext\tresponse\tcategory\nName a colour\t\tRed\tbrainstorm\n",
               "dolly.tsv", options);
    ASSERT_EQ(set.conversations.size(), 1u);
    EXPECT_EQ(set.conversations[0].messages[1].content, "Red");
    ASSERT_EQ(set.report.warnings.size(), 1u);
    EXPECT_TRUE(
        contains(set.report.warnings[0], "dolly.tsv: columns not read: `context`, `category`"))
        << set.report.warnings[0];
}

TEST(CsvRecords, ParentIdsChainTurnsIntoConversationsEndingAtLeaves) {
    // a -> b -> c and a -> d: two conversations sharing their first turn; e stands alone.
    const auto set = readOk(
        "id,parent_id,system,prompt,answer\n"
        "a,,Be kind.,Hi,Hello\n"
        "b,a,,How are you?,Fine\n"
        "e,,,Alone,Yes\n"
        "c,b,Be kind.,Bye,Bye!\n"
        "d,a,,Other,Branch\n",
        "h2o.csv");
    ASSERT_EQ(set.conversations.size(), 3u);
    // File order of the leaves: e (line 4), c (line 5), d (line 6).
    EXPECT_EQ(set.conversations[0].messages,
              (std::vector<ChatMessage>{{"user", "Alone"}, {"assistant", "Yes"}}));
    EXPECT_EQ(set.conversations[0].origin, "h2o.csv:4 (id `e`)");
    EXPECT_EQ(set.conversations[1].messages, (std::vector<ChatMessage>{{"system", "Be kind."},
                                                                       {"user", "Hi"},
                                                                       {"assistant", "Hello"},
                                                                       {"user", "How are you?"},
                                                                       {"assistant", "Fine"},
                                                                       {"user", "Bye"},
                                                                       {"assistant", "Bye!"}}));
    EXPECT_EQ(set.conversations[1].origin, "h2o.csv:5 (id `c`) (a chain of 3 records from line 2)");
    EXPECT_EQ(set.conversations[2].messages, (std::vector<ChatMessage>{{"system", "Be kind."},
                                                                       {"user", "Hi"},
                                                                       {"assistant", "Hello"},
                                                                       {"user", "Other"},
                                                                       {"assistant", "Branch"}}));
    // c and d share root a: one group.
    EXPECT_EQ(set.conversationGroups, (std::vector<size_t>{0, 1, 1}));
    EXPECT_EQ(set.report.records, 5u);
    EXPECT_EQ(set.report.conversations, 3u);
    EXPECT_TRUE(contains(set.report.evidence, "3 conversations chained by `parent_id` -> `id`"))
        << set.report.evidence;
}

// --- bad input ---

TEST(CsvRecordErrors, AMissingColumnIsNamedWithTheColumnsFound) {
    const std::string error = readError("question,response\nq,a\n", "d.csv");
    EXPECT_EQ(error,
              "d.csv: no column `prompt` (train_input.prompt_column); the columns are "
              "`question`, `response`: set train_input.prompt_column and "
              "train_input.answer_column to the columns holding the prompt and the answer");
    RecordOptions options;
    options.promptColumn = "question";
    EXPECT_TRUE(contains(readError("question,response\nq,a\n", "d.csv", options),
                         "d.csv: no column `answer` (train_input.answer_column)"));
    options.answerColumn = "question";
    EXPECT_TRUE(contains(readError("question,response\nq,a\n", "d.csv", options),
                         "both column `question`"));
    EXPECT_TRUE(contains(readError("parent_id,prompt,answer\n,q,a\n", "d.csv"),
                         "d.csv: a parent id column `parent_id` but no id column `id`"));
}

TEST(CsvRecordErrors, QuotingAndFieldCountMistakesNameTheLine) {
    EXPECT_TRUE(contains(readError("prompt,answer\nq,\"open\nmore\n", "d.csv"),
                         "d.csv:2: a quoted field opens here (column 2) and is never closed"));
    EXPECT_TRUE(contains(readError("prompt,answer\n\"q\"x,a\n", "d.csv"),
                         "d.csv:2: text after the closing quote of column 1"));
    const std::string count = readError("prompt,answer\nq,a\nq,a,extra\n", "d.csv");
    EXPECT_TRUE(contains(count,
                         "d.csv:3: the row has 3 fields but the header has 2 columns "
                         "(`prompt`, `answer`); a field holding a comma or a line break "
                         "must be in double quotes"))
        << count;
    EXPECT_TRUE(contains(readError("prompt,,answer\nq,,a\n", "d.csv"),
                         "d.csv:1: column 2 of the header has no name"));
    EXPECT_TRUE(contains(readError("prompt,prompt,answer\nq,q,a\n", "d.csv"),
                         "d.csv:1: the header names `prompt` twice (columns 1 and 2)"));
}

TEST(CsvRecordErrors, EmptyFilesAndHeaderOnlyFilesAreRefused) {
    EXPECT_TRUE(contains(readError("", "d.csv"), "d.csv: the file is empty; a CSV data set"));
    EXPECT_TRUE(contains(readError("\r\n\r\n", "d.tsv"), "d.tsv: the file is empty; a TSV"));
    EXPECT_TRUE(contains(readError("prompt,answer\n\n", "d.csv"),
                         "d.csv: the file has a header (`prompt`, `answer`) but no rows"));
}

TEST(CsvRecordErrors, EmptyAnswersNameTheirRows) {
    const std::string error = readError("id,prompt,answer\n1,q,a\n2,q, \n3,q,\n", "d.csv");
    EXPECT_TRUE(contains(error, "d.csv:3 (id `2`): the answer (column `answer`) is empty"))
        << error;
    EXPECT_TRUE(contains(error, "d.csv:4 (id `3`)")) << error;
}

TEST(CsvRecordErrors, DuplicateAndUnknownIdsAndCyclesNameTheRecords) {
    const std::string duplicate =
        readError("id,parent_id,prompt,answer\na,,q,x\na,,q,y\n", "d.csv");
    EXPECT_TRUE(contains(duplicate,
                         "d.csv:3: the id `a` is used again (first on line 2); ids "
                         "must be unique"))
        << duplicate;
    const std::string unknown = readError("id,parent_id,prompt,answer\na,zz,q,x\n", "d.csv");
    EXPECT_TRUE(contains(unknown, "d.csv:2 (id `a`): the parent id `zz` names no record's id"))
        << unknown;
    const std::string cycle =
        readError("id,parent_id,prompt,answer\nr,,q,x\na,c,q,x\nb,a,q,x\nc,b,q,x\n", "d.csv");
    EXPECT_TRUE(contains(cycle,
                         "d.csv: the parent ids form a cycle: `a` (line 3) -> `c` (line 5) "
                         "-> `b` (line 4) -> `a`"))
        << cycle;
    const std::string self = readError("id,parent_id,prompt,answer\na,a,q,x\n", "d.csv");
    EXPECT_TRUE(contains(self, "cycle: `a` (line 2) -> `a`")) << self;
}

TEST(CsvRecordErrors, ASystemPromptChangingInsideAChainIsRefused) {
    const std::string error =
        readError("id,parent_id,system,prompt,answer\na,,S1,q,x\nb,a,S2,q,y\n", "d.csv");
    EXPECT_TRUE(contains(error,
                         "d.csv:3 (id `b`): the system prompt (column `system`) differs "
                         "from the one its conversation starts with (line 2)"))
        << error;
}

TEST(CsvRecordErrors, Latin1TextIsRefusedNamingTheLine) {
    const std::string error = readError("prompt,answer\nq,caf\xE9\n", "d.csv");
    EXPECT_TRUE(contains(error, "d.csv:2: byte 0xE9 at column 6 is not UTF-8")) << error;
}

}  // namespace
}  // namespace ws::data

namespace ws::data {
namespace {

TEST(CsvRecordErrors, EveryProblemOfAFileIsNamedAtOnce) {
    const std::string error = testing::readError(
        "id,parent_id,prompt,answer\na,,q,x\na,,q,y\nc,zz,q,z\nd,,q,\n", "d.csv");
    EXPECT_TRUE(testing::contains(error, "d.csv:5 (id `d`): the answer (column `answer`) is empty"))
        << error;
    EXPECT_TRUE(testing::contains(error, "d.csv:3: the id `a` is used again")) << error;
    EXPECT_TRUE(testing::contains(error, "d.csv:4 (id `c`): the parent id `zz`")) << error;
    EXPECT_TRUE(testing::contains(error,
                                  "(3 bad records in all; nothing is trained until every "
                                  "record is fixed or removed)"))
        << error;
}

}  // namespace
}  // namespace ws::data
