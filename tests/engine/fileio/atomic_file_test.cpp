// SPDX-License-Identifier: GPL-3.0-or-later
// The engine's one crash-safe file writer for small files (writeFileAtomically, which the
// tokenizer and modelio save through) and readWholeFile: whole contents replace a file in one
// rename, a failed write leaves the old file and no temp file, errors name the file.
// (AtomicFileWriter under writeSafetensors: safetensors_test.cpp.)
#include "engine/fileio/atomic_file.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "support/file_size_limit.h"
#include "support/temp_dir.h"

namespace ws::fileio {
namespace {

namespace fs = std::filesystem;
using ws::testing::TempDir;

std::vector<std::string> folderEntries(const fs::path& dir) {
    std::vector<std::string> names;
    for (const auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename().string());
    std::sort(names.begin(), names.end());
    return names;
}

TEST(AtomicFile, WritesAndReplacesWholeFiles) {
    TempDir dir("atomic_file");
    const fs::path file = dir / "vocab.json";
    ASSERT_TRUE(writeFileAtomically(file, "first\n").ok());
    EXPECT_EQ(*readWholeFile(file), "first\n");
    const std::string bytes("binary\0bytes\xff", 13);
    ASSERT_TRUE(writeFileAtomically(file, bytes).ok());
    EXPECT_EQ(*readWholeFile(file), bytes);
    ASSERT_TRUE(writeFileAtomically(dir / "empty.txt", "").ok());
    EXPECT_EQ(*readWholeFile(dir / "empty.txt"), "");
    EXPECT_EQ(folderEntries(dir.path()), (std::vector<std::string>{"empty.txt", "vocab.json"}));
    EXPECT_EQ(fs::status(file).permissions() & fs::perms::owner_read, fs::perms::owner_read);
}

TEST(AtomicFile, AFailedWriteLeavesTheOldFileAndNoTempFile) {
    TempDir dir("atomic_file");
    const fs::path file = dir / "merges.txt";
    ASSERT_TRUE(writeFileAtomically(file, "#version: 0.2\n").ok());
    Status failed;
    {
        ws::testing::FileSizeLimit limit(64 * 1024);  // a full disk, as far as this write sees
        failed = writeFileAtomically(file, std::string(4 << 20, 'x'));
    }
    ASSERT_FALSE(failed.ok());
    EXPECT_NE(failed.error().message.find(file.string()), std::string::npos)
        << failed.error().message;
    EXPECT_EQ(*readWholeFile(file), "#version: 0.2\n");
    EXPECT_EQ(folderEntries(dir.path()), std::vector<std::string>{"merges.txt"});

    auto noFolder = writeFileAtomically(dir / "missing" / "config.json", "{}");
    ASSERT_FALSE(noFolder.ok());
    EXPECT_NE(noFolder.error().message.find("missing"), std::string::npos);
}

TEST(AtomicFile, ReadWholeFileNamesWhatIsWrong) {
    TempDir dir("atomic_file");
    auto missing = readWholeFile(dir / "none.json");
    ASSERT_FALSE(missing.ok());
    EXPECT_NE(missing.error().message.find((dir / "none.json").string()), std::string::npos);
    EXPECT_NE(missing.error().message.find("does not exist"), std::string::npos);
    auto folder = readWholeFile(dir.path());
    ASSERT_FALSE(folder.ok());
    EXPECT_NE(folder.error().message.find("is a folder, expected a file"), std::string::npos);
}

}  // namespace
}  // namespace ws::fileio
