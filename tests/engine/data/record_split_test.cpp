// SPDX-License-Identifier: GPL-3.0-or-later
// The held-out split by records: the documented formula recomputed here, fraction and count,
// chains kept whole, the seed moving it, and the errors.
#include "engine/data/record_split.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "record_test_support.h"

namespace ws::data {
namespace {
using testing::contains;

RecordSet conversations(size_t n) {
    RecordSet set;
    for (size_t i = 0; i < n; ++i) {
        set.conversations.push_back(
            {{{"user", std::string("q").append(std::to_string(i))}, {"assistant", "a"}},
             "d.jsonl"});
        set.conversationGroups.push_back(i);
    }
    return set;
}

// The formula of record_split.h, written out independently.
std::vector<size_t> expectedHeldOut(size_t groups, size_t target, uint64_t seed) {
    auto mix = [](uint64_t z) {
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        return z ^ (z >> 31);
    };
    std::vector<std::pair<uint64_t, size_t>> keyed;
    for (size_t g = 0; g < groups; ++g)
        keyed.push_back({mix(seed + (g + 1) * 0x9E3779B97F4A7C15ull), g});
    std::sort(keyed.begin(), keyed.end());
    std::vector<size_t> out;
    for (size_t k = 0; k < target; ++k) out.push_back(keyed[k].second);
    std::sort(out.begin(), out.end());
    return out;
}

TEST(RecordSplit, AFractionHoldsOutFloorOfNTimesFAsTheFormulaSays) {
    const auto set = conversations(100);
    auto split = splitHeldOut(set, {.fraction = 0.1, .count = 0, .seed = 7});
    ASSERT_TRUE(split.ok()) << split.error().message;
    EXPECT_EQ(split->heldOut, expectedHeldOut(100, 10, 7));
    EXPECT_EQ(split->train.size(), 90u);
    std::set<size_t> all(split->train.begin(), split->train.end());
    all.insert(split->heldOut.begin(), split->heldOut.end());
    EXPECT_EQ(all.size(), 100u);
    EXPECT_TRUE(std::is_sorted(split->train.begin(), split->train.end()));
}

TEST(RecordSplit, ACountWinsTheSeedMovesItAndItRepeats) {
    const auto set = conversations(40);
    auto a = splitHeldOut(set, {.fraction = 0.5, .count = 3, .seed = 1});
    auto again = splitHeldOut(set, {.fraction = 0.5, .count = 3, .seed = 1});
    auto other = splitHeldOut(set, {.fraction = 0.5, .count = 3, .seed = 2});
    ASSERT_TRUE(a.ok() && again.ok() && other.ok());
    EXPECT_EQ(a->heldOut, expectedHeldOut(40, 3, 1));
    EXPECT_EQ(a->heldOut, again->heldOut);
    EXPECT_NE(a->heldOut, other->heldOut);
}

TEST(RecordSplit, ASmallFractionStillHoldsOutOneAndZeroHoldsOutNone) {
    const auto set = conversations(5);
    auto one = splitHeldOut(set, {.fraction = 0.01, .count = 0, .seed = 0});
    ASSERT_TRUE(one.ok());
    EXPECT_EQ(one->heldOut.size(), 1u);
    auto none = splitHeldOut(set, {});
    ASSERT_TRUE(none.ok());
    EXPECT_TRUE(none->heldOut.empty());
    EXPECT_EQ(none->train.size(), 5u);
}

TEST(RecordSplit, ConversationsOfOneChainNeverStraddleTheSplit) {
    // Six conversations in three groups of two (CSV chains sharing a root).
    auto set = conversations(6);
    set.conversationGroups = {0, 0, 1, 1, 2, 2};
    for (uint64_t seed = 0; seed < 20; ++seed) {
        auto split = splitHeldOut(set, {.fraction = 0.0, .count = 1, .seed = seed});
        ASSERT_TRUE(split.ok());
        ASSERT_EQ(split->heldOut.size(), 2u);  // the group is taken whole
        EXPECT_EQ(set.conversationGroups[split->heldOut[0]],
                  set.conversationGroups[split->heldOut[1]]);
        EXPECT_EQ(split->heldOut, (std::vector<size_t>{2 * expectedHeldOut(3, 1, seed)[0],
                                                       2 * expectedHeldOut(3, 1, seed)[0] + 1}));
    }
}

TEST(RecordSplit, TextRecordsAreSplitOneByOne) {
    RecordSet set;
    for (int i = 0; i < 10; ++i)
        set.texts.push_back({std::string("t").append(std::to_string(i)), "t.jsonl"});
    auto split = splitHeldOut(set, {.fraction = 0.2, .count = 0, .seed = 3});
    ASSERT_TRUE(split.ok());
    EXPECT_EQ(split->heldOut, expectedHeldOut(10, 2, 3));
}

TEST(RecordSplit, SplitsThatLeaveNothingOrMakeNoSenseAreRefused) {
    const auto set = conversations(3);
    auto all = splitHeldOut(set, {.fraction = 0.0, .count = 3, .seed = 0});
    ASSERT_FALSE(all.ok());
    EXPECT_TRUE(contains(all.error().message, "the held-out count 3 holds out all 3 records"))
        << all.error().message;
    auto one = splitHeldOut(conversations(1), {.fraction = 0.5, .count = 0, .seed = 0});
    ASSERT_FALSE(one.ok());
    auto fraction = splitHeldOut(set, {.fraction = 1.0, .count = 0, .seed = 0});
    ASSERT_FALSE(fraction.ok());
    EXPECT_TRUE(contains(fraction.error().message, "it is a share of the records in [0, 1)"));
    auto negative = splitHeldOut(set, {.fraction = 0.0, .count = -1, .seed = 0});
    ASSERT_FALSE(negative.ok());
    EXPECT_TRUE(contains(negative.error().message, "0 or more"));
}

}  // namespace
}  // namespace ws::data
