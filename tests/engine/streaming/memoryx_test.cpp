// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/streaming/memoryx.h"

#include <gtest/gtest.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <string>
#include <vector>

#include "support/file_size_limit.h"
#include "support/temp_dir.h"

namespace ws::streaming {
namespace {
using ws::testing::TempDir;

config::MemoryXConfig fileBacked(const std::filesystem::path& path) {
    config::MemoryXConfig c;
    c.backing = "file";
    c.path = path.string();
    return c;
}

TEST(MemoryX, RamStoreIsZeroedAndLaidOut) {
    auto mx = MemoryX::create(config::MemoryXConfig{}, 100, 2, 10);
    ASSERT_TRUE(mx.ok());
    EXPECT_FALSE((*mx)->fileBacked());
    EXPECT_EQ((*mx)->bytes(), 100u * 4 * 4);
    auto state = (*mx)->optimizerState();
    EXPECT_EQ(state.firstMoment, (*mx)->weights() + 200);
    EXPECT_EQ(state.secondMoment, (*mx)->weights() + 300);
    EXPECT_EQ((*mx)->gradients()[99], 0.0f);
}

TEST(MemoryX, FileStoreKeepsWhatWasWrittenAfterItCloses) {
    TempDir dir("memoryx");
    const auto path = dir / "model.memoryx";
    {
        auto mx = MemoryX::create(fileBacked(path), 1000, 1, 10);
        ASSERT_TRUE(mx.ok()) << mx.error().message;
        EXPECT_TRUE((*mx)->fileBacked());
        (*mx)->weights()[999] = 3.5f;
        EXPECT_EQ((*mx)->optimizerState().secondMoment, nullptr);
    }
    std::ifstream in(path, std::ios::binary);
    in.seekg(4096 + 999 * 4);
    float value = 0;
    in.read(reinterpret_cast<char*>(&value), 4);
    EXPECT_EQ(value, 3.5f);
    EXPECT_FALSE(std::filesystem::exists(path.string() + ".creating"));
    // The store may be re-created over its own old file (a rerun), not over anything else.
    EXPECT_TRUE(MemoryX::create(fileBacked(path), 10, 0, 10).ok());
}

// Sparsity masks (optim/sparse_masks.h) live in the store: in RAM, and in a file after the
// journal, where a reopened store finds them; a store without masks has none.
TEST(MemoryX, SparsityMasksLiveInTheStoreAndSurviveTheFile) {
    auto ram = MemoryX::create(config::MemoryXConfig{}, 100, 2, 10, MemoryX::kEveryParameter, 100);
    ASSERT_TRUE(ram.ok());
    const uint8_t* ramMask = (*ram)->pruneMask();
    ASSERT_NE(ramMask, nullptr);
    if (ramMask) {
        EXPECT_EQ(int(ramMask[99]), 0);
    }
    TempDir dir("memoryx_mask");
    const auto path = dir / "model.memoryx";
    {
        auto mx = MemoryX::create(fileBacked(path), 1000, 2, 10, MemoryX::kEveryParameter, 1000);
        ASSERT_TRUE(mx.ok()) << mx.error().message;
        uint8_t* mask = (*mx)->pruneMask();
        ASSERT_NE(mask, nullptr);
        for (size_t i = 0; mask && i < 1000; ++i) mask[i] = uint8_t(i % 3 == 0);
        (*mx)->weights()[999] = 2.5f;
    }
    auto reopened = MemoryX::open(path);
    ASSERT_TRUE(reopened.ok()) << reopened.error().message;
    const uint8_t* back = (*reopened)->pruneMask();
    ASSERT_NE(back, nullptr);
    EXPECT_EQ((*reopened)->maskBytes(), 1000u);
    for (size_t i = 0; back && i < 1000; ++i) {
        ASSERT_EQ(int(back[i]), int(i % 3 == 0)) << i;
    }
    EXPECT_EQ((*reopened)->weights()[999], 2.5f);
    const auto plain = dir / "plain.memoryx";
    ASSERT_TRUE(MemoryX::create(fileBacked(plain), 10, 0, 10).ok());
    auto noMask = MemoryX::open(plain);
    ASSERT_TRUE(noMask.ok()) << noMask.error().message;
    EXPECT_EQ((*noMask)->pruneMask(), nullptr);
}

TEST(MemoryX, RefusesToOverwriteAForeignFile) {
    TempDir dir("memoryx");
    const auto path = dir / "notes.txt";
    std::ofstream(path) << "precious";
    auto mx = MemoryX::create(fileBacked(path), 10, 0, 10);
    ASSERT_FALSE(mx.ok());
    EXPECT_NE(mx.error().message.find("not a MemoryX store"), std::string::npos);
    std::ifstream in(path);
    std::string text;
    in >> text;
    EXPECT_EQ(text, "precious");
}

TEST(MemoryX, MissingOrUnwritableFolderIsAClearError) {
    TempDir dir("memoryx");
    auto missing = MemoryX::create(fileBacked(dir / "no" / "such" / "store"), 10, 0, 10);
    ASSERT_FALSE(missing.ok());
    EXPECT_NE(missing.error().message.find("does not exist"), std::string::npos);
    if (::geteuid() != 0) {  // root writes anywhere; the check only means something for users
        std::filesystem::create_directories(dir / "ro");
        ::chmod((dir / "ro").c_str(), 0555);
        auto readOnly = MemoryX::create(fileBacked(dir / "ro" / "store"), 10, 0, 10);
        ASSERT_FALSE(readOnly.ok());
        EXPECT_NE(readOnly.error().message.find("cannot create"), std::string::npos);
    }
}

TEST(MemoryX, InsufficientDiskIsAnErrorAndLeavesNothing) {
    TempDir dir("memoryx");
    const auto path = dir / "big.memoryx";
    // A store larger than the file-size limit behaves like a disk that cannot hold it.
    ws::testing::FileSizeLimit limit(1 << 20);
    auto mx = MemoryX::create(fileBacked(path), 10'000'000, 2, 10);
    ASSERT_FALSE(mx.ok());
    EXPECT_NE(mx.error().message.find("reserving disk space"), std::string::npos)
        << mx.error().message;
    EXPECT_FALSE(std::filesystem::exists(path));
    EXPECT_FALSE(std::filesystem::exists(path.string() + ".creating"));
}

// The names that appear in `folder` while `make` runs, as inotify reports them (created or moved
// in), in order.
template <class F>
std::vector<std::string> namesAppearingIn(const std::filesystem::path& folder, F make) {
    const int in = ::inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    EXPECT_GE(in, 0);
    EXPECT_GE(::inotify_add_watch(in, folder.c_str(), IN_CREATE | IN_MOVED_TO), 0);
    make();
    std::vector<std::string> names;
    alignas(inotify_event) char buffer[4096];
    for (ssize_t n; (n = ::read(in, buffer, sizeof buffer)) > 0;) {
        for (char* p = buffer; p < buffer + n;) {
            const auto* e = reinterpret_cast<const inotify_event*>(p);
            if (e->len > 0) names.emplace_back(e->name);
            p += sizeof(inotify_event) + e->len;
        }
    }
    ::close(in);
    return names;
}

// Issue 35: a process killed while it creates a file-backed store (reserving gigabytes takes a
// while) left `<path>.creating` behind. The file now has no name until it is whole: a new store
// appears only under its own name, and one that replaces an old store gets its passing name only
// after its header is written, just before the rename.
TEST(MemoryX, ANewStoreHasNoNameUntilItIsWhole) {
    TempDir dir("memoryx_unnamed");
    const auto path = dir / "model.memoryx";
    const auto created = namesAppearingIn(dir.path(), [&] {
        auto mx = MemoryX::create(fileBacked(path), 1000, 1, 10);
        ASSERT_TRUE(mx.ok()) << mx.error().message;
    });
    EXPECT_EQ(created, std::vector<std::string>{"model.memoryx"});
    auto reopened = MemoryX::open(path);
    ASSERT_TRUE(reopened.ok()) << reopened.error().message;
    reopened->reset();
    // A rerun over its own old store: replaced whole, nothing else left in the folder.
    auto again = MemoryX::create(fileBacked(path), 500, 0, 10);
    ASSERT_TRUE(again.ok()) << again.error().message;
    again->reset();
    std::vector<std::string> left;
    for (const auto& entry : std::filesystem::directory_iterator(dir.path()))
        left.push_back(entry.path().filename().string());
    EXPECT_EQ(left, std::vector<std::string>{"model.memoryx"});
    auto smaller = MemoryX::open(path);
    ASSERT_TRUE(smaller.ok()) << smaller.error().message;
    EXPECT_EQ((*smaller)->paramCount(), 500u);
}

}  // namespace
}  // namespace ws::streaming
