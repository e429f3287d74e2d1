// SPDX-License-Identifier: GPL-3.0-or-later
// GifQuantizer (see gif_palette.h): exact palettes, else a variance-based median cut.
#include "engine/media/gif_palette.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cassert>
#include <cmath>
#include <cstring>

namespace ws::media::detail {

static_assert(std::endian::native == std::endian::little, "packed RGBA assumes little endian");

namespace {

constexpr int kBinBits = 6;
constexpr size_t kBins = size_t{1} << (3 * kBinBits);
constexpr size_t kExactSlots = 1024;  // > 2 x 256: short probes

inline int red(uint32_t c) {
    return int(c & 0xff);
}
inline int green(uint32_t c) {
    return int((c >> 8) & 0xff);
}
inline int blue(uint32_t c) {
    return int((c >> 16) & 0xff);
}
inline uint32_t pack(int r, int g, int b) {
    return uint32_t(r) | uint32_t(g) << 8 | uint32_t(b) << 16 | 0xff000000u;
}
inline uint32_t binOf(uint32_t c) {
    return uint32_t(red(c) >> 2) << 12 | uint32_t(green(c) >> 2) << 6 | uint32_t(blue(c) >> 2);
}
inline size_t hashOf(uint32_t c) {
    return (c * 2654435761u) >> 22;
}  // 10 bits: kExactSlots

struct Slot {
    double count = 0;
    std::array<double, 3> sum{};  // of the pixels' channels
};

struct Box {
    size_t begin = 0, end = 0;  // into the order of slots
    double count = 0;
    std::array<double, 3> sum{}, sumSq{};  // each slot counted as its mean colour
    double error() const {
        double e = 0;
        for (int c = 0; c < 3; ++c) e += sumSq[c] - sum[c] * sum[c] / count;
        return e;
    }
};

}  // namespace

GifQuantizer::GifQuantizer() : m_keys(kExactSlots), m_values(kExactSlots) {}

void GifQuantizer::build(const uint32_t* colours, size_t count, int maxColours) {
    assert(maxColours >= 1 && maxColours <= 256);
    m_exact = buildExact(colours, count, maxColours);
    if (!m_exact) buildCut(colours, count, maxColours);
}

bool GifQuantizer::buildExact(const uint32_t* colours, size_t count, int maxColours) {
    std::fill(m_keys.begin(), m_keys.end(), 0u);
    m_palette.clear();
    uint32_t last = 0;
    for (size_t i = 0; i < count; ++i) {
        const uint32_t c = colours[i];
        if (c == last) continue;  // runs of one colour are the common case
        last = c;
        size_t h = hashOf(c);
        while (m_keys[h] != 0 && m_keys[h] != c) h = (h + 1) & (kExactSlots - 1);
        if (m_keys[h] == c) continue;
        if (int(m_palette.size()) == maxColours) return false;
        m_keys[h] = c;
        m_values[h] = uint8_t(m_palette.size());
        m_palette.push_back(c);
    }
    if (m_palette.empty()) m_palette.push_back(pack(0, 0, 0));
    return true;
}

void GifQuantizer::buildCut(const uint32_t* colours, size_t count, int maxColours) {
    if (m_slotOfBin.empty()) {
        m_slotOfBin.assign(kBins, -1);
        m_indexOfBin.assign(kBins, 0);
    }
    for (uint32_t bin : m_usedBins) m_slotOfBin[bin] = -1;
    m_usedBins.clear();
    std::vector<Slot> slots;
    for (size_t i = 0; i < count; ++i) {
        const uint32_t c = colours[i];
        const uint32_t bin = binOf(c);
        int32_t& slot = m_slotOfBin[bin];
        if (slot < 0) {
            slot = int32_t(slots.size());
            slots.emplace_back();
            m_usedBins.push_back(bin);
        }
        Slot& s = slots[size_t(slot)];
        s.count += 1;
        s.sum[0] += red(c);
        s.sum[1] += green(c);
        s.sum[2] += blue(c);
    }
    std::vector<std::array<double, 3>> mean(slots.size());
    for (size_t i = 0; i < slots.size(); ++i)
        for (int c = 0; c < 3; ++c) mean[i][c] = slots[i].sum[c] / slots[i].count;

    std::vector<uint32_t> order(slots.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = uint32_t(i);
    auto makeBox = [&](size_t begin, size_t end) {
        Box box;
        box.begin = begin;
        box.end = end;
        for (size_t i = begin; i < end; ++i) {
            const Slot& s = slots[order[i]];
            box.count += s.count;
            for (int c = 0; c < 3; ++c) {
                box.sum[c] += s.sum[c];
                box.sumSq[c] += s.count * mean[order[i]][c] * mean[order[i]][c];
            }
        }
        return box;
    };
    std::vector<Box> boxes{makeBox(0, order.size())};
    std::vector<double> prefixCount, prefixSum, prefixSq;
    while (int(boxes.size()) < maxColours) {
        int pick = -1;
        double worst = 0;
        for (size_t b = 0; b < boxes.size(); ++b) {
            if (boxes[b].end - boxes[b].begin < 2) continue;
            const double e = boxes[b].error();
            if (pick < 0 || e > worst) {
                pick = int(b);
                worst = e;
            }
        }
        if (pick < 0) break;  // every box is one histogram bin
        Box box = boxes[size_t(pick)];
        int axis = 0;
        double widest = -1;
        for (int c = 0; c < 3; ++c) {
            const double var = box.sumSq[c] - box.sum[c] * box.sum[c] / box.count;
            if (var > widest) {
                widest = var;
                axis = c;
            }
        }
        std::sort(order.begin() + long(box.begin), order.begin() + long(box.end),
                  [&](uint32_t a, uint32_t b) { return mean[a][axis] < mean[b][axis]; });
        // The split along `axis` with the least squared error on that axis in the two halves.
        double leftCount = 0, leftSum = 0, leftSq = 0;
        size_t bestSplit = box.begin + 1;
        double bestError = -1;
        for (size_t i = box.begin; i + 1 < box.end; ++i) {
            const Slot& s = slots[order[i]];
            const double m = mean[order[i]][axis];
            leftCount += s.count;
            leftSum += s.count * m;
            leftSq += s.count * m * m;
            const double rightCount = box.count - leftCount;
            const double rightSum = box.sum[axis] - leftSum;
            const double rightSq = box.sumSq[axis] - leftSq;
            const double e = (leftSq - leftSum * leftSum / leftCount) +
                             (rightSq - rightSum * rightSum / rightCount);
            if (bestError < 0 || e < bestError) {
                bestError = e;
                bestSplit = i + 1;
            }
        }
        boxes[size_t(pick)] = makeBox(box.begin, bestSplit);
        boxes.push_back(makeBox(bestSplit, box.end));
    }
    m_palette.clear();
    for (const Box& box : boxes) {
        auto channel = [&](int c) {
            return std::clamp(int(std::lround(box.sum[c] / box.count)), 0, 255);
        };
        m_palette.push_back(pack(channel(0), channel(1), channel(2)));
    }
    // Every bin to its nearest entry (not merely its box's: a neighbour may be closer).
    for (size_t i = 0; i < slots.size(); ++i) {
        int best = 0;
        double bestDistance = 1e30;
        for (size_t p = 0; p < m_palette.size(); ++p) {
            const double dr = mean[i][0] - red(m_palette[p]);
            const double dg = mean[i][1] - green(m_palette[p]);
            const double db = mean[i][2] - blue(m_palette[p]);
            const double d = dr * dr + dg * dg + db * db;
            if (d < bestDistance) {
                bestDistance = d;
                best = int(p);
            }
        }
        m_indexOfBin[m_usedBins[i]] = uint8_t(best);
    }
}

uint8_t GifQuantizer::indexOf(uint32_t colour) const {
    if (!m_exact) return m_indexOfBin[binOf(colour)];
    size_t h = hashOf(colour);
    while (m_keys[h] != colour) {
        assert(m_keys[h] != 0 && "indexOf a colour not given to build()");
        h = (h + 1) & (kExactSlots - 1);
    }
    return m_values[h];
}

}  // namespace ws::media::detail
