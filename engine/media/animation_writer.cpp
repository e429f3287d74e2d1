// SPDX-License-Identifier: GPL-3.0-or-later
// The animation factory (by extension), the ffmpeg lookup and the argument checks every writer
// shares (see animation_writer.h).
#include "engine/media/animation_writer.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <cstring>

#include "engine/media/media_internal.h"

namespace ws::media {

namespace {
std::string lowercase(std::string text) {
    std::transform(text.begin(), text.end(), text.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return text;
}
}  // namespace

const char* extensionOf(AnimationFormat format) {
    switch (format) {
        case AnimationFormat::Apng:
            return ".png";
        case AnimationFormat::Gif:
            return ".gif";
        case AnimationFormat::Mp4:
            return ".mp4";
    }
    return "";
}

const char* nameOf(AnimationFormat format) {
    switch (format) {
        case AnimationFormat::Apng:
            return "animated PNG";
        case AnimationFormat::Gif:
            return "GIF";
        case AnimationFormat::Mp4:
            return "MP4";
    }
    return "";
}

Result<AnimationFormat> formatForPath(const std::filesystem::path& path) {
    const std::string ext = lowercase(path.extension().string());
    if (ext == ".png" || ext == ".apng") return AnimationFormat::Apng;
    if (ext == ".gif") return AnimationFormat::Gif;
    if (ext == ".mp4") return AnimationFormat::Mp4;
    return Error{fmt::format(
        "cannot export an animation to {}: {} is not an animation format this program writes; "
        "use .png (animated PNG), .gif or .mp4",
        path.string(),
        ext.empty() ? std::string("a name without an extension") : fmt::format("'{}'", ext))};
}

std::optional<std::filesystem::path> findFfmpeg() {
    const char* pathVariable = std::getenv("PATH");
    if (!pathVariable) return std::nullopt;
    const std::string_view all = pathVariable;
    size_t start = 0;
    while (start <= all.size()) {
        size_t colon = all.find(':', start);
        if (colon == std::string_view::npos) colon = all.size();
        std::filesystem::path candidate =
            colon == start ? std::filesystem::path(".")
                           : std::filesystem::path(all.substr(start, colon - start));
        candidate /= "ffmpeg";
        std::error_code ec;
        if (std::filesystem::is_regular_file(candidate, ec) &&
            ::access(candidate.c_str(), X_OK) == 0)
            return candidate;
        start = colon + 1;
    }
    return std::nullopt;
}

Result<std::unique_ptr<AnimationWriter>> createAnimationWriter(const std::filesystem::path& path,
                                                               const AnimationSpec& spec) {
    auto format = formatForPath(path);
    if (!format) return format.error();
    if (Status s = detail::checkSpec(path, spec); !s) return s.error();
    switch (*format) {
        case AnimationFormat::Apng:
            return detail::createApngWriter(path, spec);
        case AnimationFormat::Gif:
            return detail::createGifWriter(path, spec);
        case AnimationFormat::Mp4:
            return detail::createMp4Writer(path, spec);
    }
    return Error{"unknown animation format"};
}

namespace detail {

Status UsedUp::fail(const Status& status) {
    m_usedUp = true;
    if (m_firstError.empty()) m_firstError = status.error().message;
    return status;
}

Status UsedUp::why() const {
    return Error{
        m_firstError.empty()
            ? fmt::format("cannot export {}: the animation is already finished", m_path.string())
            : m_firstError};
}

Status checkSpec(const std::filesystem::path& path, const AnimationSpec& spec) {
    if (spec.width < 1 || spec.height < 1 || spec.width > kMaxSide || spec.height > kMaxSide) {
        return Error{
            fmt::format("cannot export {}: a frame of {} x {} pixels; each side must be "
                        "1 to {} pixels",
                        path.string(), spec.width, spec.height, kMaxSide)};
    }
    if (spec.fps < 1 || spec.fps > 240) {
        return Error{fmt::format("cannot export {}: {} frames per second; use 1 to 240",
                                 path.string(), spec.fps)};
    }
    return Status::success();
}

Status checkFrame(const std::filesystem::path& path, const AnimationSpec& spec,
                  const FrameView& frame, int delayMs, int frameIndex) {
    if (!frame.rgba) {
        return Error{
            fmt::format("cannot export {}: frame {} has no pixels", path.string(), frameIndex + 1)};
    }
    if (frame.width != spec.width || frame.height != spec.height) {
        return Error{fmt::format(
            "cannot export {}: frame {} is {} x {} pixels, the animation "
            "is {} x {}; every frame must have the same size",
            path.string(), frameIndex + 1, frame.width, frame.height, spec.width, spec.height)};
    }
    if (frame.stride < size_t(frame.width) * 4) {
        return Error{fmt::format(
            "cannot export {}: frame {} has rows of {} bytes, too few for {} "
            "RGBA pixels ({} bytes)",
            path.string(), frameIndex + 1, frame.stride, frame.width, size_t(frame.width) * 4)};
    }
    if (delayMs < 1 || delayMs > kMaxDelayMs) {
        return Error{fmt::format("cannot export {}: frame {} lasts {} ms; use 1 to {} ms",
                                 path.string(), frameIndex + 1, delayMs, kMaxDelayMs)};
    }
    return Status::success();
}

void copyPacked(const FrameView& frame, std::vector<uint32_t>& out) {
    out.resize(size_t(frame.width) * size_t(frame.height));
    for (int y = 0; y < frame.height; ++y)
        std::memcpy(out.data() + size_t(y) * size_t(frame.width), frame.rgba + y * frame.stride,
                    size_t(frame.width) * 4);
}

Rect changedRect(const uint32_t* a, const uint32_t* b, int width, int height) {
    const size_t w = size_t(width);
    int top = 0;
    while (top < height && std::memcmp(a + top * w, b + top * w, w * 4) == 0) ++top;
    if (top == height) return {};
    int bottom = height - 1;
    while (bottom > top && std::memcmp(a + bottom * w, b + bottom * w, w * 4) == 0) --bottom;
    int left = width, right = -1;
    for (int y = top; y <= bottom; ++y) {
        const uint32_t* ra = a + y * w;
        const uint32_t* rb = b + y * w;
        int x = 0;
        while (x < left && ra[x] == rb[x]) ++x;
        left = std::min(left, x);
        int r = width - 1;
        while (r > right && ra[r] == rb[r]) --r;
        right = std::max(right, r);
    }
    if (right < left) return {};  // unreachable: some row differs
    return {left, top, right - left + 1, bottom - top + 1};
}

}  // namespace detail
}  // namespace ws::media
