// SPDX-License-Identifier: GPL-3.0-or-later
// Rows of whole examples (example_rows.h): first-fit packing and the contents of a row.
#include "engine/data/example_rows.h"

#include <algorithm>
#include <cassert>
#include <numeric>

namespace ws::data {
namespace {

// First-fit over rows 0 .. n-1, every row starting with T free slots: a max-tree of the free
// slots finds the lowest row with enough room in O(log n). Rows never opened still have T free,
// so when no open row fits, the search lands on the next new one.
class FirstFit {
public:
    FirstFit(int64_t n, int T) : m_leaves(1) {
        while (m_leaves < n) m_leaves *= 2;
        m_free.assign(size_t(2 * m_leaves), T);
    }
    // The lowest row with at least `slots` free; takes them.
    int64_t place(int slots) {
        assert(m_free[1] >= slots);
        int64_t node = 1;
        while (node < m_leaves) node = m_free[size_t(2 * node)] >= slots ? 2 * node : 2 * node + 1;
        m_free[size_t(node)] -= slots;
        for (int64_t up = node / 2; up >= 1; up /= 2) {
            m_free[size_t(up)] = std::max(m_free[size_t(2 * up)], m_free[size_t(2 * up + 1)]);
        }
        return node - m_leaves;
    }

private:
    int64_t m_leaves;
    std::vector<int> m_free;  // (2 * leaves) free slots; node k's children are 2k, 2k + 1
};

}  // namespace

ExampleRows::ExampleRows(std::vector<Example> examples, int T, bool pack, bool packShuffled,
                         uint64_t packKey, int32_t padId)
    : m_examples(std::move(examples)), m_T(T), m_pack(pack), m_padId(padId) {
    const auto n = int64_t(m_examples.size());
    for (const Example& e : m_examples) {
        assert(e.ids.size() >= 2 && e.ids.size() <= size_t(T) + 1 && "prepareExamples first");
        m_usedSlots += int64_t(e.ids.size()) - 1;
        m_trainedTargets += trainedTokens(e);
    }
    if (!pack) {
        m_order.resize(size_t(n));
        std::iota(m_order.begin(), m_order.end(), int64_t(0));
        m_rowStarts.resize(size_t(n) + 1);
        std::iota(m_rowStarts.begin(), m_rowStarts.end(), int64_t(0));
        return;
    }
    std::vector<int64_t> placement(static_cast<size_t>(n));
    std::iota(placement.begin(), placement.end(), int64_t(0));
    if (packShuffled) placement = seededPermutation(n, packKey);
    // Phase 1: first-fit gives each example its row; phase 2 lists the rows' examples in order.
    FirstFit fit(std::max<int64_t>(n, 1), T);
    std::vector<int64_t> rowOf(static_cast<size_t>(n));
    int64_t rows = 0;
    for (const int64_t e : placement) {
        const int64_t r = fit.place(int(m_examples[size_t(e)].ids.size()) - 1);
        rowOf[size_t(e)] = r;
        rows = std::max(rows, r + 1);
    }
    std::vector<int64_t> counts(size_t(rows), 0);
    for (const int64_t e : placement) ++counts[size_t(rowOf[size_t(e)])];
    m_rowStarts.assign(size_t(rows) + 1, 0);
    for (int64_t r = 0; r < rows; ++r)
        m_rowStarts[size_t(r + 1)] = m_rowStarts[size_t(r)] + counts[size_t(r)];
    std::vector<int64_t> next(m_rowStarts.begin(), m_rowStarts.end() - 1);
    m_order.resize(size_t(n));
    for (const int64_t e : placement) m_order[size_t(next[size_t(rowOf[size_t(e)])]++)] = e;
}

std::vector<int64_t> ExampleRows::rowExamples(int64_t r) const {
    assert(r >= 0 && r < rows());
    return {m_order.begin() + m_rowStarts[size_t(r)], m_order.begin() + m_rowStarts[size_t(r + 1)]};
}

int64_t ExampleRows::writeRow(int64_t r, int32_t* inputs, int32_t* targets,
                              int32_t* positionIds) const {
    assert(r >= 0 && r < rows());
    int64_t trained = 0;
    int o = 0;
    for (int64_t k = m_rowStarts[size_t(r)]; k < m_rowStarts[size_t(r + 1)]; ++k) {
        const Example& e = m_examples[size_t(m_order[size_t(k)])];
        const int slots = int(e.ids.size()) - 1;
        for (int t = 0; t < slots; ++t, ++o) {
            inputs[o] = e.ids[size_t(t)];
            const bool trainedOn = e.mask[size_t(t) + 1] != 0;
            targets[o] = trainedOn ? e.ids[size_t(t) + 1] : -1;
            positionIds[o] = t;
            trained += trainedOn;
        }
    }
    for (int p = o; p < m_T; ++p) {
        inputs[p] = m_padId;
        targets[p] = -1;
        positionIds[p] = m_pack ? 0 : p;
    }
    return trained;
}

void ExampleRows::writePaddingRow(int32_t* inputs, int32_t* targets, int32_t* positionIds) const {
    for (int p = 0; p < m_T; ++p) {
        inputs[p] = m_padId;
        targets[p] = -1;
        positionIds[p] = m_pack ? 0 : p;
    }
}

}  // namespace ws::data
