// SPDX-License-Identifier: GPL-3.0-or-later
// Frames the media tests feed the writers: noise, gradients, a moving box on a flat slide, a
// viridis-like heatmap, with helpers to write them and compare the decoded canvas.
// Header-only, for tests; thread-safe (no state).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <random>
#include <vector>

#include "engine/media/animation_writer.h"

namespace ws::media::testing {

struct Frame {
    int width = 0, height = 0;
    std::vector<uint32_t> pixels;  // packed RGBA, bytes R, G, B, A
    FrameView view() const {
        return {reinterpret_cast<const uint8_t*>(pixels.data()), width, height, size_t(width) * 4};
    }
};

inline uint32_t rgba(int r, int g, int b, int a = 255) {
    return uint32_t(r) | uint32_t(g) << 8 | uint32_t(b) << 16 | uint32_t(a) << 24;
}
inline int channel(uint32_t p, int c) {
    return int((p >> (8 * c)) & 0xff);
}

inline Frame flat(int w, int h, uint32_t colour) {
    return {w, h, std::vector<uint32_t>(size_t(w) * size_t(h), colour)};
}

inline Frame noise(int w, int h, uint32_t seed, bool randomAlpha = false) {
    std::mt19937 rng(seed);
    Frame f = flat(w, h, 0);
    for (uint32_t& p : f.pixels) {
        p = rng();
        if (!randomAlpha) p |= 0xff000000u;
    }
    return f;
}

// A slide: a light background, a dark title bar and a coloured box at (x, y).
inline Frame slide(int w, int h, int boxX, int boxY, uint32_t boxColour) {
    Frame f = flat(w, h, rgba(245, 245, 240));
    for (int y = 0; y < std::min(h, 12); ++y)
        for (int x = 0; x < w; ++x) f.pixels[size_t(y * w + x)] = rgba(30, 40, 60);
    for (int y = boxY; y < std::min(h, boxY + 9); ++y)
        for (int x = boxX; x < std::min(w, boxX + 13); ++x) f.pixels[size_t(y * w + x)] = boxColour;
    return f;
}

// A smooth ramp over every pixel: many more than 256 colours.
inline Frame gradient(int w, int h, int phase) {
    Frame f = flat(w, h, 0);
    for (int y = 0; y < h; ++y)
        for (int x = 0; x < w; ++x)
            f.pixels[size_t(y * w + x)] =
                rgba((x * 255 / std::max(1, w - 1) + phase) & 255, y * 255 / std::max(1, h - 1),
                     (x + y + 3 * phase) * 255 / std::max(1, w + h - 2) & 255);
    return f;
}

// Viridis-like colour for t in [0, 1] (a polynomial fit close to matplotlib's).
inline uint32_t viridis(double t) {
    t = std::clamp(t, 0.0, 1.0);
    const double r =
        0.2777 +
        t * (0.1050 + t * (-0.3308 + t * (-4.6342 + t * (6.2282 + t * (4.7764 - 5.4355 * t)))));
    const double g =
        0.0054 +
        t * (1.4046 + t * (0.2148 + t * (-5.7991 + t * (14.1799 + t * (-13.7451 + 4.6459 * t)))));
    const double b =
        0.3341 +
        t * (1.3846 + t * (0.0951 + t * (-19.3324 + t * (56.6906 + t * (-65.3530 + 26.3124 * t)))));
    auto byte = [](double v) { return int(std::lround(std::clamp(v, 0.0, 1.0) * 255)); };
    return rgba(byte(r), byte(g), byte(b));
}

// A heatmap of cells x cells cores, each drawn as a square of `cell` pixels, with a busy wave
// that moves with `phase`, on a white page with a margin (like the Wafer tab's map).
inline Frame heatmap(int w, int h, int cells, int phase) {
    Frame f = flat(w, h, rgba(255, 255, 255));
    const int cell = std::max(1, std::min(w, h) / (cells + 2));
    for (int cy = 0; cy < cells; ++cy)
        for (int cx = 0; cx < cells; ++cx) {
            const double t = 0.5 + 0.5 * std::sin((cx + cy + phase) * 0.35) * std::cos(cy * 0.2);
            const uint32_t c = viridis(t);
            for (int y = cell + cy * cell; y < std::min(h, cell + (cy + 1) * cell); ++y)
                for (int x = cell + cx * cell; x < std::min(w, cell + (cx + 1) * cell); ++x)
                    f.pixels[size_t(y * w + x)] = c;
        }
    return f;
}

// Writes `frames` (each shown `delayMs`) to `path` through the factory; the first error, if any.
inline Status writeAll(const std::filesystem::path& path, const std::vector<Frame>& frames,
                       int delayMs = 40) {
    AnimationSpec spec;
    spec.width = frames.at(0).width;
    spec.height = frames.at(0).height;
    auto writer = createAnimationWriter(path, spec);
    if (!writer) return writer.error();
    for (const Frame& f : frames)
        if (Status s = (*writer)->addFrame(f.view(), delayMs); !s) return s;
    return (*writer)->finish();
}

}  // namespace ws::media::testing
