// SPDX-License-Identifier: GPL-3.0-or-later
// checkRunData (run_data.h): the data a config names, checked as a run reads it (issue 31:
// `wafer validate` called configs valid whose data a run then refused). Every problem names the
// key that gives the data and the fix; what a run reads passes.
#include "engine/session/run_data.h"

#include <gtest/gtest.h>

#include <fstream>

#include "support/temp_dir.h"

namespace ws::session {
namespace {

namespace fs = std::filesystem;

config::Config withData(std::vector<std::string> train, std::vector<std::string> eval = {}) {
    config::Config cfg;
    cfg.trainInput.dataDir = std::move(train);
    cfg.evalInput.dataDir = std::move(eval);
    return cfg;
}

// The one problem checkRunData finds, or a failure when it finds none or several.
std::string problemOf(const config::Config& cfg) {
    const auto problems = checkRunData(cfg);
    EXPECT_EQ(problems.size(), 1u);
    return problems.empty() ? std::string() : problems.front();
}

TEST(RunData, TextThatARunReadsPasses) {
    testing::TempDir dir("run_data");
    std::ofstream(dir / "a.txt") << "some text to train on\n";
    std::ofstream(dir / "b.txt") << "and some to evaluate on\n";
    EXPECT_TRUE(checkRunData(withData({(dir / "a.txt").string()})).empty());
    EXPECT_TRUE(
        checkRunData(withData({(dir / "a.txt").string()}, {(dir / "b.txt").string()})).empty());
    ASSERT_EQ(runDataInputs(withData({"x"})).size(), 1u);  // no eval data: the held-out end
    EXPECT_EQ(runDataInputs(withData({"x"}, {"y"})).back().key, "eval_input.data_dir");
}

TEST(RunData, MissingDataIsNamedByItsKey) {
    testing::TempDir dir("run_data");
    const std::string missing = (dir / "no-such-corpus").string();
    std::string p = problemOf(withData({missing}));
    EXPECT_NE(p.find("train_input.data_dir: '" + missing + "' does not exist"), std::string::npos)
        << p;
    EXPECT_NE(p.find("name an existing text file or folder"), std::string::npos) << p;

    std::ofstream(dir / "a.txt") << "text\n";
    p = problemOf(withData({(dir / "a.txt").string()}, {missing}));
    EXPECT_NE(p.find("eval_input.data_dir: '" + missing + "' does not exist"), std::string::npos)
        << p;

    p = problemOf(withData({}));
    EXPECT_NE(p.find("train_input.data_dir: no text given"), std::string::npos) << p;

    const std::string tooLong = (dir / std::string(300, 'd')).string();
    p = problemOf(withData({tooLong}));
    EXPECT_NE(p.find("train_input.data_dir: '" + tooLong + "' cannot be read (File name too long)"),
              std::string::npos)
        << p;
}

TEST(RunData, BinaryDataIsRefusedUnlessAllowed) {
    testing::TempDir dir("run_data");
    {
        std::ofstream elf(dir / "program", std::ios::binary);
        elf << std::string(
                   "\x7f"
                   "ELF\x02\x01\x01",
                   7)
            << std::string(200, '\0');
    }
    config::Config cfg = withData({(dir / "program").string()});
    std::string p = problemOf(cfg);
    EXPECT_NE(
        p.find("train_input.data_dir: '" + (dir / "program").string() + "' looks like an ELF"),
        std::string::npos)
        << p;
    EXPECT_NE(p.find("set train_input.allow_binary: true to train on it anyway"), std::string::npos)
        << p;
    cfg.trainInput.allowBinary = true;
    EXPECT_TRUE(checkRunData(cfg).empty());

    std::ofstream(dir / "a.txt") << "text\n";
    cfg = withData({(dir / "a.txt").string()}, {(dir / "program").string()});
    p = problemOf(cfg);
    EXPECT_NE(p.find("eval_input.data_dir: "), std::string::npos) << p;
    EXPECT_NE(p.find("set eval_input.allow_binary: true to evaluate on it anyway"),
              std::string::npos)
        << p;
}

}  // namespace
}  // namespace ws::session
