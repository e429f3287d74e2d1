// SPDX-License-Identifier: GPL-3.0-or-later
// The GIF writer (see animation_writer.h): GIF89a with a NETSCAPE2.0 loop, one local colour table
// per frame (gif_palette.h), index 0 transparent. A frame holds the rectangle that changed since
// the frame before; inside it, unchanged pixels are transparent so the old ones show through
// (long runs of one index: LZW shrinks them to little). A frame is held back until the next one
// arrives, because only then is known how long it lasts and whether it must be cleared afterwards
// (the next frame has transparent pixels where this one has colour: disposal "restore to
// background" over the whole canvas, and the next frame is drawn whole).
#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>

#include "engine/fileio/atomic_file.h"
#include "engine/media/gif_palette.h"
#include "engine/media/media_internal.h"

namespace ws::media::detail {

namespace {

constexpr int kMinDelayCs = 2;  // browsers turn 0 and 1 into 10
constexpr int kMaxDelayCs = 65535;
constexpr uint32_t kTransparent = 0;  // a binarized transparent pixel
constexpr int kMaxCodes = 4096;

void putU16(std::string& out, int v) {
    out.push_back(char(v & 0xff));
    out.push_back(char((v >> 8) & 0xff));
}

// GIF's LZW: variable-width codes (min code size + 1 up to 12 bits) packed LSB first into data
// sub-blocks of at most 255 bytes. A clear code starts the stream and follows a full table.
class LzwEncoder {
public:
    void encode(const uint8_t* indices, size_t count, int minCodeSize, std::string& out) {
        m_out = &out;
        out.push_back(char(minCodeSize));
        m_block.clear();
        m_bits = 0;
        m_bitCount = 0;
        const int clear = 1 << minCodeSize;
        const int end = clear + 1;
        auto reset = [&] {
            std::fill(m_keys.begin(), m_keys.end(), -1);
            m_next = end + 1;
            m_codeSize = minCodeSize + 1;
        };
        reset();
        emit(clear);
        int prefix = indices[0];
        for (size_t i = 1; i < count; ++i) {
            const int c = indices[i];
            const int32_t key = prefix << 8 | c;
            size_t h = (uint32_t(key) * 2654435761u) >> (32 - kTableBits);
            while (m_keys[h] >= 0 && m_keys[h] != key) h = (h + 1) & (kTableSize - 1);
            if (m_keys[h] == key) {
                prefix = m_codes[h];
                continue;
            }
            emit(prefix);
            if (m_next < kMaxCodes) {
                m_keys[h] = key;
                m_codes[h] = uint16_t(m_next++);
                // The decoder adds its entry one code later, so it widens its codes when its
                // table reaches 2^size, which is when ours passes it.
                if (m_next > (1 << m_codeSize) && m_codeSize < 12) ++m_codeSize;
            } else {
                emit(clear);
                reset();
            }
            prefix = c;
        }
        emit(prefix);
        emit(end);
        if (m_bitCount > 0) byte(uint8_t(m_bits));
        flushBlock();
        out.push_back(0);  // block terminator
    }

private:
    static constexpr int kTableBits = 13;
    static constexpr size_t kTableSize = size_t{1} << kTableBits;  // 2 x 4096: short probes

    void emit(int code) {
        m_bits |= uint64_t(code) << m_bitCount;
        m_bitCount += m_codeSize;
        while (m_bitCount >= 8) {
            byte(uint8_t(m_bits));
            m_bits >>= 8;
            m_bitCount -= 8;
        }
    }
    void byte(uint8_t b) {
        m_block.push_back(char(b));
        if (m_block.size() == 255) flushBlock();
    }
    void flushBlock() {
        if (m_block.empty()) return;
        m_out->push_back(char(m_block.size()));
        m_out->append(m_block);
        m_block.clear();
    }

    std::vector<int32_t> m_keys = std::vector<int32_t>(kTableSize, -1);
    std::vector<uint16_t> m_codes = std::vector<uint16_t>(kTableSize, 0);
    std::string* m_out = nullptr;
    std::string m_block;
    uint64_t m_bits = 0;
    int m_bitCount = 0;
    int m_next = 0;
    int m_codeSize = 0;
};

struct Pending {
    Rect rect;
    int disposal = 1;  // 1: leave in place, 2: restore to background (transparent)
    int64_t startMs = 0, endMs = 0;
};

class GifWriter final : public AnimationWriter {
public:
    GifWriter(std::filesystem::path path, AnimationSpec spec, fileio::AtomicFileWriter file)
        : m_path(std::move(path)), m_spec(std::move(spec)), m_file(std::move(file)) {
        const size_t n = size_t(m_spec.width) * size_t(m_spec.height);
        m_before.assign(n, kTransparent);
        std::string header = "GIF89a";
        putU16(header, m_spec.width);
        putU16(header, m_spec.height);
        header += std::string("\x70\x00\x00", 3);  // no global table, 8-bit colour resolution
        header += "\x21\xff\x0bNETSCAPE2.0\x03\x01";
        putU16(header, 0);  // loop forever
        header.push_back(0);
        m_out = std::move(header);
    }

    AnimationFormat format() const override { return AnimationFormat::Gif; }

    Status addFrame(const FrameView& frame, int delayMs) override {
        if (m_usedUp()) return m_usedUp.why();
        if (Status s = checkFrame(m_path, m_spec, frame, delayMs, m_added); !s)
            return m_usedUp.fail(s);
        ++m_added;
        const bool transparent = binarize(frame, m_next);
        if (m_added == 1) {
            m_pending.swap(m_next);
            m_state = {{0, 0, m_spec.width, m_spec.height}, 1, 0, delayMs};
            return Status::success();
        }
        if (m_next == m_pending) {
            m_state.endMs += delayMs;
            return Status::success();
        }
        bool clear = false;
        if (transparent) {
            for (size_t i = 0; i < m_next.size() && !clear; ++i)
                clear = m_next[i] == kTransparent && m_pending[i] != kTransparent;
        }
        if (clear) {
            m_state.rect = {0, 0, m_spec.width, m_spec.height};
            m_state.disposal = 2;
        }
        if (Status s = flushPending(); !s) return m_usedUp.fail(s);
        // What the next frame is drawn over, and the rectangle it must cover.
        if (clear) {
            std::fill(m_before.begin(), m_before.end(), kTransparent);
        } else {
            m_before.swap(m_pending);
        }
        Rect rect = changedRect(m_before.data(), m_next.data(), m_spec.width, m_spec.height);
        if (rect.empty()) rect = {0, 0, 1, 1};  // all transparent over a cleared canvas
        m_pending.swap(m_next);
        m_state = {rect, 1, m_state.endMs, m_state.endMs + delayMs};
        return Status::success();
    }

    Status finish() override {
        if (m_usedUp()) return m_usedUp.why();
        if (m_added == 0) {
            return m_usedUp.fail(
                Error{fmt::format("cannot export {}: no frames were added", m_path.string())});
        }
        if (Status s = flushPending(); !s) return m_usedUp.fail(s);
        m_usedUp.set();  // used up
        m_out.push_back(';');
        if (Status s = m_file.write(m_out.data(), m_out.size()); !s) return s;
        return m_file.commit();
    }

private:
    // Packs the frame with alpha made binary: below 128 is kTransparent, else alpha 255.
    // Returns whether any pixel is transparent.
    static bool binarize(const FrameView& frame, std::vector<uint32_t>& out) {
        copyPacked(frame, out);
        uint32_t anyTransparent = 0;
        for (uint32_t& p : out) {
            const uint32_t opaque = (p >> 31) & 1u;  // alpha >= 128
            p = opaque ? (p | 0xff000000u) : kTransparent;
            anyTransparent |= opaque ^ 1u;
        }
        return anyTransparent != 0;
    }

    // Encodes the held frame: m_pending over m_before, inside m_state.rect.
    Status flushPending() {
        const int64_t endCs = (m_state.endMs + 5) / 10;
        int delayCs = int(std::max<int64_t>(kMinDelayCs, endCs - m_emittedCs));
        m_emittedCs += delayCs;
        const Rect r = m_state.rect;
        m_indices.resize(size_t(r.width) * size_t(r.height));
        m_colours.clear();
        for (int y = 0; y < r.height; ++y) {
            const size_t row = size_t(r.y + y) * size_t(m_spec.width) + size_t(r.x);
            for (int x = 0; x < r.width; ++x) {
                const uint32_t p = m_pending[row + size_t(x)];
                if (p != kTransparent && p != m_before[row + size_t(x)]) m_colours.push_back(p);
            }
        }
        m_quantizer.build(m_colours.data(), m_colours.size(), 255);
        uint8_t* index = m_indices.data();
        for (int y = 0; y < r.height; ++y) {
            const size_t row = size_t(r.y + y) * size_t(m_spec.width) + size_t(r.x);
            uint32_t lastColour = kTransparent;
            uint8_t lastIndex = 0;
            for (int x = 0; x < r.width; ++x) {
                const uint32_t p = m_pending[row + size_t(x)];
                if (p == kTransparent || p == m_before[row + size_t(x)]) {
                    *index++ = 0;
                } else {
                    if (p != lastColour) {
                        lastColour = p;
                        lastIndex = uint8_t(m_quantizer.indexOf(p) + 1);
                    }
                    *index++ = lastIndex;
                }
            }
        }
        const int entries = int(m_quantizer.palette().size()) + 1;
        const int sizeBits = std::max(1, int(std::bit_width(unsigned(entries - 1))));  // 1..8
        // Longer than a GIF delay holds: transparent frames (nothing changes) add the rest, and
        // the last of them carries the disposal.
        const int disposal = m_state.disposal;
        int rest = delayCs - std::min(delayCs, kMaxDelayCs);
        writeFrame(r, std::min(delayCs, kMaxDelayCs), sizeBits, rest > 0 ? 1 : disposal);
        while (rest > 0) {
            const int part = std::min(std::max(rest, kMinDelayCs), kMaxDelayCs);
            rest -= part;
            m_indices.assign(size_t(r.width) * size_t(r.height), 0);
            writeFrame(r, part, 1, rest > 0 ? 1 : disposal);
        }
        if (m_out.size() >= (size_t{1} << 20)) {
            Status s = m_file.write(m_out.data(), m_out.size());
            m_out.clear();
            return s;
        }
        return Status::success();
    }

    void writeFrame(const Rect& r, int delayCs, int sizeBits, int disposal) {
        m_out += "\x21\xf9\x04";
        m_out.push_back(char(disposal << 2 | 1));  // disposal, transparent index given
        putU16(m_out, delayCs);
        m_out.push_back(0);  // transparent index
        m_out.push_back(0);
        m_out.push_back(',');
        putU16(m_out, r.x);
        putU16(m_out, r.y);
        putU16(m_out, r.width);
        putU16(m_out, r.height);
        m_out.push_back(char(0x80 | (sizeBits - 1)));  // local table of 2^sizeBits entries
        const std::vector<uint32_t>& palette = m_quantizer.palette();
        for (int i = 0; i < (1 << sizeBits); ++i) {
            const uint32_t c = i == 0 || i > int(palette.size()) ? 0u : palette[size_t(i - 1)];
            m_out.push_back(char(c & 0xff));
            m_out.push_back(char((c >> 8) & 0xff));
            m_out.push_back(char((c >> 16) & 0xff));
        }
        m_lzw.encode(m_indices.data(), m_indices.size(), std::max(2, sizeBits), m_out);
    }

    std::filesystem::path m_path;
    AnimationSpec m_spec;
    fileio::AtomicFileWriter m_file;
    std::string m_out;                                  // bytes not yet handed to m_file
    std::vector<uint32_t> m_before, m_pending, m_next;  // packed, alpha binarized
    Pending m_state;
    int64_t m_emittedCs = 0;
    std::vector<uint32_t> m_colours;
    std::vector<uint8_t> m_indices;
    GifQuantizer m_quantizer;
    LzwEncoder m_lzw;
    int m_added = 0;
    UsedUp m_usedUp{m_path};
};

}  // namespace

Result<std::unique_ptr<AnimationWriter>> createGifWriter(const std::filesystem::path& path,
                                                         const AnimationSpec& spec) {
    static_assert(kMaxSide <= 65535, "GIF sizes are 16-bit");
    auto file = fileio::AtomicFileWriter::create(path);
    if (!file) return file.error();
    return std::unique_ptr<AnimationWriter>(
        std::make_unique<GifWriter>(path, spec, std::move(*file)));
}

}  // namespace ws::media::detail
