// SPDX-License-Identifier: GPL-3.0-or-later
// Rows of T slots made of whole supervised examples (examples.h): which examples share a row, and
// the inputs, targets and position_ids of a row. An example never straddles two rows and no
// target crosses from one example into the next.
//
// Notation: example e has L_e tokens and occupies s_e = L_e - 1 slots (every example here has
// 2 <= L_e <= T + 1: prepareExamples guarantees it).
// Packing (pack = true): examples are placed one by one in the order
//     packShuffled: seededPermutation(n, packKey) (examples.h), else 0, 1, .., n-1
// each into the FIRST row (lowest index) with at least s_e free slots, a new row when none has
// (first-fit). Rows are numbered in the order they are opened; inside a row examples sit in the
// order they were placed.
// Without packing: row r holds example r alone.
// Row contents (writeRow): an example placed at slot o fills slots o + t, t in [0, s_e):
//     input ids[t],  target ids[t + 1] if mask[t + 1] else -1,  position t
// and the free slots after the last example hold input padId, target -1 and
//     packed rows: position 0 (each padding slot is its own one-token document)
//     unpacked rows: the example's positions continue (0 .. T-1 over the row): the row is one
//     causal document whose padding no real token can see, so the dense path (no position_ids)
//     computes the same thing.
// Every row has at least one target >= 0 (every example has a trained token).
//
// Thread-safety: immutable after construction; const methods may run concurrently.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/data/examples.h"

namespace ws::data {

class ExampleRows {
public:
    ExampleRows() = default;
    // examples: prepared (2 <= length <= T + 1, at least one trained token each).
    ExampleRows(std::vector<Example> examples, int T, bool pack, bool packShuffled,
                uint64_t packKey, int32_t padId);

    int64_t rows() const { return int64_t(m_rowStarts.size()) - 1; }
    int T() const { return m_T; }
    bool packed() const { return m_pack; }
    const std::vector<Example>& examples() const { return m_examples; }
    // The examples of row r in slot order (indices into examples()).
    std::vector<int64_t> rowExamples(int64_t r) const;

    // inputs, targets, positionIds: (T) each. Returns the number of targets >= 0.
    int64_t writeRow(int64_t r, int32_t* inputs, int32_t* targets, int32_t* positionIds) const;
    // A row of padding only (input padId, target -1, positions 0 .. T-1 unpacked, 0 packed).
    void writePaddingRow(int32_t* inputs, int32_t* targets, int32_t* positionIds) const;

    int64_t usedSlots() const { return m_usedSlots; }  // sum of s_e
    int64_t paddingSlots() const { return rows() * m_T - m_usedSlots; }
    int64_t trainedTargets() const { return m_trainedTargets; }

private:
    std::vector<Example> m_examples;
    std::vector<int64_t> m_order;         // examples in slot order, row after row
    std::vector<int64_t> m_rowStarts{0};  // row r's examples: m_order[m_rowStarts[r] .. [r+1])
    int m_T = 0;
    bool m_pack = true;
    int32_t m_padId = 0;
    int64_t m_usedSlots = 0;
    int64_t m_trainedTargets = 0;
};

}  // namespace ws::data
