// SPDX-License-Identifier: GPL-3.0-or-later
// Zip archives of data files, read through libzip: record files in name order, other entries
// skipped and named, one format per archive, damaged archives refused. The fixtures in
// fixtures/records/ were written with Python's zipfile (an independent writer):
//   chat_csvs.zip      data/ (folder), data/train_b.csv (a parent-id chain), data/train_a.csv,
//                      README.md, __MACOSX/data/._train_a.csv
//   mixed_formats.zip  a.csv (columns), b.jsonl (messages)
//   docs_only.zip      README.md, notes.txt
//   bad_row.zip        chat.jsonl with a malformed second line
//   stored.zip         chat.jsonl stored without compression (damaged by the test)
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "record_test_support.h"
#include "support/temp_dir.h"

namespace ws::data {
namespace {
namespace fs = std::filesystem;
using chat::ChatMessage;
using testing::contains;
using testing::readError;
using testing::readOk;

const fs::path kRecords = fs::path(WAFER_DATA_FIXTURES) / "records";

std::string bytesOf(const fs::path& file) {
    std::ifstream in(file, std::ios::binary);
    std::ostringstream out;
    out << in.rdbuf();
    return std::move(out).str();
}

TEST(ZipRecords, RecordFilesInNameOrderOthersSkippedAndNamed) {
    auto read = readRecordFile(kRecords / "chat_csvs.zip");
    ASSERT_TRUE(read.ok()) << read.error().message;
    const std::string zip = (kRecords / "chat_csvs.zip").string();
    ASSERT_EQ(read->conversations.size(), 2u);
    EXPECT_EQ(read->conversations[0].messages,
              (std::vector<ChatMessage>{{"user", "Hello, there"}, {"assistant", "Hi"}}));
    EXPECT_EQ(read->conversations[0].origin, zip + "/data/train_a.csv:2 (id `a1`)");
    EXPECT_EQ(read->conversations[1].messages, (std::vector<ChatMessage>{{"user", "Second file"},
                                                                         {"assistant", "Yes"},
                                                                         {"user", "And then?"},
                                                                         {"assistant", "Done"}}));
    EXPECT_EQ(read->conversationGroups, (std::vector<size_t>{0, 1}));
    EXPECT_EQ(read->report.format, RecordFormat::Columns);
    EXPECT_EQ(read->report.records, 3u);
    EXPECT_EQ(read->report.conversations, 2u);
    EXPECT_TRUE(contains(read->report.evidence, zip + "/data/train_a.csv: CSV/TSV columns: 1 row,"))
        << read->report.evidence;
    ASSERT_EQ(read->report.warnings.size(), 1u);
    EXPECT_EQ(read->report.warnings[0],
              zip + ": files not read (not .csv, .tsv, .jsonl or .json): README.md");
}

TEST(ZipRecords, FilesOfDifferentFormatsAreRefused) {
    const std::string error = readError(bytesOf(kRecords / "mixed_formats.zip"), "mixed.zip");
    EXPECT_EQ(error,
              "mixed.zip/b.jsonl holds OpenAI messages but mixed.zip/a.csv holds CSV/TSV "
              "columns; a zip holds one data set in one format: remove or convert the odd file");
}

TEST(ZipRecords, AnArchiveWithoutDataFilesListsWhatItHolds) {
    const std::string error = readError(bytesOf(kRecords / "docs_only.zip"), "docs.zip");
    EXPECT_EQ(error,
              "docs.zip: the archive holds no data file (.csv, .tsv, .jsonl, .json); it holds: "
              "README.md, notes.txt; put the data set's files in it, or name the file itself");
}

TEST(ZipRecords, ABadRecordInsideNamesTheArchiveTheFileAndTheLine) {
    const std::string error = readError(bytesOf(kRecords / "bad_row.zip"), "set.zip");
    EXPECT_TRUE(contains(error, "set.zip/chat.jsonl:2:")) << error;
    EXPECT_TRUE(contains(error, "not valid JSON")) << error;
}

TEST(ZipRecords, DamagedTruncatedAndFakeArchivesAreRefused) {
    std::string stored = bytesOf(kRecords / "stored.zip");
    const size_t at = stored.find("damage");
    ASSERT_NE(at, std::string::npos);
    stored[at] = 'D';  // the stored bytes no longer match their CRC
    const std::string crc = readError(stored, "crc.zip");
    EXPECT_TRUE(contains(crc, "crc.zip/chat.jsonl:")) << crc;
    EXPECT_TRUE(contains(crc, "download or zip it again")) << crc;

    const std::string whole = bytesOf(kRecords / "chat_csvs.zip");
    const std::string truncated = readError(whole.substr(0, whole.size() / 2), "cut.zip");
    EXPECT_TRUE(contains(truncated, "cut.zip: not a readable zip archive")) << truncated;

    EXPECT_TRUE(contains(readError("prompt,answer\nq,a\n", "renamed.zip"),
                         "renamed.zip: not a zip archive"));
    RecordOptions text;
    text.format = RecordFormat::Text;
    EXPECT_TRUE(contains(readError(whole, "x.zip", text), "a zip archive is not text"));
}

TEST(RecordFiles, ReadsFilesFromDiskAndNamesMissingOnes) {
    ws::testing::TempDir dir;
    const fs::path file = dir / "chat.jsonl";
    std::ofstream(file, std::ios::binary) << R"({"prompt": "q", "completion": "a"})"
                                          << "\n";
    auto read = readRecordFile(file);
    ASSERT_TRUE(read.ok()) << read.error().message;
    ASSERT_EQ(read->conversations.size(), 1u);
    EXPECT_EQ(read->conversations[0].origin, file.string() + ":1");
    auto missing = readRecordFile(dir / "nope.jsonl");
    ASSERT_FALSE(missing.ok());
    EXPECT_EQ(missing.error().message, (dir / "nope.jsonl").string() +
                                           ": no such file; check the path in "
                                           "train_input.data_dir");
    auto folder = readRecordFile(dir.path());
    ASSERT_FALSE(folder.ok());
    EXPECT_TRUE(contains(folder.error().message, ": not a file")) << folder.error().message;
}

}  // namespace
}  // namespace ws::data
