// SPDX-License-Identifier: GPL-3.0-or-later
// DocumentIndex and attentionLength (packing.h).
#include "engine/data/packing.h"

#include <algorithm>
#include <cassert>
#include <cstdint>

namespace ws::data {

DocumentIndex::DocumentIndex(std::vector<int64_t> documentStarts) {
    documentStarts.push_back(0);
    std::sort(documentStarts.begin(), documentStarts.end());
    documentStarts.erase(std::unique(documentStarts.begin(), documentStarts.end()),
                         documentStarts.end());
    m_starts = std::move(documentStarts);
}

DocumentIndex DocumentIndex::fromByteOffsets(const TokenCache& cache,
                                             std::span<const int32_t> tokenBytes,
                                             std::span<const size_t> byteStarts) {
    std::vector<int64_t> starts;
    size_t next = 0, byte = 0;
    std::vector<int32_t> block(size_t(1) << 16);
    for (size_t first = 0; first < cache.size() && next < byteStarts.size();
         first += block.size()) {
        const size_t n = std::min(block.size(), cache.size() - first);
        cache.copyTokens(first, n, block.data());
        for (size_t i = 0; i < n && next < byteStarts.size(); ++i) {
            while (next < byteStarts.size() && byteStarts[next] <= byte) {
                starts.push_back(int64_t(first + i));
                ++next;
            }
            byte += size_t(tokenBytes[size_t(block[i])]);
        }
    }
    return DocumentIndex(std::move(starts));
}

void DocumentIndex::positionIds(int64_t first, int T, int segment, int32_t* out) const {
    // The last document start at or before `first`, then each later one inside the window.
    auto it = std::upper_bound(m_starts.begin(), m_starts.end(), first);
    int64_t nextStart = it == m_starts.end() ? INT64_MAX : *it;
    int32_t pos = 0;
    for (int t = 0; t < T; ++t) {
        const int64_t g = first + t;
        bool restart = t == 0 || (segment > 0 && t % segment == 0);
        if (g == nextStart) {
            restart = true;
            ++it;
            nextStart = it == m_starts.end() ? INT64_MAX : *it;
        }
        pos = restart ? 0 : pos + 1;
        out[t] = pos;
    }
}

double attentionLength(std::span<const int32_t> positionIds) {
    if (positionIds.empty()) return 0.0;
    double squares = 0.0;
    int64_t len = 0;
    for (const int32_t p : positionIds) {
        if (p == 0 && len > 0) {
            squares += double(len) * double(len);
            len = 0;
        }
        ++len;
    }
    squares += double(len) * double(len);
    return squares / double(positionIds.size());
}

}  // namespace ws::data
