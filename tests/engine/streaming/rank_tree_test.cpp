// SPDX-License-Identifier: GPL-3.0-or-later
// The tree of ranks the gradient reduce runs in (engine/streaming/rank_tree.h): every rank's
// plan, run here in memory as the executor runs it across processes, must give the bits of
// SwarmX's one-process tree for any number of systems, ranks, owner and tree shape; and the
// links must carry what the shape promises.
#include "engine/streaming/rank_tree.h"

#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <random>
#include <vector>

#include "engine/comm/comm.h"
#include "engine/streaming/swarmx.h"

namespace ws::streaming {
namespace {

constexpr size_t kCount = 9;

// Gradients whose sums round differently in different orders: mixed signs and magnitudes.
std::vector<std::vector<float>> randomSystems(int systems, unsigned seed) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> mantissa(-1.0f, 1.0f);
    std::uniform_int_distribution<int> exponent(-12, 12);
    std::vector<std::vector<float>> out(static_cast<size_t>(systems), std::vector<float>(kCount));
    for (auto& v : out)
        for (float& x : v) x = std::ldexp(mantissa(rng), exponent(rng));
    return out;
}

// Runs every rank's part of the plan (children before parents, as the messages would flow) and
// returns the root's children on the owner, as copies.
std::vector<std::vector<float>> runPlan(const RankReducePlan& plan, int ranks,
                                        const std::vector<std::vector<float>>& systems) {
    std::map<int, std::vector<std::vector<float>>> sent;  // rank -> its result's buffers
    std::vector<int> order;
    for (int p = ranks - 1; p >= 0; --p) order.push_back((p + plan.owner()) % ranks);
    for (int r : order) {
        const RankReduceStep& me = plan.of(r);
        std::map<ReduceNode, std::vector<float>> held;
        for (const ReduceNode& leaf : me.leaves) held[leaf] = systems[size_t(leaf.index)];
        const auto runSums = [&](const std::vector<NodeSum>& sums) {
            for (const NodeSum& sum : sums) {
                const float* children[4];
                for (size_t c = 0; c < sum.children.size(); ++c) {
                    EXPECT_TRUE(held.count(sum.children[c])) << "rank " << r;
                    children[c] = held[sum.children[c]].data();
                }
                std::vector<float> out(kCount);
                reduceGroup(children, sum.children.size(), kCount, out.data());
                for (const ReduceNode& c : sum.children) held.erase(c);
                held[sum.node] = std::move(out);
            }
        };
        runSums(me.ownSums);
        for (size_t c = 0; c < me.children.size(); ++c) {
            const auto& message = sent.at(me.children[c]);
            EXPECT_EQ(message.size(), me.received[c].size());
            for (size_t i = 0; i < message.size(); ++i) held[me.received[c][i]] = message[i];
        }
        runSums(me.sums);
        std::vector<std::vector<float>> result;
        for (const ReduceNode& node : me.result) result.push_back(held.at(node));
        EXPECT_EQ(held.size(), me.result.size()) << "rank " << r << " left a node behind";
        sent[r] = std::move(result);
    }
    return sent.at(plan.owner());
}

std::vector<float> oneProcess(const std::vector<std::vector<float>>& systems, bool accumulate) {
    std::vector<const float*> inputs;
    for (const auto& s : systems) inputs.push_back(s.data());
    std::vector<float> out(kCount, 0.375f), scratch;
    treeReduce(inputs, kCount, out.data(), accumulate, scratch);
    return out;
}

TEST(RankTree, GivesTheOneProcessBitsForAnySystemsRanksOwnerAndShape) {
    int cases = 0;
    for (int systems = 1; systems <= 40; ++systems) {
        const auto grads = randomSystems(systems, unsigned(systems));
        const auto expected = oneProcess(grads, false), expectedAcc = oneProcess(grads, true);
        for (int ranks = 1; ranks <= std::min(systems, 9); ++ranks) {
            for (int owner : {0, ranks / 2, ranks - 1}) {
                for (int fanIn : {0, 1, 2, 3, 4, 7}) {
                    const RankReducePlan plan(systems, ranks, owner, fanIn);
                    const auto rootChildren = runPlan(plan, ranks, grads);
                    ASSERT_LE(rootChildren.size(), 4u);
                    for (bool accumulate : {false, true}) {
                        std::vector<const float*> inputs;
                        for (const auto& c : rootChildren) inputs.push_back(c.data());
                        std::vector<float> out(kCount, 0.375f), scratch;
                        treeReduce(inputs, kCount, out.data(), accumulate, scratch);
                        const auto& want = accumulate ? expectedAcc : expected;
                        ASSERT_EQ(0, std::memcmp(out.data(), want.data(), kCount * sizeof(float)))
                            << systems << " systems, " << ranks << " ranks, owner " << owner
                            << ", fan-in " << fanIn;
                    }
                    ++cases;
                }
            }
        }
    }
    EXPECT_GT(cases, 3000);
}

TEST(RankTree, TheBitsDependOnTheOrderSoTheCheckAboveCanFail) {
    // Summing the same gradients one after another (a naive gather's order) differs from
    // SwarmX's tree in some element for these inputs: the bitwise check above is not vacuous.
    const auto grads = randomSystems(13, 13u);
    std::vector<float> sequential(kCount, 0.0f);
    for (const auto& g : grads)
        for (size_t j = 0; j < kCount; ++j) sequential[j] += g[j];
    const auto tree = oneProcess(grads, false);
    EXPECT_NE(0, std::memcmp(sequential.data(), tree.data(), kCount * sizeof(float)));
}

TEST(RankTree, ParentsFollowTheShape) {
    // Star: everyone sends to the owner.
    for (int r = 1; r < 6; ++r) EXPECT_EQ(reduceParent(r, 6, 0, 0), 0);
    // Chain, rooted at 2 of 5: 3 -> 2, 4 -> 3, 0 -> 4, 1 -> 0.
    EXPECT_EQ(reduceParent(2, 5, 2, 1), -1);
    EXPECT_EQ(reduceParent(3, 5, 2, 1), 2);
    EXPECT_EQ(reduceParent(0, 5, 2, 1), 4);
    EXPECT_EQ(reduceParent(1, 5, 2, 1), 0);
    // Binomial: 1 -> 0, 2 -> 0, 3 -> 2, 5 -> 4, 6 -> 4, 7 -> 6.
    EXPECT_EQ(reduceParent(3, 8, 0, 2), 2);
    EXPECT_EQ(reduceParent(6, 8, 0, 2), 4);
    EXPECT_EQ(reduceParent(7, 8, 0, 2), 6);
    // Fan-in 4: 5 -> 4, 4 -> 0, 13 -> 12, 12 -> 0.
    EXPECT_EQ(reduceParent(5, 16, 0, 4), 4);
    EXPECT_EQ(reduceParent(4, 16, 0, 4), 0);
    EXPECT_EQ(reduceParent(13, 16, 0, 4), 12);
}

TEST(RankTree, ALinkCarriesWhatItsSubtreeCouldNotSum) {
    // 16 systems on 16 ranks, fan-in 4 like SwarmX: every subtree is one of SwarmX's nodes, so
    // every link carries one slice, and the owner receives 6 (a gather: 15).
    const RankReducePlan swarm(16, 16, 0, 4), star(16, 16, 0, 0);
    size_t ownerIn = 0, starIn = 0;
    for (int r = 1; r < 16; ++r) {
        EXPECT_EQ(swarm.slicesToParent(r), 1) << r;
        EXPECT_EQ(star.slicesToParent(r), 1) << r;
    }
    for (const auto& nodes : swarm.of(0).received) ownerIn += nodes.size();
    for (const auto& nodes : star.of(0).received) starIn += nodes.size();
    EXPECT_EQ(ownerIn, 6u);
    EXPECT_EQ(starIn, 15u);
    // 64 systems on 4 ranks: each rank's 16 systems are one node, a child of SwarmX's root, so
    // a star or fan-in 4 carries one slice per link, and a chain forwards what it cannot sum.
    for (int fanIn : {0, 4})
        for (int r = 1; r < 4; ++r) EXPECT_EQ(RankReducePlan(64, 4, 0, fanIn).slicesToParent(r), 1);
    for (int r = 1; r < 4; ++r) EXPECT_EQ(RankReducePlan(64, 4, 0, 1).slicesToParent(r), 4 - r);
    // A chain of 4 ranks over 16 systems: rank 3 sends its group, rank 2 two groups, rank 1
    // three; the owner then holds the root's four children.
    const RankReducePlan chain(16, 4, 0, 1);
    EXPECT_EQ(chain.slicesToParent(3), 1);
    EXPECT_EQ(chain.slicesToParent(2), 2);
    EXPECT_EQ(chain.slicesToParent(1), 3);
    EXPECT_EQ(chain.of(0).result.size(), 4u);
    // Blocks of 3 systems are not SwarmX's groups: rank 1 holds systems 3..5, sums 4 and 5
    // (the second group) and sends that with system 3's raw slice.
    EXPECT_EQ(RankReducePlan(6, 2, 0, 4).slicesToParent(1), 2);
}

TEST(RankTree, LevelsEndAtTheRootsChildren) {
    EXPECT_EQ(reduceLevelSizes(1), (std::vector<int>{1}));
    EXPECT_EQ(reduceLevelSizes(4), (std::vector<int>{4}));
    EXPECT_EQ(reduceLevelSizes(5), (std::vector<int>{5, 2}));
    EXPECT_EQ(reduceLevelSizes(17), (std::vector<int>{17, 5, 2}));
}

}  // namespace
}  // namespace ws::streaming
