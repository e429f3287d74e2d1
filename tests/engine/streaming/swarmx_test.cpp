// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/streaming/swarmx.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

namespace ws::streaming {
namespace {

TEST(SwarmX, TreeDepthIsCeilLog4) {
    EXPECT_EQ(reduceTreeDepth(1), 0);
    EXPECT_EQ(reduceTreeDepth(2), 1);
    EXPECT_EQ(reduceTreeDepth(4), 1);
    EXPECT_EQ(reduceTreeDepth(5), 2);
    EXPECT_EQ(reduceTreeDepth(16), 2);
    EXPECT_EQ(reduceTreeDepth(17), 3);
    EXPECT_EQ(reduceTreeDepth(2048), 6);
}

TEST(SwarmX, ReduceSumsEverySystemForAnyCount) {
    for (int n : {1, 2, 3, 4, 5, 7, 16, 17}) {
        std::vector<std::vector<float>> grads(size_t(n), std::vector<float>(10));
        std::vector<const float*> inputs;
        for (int s = 0; s < n; ++s) {
            for (int j = 0; j < 10; ++j) grads[size_t(s)][size_t(j)] = float(s * 10 + j);
            inputs.push_back(grads[size_t(s)].data());
        }
        std::vector<float> out(10, 100.0f), scratch;
        treeReduce(inputs, 10, out.data(), false, scratch);
        for (int j = 0; j < 10; ++j) {
            // sum over s of (10 s + j) = 10 n(n-1)/2 + n j, exact in float at these sizes
            EXPECT_EQ(out[size_t(j)], float(10 * n * (n - 1) / 2 + n * j)) << n;
        }
        treeReduce(inputs, 10, out.data(), true, scratch);
        EXPECT_EQ(out[3], 2.0f * float(10 * n * (n - 1) / 2 + n * 3));
    }
}

TEST(SwarmX, ReduceOrderIsFixed) {
    // Values whose float sum depends on the order: the tree must give the same bits every time.
    std::vector<std::vector<float>> grads = {{1e8f}, {1.0f}, {-1e8f}, {1.0f}, {0.5f}, {3e-8f}};
    std::vector<const float*> inputs;
    for (auto& g : grads) inputs.push_back(g.data());
    std::vector<float> scratch;
    float first = 0, again = 0;
    treeReduce(inputs, 1, &first, false, scratch);
    treeReduce(inputs, 1, &again, false, scratch);
    EXPECT_EQ(first, again);
    // Groups of four first: (1e8 + 1 - 1e8 + 1) = 1 in float32 arithmetic order, then + (0.5 +
    // 3e-8).
    EXPECT_EQ(first, ((((1e8f + 1.0f) + -1e8f) + 1.0f) + (0.5f + 3e-8f)));
}

// The one-pass tree adds in the order of the first implementation: the same bits for every system
// count (trees of one to three levels, partial groups), both modes, and lengths that are not a
// multiple of any vector width.
TEST(SwarmX, OnePassReduceGivesTheReferenceBits) {
    for (int n : {1, 2, 3, 4, 5, 6, 9, 16, 17, 21, 64, 65}) {
        for (size_t count : {size_t(1), size_t(7), size_t(33), size_t(1000)}) {
            std::vector<std::vector<float>> grads(static_cast<size_t>(n),
                                                  std::vector<float>(count));
            std::vector<const float*> inputs;
            for (int s = 0; s < n; ++s) {
                for (size_t j = 0; j < count; ++j) {
                    // Mixed magnitudes, so a change of order changes bits.
                    grads[size_t(s)][j] = std::ldexp(std::sin(float(s * 131 + j * 7) + 0.5f),
                                                     int((s * 5 + j) % 40) - 20);
                }
                inputs.push_back(grads[size_t(s)].data());
            }
            for (bool accumulate : {false, true}) {
                std::vector<float> got(count, 0.25f), want(count, 0.25f), scratch, scratchRef;
                treeReduce(inputs, count, got.data(), accumulate, scratch);
                reference::treeReduce(inputs, count, want.data(), accumulate, scratchRef);
                ASSERT_EQ(0, std::memcmp(got.data(), want.data(), count * sizeof(float)))
                    << n << " systems, " << count << " values, accumulate " << accumulate;
            }
        }
    }
}

}  // namespace
}  // namespace ws::streaming
