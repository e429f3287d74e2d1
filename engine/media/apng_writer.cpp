// SPDX-License-Identifier: GPL-3.0-or-later
// The animated PNG writer (see animation_writer.h). Layout: signature, IHDR (8-bit RGBA), acTL,
// then frame 1 as fcTL + IDAT (the default image is the first frame) and every later frame as
// fcTL + fdAT, IEND. Later frames hold only the rectangle that changed since the frame before
// (dispose NONE, blend SOURCE, so the rectangle replaces those pixels, alpha included); a frame
// equal to the one before lengthens that frame's delay instead. Rows are filtered as libpng does
// (per row the filter with the least sum of absolute values) and deflated by zlib.
// The compressed frames stay in memory until finish(), because acTL (the frame count) comes
// before them in the file; slides change little per frame, so that is small.
#include <fmt/format.h>
#include <zlib.h>

#include <array>
#include <cstdlib>
#include <cstring>

#include "engine/fileio/atomic_file.h"
#include "engine/media/media_internal.h"

namespace ws::media::detail {

namespace {

constexpr size_t kMaxChunkData = size_t{1} << 20;  // IDAT/fdAT pieces; readers stream them anyway
constexpr int kMaxDelayNum = 65535;

void putU32(std::string& out, uint32_t v) {
    const char bytes[4] = {char(v >> 24), char(v >> 16), char(v >> 8), char(v)};
    out.append(bytes, 4);
}
void putU16(std::string& out, uint32_t v) {
    const char bytes[2] = {char(v >> 8), char(v)};
    out.append(bytes, 2);
}

void appendChunk(std::string& out, const char* type, const char* data, size_t size) {
    putU32(out, uint32_t(size));
    const size_t start = out.size();
    out.append(type, 4);
    out.append(data, size);
    uLong crc = crc32(0L, Z_NULL, 0);
    crc = crc32(crc, reinterpret_cast<const Bytef*>(out.data() + start), uInt(size + 4));
    putU32(out, uint32_t(crc));
}

uint8_t paeth(int a, int b, int c) {
    const int p = a + b - c;
    const int pa = std::abs(p - a), pb = std::abs(p - b), pc = std::abs(p - c);
    if (pa <= pb && pa <= pc) return uint8_t(a);
    return pb <= pc ? uint8_t(b) : uint8_t(c);
}

// Writes the five PNG filters of `row` (previous row `up`, zeros for the first) and returns the
// index of the one whose bytes, read as signed, have the smallest sum of magnitudes.
int filterRow(const uint8_t* row, const uint8_t* up, size_t n,
              std::array<std::vector<uint8_t>, 5>& out) {
    constexpr size_t bpp = 4;
    std::array<uint64_t, 5> cost{};
    for (int f = 0; f < 5; ++f) out[f][0] = uint8_t(f);
    uint8_t* none = out[0].data() + 1;
    uint8_t* sub = out[1].data() + 1;
    uint8_t* upf = out[2].data() + 1;
    uint8_t* avg = out[3].data() + 1;
    uint8_t* pae = out[4].data() + 1;
    auto mag = [](uint8_t v) { return uint64_t(v < 128 ? v : 256 - v); };
    for (size_t i = 0; i < n; ++i) {
        const int a = i >= bpp ? row[i - bpp] : 0;
        const int b = up[i];
        const int c = i >= bpp ? up[i - bpp] : 0;
        const int x = row[i];
        none[i] = uint8_t(x);
        sub[i] = uint8_t(x - a);
        upf[i] = uint8_t(x - b);
        avg[i] = uint8_t(x - ((a + b) >> 1));
        pae[i] = uint8_t(x - paeth(a, b, c));
        cost[0] += mag(none[i]);
        cost[1] += mag(sub[i]);
        cost[2] += mag(upf[i]);
        cost[3] += mag(avg[i]);
        cost[4] += mag(pae[i]);
    }
    int best = 0;
    for (int f = 1; f < 5; ++f)
        if (cost[f] < cost[best]) best = f;
    return best;
}

// The zlib stream of the filtered rows of `rect` in a packed frame `width` pixels wide.
Result<std::string> compressRect(const uint32_t* frame, int width, const Rect& rect) {
    z_stream zs{};
    if (deflateInit2(&zs, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15, 8, Z_FILTERED) != Z_OK)
        return Error{"zlib could not start a deflate stream (out of memory?)"};
    const size_t rowBytes = size_t(rect.width) * 4;
    std::vector<uint8_t> zeros(rowBytes, 0);
    std::array<std::vector<uint8_t>, 5> filtered;
    for (auto& f : filtered) f.resize(rowBytes + 1);
    std::string out;
    out.resize(deflateBound(&zs, uLong((rowBytes + 1) * size_t(rect.height))) + 64);
    size_t written = 0;
    const uint8_t* up = zeros.data();
    int status = Z_OK;
    for (int y = 0; y < rect.height && (status == Z_OK || status == Z_BUF_ERROR); ++y) {
        const auto* row =
            reinterpret_cast<const uint8_t*>(frame + size_t(rect.y + y) * size_t(width) + rect.x);
        const int best = filterRow(row, up, rowBytes, filtered);
        zs.next_in = filtered[best].data();
        zs.avail_in = uInt(rowBytes + 1);
        const int flush = y + 1 == rect.height ? Z_FINISH : Z_NO_FLUSH;
        do {
            if (written == out.size()) out.resize(out.size() * 2);
            zs.next_out = reinterpret_cast<Bytef*>(out.data() + written);
            zs.avail_out = uInt(out.size() - written);
            status = deflate(&zs, flush);
            written = out.size() - zs.avail_out;
        } while ((status == Z_OK || status == Z_BUF_ERROR) &&
                 (zs.avail_in != 0 || (flush == Z_FINISH && status != Z_STREAM_END)));
        up = row;
    }
    const bool done = status == Z_STREAM_END;
    out.resize(written);
    deflateEnd(&zs);
    if (!done) return Error{fmt::format("zlib deflate failed (status {})", status)};
    return out;
}

struct FrameRecord {
    Rect rect;
    int delayMs = 0;
    std::string zdata;
};

class ApngWriter final : public AnimationWriter {
public:
    ApngWriter(std::filesystem::path path, AnimationSpec spec, fileio::AtomicFileWriter file)
        : m_path(std::move(path)), m_spec(std::move(spec)), m_file(std::move(file)) {}

    AnimationFormat format() const override { return AnimationFormat::Apng; }

    Status addFrame(const FrameView& frame, int delayMs) override {
        if (m_usedUp()) return m_usedUp.why();
        if (Status s = checkFrame(m_path, m_spec, frame, delayMs, m_added); !s)
            return m_usedUp.fail(s);
        ++m_added;
        copyPacked(frame, m_current);
        Rect rect{0, 0, m_spec.width, m_spec.height};
        if (!m_frames.empty()) {
            rect = changedRect(m_previous.data(), m_current.data(), m_spec.width, m_spec.height);
            if (rect.empty()) {
                if (m_frames.back().delayMs + delayMs <= kMaxDelayNum) {
                    m_frames.back().delayMs += delayMs;
                    return Status::success();
                }
                rect = {0, 0, 1, 1};  // the delay no longer fits: an unchanged one-pixel frame
            }
        }
        auto zdata = compressRect(m_current.data(), m_spec.width, rect);
        if (!zdata)
            return m_usedUp.fail(
                Error{fmt::format("cannot export {}: frame {}: {}", m_path.string(), m_added,
                                  zdata.error().message)});
        m_frames.push_back({rect, delayMs, std::move(*zdata)});
        m_previous.swap(m_current);
        return Status::success();
    }

    Status finish() override {
        if (m_usedUp()) return m_usedUp.why();
        if (m_frames.empty()) {
            return m_usedUp.fail(
                Error{fmt::format("cannot export {}: no frames were added", m_path.string())});
        }
        m_usedUp.set();  // whatever happens next, the writer is used up
        std::string out("\x89PNG\r\n\x1a\n", 8);
        std::string data;
        putU32(data, uint32_t(m_spec.width));
        putU32(data, uint32_t(m_spec.height));
        data += std::string("\x08\x06\x00\x00\x00", 5);  // 8-bit RGBA, deflate, no interlace
        appendChunk(out, "IHDR", data.data(), data.size());
        data.clear();
        putU32(data, uint32_t(m_frames.size()));
        putU32(data, 0);  // loop forever
        appendChunk(out, "acTL", data.data(), data.size());
        uint32_t sequence = 0;
        for (size_t i = 0; i < m_frames.size(); ++i) {
            const FrameRecord& f = m_frames[i];
            data.clear();
            putU32(data, sequence++);
            putU32(data, uint32_t(f.rect.width));
            putU32(data, uint32_t(f.rect.height));
            putU32(data, uint32_t(f.rect.x));
            putU32(data, uint32_t(f.rect.y));
            if (f.delayMs <= kMaxDelayNum) {
                putU16(data, uint32_t(f.delayMs));
                putU16(data, 1000);
            } else {
                putU16(data, uint32_t((f.delayMs + 5) / 10));
                putU16(data, 100);
            }
            data.push_back(0);  // dispose NONE: the next frame draws over this one
            data.push_back(0);  // blend SOURCE: the rectangle replaces pixels, alpha included
            appendChunk(out, "fcTL", data.data(), data.size());
            for (size_t at = 0; at < f.zdata.size() || at == 0; at += kMaxChunkData) {
                const size_t n = std::min(kMaxChunkData, f.zdata.size() - at);
                if (i == 0) {
                    appendChunk(out, "IDAT", f.zdata.data() + at, n);
                } else {
                    data.clear();
                    putU32(data, sequence++);
                    data.append(f.zdata.data() + at, n);
                    appendChunk(out, "fdAT", data.data(), data.size());
                }
                if (out.size() >= kMaxChunkData) {
                    if (Status s = m_file.write(out.data(), out.size()); !s) return s;
                    out.clear();
                }
            }
            std::string().swap(m_frames[i].zdata);
        }
        appendChunk(out, "IEND", nullptr, 0);
        if (Status s = m_file.write(out.data(), out.size()); !s) return s;
        return m_file.commit();
    }

private:
    std::filesystem::path m_path;
    AnimationSpec m_spec;
    fileio::AtomicFileWriter m_file;
    std::vector<FrameRecord> m_frames;
    std::vector<uint32_t> m_previous, m_current;  // packed frames
    int m_added = 0;
    UsedUp m_usedUp{m_path};
};

}  // namespace

Result<std::unique_ptr<AnimationWriter>> createApngWriter(const std::filesystem::path& path,
                                                          const AnimationSpec& spec) {
    auto file = fileio::AtomicFileWriter::create(path);
    if (!file) return file.error();
    return std::unique_ptr<AnimationWriter>(
        std::make_unique<ApngWriter>(path, spec, std::move(*file)));
}

}  // namespace ws::media::detail
