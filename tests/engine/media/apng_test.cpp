// SPDX-License-Identifier: GPL-3.0-or-later
// The animated PNG writer, checked by an independent reader (tests/support/animation_decode.h):
// chunk CRCs, sequence numbers, acTL's frame count, every frame inflated and composed, and the
// pixels compared exactly (alpha included) for noise, slides, odd sizes, 1 x 1 and many frames.
#include <gtest/gtest.h>

#include <cstring>

#include "media_test_frames.h"
#include "support/animation_decode.h"
#include "support/temp_dir.h"

namespace ws::media::testing {
namespace {

using ws::testing::decodeApng;
using ws::testing::DecodedAnimation;
using ws::testing::readBytes;

// Decodes `path` and expects one shown frame per distinct consecutive input frame, each equal
// pixel for pixel to its input.
void expectRoundTrip(const std::filesystem::path& path, const std::vector<Frame>& frames,
                     int delayMs) {
    const DecodedAnimation a = decodeApng(readBytes(path));
    ASSERT_TRUE(a.error.empty()) << a.error;
    EXPECT_EQ(a.width, frames[0].width);
    EXPECT_EQ(a.height, frames[0].height);
    EXPECT_EQ(a.loops, 0);
    size_t shown = 0;
    for (size_t i = 0; i < frames.size(); ++i) {
        if (i > 0 && frames[i].pixels == frames[i - 1].pixels) continue;
        ASSERT_LT(shown, a.frames.size());
        EXPECT_EQ(a.frames[shown].rgba, frames[i].pixels) << "frame " << i;
        ++shown;
    }
    EXPECT_EQ(shown, a.frames.size());
    int total = 0;
    for (const auto& f : a.frames) total += f.delayMs;
    EXPECT_EQ(total, delayMs * int(frames.size()));
}

TEST(Apng, NoiseFramesWithAlphaRoundTripExactly) {
    ws::testing::TempDir dir("apng");
    std::vector<Frame> frames;
    for (uint32_t i = 0; i < 4; ++i) frames.push_back(noise(37, 23, i, /*randomAlpha=*/true));
    ASSERT_TRUE(writeAll(dir / "noise.png", frames, 50).ok());
    expectRoundTrip(dir / "noise.png", frames, 50);
}

TEST(Apng, ALargeFrameSpansSeveralDataChunksInSequence) {
    ws::testing::TempDir dir("apng");
    // 700 x 700 noise does not compress: ~2 MB per frame, more than one IDAT and fdAT each.
    std::vector<Frame> frames = {noise(700, 700, 1), noise(700, 700, 2)};
    ASSERT_TRUE(writeAll(dir / "big.apng", frames, 100).ok());
    const std::string bytes = readBytes(dir / "big.apng");
    EXPECT_NE(bytes.find("fdAT", bytes.find("fdAT") + 1), std::string::npos);
    EXPECT_NE(bytes.find("IDAT", bytes.find("IDAT") + 1), std::string::npos);
    expectRoundTrip(dir / "big.apng", frames, 100);
}

TEST(Apng, ASlideStoresOnlyTheChangedRectangle) {
    ws::testing::TempDir dir("apng");
    std::vector<Frame> frames;
    for (int i = 0; i < 30; ++i)
        frames.push_back(slide(320, 180, 20 + 5 * i, 60, rgba(200, 40, 40)));
    ASSERT_TRUE(writeAll(dir / "slide.png", frames, 33).ok());
    expectRoundTrip(dir / "slide.png", frames, 33);
    const DecodedAnimation a = decodeApng(readBytes(dir / "slide.png"));
    ASSERT_EQ(a.frames.size(), 30u);
    EXPECT_EQ(a.frames[0].width, 320);     // the first frame is whole
    EXPECT_EQ(a.frames[1].width, 13 + 5);  // the box moved 5 pixels: old and new place
    EXPECT_EQ(a.frames[1].height, 9);
    EXPECT_EQ(a.frames[1].x, 20);
    EXPECT_EQ(a.frames[1].y, 60);
}

TEST(Apng, EqualFramesLengthenTheFrameBefore) {
    ws::testing::TempDir dir("apng");
    const Frame a = slide(40, 30, 1, 14, rgba(0, 128, 0));
    const Frame b = slide(40, 30, 9, 14, rgba(0, 128, 0));
    ASSERT_TRUE(writeAll(dir / "still.png", {a, a, a, b, b, a}, 40).ok());
    const DecodedAnimation d = decodeApng(readBytes(dir / "still.png"));
    ASSERT_TRUE(d.error.empty()) << d.error;
    ASSERT_EQ(d.frames.size(), 3u);
    EXPECT_EQ(d.frames[0].delayMs, 120);
    EXPECT_EQ(d.frames[1].delayMs, 80);
    EXPECT_EQ(d.frames[2].delayMs, 40);
    EXPECT_EQ(d.frames[2].rgba, a.pixels);
}

TEST(Apng, OnePixelOddSizesAndManyFrames) {
    ws::testing::TempDir dir("apng");
    {
        std::vector<Frame> frames;
        for (int i = 0; i < 5; ++i)
            frames.push_back(flat(1, 1, rgba(i * 50, 255 - i, 7, 255 - i * 40)));
        ASSERT_TRUE(writeAll(dir / "one.png", frames, 10).ok());
        expectRoundTrip(dir / "one.png", frames, 10);
    }
    {
        std::vector<Frame> frames;
        for (int i = 0; i < 7; ++i) frames.push_back(gradient(7, 3, i * 37));
        ASSERT_TRUE(writeAll(dir / "odd.png", frames, 25).ok());
        expectRoundTrip(dir / "odd.png", frames, 25);
    }
    {
        std::vector<Frame> frames;
        for (int i = 0; i < 300; ++i) frames.push_back(heatmap(64, 48, 12, i));
        ASSERT_TRUE(writeAll(dir / "many.png", frames, 17).ok());
        expectRoundTrip(dir / "many.png", frames, 17);
    }
}

TEST(Apng, AStrideWiderThanTheRowIsRead) {
    ws::testing::TempDir dir("apng");
    const Frame f = gradient(10, 6, 3);
    std::vector<uint8_t> padded(6 * 64, 0xab);  // rows of 64 bytes, 40 used
    for (int y = 0; y < 6; ++y) std::memcpy(padded.data() + y * 64, f.pixels.data() + y * 10, 40);
    AnimationSpec spec;
    spec.width = 10;
    spec.height = 6;
    auto writer = createAnimationWriter(dir / "stride.png", spec);
    ASSERT_TRUE(writer.ok()) << writer.error().message;
    ASSERT_TRUE((*writer)->addFrame({padded.data(), 10, 6, 64}, 100).ok());
    ASSERT_TRUE((*writer)->finish().ok());
    expectRoundTrip(dir / "stride.png", {f}, 100);
}

TEST(Apng, DelaysLongerThanTheFieldHoldsKeepTheirLength) {
    ws::testing::TempDir dir("apng");
    const Frame a = flat(4, 4, rgba(1, 2, 3));
    const Frame b = flat(4, 4, rgba(9, 9, 9));
    AnimationSpec spec;
    spec.width = spec.height = 4;
    auto writer = createAnimationWriter(dir / "long.png", spec);
    ASSERT_TRUE(writer.ok());
    ASSERT_TRUE((*writer)->addFrame(a.view(), 100000).ok());  // > 65535 ms: in 1/100 s
    ASSERT_TRUE((*writer)->addFrame(b.view(), 60000).ok());
    ASSERT_TRUE((*writer)->addFrame(b.view(), 60000).ok());  // merged would overflow: a new frame
    ASSERT_TRUE((*writer)->finish().ok());
    const DecodedAnimation d = decodeApng(readBytes(dir / "long.png"));
    ASSERT_TRUE(d.error.empty()) << d.error;
    ASSERT_EQ(d.frames.size(), 3u);
    EXPECT_EQ(d.frames[0].delayMs, 100000);
    EXPECT_EQ(d.frames[1].delayMs + d.frames[2].delayMs, 120000);
    EXPECT_EQ(d.frames[2].rgba, b.pixels);
}

}  // namespace
}  // namespace ws::media::testing
