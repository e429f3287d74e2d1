// SPDX-License-Identifier: GPL-3.0-or-later
// The tree of ranks the gradient reduce runs in (rank_tree.h).
#include "engine/streaming/rank_tree.h"

#include <algorithm>
#include <cassert>

#include "engine/comm/comm.h"

namespace ws::streaming {

std::vector<int> reduceLevelSizes(int systems) {
    std::vector<int> sizes{std::max(1, systems)};
    while (sizes.back() > 4) sizes.push_back((sizes.back() + 3) / 4);
    return sizes;
}

std::vector<NodeSum> closeNodes(const std::vector<int>& levelSizes, std::set<ReduceNode>& held) {
    std::vector<NodeSum> sums;
    // Level by level: a node summed at level k + 1 may complete a node of level k + 2.
    for (int level = 0; level + 1 < int(levelSizes.size()); ++level) {
        std::vector<int> parents;
        for (const ReduceNode& n : held)
            if (n.level == level && (parents.empty() || parents.back() != n.index / 4))
                parents.push_back(n.index / 4);
        for (int parent : parents) {
            NodeSum sum{{level + 1, parent}, {}};
            const int end = std::min(4 * parent + 4, levelSizes[size_t(level)]);
            for (int c = 4 * parent; c < end; ++c) sum.children.push_back({level, c});
            const bool complete = std::all_of(sum.children.begin(), sum.children.end(),
                                              [&](const ReduceNode& c) { return held.count(c); });
            if (!complete) continue;
            for (const ReduceNode& c : sum.children) held.erase(c);
            held.insert(sum.node);
            sums.push_back(std::move(sum));
        }
    }
    return sums;
}

int reduceParent(int rank, int ranks, int owner, int fanIn) {
    const int p = ((rank - owner) % ranks + ranks) % ranks;
    if (p == 0) return -1;
    int parent = 0;
    if (fanIn == 1) {
        parent = p - 1;
    } else if (fanIn >= 2) {
        // Clear the lowest non-zero base-F digit.
        for (int unit = 1;; unit *= fanIn) {
            const int digit = (p / unit) % fanIn;
            if (digit != 0) {
                parent = p - digit * unit;
                break;
            }
        }
    }
    return (parent + owner) % ranks;
}

RankReducePlan::RankReducePlan(int systems, int ranks, int owner, int fanIn)
    : m_levels(reduceLevelSizes(systems)), m_steps(size_t(ranks)), m_owner(owner) {
    // Children before parents: a parent's position is always below its children's.
    std::vector<int> byPosition(static_cast<size_t>(ranks));
    for (int r = 0; r < ranks; ++r) byPosition[size_t(((r - owner) % ranks + ranks) % ranks)] = r;
    for (int r = 0; r < ranks; ++r) {
        const int parent = reduceParent(r, ranks, owner, fanIn);
        m_steps[size_t(r)].parent = parent;
    }
    for (int r : byPosition)  // ascending position: each parent lists its children in order
        if (m_steps[size_t(r)].parent >= 0)
            m_steps[size_t(m_steps[size_t(r)].parent)].children.push_back(r);
    for (auto it = byPosition.rbegin(); it != byPosition.rend(); ++it) {
        RankReduceStep& step = m_steps[size_t(*it)];
        const comm::SystemRange mine = comm::systemsOfRank(systems, ranks, *it);
        std::set<ReduceNode> held;
        for (int s = mine.first; s < mine.first + mine.count; ++s) {
            step.leaves.push_back({0, s});
            held.insert({0, s});
        }
        step.ownSums = closeNodes(m_levels, held);
        for (int child : step.children) {
            const auto& theirs = m_steps[size_t(child)].result;
            step.received.push_back(theirs);
            held.insert(theirs.begin(), theirs.end());
        }
        step.sums = closeNodes(m_levels, held);
        step.result.assign(held.begin(), held.end());
    }
    assert(int(of(owner).result.size()) == m_levels.back());
}

int RankReducePlan::slicesToParent(int rank) const {
    const RankReduceStep& step = of(rank);
    return step.parent < 0 ? 0 : int(step.result.size());
}

}  // namespace ws::streaming
