// SPDX-License-Identifier: GPL-3.0-or-later
// The GIF writer, checked by an independent reader with its own LZW decoder
// (tests/support/animation_decode.h): frames with at most 255 colours come back exactly, more
// colours within a bounded error, transparency and its clearing, delays in centiseconds, the loop,
// and LZW tables that fill and clear many times.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "media_test_frames.h"
#include "support/animation_decode.h"
#include "support/temp_dir.h"

namespace ws::media::testing {
namespace {

using ws::testing::DecodedAnimation;
using ws::testing::decodeGif;
using ws::testing::readBytes;

DecodedAnimation writeAndDecode(const std::filesystem::path& path, const std::vector<Frame>& frames,
                                int delayMs = 40) {
    const Status s = writeAll(path, frames, delayMs);
    EXPECT_TRUE(s.ok()) << s.error().message;
    DecodedAnimation a = decodeGif(readBytes(path));
    EXPECT_TRUE(a.error.empty()) << a.error;
    return a;
}

struct ErrorStats {
    int maxAbs = 0;
    double rms = 0;
};
ErrorStats compare(const std::vector<uint32_t>& got, const std::vector<uint32_t>& want) {
    ErrorStats e;
    double sq = 0;
    for (size_t i = 0; i < want.size(); ++i)
        for (int c = 0; c < 3; ++c) {
            const int d = channel(got[i], c) - channel(want[i], c);
            e.maxAbs = std::max(e.maxAbs, std::abs(d));
            sq += double(d) * d;
        }
    e.rms = std::sqrt(sq / double(3 * want.size()));
    return e;
}

TEST(Gif, FewColoursRoundTripExactly) {
    ws::testing::TempDir dir("gif");
    std::vector<Frame> frames;
    for (int i = 0; i < 20; ++i)
        frames.push_back(slide(97, 61, 3 * i, 2 * i + 14, rgba(200, 40 + i, 40)));
    const DecodedAnimation a = writeAndDecode(dir / "slide.gif", frames, 40);
    ASSERT_EQ(a.frames.size(), frames.size());
    EXPECT_EQ(a.loops, 0);
    for (size_t i = 0; i < frames.size(); ++i) {
        EXPECT_EQ(a.frames[i].rgba, frames[i].pixels) << "frame " << i;
        EXPECT_EQ(a.frames[i].delayMs, 40);
    }
    EXPECT_LT(a.frames[1].width * a.frames[1].height, 97 * 61 / 4);  // only the moved box
}

TEST(Gif, TwoHundredFiftyFiveColoursAreExactAndMoreAreClose) {
    ws::testing::TempDir dir("gif");
    Frame f = flat(255, 3, 0);
    for (int x = 0; x < 255; ++x)
        for (int y = 0; y < 3; ++y) f.pixels[size_t(y * 255 + x)] = rgba(x, 255 - x, (x * 7) & 255);
    DecodedAnimation a = writeAndDecode(dir / "exact.gif", {f});
    ASSERT_EQ(a.frames.size(), 1u);
    EXPECT_EQ(a.frames[0].rgba, f.pixels);

    // A smooth gradient of ~40k colours: median cut keeps every pixel close.
    const Frame g = gradient(200, 200, 0);
    a = writeAndDecode(dir / "gradient.gif", {g});
    ASSERT_EQ(a.frames.size(), 1u);
    ErrorStats e = compare(a.frames[0].rgba, g.pixels);
    EXPECT_LE(e.maxAbs, 24) << "rms " << e.rms;
    EXPECT_LE(e.rms, 6.0);

    // Uniform noise over the whole cube: the worst case for 255 colours.
    const Frame n = noise(128, 128, 7);
    a = writeAndDecode(dir / "noise.gif", {n});
    ASSERT_EQ(a.frames.size(), 1u);
    e = compare(a.frames[0].rgba, n.pixels);
    EXPECT_LE(e.rms, 16.0);
    EXPECT_LE(e.maxAbs, 64);
}

TEST(Gif, AViridisHeatmapKeepsItsColours) {
    ws::testing::TempDir dir("gif");
    std::vector<Frame> frames;
    for (int i = 0; i < 10; ++i) frames.push_back(heatmap(300, 300, 64, i));
    const DecodedAnimation a = writeAndDecode(dir / "heat.gif", frames, 100);
    ASSERT_EQ(a.frames.size(), frames.size());
    for (size_t i = 0; i < frames.size(); ++i) {
        const ErrorStats e = compare(a.frames[i].rgba, frames[i].pixels);
        EXPECT_LE(e.maxAbs, 6) << "frame " << i << " rms " << e.rms;
    }
}

TEST(Gif, TransparencyAndItsClearing) {
    ws::testing::TempDir dir("gif");
    const uint32_t clear = 0;
    Frame a = flat(16, 8, rgba(10, 20, 30));
    Frame b = a;
    b.pixels[3] = rgba(0, 0, 0, 20);     // becomes transparent: the canvas must be cleared there
    b.pixels[50] = rgba(99, 0, 0, 200);  // alpha >= 128: opaque
    Frame c = b;
    c.pixels[60] = rgba(1, 1, 1);
    const DecodedAnimation d = writeAndDecode(dir / "alpha.gif", {a, b, c});
    ASSERT_EQ(d.frames.size(), 3u);
    EXPECT_EQ(d.frames[0].rgba, a.pixels);
    std::vector<uint32_t> wantB = a.pixels;
    wantB[3] = clear;
    wantB[50] = rgba(99, 0, 0);
    EXPECT_EQ(d.frames[1].rgba, wantB);
    wantB[60] = rgba(1, 1, 1);
    EXPECT_EQ(d.frames[2].rgba, wantB);
}

TEST(Gif, DelaysAreCentisecondsWithoutDrift) {
    ws::testing::TempDir dir("gif");
    std::vector<Frame> frames;
    for (int i = 0; i < 30; ++i) frames.push_back(slide(20, 20, i % 10, 12, rgba(i * 8, 0, 0)));
    // 33 ms a frame (30 fps): 3 or 4 centiseconds, adding up to the real time.
    const DecodedAnimation a = writeAndDecode(dir / "fps30.gif", frames, 33);
    ASSERT_EQ(a.frames.size(), frames.size());
    int total = 0;
    for (const auto& f : a.frames) {
        EXPECT_TRUE(f.delayMs == 30 || f.delayMs == 40) << f.delayMs;
        total += f.delayMs;
    }
    EXPECT_NEAR(total, 30 * 33, 10);
    // 5 ms frames: never below 2 cs (browsers would show 1 cs as 10 cs).
    const DecodedAnimation fast = writeAndDecode(dir / "fast.gif", frames, 5);
    for (const auto& f : fast.frames) EXPECT_GE(f.delayMs, 20);
}

TEST(Gif, LzwTablesFillAndClearManyTimes) {
    ws::testing::TempDir dir("gif");
    // 255 colours of noise: the 4096-entry table fills every few thousand pixels.
    std::mt19937 rng(3);
    std::vector<uint32_t> palette;
    for (int i = 0; i < 255; ++i) palette.push_back(rgba(i, (i * 37) & 255, (i * 101) & 255));
    Frame f = flat(400, 300, 0);
    for (uint32_t& p : f.pixels) p = palette[rng() % 255];
    DecodedAnimation a = writeAndDecode(dir / "lzw.gif", {f});
    ASSERT_EQ(a.frames.size(), 1u);
    EXPECT_EQ(a.frames[0].rgba, f.pixels);
    // Two colours in long runs: the codes grow to 12 bits on long strings.
    Frame runs = flat(1000, 1000, rgba(255, 255, 255));
    for (size_t i = 0; i < runs.pixels.size(); i += 7919) runs.pixels[i] = rgba(0, 0, 0);
    a = writeAndDecode(dir / "runs.gif", {runs});
    ASSERT_EQ(a.frames.size(), 1u);
    EXPECT_EQ(a.frames[0].rgba, runs.pixels);
    // Every palette size from 1 to 255 colours (code sizes 2 to 8).
    for (int colours : {1, 2, 3, 4, 7, 8, 15, 16, 31, 63, 64, 127, 128, 200, 255}) {
        Frame p = flat(64, 40, 0);
        for (uint32_t& px : p.pixels) px = palette[rng() % uint32_t(colours)];
        a = writeAndDecode(dir / "sizes.gif", {p});
        ASSERT_EQ(a.frames.size(), 1u);
        EXPECT_EQ(a.frames[0].rgba, p.pixels) << colours << " colours";
    }
}

TEST(Gif, OnePixelOddSizesAndManyFrames) {
    ws::testing::TempDir dir("gif");
    std::vector<Frame> ones;
    for (int i = 0; i < 4; ++i) ones.push_back(flat(1, 1, rgba(i * 60, 3, 200)));
    DecodedAnimation a = writeAndDecode(dir / "one.gif", ones);
    ASSERT_EQ(a.frames.size(), 4u);
    for (int i = 0; i < 4; ++i) EXPECT_EQ(a.frames[size_t(i)].rgba, ones[size_t(i)].pixels);

    std::vector<Frame> many;
    for (int i = 0; i < 300; ++i)
        many.push_back(slide(33, 17, i % 31, (i / 31) % 9, rgba(0, 90, 200)));
    a = writeAndDecode(dir / "many.gif", many, 20);
    ASSERT_EQ(a.frames.size(), many.size());
    for (size_t i = 0; i < many.size(); ++i) ASSERT_EQ(a.frames[i].rgba, many[i].pixels) << i;
}

TEST(Gif, EqualFramesLengthenTheFrameBefore) {
    ws::testing::TempDir dir("gif");
    const Frame a = slide(40, 30, 1, 14, rgba(0, 128, 0));
    const Frame b = slide(40, 30, 9, 14, rgba(0, 128, 0));
    const DecodedAnimation d = writeAndDecode(dir / "still.gif", {a, a, a, b, b, a}, 40);
    ASSERT_EQ(d.frames.size(), 3u);
    EXPECT_EQ(d.frames[0].delayMs, 120);
    EXPECT_EQ(d.frames[1].delayMs, 80);
    EXPECT_EQ(d.frames[2].delayMs, 40);
    EXPECT_EQ(d.frames[2].rgba, a.pixels);
}

}  // namespace
}  // namespace ws::media::testing
