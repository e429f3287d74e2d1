// SPDX-License-Identifier: GPL-3.0-or-later
// The seeded held-out split by records (see record_split.h for the formula).
#include "engine/data/record_split.h"

#include <algorithm>
#include <cmath>
#include <string>

namespace ws::data {

namespace {

uint64_t mix64(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

}  // namespace

Result<RecordSplit> splitHeldOut(const RecordSet& records, const HeldOutOptions& options) {
    if (!(options.fraction >= 0.0 && options.fraction < 1.0))
        return Error{"the held-out fraction is " + std::to_string(options.fraction) +
                     "; it is a share of the records in [0, 1), e.g. 0.1"};
    if (options.count < 0)
        return Error{"the held-out count is " + std::to_string(options.count) +
                     "; it is a number of records, 0 or more"};
    const bool texts = records.conversations.empty();
    const size_t n = texts ? records.texts.size() : records.conversations.size();
    // Group of each item, and the items of each group.
    std::vector<size_t> groupOf(n);
    for (size_t i = 0; i < n; ++i)
        groupOf[i] =
            texts || i >= records.conversationGroups.size() ? i : records.conversationGroups[i];
    size_t groups = 0;
    for (size_t g : groupOf) groups = std::max(groups, g + 1);
    std::vector<size_t> groupSize(groups, 0);
    for (size_t g : groupOf) ++groupSize[g];

    size_t target = 0;
    if (options.count > 0) {
        target = size_t(options.count);
    } else if (options.fraction > 0.0) {
        target = std::max<size_t>(1, size_t(std::floor(double(n) * options.fraction)));
    }
    RecordSplit split;
    if (target == 0) {
        for (size_t i = 0; i < n; ++i) split.train.push_back(i);
        return split;
    }
    std::vector<std::pair<uint64_t, size_t>> order;  // (key, group)
    order.reserve(groups);
    for (size_t g = 0; g < groups; ++g)
        if (groupSize[g] > 0)
            order.push_back({mix64(options.seed + (uint64_t(g) + 1) * 0x9E3779B97F4A7C15ull), g});
    std::sort(order.begin(), order.end());
    std::vector<bool> held(groups, false);
    size_t taken = 0;
    for (const auto& [key, g] : order) {
        if (taken >= target) break;
        held[g] = true;
        taken += groupSize[g];
    }
    for (size_t i = 0; i < n; ++i) (held[groupOf[i]] ? split.heldOut : split.train).push_back(i);
    if (split.train.empty()) {
        const std::string what = options.count > 0
                                     ? "held-out count " + std::to_string(options.count)
                                     : "held-out fraction " + std::to_string(options.fraction);
        return Error{"the " + what + " holds out all " + std::to_string(n) +
                     " records (conversations of one chain stay together), leaving none to train "
                     "on; lower it or add records"};
    }
    return split;
}

}  // namespace ws::data
