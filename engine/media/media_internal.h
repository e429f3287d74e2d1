// SPDX-License-Identifier: GPL-3.0-or-later
// Shared by the animation writers (not a public header): argument checks with the same wording
// for every format, packed frame copies, and the per-format constructors the factory calls.
// Thread-safety: plain functions without state.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "engine/media/animation_writer.h"

namespace ws::media::detail {

inline constexpr int kMaxDelayMs = 600000;  // ten minutes on one frame

// The spec's sizes (and, for MP4, fps) are usable; errors name `path`.
Status checkSpec(const std::filesystem::path& path, const AnimationSpec& spec);
// `frame` has the spec's size, a stride that holds a row, pixels, and a delay in range.
Status checkFrame(const std::filesystem::path& path, const AnimationSpec& spec,
                  const FrameView& frame, int delayMs, int frameIndex);

// The frame as width * height packed RGBA pixels (one uint32_t each, bytes R, G, B, A in memory).
void copyPacked(const FrameView& frame, std::vector<uint32_t>& out);

Result<std::unique_ptr<AnimationWriter>> createApngWriter(const std::filesystem::path& path,
                                                          const AnimationSpec& spec);
Result<std::unique_ptr<AnimationWriter>> createGifWriter(const std::filesystem::path& path,
                                                         const AnimationSpec& spec);
Result<std::unique_ptr<AnimationWriter>> createMp4Writer(const std::filesystem::path& path,
                                                         const AnimationSpec& spec);

// What a writer remembers once it is used up (its first error, or finish()): every later call
// returns that error, or says the animation is already finished. Errors name `path`.
class UsedUp {
public:
    explicit UsedUp(std::filesystem::path path) : m_path(std::move(path)) {}
    bool operator()() const { return m_usedUp; }
    void set() { m_usedUp = true; }
    // Records the first error and passes it on.
    Status fail(const Status& status);
    // Why the writer takes nothing more.
    Status why() const;

private:
    std::filesystem::path m_path;
    bool m_usedUp = false;
    std::string m_firstError;
};

// The smallest rectangle holding every pixel where `a` and `b` differ (w x h packed frames);
// empty (width 0) when they are equal.
struct Rect {
    int x = 0, y = 0, width = 0, height = 0;
    bool empty() const { return width == 0 || height == 0; }
};
Rect changedRect(const uint32_t* a, const uint32_t* b, int width, int height);

}  // namespace ws::media::detail
