// SPDX-License-Identifier: GPL-3.0-or-later
// readCorpus / listCorpusFiles: which files a data_dir names, in which order, joined how, and
// the errors for missing or empty input.
#include "engine/data/corpus.h"

#include <gtest/gtest.h>

#include <fstream>

#include "support/temp_dir.h"

namespace ws::data {
namespace {
namespace fs = std::filesystem;

void writeFile(const fs::path& path, std::string_view text) {
    fs::create_directories(path.parent_path());
    std::ofstream(path, std::ios::binary) << text;
}

TEST(Corpus, ReadsAFileNamedDirectlyWhateverItsExtension) {
    testing::TempDir dir;
    writeFile(dir / "notes.md", "# heading\ntext\n");
    auto corpus = readCorpus({(dir / "notes.md").string()});
    ASSERT_TRUE(corpus.ok()) << corpus.error().message;
    EXPECT_EQ(*corpus, "# heading\ntext\n");
}

TEST(Corpus, FoldersContributeTextFilesRecursivelyInPathOrder) {
    testing::TempDir dir;
    writeFile(dir / "b.txt", "B");
    writeFile(dir / "a.TXT", "A");
    writeFile(dir / "sub" / "c.text", "C");
    writeFile(dir / "sub" / "deeper" / "d.txt", "D");
    writeFile(dir / "README.md", "not training text");
    writeFile(dir / "make.sh", "#!/bin/sh");
    writeFile(dir / ".hidden.txt", "hidden");
    writeFile(dir / ".git" / "x.txt", "hidden folder");
    auto files = listCorpusFiles({dir.path().string()});
    ASSERT_TRUE(files.ok()) << files.error().message;
    ASSERT_EQ(files->size(), 4u);
    EXPECT_EQ((*files)[0].filename(), "a.TXT");
    EXPECT_EQ((*files)[1].filename(), "b.txt");
    EXPECT_EQ((*files)[2].filename(), "c.text");
    EXPECT_EQ((*files)[3].filename(), "d.txt");
    auto corpus = readCorpus({dir.path().string()});
    ASSERT_TRUE(corpus.ok());
    EXPECT_EQ(*corpus, "A\n\nB\n\nC\n\nD");
}

TEST(Corpus, ListsKeepTheirOrderAndReadEachFileOnce) {
    testing::TempDir dir;
    writeFile(dir / "texts" / "one.txt", "1");
    writeFile(dir / "texts" / "two.txt", "2");
    writeFile(dir / "extra.txt", "X");
    auto corpus = readCorpus({(dir / "extra.txt").string(), (dir / "texts").string(),
                              (dir / "texts" / "two.txt").string()});
    ASSERT_TRUE(corpus.ok()) << corpus.error().message;
    EXPECT_EQ(*corpus, "X\n\n1\n\n2");
}

TEST(Corpus, ErrorsNameTheProblem) {
    testing::TempDir dir;
    auto none = readCorpus({});
    ASSERT_FALSE(none.ok());
    EXPECT_NE(none.error().message.find("set data_dir"), std::string::npos);

    const std::string missing = (dir / "no_such_folder").string();
    auto absent = readCorpus({missing});
    ASSERT_FALSE(absent.ok());
    EXPECT_NE(absent.error().message.find("'" + missing + "' does not exist"), std::string::npos);

    writeFile(dir / "docs" / "README.md", "x");
    auto noText = readCorpus({(dir / "docs").string()});
    ASSERT_FALSE(noText.ok());
    EXPECT_NE(noText.error().message.find("holds no .txt or .text files"), std::string::npos);
    EXPECT_NE(noText.error().message.find("1 other files are ignored"), std::string::npos);

    writeFile(dir / "empty" / "a.txt", "");
    writeFile(dir / "empty" / "b.txt", "");
    auto empty = readCorpus({(dir / "empty").string()});
    ASSERT_FALSE(empty.ok());
    EXPECT_NE(empty.error().message.find("the corpus is empty"), std::string::npos);
}

// Issue 31: a data_dir read from a config may name anything; one whose component passes the
// system's 255 bytes (a line that ran on) said "does not exist". It says why it cannot be read.
TEST(Corpus, APathTheSystemRefusesSaysWhy) {
    testing::TempDir dir;
    const std::string tooLong = (dir / std::string(300, 'x') / "a.txt").string();
    auto refused = readCorpus({tooLong});
    ASSERT_FALSE(refused.ok());
    EXPECT_NE(refused.error().message.find("'" + tooLong + "' cannot be read (File name too long)"),
              std::string::npos)
        << refused.error().message;
}

TEST(Corpus, ReadOnlyFoldersWork) {
    testing::TempDir dir;
    writeFile(dir / "ro" / "a.txt", "read only text");
    fs::permissions(dir / "ro" / "a.txt", fs::perms::owner_read | fs::perms::group_read);
    fs::permissions(dir / "ro", fs::perms::owner_read | fs::perms::owner_exec);
    auto corpus = readCorpus({(dir / "ro").string()});
    ASSERT_TRUE(corpus.ok()) << corpus.error().message;
    EXPECT_EQ(*corpus, "read only text");
}

}  // namespace
}  // namespace ws::data
