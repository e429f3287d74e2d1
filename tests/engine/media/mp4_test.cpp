// SPDX-License-Identifier: GPL-3.0-or-later
// The MP4 writer: without ffmpeg, a clear error naming `apt-get install ffmpeg`; a failing ffmpeg
// (a stand-in script) quoted in the error with no file left; with Debian's ffmpeg on PATH a real
// H.264 file of an odd size whose frame count and size ffprobe confirms (skipped without it).
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <array>
#include <cstdio>
#include <fstream>

#include "media_test_frames.h"
#include "support/animation_decode.h"
#include "support/temp_dir.h"

namespace ws::media::testing {
namespace {

namespace fs = std::filesystem;

// Sets PATH for one scope.
class ScopedPath {
public:
    explicit ScopedPath(const std::string& value) {
        if (const char* old = std::getenv("PATH")) m_old = old;
        ::setenv("PATH", value.c_str(), 1);
    }
    ~ScopedPath() { ::setenv("PATH", m_old.c_str(), 1); }

private:
    std::string m_old;
};

fs::path writeScript(const fs::path& path, const std::string& body) {
    std::ofstream(path) << "#!/bin/sh\n" << body;
    fs::permissions(path, fs::perms::owner_all);
    return path;
}

TEST(Mp4, WithoutFfmpegTheErrorSaysHowToInstallIt) {
    ws::testing::TempDir dir("mp4");
    fs::create_directories(dir / "empty-bin");
    ScopedPath path((dir / "empty-bin").string());
    EXPECT_FALSE(findFfmpeg().has_value());
    AnimationSpec spec;
    spec.width = 16;
    spec.height = 9;
    auto writer = createAnimationWriter(dir / "talk.mp4", spec);
    ASSERT_FALSE(writer.ok());
    EXPECT_NE(writer.error().message.find("apt-get install ffmpeg"), std::string::npos)
        << writer.error().message;
    EXPECT_NE(writer.error().message.find("talk.mp4"), std::string::npos);
    EXPECT_FALSE(fs::exists(dir / "talk.mp4"));
}

TEST(Mp4, FfmpegOnPathIsFound) {
    ws::testing::TempDir dir("mp4");
    fs::create_directories(dir / "bin");
    writeScript(dir / "bin" / "ffmpeg", "exit 0\n");
    ScopedPath path("/nonexistent:" + (dir / "bin").string());
    ASSERT_TRUE(findFfmpeg().has_value());
    EXPECT_EQ(*findFfmpeg(), dir / "bin" / "ffmpeg");
}

TEST(Mp4, AFailingFfmpegIsQuotedAndLeavesNoFile) {
    ws::testing::TempDir dir("mp4");
    AnimationSpec spec;
    spec.width = 16;
    spec.height = 9;
    const Frame f = gradient(16, 9, 0);
    // Reads everything, then fails as an ffmpeg without libx264 would.
    spec.ffmpeg = writeScript(dir / "ffmpeg-fails",
                              "/bin/cat >/dev/null\necho 'Unknown encoder libx264' >&2\nexit 1\n");
    {
        auto writer = createAnimationWriter(dir / "talk.mp4", spec);
        ASSERT_TRUE(writer.ok()) << writer.error().message;
        for (int i = 0; i < 5; ++i) ASSERT_TRUE((*writer)->addFrame(f.view(), 40).ok());
        const Status s = (*writer)->finish();
        ASSERT_FALSE(s.ok());
        EXPECT_NE(s.error().message.find("exited with status 1"), std::string::npos)
            << s.error().message;
        EXPECT_NE(s.error().message.find("Unknown encoder libx264"), std::string::npos)
            << s.error().message;
    }
    EXPECT_FALSE(fs::exists(dir / "talk.mp4"));
    // Dies at once: sending frames meets a closed socket (EPIPE, not a SIGPIPE that kills us).
    spec.ffmpeg = writeScript(dir / "ffmpeg-dies", "echo 'cannot open display' >&2\nexit 3\n");
    {
        auto writer = createAnimationWriter(dir / "talk.mp4", spec);
        ASSERT_TRUE(writer.ok()) << writer.error().message;
        Status s = Status::success();
        const Frame big = noise(16, 9, 1);
        for (int i = 0; i < 20000 && s.ok(); ++i) s = (*writer)->addFrame(big.view(), 40);
        if (s.ok()) s = (*writer)->finish();
        ASSERT_FALSE(s.ok());
        EXPECT_NE(s.error().message.find("cannot open display"), std::string::npos)
            << s.error().message;
    }
    // A program that is not there.
    spec.ffmpeg = dir / "no-such-ffmpeg";
    auto writer = createAnimationWriter(dir / "talk.mp4", spec);
    ASSERT_FALSE(writer.ok());
    EXPECT_NE(writer.error().message.find("no-such-ffmpeg"), std::string::npos);
    std::vector<std::string> left;
    for (const auto& e : fs::directory_iterator(dir.path()))
        if (e.path().filename().string().find("talk") != std::string::npos)
            left.push_back(e.path().filename().string());
    EXPECT_TRUE(left.empty()) << left.front();
}

std::string run(const std::string& command) {
    std::string out;
    FILE* pipe = ::popen(command.c_str(), "r");
    if (!pipe) return out;
    std::array<char, 256> buf{};
    while (std::fgets(buf.data(), int(buf.size()), pipe)) out += buf.data();
    ::pclose(pipe);
    return out;
}

TEST(Mp4, RealFfmpegEncodesAnOddSizedVideo) {
    if (!findFfmpeg()) GTEST_SKIP() << "ffmpeg is not installed (apt-get install ffmpeg)";
    ws::testing::TempDir dir("mp4");
    AnimationSpec spec;
    spec.width = 101;  // odd: padded to 102 x 58
    spec.height = 57;
    spec.fps = 25;
    auto writer = createAnimationWriter(dir / "heat.mp4", spec);
    ASSERT_TRUE(writer.ok()) << writer.error().message;
    // 20 frames of 80 ms at 25 fps: each shown twice, 40 video frames.
    for (int i = 0; i < 20; ++i)
        ASSERT_TRUE((*writer)->addFrame(heatmap(101, 57, 10, i).view(), 80).ok());
    EXPECT_FALSE(fs::exists(dir / "heat.mp4"));
    const Status s = (*writer)->finish();
    ASSERT_TRUE(s.ok()) << s.error().message;
    const std::string bytes = ws::testing::readBytes(dir / "heat.mp4");
    ASSERT_GT(bytes.size(), 8u);
    EXPECT_EQ(bytes.substr(4, 4), "ftyp");
    const fs::path ffprobe = findFfmpeg()->parent_path() / "ffprobe";
    if (!fs::exists(ffprobe)) GTEST_SKIP() << "no ffprobe beside ffmpeg to count the frames";
    const std::string info = run(ffprobe.string() +
                                 " -v error -count_frames -select_streams v:0 -show_entries "
                                 "stream=width,height,nb_read_frames,codec_name -of csv=p=0 " +
                                 (dir / "heat.mp4").string());
    EXPECT_EQ(info, "h264,102,58,40\n");
}

}  // namespace
}  // namespace ws::media::testing
