// SPDX-License-Identifier: GPL-3.0-or-later
// The GIF writer's colour quantizer (not a public header): up to `maxColours` colours for a set
// of opaque RGBA pixels. A set with no more distinct colours than that keeps them exactly (flat
// chart colours, text on one background); a larger one is cut by variance (the box with the most
// squared error split where the two halves have least, over a 6-bit-per-channel histogram whose
// bins keep their mean colour), and every colour maps to its nearest palette entry.
// Thread-safety: one quantizer per thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace ws::media::detail {

class GifQuantizer {
public:
    GifQuantizer();
    // Builds the palette for `colours` (packed RGBA, alpha 255), at most `maxColours` (1..256).
    void build(const uint32_t* colours, size_t count, int maxColours);
    // Packed RGBA entries (alpha 255); at least one.
    const std::vector<uint32_t>& palette() const { return m_palette; }
    // The palette index for a colour given to build().
    uint8_t indexOf(uint32_t colour) const;
    bool exact() const { return m_exact; }

private:
    bool buildExact(const uint32_t* colours, size_t count, int maxColours);
    void buildCut(const uint32_t* colours, size_t count, int maxColours);

    std::vector<uint32_t> m_palette;
    bool m_exact = true;
    // Exact: open-addressing table colour -> index (key 0 = empty; colours have alpha 255).
    std::vector<uint32_t> m_keys;
    std::vector<uint8_t> m_values;
    // Cut: histogram bin -> slot (-1 unused), and bin -> palette index.
    std::vector<int32_t> m_slotOfBin;
    std::vector<uint8_t> m_indexOfBin;
    std::vector<uint32_t> m_usedBins;
};

}  // namespace ws::media::detail
