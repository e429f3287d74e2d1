// SPDX-License-Identifier: GPL-3.0-or-later
// The gradient reduce across processes, as a tree of ranks that keeps SwarmX's summation order.
//
// SwarmX sums N systems' gradients in a fixed tree (swarmx.h): level 0 holds the systems, node i
// of level k + 1 sums nodes 4i..4i+3 of level k, and the first level of at most four nodes is
// the root's children. Any node whose children are all at hand can be summed there with the same
// bits. Each rank holds a contiguous block of systems (comm::systemsOfRank); ranks form a tree
// rooted at the rank whose MemoryX holds the layer (its owner). A rank sums what it can from its
// own systems, adds what its children send, sums every node that became complete, and sends the
// nodes it ends with to its parent; the owner ends with the root's children and sums the root as
// one process does. So the weights are bit-identical for any number of ranks and any tree, and a
// link carries the few nodes its subtree could not close instead of every system's slice.
//
// Tree shapes (fan-in F, counted from the owner: position p = (rank - owner) mod P):
//   F = 0  a star: every rank sends to the owner (a gather: the owner's link carries P - 1 sends)
//   F = 1  a chain: p sends to p - 1
//   F >= 2 p sends to p with its lowest non-zero base-F digit cleared (a binomial tree for 2);
//          rank p's subtree is the contiguous positions [p, p + F^k), aligned with SwarmX's
//          fan-in-4 groups when F = 4 and the ranks hold equal blocks.
// Thread-safety: plain values and pure functions.
#pragma once

#include <compare>
#include <cstddef>
#include <set>
#include <vector>

namespace ws::streaming {

// A node of SwarmX's reduce tree: level 0 is system `index`.
struct ReduceNode {
    int level = 0;
    int index = 0;
    auto operator<=>(const ReduceNode&) const = default;
};

// One node summed from its children (1..4 nodes of the level below, in order).
struct NodeSum {
    ReduceNode node;
    std::vector<ReduceNode> children;
};

// The levels' sizes: N, ceil(N / 4), ... ending at the first level of at most four nodes (the
// root's children). {1} for one system.
std::vector<int> reduceLevelSizes(int systems);

// Sums, level by level upwards and in index order, every node whose children `held` holds,
// replacing the children by the node (the top level, the root's children, is never summed here).
// Returns the sums in the order they must run.
std::vector<NodeSum> closeNodes(const std::vector<int>& levelSizes, std::set<ReduceNode>& held);

// The parent rank of `rank` in the tree of `ranks` rooted at `owner` with `fanIn` (see above);
// -1 for the owner.
int reduceParent(int rank, int ranks, int owner, int fanIn);

// What one rank does with one layer's gradient.
struct RankReduceStep {
    int parent = -1;                 // -1: this rank is the owner
    std::vector<ReduceNode> leaves;  // its systems
    std::vector<NodeSum> ownSums;    // summed from its systems before anything arrives
    std::vector<int> children;       // ranks whose messages it reads, in this order
    std::vector<std::vector<ReduceNode>> received;  // per child, the nodes it sends, in order
    std::vector<NodeSum> sums;                      // summed once every child's nodes are in
    // The nodes it ends with, in (level, index) order: sent to the parent, one message each;
    // the owner's are the root's children.
    std::vector<ReduceNode> result;
};

// Every rank's part of the reduce of N systems over `ranks` ranks rooted at `owner`.
class RankReducePlan {
public:
    RankReducePlan(int systems, int ranks, int owner, int fanIn);
    const RankReduceStep& of(int rank) const { return m_steps[size_t(rank)]; }
    const std::vector<int>& levelSizes() const { return m_levels; }
    int owner() const { return m_owner; }
    // Node slices rank r sends up per layer (0 for the owner): what its link to the parent
    // carries, in units of one layer's gradient.
    int slicesToParent(int rank) const;

private:
    std::vector<int> m_levels;
    std::vector<RankReduceStep> m_steps;  // (ranks)
    int m_owner = 0;
};

}  // namespace ws::streaming
