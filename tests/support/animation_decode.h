// SPDX-License-Identifier: GPL-3.0-or-later
// Test-side decoders for the animations engine/media writes, written from the PNG/APNG and GIF89a
// specifications and sharing no code with the writers: an APNG reader (chunk CRCs checked with
// its own CRC table, sequence numbers, acTL's frame count, zlib inflate, the five row filters,
// dispose and blend ops) and a GIF reader (blocks, colour tables, its own LZW decoder, disposal
// methods, the NETSCAPE2.0 loop). Each returns the composed canvas after every frame, as packed
// RGBA (bytes R, G, B, A), and the frame's delay, or a message saying what is wrong.
// Header-only, for tests; thread-safe (no state).
#pragma once

#include <zlib.h>

#include <array>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace ws::testing {

struct DecodedFrame {
    std::vector<uint32_t> rgba;  // width x height, the canvas after this frame is drawn
    int delayMs = 0;             // APNG: num/den in ms (rounded); GIF: centiseconds * 10
    int x = 0, y = 0, width = 0, height = 0;  // the region the frame's data covered
};

struct DecodedAnimation {
    std::string error;  // empty when the file decoded
    int width = 0, height = 0;
    int declaredFrames = -1;  // APNG: acTL num_frames
    int loops = -1;           // APNG num_plays / GIF NETSCAPE loop count (0: forever)
    std::vector<DecodedFrame> frames;
};

inline std::string readBytes(const std::filesystem::path& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

namespace decode_detail {
inline uint32_t be32(const std::string& s, size_t at) {
    return uint32_t(uint8_t(s[at])) << 24 | uint32_t(uint8_t(s[at + 1])) << 16 |
           uint32_t(uint8_t(s[at + 2])) << 8 | uint32_t(uint8_t(s[at + 3]));
}
inline uint32_t be16(const std::string& s, size_t at) {
    return uint32_t(uint8_t(s[at])) << 8 | uint32_t(uint8_t(s[at + 1]));
}
inline int le16(const std::string& s, size_t at) {
    return int(uint8_t(s[at])) | int(uint8_t(s[at + 1])) << 8;
}
inline uint32_t crcOf(const char* data, size_t size) {
    static const std::array<uint32_t, 256> table = [] {
        std::array<uint32_t, 256> t{};
        for (uint32_t n = 0; n < 256; ++n) {
            uint32_t c = n;
            for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xedb88320u ^ (c >> 1) : c >> 1;
            t[n] = c;
        }
        return t;
    }();
    uint32_t c = 0xffffffffu;
    for (size_t i = 0; i < size; ++i) c = table[(c ^ uint8_t(data[i])) & 0xff] ^ (c >> 8);
    return c ^ 0xffffffffu;
}
inline int paethPredictor(int a, int b, int c) {
    const int p = a + b - c, pa = std::abs(p - a), pb = std::abs(p - b), pc = std::abs(p - c);
    return (pa <= pb && pa <= pc) ? a : (pb <= pc ? b : c);
}
}  // namespace decode_detail

inline DecodedAnimation decodeApng(const std::string& bytes) {
    using namespace decode_detail;
    DecodedAnimation out;
    auto fail = [&](std::string why) {
        out.error = std::move(why);
        return out;
    };
    if (bytes.size() < 8 || bytes.compare(0, 8, std::string("\x89PNG\r\n\x1a\n", 8)) != 0)
        return fail("no PNG signature");
    struct Pending {
        uint32_t w = 0, h = 0, x = 0, y = 0;
        int delayMs = 0, dispose = 0, blend = 0;
        std::string zdata;
        bool open = false;
    } frame;
    std::vector<uint32_t> canvas;
    uint32_t nextSequence = 0;
    bool sawIend = false, sawIdat = false, idatIsFrame = false;
    auto finishFrame = [&]() -> std::string {
        if (!frame.open) return {};
        frame.open = false;
        if (frame.x + frame.w > uint32_t(out.width) || frame.y + frame.h > uint32_t(out.height))
            return "frame region outside the canvas";
        const size_t rowBytes = size_t(frame.w) * 4;
        std::string raw((rowBytes + 1) * frame.h, '\0');
        uLongf rawSize = uLongf(raw.size());
        if (uncompress(reinterpret_cast<Bytef*>(raw.data()), &rawSize,
                       reinterpret_cast<const Bytef*>(frame.zdata.data()),
                       uLong(frame.zdata.size())) != Z_OK ||
            rawSize != raw.size())
            return "frame data does not inflate to the frame's rows";
        std::vector<uint8_t> prev(rowBytes, 0), cur(rowBytes);
        const std::vector<uint32_t> before = canvas;
        for (uint32_t r = 0; r < frame.h; ++r) {
            const uint8_t* line = reinterpret_cast<const uint8_t*>(raw.data()) + r * (rowBytes + 1);
            const int filter = line[0];
            for (size_t i = 0; i < rowBytes; ++i) {
                const int a = i >= 4 ? cur[i - 4] : 0, b = prev[i], c = i >= 4 ? prev[i - 4] : 0;
                int pred = 0;
                switch (filter) {
                    case 0:
                        pred = 0;
                        break;
                    case 1:
                        pred = a;
                        break;
                    case 2:
                        pred = b;
                        break;
                    case 3:
                        pred = (a + b) / 2;
                        break;
                    case 4:
                        pred = paethPredictor(a, b, c);
                        break;
                    default:
                        return "bad filter type " + std::to_string(filter);
                }
                cur[i] = uint8_t(line[1 + i] + pred);
            }
            for (uint32_t x = 0; x < frame.w; ++x) {
                uint32_t px;
                std::memcpy(&px, cur.data() + x * 4, 4);
                uint32_t& dst = canvas[size_t(frame.y + r) * size_t(out.width) + frame.x + x];
                if (frame.blend == 0 || (px >> 24) == 255) {
                    dst = px;
                } else if ((px >> 24) != 0) {
                    return "blend OVER with partial alpha is not checked by this reader";
                }
            }
            std::swap(prev, cur);
        }
        out.frames.push_back(
            {canvas, frame.delayMs, int(frame.x), int(frame.y), int(frame.w), int(frame.h)});
        if (frame.dispose == 1) {
            for (uint32_t r = 0; r < frame.h; ++r)
                for (uint32_t x = 0; x < frame.w; ++x)
                    canvas[size_t(frame.y + r) * size_t(out.width) + frame.x + x] = 0;
        } else if (frame.dispose == 2) {
            canvas = before;
        }
        return {};
    };
    size_t at = 8;
    while (at < bytes.size()) {
        if (at + 12 > bytes.size()) return fail("truncated chunk header");
        const uint32_t length = be32(bytes, at);
        if (at + 12 + length > bytes.size()) return fail("truncated chunk");
        const std::string type = bytes.substr(at + 4, 4);
        const std::string data = bytes.substr(at + 8, length);
        if (crcOf(bytes.data() + at + 4, length + 4) != be32(bytes, at + 8 + length))
            return fail("bad CRC in " + type);
        at += 12 + length;
        if (sawIend) return fail("data after IEND");
        if (type == "IHDR") {
            out.width = int(be32(data, 0));
            out.height = int(be32(data, 4));
            if (data[8] != 8 || data[9] != 6 || data[12] != 0) return fail("not 8-bit RGBA");
            canvas.assign(size_t(out.width) * size_t(out.height), 0);
        } else if (type == "acTL") {
            out.declaredFrames = int(be32(data, 0));
            out.loops = int(be32(data, 4));
        } else if (type == "fcTL" || type == "fdAT") {
            if (be32(data, 0) != nextSequence)
                return fail(type + " sequence " + std::to_string(be32(data, 0)) + ", expected " +
                            std::to_string(nextSequence));
            ++nextSequence;
            if (type == "fcTL") {
                if (std::string e = finishFrame(); !e.empty()) return fail(e);
                frame = Pending{};
                frame.open = true;
                frame.w = be32(data, 4);
                frame.h = be32(data, 8);
                frame.x = be32(data, 12);
                frame.y = be32(data, 16);
                const uint32_t num = be16(data, 20), den = be16(data, 22) ? be16(data, 22) : 100;
                frame.delayMs = int((num * 1000 + den / 2) / den);
                frame.dispose = data[24];
                frame.blend = data[25];
                if (!sawIdat) idatIsFrame = true;
            } else {
                if (!frame.open || !sawIdat) return fail("fdAT outside a frame");
                frame.zdata += data.substr(4);
            }
        } else if (type == "IDAT") {
            if (out.declaredFrames < 0) return fail("IDAT before acTL");
            if (!idatIsFrame) return fail("IDAT not part of the animation");
            sawIdat = true;
            frame.zdata += data;
        } else if (type == "IEND") {
            if (std::string e = finishFrame(); !e.empty()) return fail(e);
            sawIend = true;
        }
    }
    if (!sawIend) return fail("no IEND");
    if (out.declaredFrames != int(out.frames.size()))
        return fail("acTL declares " + std::to_string(out.declaredFrames) + " frames, file has " +
                    std::to_string(out.frames.size()));
    return out;
}

inline DecodedAnimation decodeGif(const std::string& bytes) {
    using namespace decode_detail;
    DecodedAnimation out;
    auto fail = [&](std::string why) {
        out.error = std::move(why);
        return out;
    };
    if (bytes.size() < 13 || bytes.compare(0, 6, "GIF89a") != 0) return fail("no GIF89a header");
    out.width = le16(bytes, 6);
    out.height = le16(bytes, 8);
    const int screenFlags = uint8_t(bytes[10]);
    size_t at = 13;
    std::vector<uint32_t> globalTable;
    auto readTable = [&](int flags, std::vector<uint32_t>& table) {
        const int n = 1 << ((flags & 7) + 1);
        table.resize(size_t(n));
        for (int i = 0; i < n; ++i, at += 3)
            table[size_t(i)] = uint32_t(uint8_t(bytes[at])) |
                               uint32_t(uint8_t(bytes[at + 1])) << 8 |
                               uint32_t(uint8_t(bytes[at + 2])) << 16 | 0xff000000u;
    };
    if (screenFlags & 0x80) readTable(screenFlags, globalTable);
    std::vector<uint32_t> canvas(size_t(out.width) * size_t(out.height), 0);
    int delayCs = 0, disposal = 0, transparent = -1;
    auto subBlocks = [&](std::string& data) -> bool {
        while (true) {
            if (at >= bytes.size()) return false;
            const size_t n = uint8_t(bytes[at++]);
            if (n == 0) return true;
            if (at + n > bytes.size()) return false;
            data.append(bytes, at, n);
            at += n;
        }
    };
    while (true) {
        if (at >= bytes.size()) return fail("no trailer");
        const uint8_t block = uint8_t(bytes[at++]);
        if (block == 0x3b) break;
        if (block == 0x21) {
            const uint8_t label = uint8_t(bytes[at++]);
            std::string data;
            if (!subBlocks(data)) return fail("truncated extension");
            if (label == 0xf9) {
                if (data.size() != 4) return fail("graphic control block of wrong size");
                disposal = (uint8_t(data[0]) >> 2) & 7;
                delayCs = le16(data, 1);
                transparent = (data[0] & 1) ? int(uint8_t(data[3])) : -1;
            } else if (label == 0xff && data.compare(0, 11, "NETSCAPE2.0") == 0) {
                out.loops = le16(data, 13);
            }
            continue;
        }
        if (block != 0x2c) return fail("unknown block " + std::to_string(block));
        const int x = le16(bytes, at), y = le16(bytes, at + 2);
        const int w = le16(bytes, at + 4), h = le16(bytes, at + 6);
        const int flags = uint8_t(bytes[at + 8]);
        at += 9;
        if (x + w > out.width || y + h > out.height) return fail("image outside the screen");
        if (flags & 0x40) return fail("interlaced image (the writer never interlaces)");
        std::vector<uint32_t> table = globalTable;
        if (flags & 0x80) readTable(flags, table);
        if (table.empty()) return fail("no colour table");
        const int minCodeSize = uint8_t(bytes[at++]);
        if (minCodeSize < 2 || minCodeSize > 8) return fail("bad LZW minimum code size");
        std::string data;
        if (!subBlocks(data)) return fail("truncated image data");
        // LZW, as the GIF89a specification's appendix F describes it.
        const int clear = 1 << minCodeSize, end = clear + 1;
        std::vector<int> prefix(4096, -1), suffix(4096, 0), length(4096, 0);
        for (int i = 0; i < clear; ++i) suffix[size_t(i)] = i, length[size_t(i)] = 1;
        int codeSize = minCodeSize + 1, next = end + 1, old = -1;
        size_t bitPos = 0;
        std::vector<uint8_t> indices;
        std::vector<uint8_t> str;
        auto expand = [&](int code) {
            str.resize(size_t(length[size_t(code)]));
            for (int c = code, i = length[size_t(code)] - 1; i >= 0; c = prefix[size_t(c)], --i)
                str[size_t(i)] = uint8_t(suffix[size_t(c)]);
        };
        bool ended = false;
        while (!ended) {
            if (bitPos + size_t(codeSize) > data.size() * 8) return fail("LZW data ends early");
            int code = 0;
            for (int b = 0; b < codeSize; ++b, ++bitPos)
                code |= ((uint8_t(data[bitPos / 8]) >> (bitPos % 8)) & 1) << b;
            if (code == clear) {
                codeSize = minCodeSize + 1;
                next = end + 1;
                old = -1;
                continue;
            }
            if (code == end) {
                ended = true;
                continue;
            }
            if (old < 0) {
                if (code >= clear) return fail("first code after clear is not a colour");
                indices.push_back(uint8_t(code));
                old = code;
                continue;
            }
            uint8_t first;
            if (code < next) {
                expand(code);
                first = str[0];
                indices.insert(indices.end(), str.begin(), str.end());
            } else if (code == next) {
                expand(old);
                first = str[0];
                indices.insert(indices.end(), str.begin(), str.end());
                indices.push_back(first);
            } else {
                return fail("LZW code " + std::to_string(code) + " beyond the table (" +
                            std::to_string(next) + ")");
            }
            if (next < 4096) {
                prefix[size_t(next)] = old;
                suffix[size_t(next)] = first;
                length[size_t(next)] = length[size_t(old)] + 1;
                ++next;
                if (next == (1 << codeSize) && codeSize < 12) ++codeSize;
            }
            old = code;
        }
        if (indices.size() != size_t(w) * size_t(h))
            return fail("image has " + std::to_string(indices.size()) + " pixels, expected " +
                        std::to_string(size_t(w) * size_t(h)));
        const std::vector<uint32_t> before = canvas;
        for (int r = 0; r < h; ++r)
            for (int c = 0; c < w; ++c) {
                const int index = indices[size_t(r) * size_t(w) + size_t(c)];
                if (index == transparent) continue;
                if (size_t(index) >= table.size()) return fail("index beyond the colour table");
                canvas[size_t(y + r) * size_t(out.width) + size_t(x + c)] = table[size_t(index)];
            }
        out.frames.push_back({canvas, delayCs * 10, x, y, w, h});
        if (disposal == 2) {
            for (int r = 0; r < h; ++r)
                for (int c = 0; c < w; ++c)
                    canvas[size_t(y + r) * size_t(out.width) + size_t(x + c)] = 0;
        } else if (disposal == 3) {
            canvas = before;
        }
        delayCs = 0, disposal = 0, transparent = -1;
    }
    if (at != bytes.size()) return fail("bytes after the trailer");
    return out;
}

}  // namespace ws::testing
