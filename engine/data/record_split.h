// SPDX-License-Identifier: GPL-3.0-or-later
// A held-out split of a record set by records (conversations, or text records), fixed by the
// seed, with an exact formula so that it is reproducible and independent of thread count:
//
//   N items (conversations, or text records when there are no conversations), in groups
//   (RecordSet::conversationGroups: conversations of one chain of records share a group; every
//   text record is its own group), numbered g = 0 .. G-1 in file order.
//   Target H: `count` when count > 0, else floor(N * fraction), and at least 1 when
//   fraction > 0.
//   Each group gets the key  k(g) = mix64(seed + (g + 1) * 0x9E3779B97F4A7C15)  (SplitMix64's
//   finaliser, as dataset.h), and groups are taken in increasing (k(g), g) order into the
//   held-out part while it holds fewer than H items; a group is never cut, so the held-out part
//   may pass H by the last group's size minus one.
//   Both parts list item indices in increasing order (file order).
// Errors: a fraction outside [0, 1), a negative count, or a split that leaves no item to train
// on (naming N and the setting to lower). Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "engine/core/result.h"
#include "engine/data/record_format.h"

namespace ws::data {

struct HeldOutOptions {
    double fraction = 0.0;  // share of the items held out, used when count is 0
    int64_t count = 0;      // number of items held out (wins over fraction)
    uint64_t seed = 0;
};

struct RecordSplit {
    std::vector<size_t> train;    // indices into conversations (or texts)
    std::vector<size_t> heldOut;  // likewise
};

Result<RecordSplit> splitHeldOut(const RecordSet& records, const HeldOutOptions& options);

}  // namespace ws::data
