// SPDX-License-Identifier: GPL-3.0-or-later
// What every animation writer shares: the format by extension, atomic files (nothing under the
// target name until finish() succeeds, nothing at all after an abandoned export, an older file
// kept), and bad arguments (zero or huge sizes, short strides, mismatched frames, bad delays,
// missing folders) returning errors that name the problem instead of crashing.
#include <gtest/gtest.h>

#include <fstream>

#include "media_test_frames.h"
#include "support/animation_decode.h"
#include "support/temp_dir.h"

namespace ws::media::testing {
namespace {

namespace fs = std::filesystem;

std::vector<std::string> filesIn(const fs::path& dir) {
    std::vector<std::string> names;
    for (const auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename().string());
    std::sort(names.begin(), names.end());
    return names;
}

TEST(AnimationWriter, TheExtensionChoosesTheFormat) {
    EXPECT_EQ(*formatForPath("a/b.png"), AnimationFormat::Apng);
    EXPECT_EQ(*formatForPath("b.APNG"), AnimationFormat::Apng);
    EXPECT_EQ(*formatForPath("c.Gif"), AnimationFormat::Gif);
    EXPECT_EQ(*formatForPath("d.mp4"), AnimationFormat::Mp4);
    for (const char* bad : {"e.webm", "f", "g.png.tmp", "h.jpg"}) {
        auto r = formatForPath(bad);
        ASSERT_FALSE(r.ok()) << bad;
        EXPECT_NE(r.error().message.find(".png (animated PNG), .gif or .mp4"), std::string::npos)
            << r.error().message;
        EXPECT_NE(r.error().message.find(bad), std::string::npos) << r.error().message;
    }
    AnimationSpec spec;
    spec.width = spec.height = 4;
    auto w = createAnimationWriter(fs::temp_directory_path() / "x.webm", spec);
    ASSERT_FALSE(w.ok());
    EXPECT_NE(w.error().message.find("'.webm'"), std::string::npos) << w.error().message;
}

TEST(AnimationWriter, NothingAppearsUntilFinishAndAnAbandonedExportLeavesNoFile) {
    for (const char* name : {"a.png", "a.gif"}) {
        ws::testing::TempDir dir("media");
        AnimationSpec spec;
        spec.width = 32;
        spec.height = 16;
        {
            auto writer = createAnimationWriter(dir / name, spec);
            ASSERT_TRUE(writer.ok()) << writer.error().message;
            for (int i = 0; i < 3; ++i)
                ASSERT_TRUE((*writer)->addFrame(noise(32, 16, uint32_t(i)).view(), 40).ok());
            EXPECT_FALSE(fs::exists(dir / name));
        }  // abandoned: a cancelled export
        EXPECT_TRUE(filesIn(dir.path()).empty()) << filesIn(dir.path()).front();

        // An older file stays whole until the new one is complete, then is replaced.
        std::ofstream(dir / name) << "older";
        auto writer = createAnimationWriter(dir / name, spec);
        ASSERT_TRUE(writer.ok());
        ASSERT_TRUE((*writer)->addFrame(noise(32, 16, 9).view(), 40).ok());
        EXPECT_EQ(ws::testing::readBytes(dir / name), "older");
        ASSERT_TRUE((*writer)->finish().ok());
        EXPECT_NE(ws::testing::readBytes(dir / name), "older");
        EXPECT_EQ(filesIn(dir.path()), std::vector<std::string>{name});
        // Finished: the writer is spent.
        EXPECT_FALSE((*writer)->addFrame(noise(32, 16, 9).view(), 40).ok());
        EXPECT_FALSE((*writer)->finish().ok());
    }
}

TEST(AnimationWriter, BadArgumentsAreErrorsNotCrashes) {
    ws::testing::TempDir dir("media");
    for (const char* name : {"bad.png", "bad.gif"}) {
        SCOPED_TRACE(name);
        for (auto [w, h] : {std::pair{0, 10}, {10, 0}, {-3, 5}, {kMaxSide + 1, 2}, {2, 1 << 30}}) {
            AnimationSpec spec;
            spec.width = w;
            spec.height = h;
            auto writer = createAnimationWriter(dir / name, spec);
            ASSERT_FALSE(writer.ok());
            EXPECT_NE(writer.error().message.find("each side must be"), std::string::npos)
                << writer.error().message;
        }
        AnimationSpec spec;
        spec.width = 8;
        spec.height = 5;
        const Frame good = gradient(8, 5, 1);
        auto expectError = [&](FrameView view, int delay, const char* words) {
            auto writer = createAnimationWriter(dir / name, spec);
            ASSERT_TRUE(writer.ok());
            const Status s = (*writer)->addFrame(view, delay);
            ASSERT_FALSE(s.ok()) << words;
            EXPECT_NE(s.error().message.find(words), std::string::npos) << s.error().message;
            EXPECT_NE(s.error().message.find(name), std::string::npos) << s.error().message;
            // Spent: later frames and finish() fail too, and no file is left.
            EXPECT_FALSE((*writer)->addFrame(good.view(), 40).ok());
            EXPECT_FALSE((*writer)->finish().ok());
        };
        expectError({nullptr, 8, 5, 32}, 40, "has no pixels");
        expectError({good.view().rgba, 8, 5, 31}, 40, "too few for 8 RGBA pixels");
        expectError({good.view().rgba, 8, 5, 0}, 40, "too few");
        expectError({good.view().rgba, 7, 5, 32}, 40, "is 7 x 5 pixels, the animation is 8 x 5");
        expectError({good.view().rgba, 8, 6, 32}, 40, "every frame must have the same size");
        expectError(good.view(), 0, "lasts 0 ms");
        expectError(good.view(), -5, "lasts -5 ms");
        expectError(good.view(), 600001, "use 1 to 600000 ms");
        // A mismatched second frame after a good one.
        {
            auto writer = createAnimationWriter(dir / name, spec);
            ASSERT_TRUE(writer.ok());
            ASSERT_TRUE((*writer)->addFrame(good.view(), 40).ok());
            const Frame other = gradient(9, 5, 1);
            const Status s = (*writer)->addFrame(other.view(), 40);
            ASSERT_FALSE(s.ok());
            EXPECT_NE(s.error().message.find("frame 2 is 9 x 5"), std::string::npos)
                << s.error().message;
        }
        // No frames at all.
        {
            auto writer = createAnimationWriter(dir / name, spec);
            ASSERT_TRUE(writer.ok());
            const Status s = (*writer)->finish();
            ASSERT_FALSE(s.ok());
            EXPECT_NE(s.error().message.find("no frames"), std::string::npos);
        }
        // A folder that does not exist.
        auto missing = createAnimationWriter(dir / "no-such-folder" / name, spec);
        ASSERT_FALSE(missing.ok());
        EXPECT_NE(missing.error().message.find("does the folder exist"), std::string::npos)
            << missing.error().message;
        EXPECT_TRUE(filesIn(dir.path()).empty());
    }
}

// Random sizes, strides, delays and frame sizes: every call returns, errors say something, and a
// finished file always decodes.
TEST(AnimationWriter, RandomArgumentsNeverCrash) {
    ws::testing::TempDir dir("media");
    std::mt19937 rng(11);
    std::vector<uint8_t> pixels(64 * 64 * 4 + 64);
    for (uint8_t& b : pixels) b = uint8_t(rng());
    for (int round = 0; round < 200; ++round) {
        const bool gif = round % 2 == 1;
        const fs::path path = dir / (gif ? "r.gif" : "r.png");
        AnimationSpec spec;
        spec.width = int(rng() % 20) - 2;
        spec.height = int(rng() % 20) - 2;
        auto writer = createAnimationWriter(path, spec);
        if (!writer) {
            EXPECT_FALSE(writer.error().message.empty());
            continue;
        }
        bool failed = false;
        const int frames = int(rng() % 5);
        for (int i = 0; i < frames && !failed; ++i) {
            const int w = rng() % 4 == 0 ? int(rng() % 20) : spec.width;
            const int h = rng() % 4 == 0 ? int(rng() % 20) : spec.height;
            const size_t stride = size_t(std::max(0, w)) * 4 + (rng() % 4 == 0 ? 0 : rng() % 8) -
                                  (rng() % 6 == 0 ? 1 : 0);
            const int delay = rng() % 8 == 0 ? -int(rng() % 3) : int(rng() % 200);
            const bool fits = size_t(std::max(0, h)) * stride <= pixels.size();
            const Status s =
                (*writer)->addFrame({fits ? pixels.data() : nullptr, w, h, stride}, delay);
            if (!s) {
                EXPECT_FALSE(s.error().message.empty());
                failed = true;
            }
        }
        const Status s = (*writer)->finish();
        if (failed || frames == 0) {
            EXPECT_FALSE(s.ok());
            EXPECT_FALSE(fs::exists(path));
        } else {
            ASSERT_TRUE(s.ok()) << s.error().message;
            const auto decoded = gif ? ws::testing::decodeGif(ws::testing::readBytes(path))
                                     : ws::testing::decodeApng(ws::testing::readBytes(path));
            EXPECT_TRUE(decoded.error.empty()) << decoded.error;
            fs::remove(path);
        }
    }
    EXPECT_TRUE(filesIn(dir.path()).empty());
}

}  // namespace
}  // namespace ws::media::testing
