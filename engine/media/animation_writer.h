// SPDX-License-Identifier: GPL-3.0-or-later
// Animations written by the program for slides: animated PNG and GIF (our own encoders: zlib is
// the only library) and MP4 through Debian's `ffmpeg` when it is on PATH. A writer takes RGBA8
// frames of one size, each with how long it stays on screen, and finish() puts the file in place
// atomically (temp file in the target's folder, then rename): a failed or abandoned export never
// leaves a half file under the target name, and an older file there stays until the new one is
// complete. Destroying a writer without finish() discards everything.
// APNG is lossless (RGBA, frames cropped to what changed). GIF keeps up to 255 colours per frame
// (exact when a frame has no more, otherwise a variance-based median cut of that frame, no
// dithering), alpha below 128 is transparent, and a frame lasts at least 20 ms (browsers slow
// shorter GIF frames to 100 ms). MP4 (H.264, yuv420p) drops alpha and pads odd sizes by one pixel.
// Every error names the file and the problem; bad arguments are errors, never crashes.
// Thread-safety: one writer per file, used by one thread; the free functions are thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>

#include "engine/core/result.h"

namespace ws::media {

enum class AnimationFormat { Apng, Gif, Mp4 };

// What every frame of one animation shares.
struct AnimationSpec {
    int width = 0;  // pixels, 1..kMaxSide
    int height = 0;
    // MP4 only: the video's constant frame rate. Each frame is repeated or dropped so that it
    // starts at its own time (the sum of the delays before it), rounded to the nearest video frame.
    int fps = 30;
    // MP4 only: the ffmpeg program; empty: `ffmpeg` searched on PATH.
    std::filesystem::path ffmpeg;
};

inline constexpr int kMaxSide = 16384;

// One RGBA8 frame (not premultiplied), row-major: pixel (x, y) is at rgba + y * stride + 4 * x.
struct FrameView {
    const uint8_t* rgba = nullptr;
    int width = 0;
    int height = 0;
    size_t stride = 0;  // bytes per row, >= 4 * width
};

class AnimationWriter {
public:
    virtual ~AnimationWriter() = default;
    // Appends `frame`, shown for `delayMs` milliseconds (1..600000). The frame is copied; the
    // caller may reuse its buffer. After an error the writer is spent (finish() fails too).
    virtual Status addFrame(const FrameView& frame, int delayMs) = 0;
    // Completes the file and renames it into place; at least one frame must have been added.
    virtual Status finish() = 0;
    virtual AnimationFormat format() const = 0;
};

// The format a path's extension asks for: .png or .apng (animated PNG), .gif, .mp4, any case;
// anything else is an error naming the extensions that are.
Result<AnimationFormat> formatForPath(const std::filesystem::path& path);

// A writer for `path` in the format its extension names. The folder must exist. MP4 fails here,
// naming `apt-get install ffmpeg`, when ffmpeg cannot be found.
Result<std::unique_ptr<AnimationWriter>> createAnimationWriter(const std::filesystem::path& path,
                                                               const AnimationSpec& spec);

// The ffmpeg program on PATH (the first executable `ffmpeg` in its folders), if any.
std::optional<std::filesystem::path> findFfmpeg();

// The extension's usual spelling and a human name: ".png", "animated PNG".
const char* extensionOf(AnimationFormat format);
const char* nameOf(AnimationFormat format);

}  // namespace ws::media
