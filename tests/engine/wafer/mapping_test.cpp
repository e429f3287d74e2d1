// SPDX-License-Identifier: GPL-3.0-or-later
// The output-stationary mapping: uneven splits round up so trailing cores get less or nothing,
// every output element is owned by exactly one core (folded or not), and causal tiles balance.
#include <gtest/gtest.h>

#include <vector>

#include "engine/wafer/grid_mapping.h"
#include "engine/wafer/layer_ops.h"
#include "support/test_shapes.h"

namespace ws::wafer {
namespace {

TEST(Split, RoundsUpSoTrailingBlocksGetLess) {
    const Split a = Split::of(10, 4);
    EXPECT_EQ(a.block, 3);
    EXPECT_EQ(a.size(0), 3);
    EXPECT_EQ(a.size(2), 3);
    EXPECT_EQ(a.size(3), 1);
    const Split b = Split::of(5, 4);
    EXPECT_EQ(b.size(0), 2);
    EXPECT_EQ(b.size(2), 1);
    EXPECT_EQ(b.size(3), 0);  // ran out: this core owns nothing
    EXPECT_EQ(b.begin(3), 5);
}

// Counts how many cores own each output element.
std::vector<int> ownership(const GridMapping& g) {
    std::vector<int> owners(size_t(g.m.total * g.n.total), 0);
    for (int r = 0; r < g.rows; ++r)
        for (int c = 0; c < g.cols; ++c) {
            int64_t vr = 0, vc = 0;
            if (!g.toVirtual(r, c, vr, vc)) continue;
            for (int64_t i = g.m.begin(vr); i < g.m.end(vr); ++i)
                for (int64_t j = g.n.begin(vc); j < g.n.end(vc); ++j)
                    ++owners[size_t(i * g.n.total + j)];
        }
    return owners;
}

TEST(GridMapping, EveryOutputElementIsOwnedExactlyOnce) {
    struct Case {
        int64_t m, n;
        int rows, cols;
    } cases[] = {{50, 40, 16, 16}, {7, 3, 16, 16},   {1000, 5, 16, 16},
                 {333, 17, 5, 7},  {16, 16, 16, 16}, {4096, 24, 12, 20}};
    for (const auto& k : cases) {
        for (const GridMapping& g : {mapUnfolded(k.m, k.n, k.rows, k.cols),
                                     mapOutputStationary(k.m, k.n, k.rows, k.cols)}) {
            const auto owners = ownership(g);
            for (size_t e = 0; e < owners.size(); ++e)
                ASSERT_EQ(owners[e], 1) << "element " << e << " of " << k.m << "x" << k.n
                                        << " with " << g.folds << " folds";
        }
    }
}

TEST(GridMapping, UnevenSplitLeavesEdgeCoresLessWork) {
    const GridMapping g = mapUnfolded(50, 40, 16, 16);  // 50 rows: blocks of 4, last of 2
    EXPECT_EQ(g.m.block, 4);
    EXPECT_EQ(g.m.size(12), 2);
    EXPECT_EQ(g.m.size(13), 0);
    EXPECT_EQ(g.n.block, 3);  // 40 columns: 13 x 3 + 1
    EXPECT_EQ(g.n.size(13), 1);
    EXPECT_EQ(g.n.size(14), 0);
}

TEST(GridMapping, FoldingUsesTheWholeWaferForNarrowOutputs) {
    // qkv of Cerebras-GPT 111M on WSE-2: 245,760 tokens x 2304 on 750 x 994 cores.
    const GridMapping plain = mapUnfolded(245760, 2304, 750, 994);
    const GridMapping folded = mapOutputStationary(245760, 2304, 750, 994);
    EXPECT_GT(folded.folds, 1);
    EXPECT_LT(folded.largestTile(), plain.largestTile());
    // Within 5% of a perfect spread of the elements over the cores.
    EXPECT_LT(double(folded.largestTile()), 1.05 * 245760.0 * 2304 / (750.0 * 994));
}

TEST(GridMapping, CausalTilesCountEveryPairOnceAndBalance) {
    WaferSpec spec;
    spec.gridRows = 16;
    spec.gridCols = 16;
    spec.fmacsPerCycle = 4;
    spec.computeEfficiency = 1;
    spec.sramBytesPerCore = 1 << 20;
    spec.fabricBytesPerCycle = 4;
    const model::GptShape s = ws::testing::gptShape(64, 32, 1, 4, 128, 64);
    LayerOps block = blockOps(s, 2, 64, Pass::Forward, spec, nullptr);
    ASSERT_TRUE(planLayer(block, spec).ok());
    const WaferOp* att = nullptr;
    for (const auto& op : block.ops)
        if (op.name == "attention") att = &op;
    ASSERT_NE(att, nullptr);
    ASSERT_EQ(att->chunks, 1);
    double pairs = 0, most = 0;
    for (int r = 0; r < 16; ++r)
        for (int c = 0; c < 16; ++c) {
            int64_t vr = 0, vc = 0;
            if (!att->mapping.toVirtual(r, c, vr, vc)) continue;
            const double e = tileElements(*att, att->mapping, vr, vc);
            pairs += e;
            most = std::max(most, e);
        }
    const double expected = 2.0 * 4 * 64 * 65 / 2;  // B x NH problems x T(T+1)/2
    EXPECT_DOUBLE_EQ(pairs, expected);
    EXPECT_LT(most, 1.5 * expected / 256);  // zig-zag keeps the busiest core near the mean
}

}  // namespace
}  // namespace ws::wafer
