// SPDX-License-Identifier: GPL-3.0-or-later
// The batch source for supervised examples (data/example_dataset.h, example_rows.h, examples.h):
// the row and batch formulas pinned on a hand-made set, targets that never cross examples, each
// example once per epoch, the held-out split, truncate vs refuse, the statistics, reproducible
// shuffles, validation that counts every held-out row once, and position_ids the packed ops accept.
// The seeded orders are pinned against an independent Python implementation of the header's
// formulas (the values quoted below), and splitMix64 against SplitMix64's published first output.
#include "engine/data/example_dataset.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <set>
#include <thread>

#include "engine/model/packed_sequences.h"

namespace ws::data {
namespace {

Example example(std::vector<int32_t> ids, std::vector<uint8_t> mask, std::string origin) {
    return Example{std::move(ids), std::move(mask), std::move(origin)};
}

// Five examples of 5, 3, 7, 4 and 2 tokens: 4, 2, 6, 3 and 1 slots, 3, 2, 4, 1 and 1 trained.
std::vector<Example> handMade() {
    return {
        example({10, 11, 12, 13, 14}, {0, 0, 1, 1, 1}, "a"),
        example({20, 21, 22}, {0, 1, 1}, "b"),
        example({30, 31, 32, 33, 34, 35, 36}, {0, 0, 0, 1, 1, 1, 1}, "c"),
        example({40, 41, 42, 43}, {0, 0, 1, 0}, "d"),
        example({50, 51}, {1, 1}, "e"),
    };
}

ExampleOptions options(int T, bool pack = true) {
    ExampleOptions o;
    o.T = T;
    o.pack = pack;
    o.packShuffled = false;
    o.padId = 99;
    return o;
}

struct Batch {
    std::vector<int32_t> inputs, targets, positions;
    int64_t trained = 0;
    Batch(int B, int T) : inputs(size_t(B) * T), targets(size_t(B) * T), positions(size_t(B) * T) {}
};

Batch trainBatch(const ExampleDataset& d, int64_t step, int B, bool shuffle, uint64_t seed) {
    const int T = d.options().T;
    Batch b(B, T);
    b.trained = d.trainBatch(step, B, T, shuffle, seed, b.inputs.data(), b.targets.data(),
                             b.positions.data());
    return b;
}

Batch validationBatch(const ExampleDataset& d, int64_t index, int B) {
    const int T = d.options().T;
    Batch b(B, T);
    b.trained =
        d.validationBatch(index, B, T, b.inputs.data(), b.targets.data(), b.positions.data());
    return b;
}

std::vector<int32_t> slice(const std::vector<int32_t>& v, int row, int T) {
    return {v.begin() + row * T, v.begin() + (row + 1) * T};
}

using V = std::vector<int32_t>;

TEST(ExampleDataset, SeededOrdersMatchTheDocumentedFormulas) {
    EXPECT_EQ(splitMix64(0x9E3779B97F4A7C15ull), 0xE220A8397B1DCDAFull);  // SplitMix64(0), 1st
    EXPECT_EQ(splitMix64(1), 0x5692161D100B05E5ull);
    EXPECT_EQ(streamKey(7, 1), 0x63CBE1E459320DD7ull);
    EXPECT_EQ(seededPermutation(10, streamKey(7, 1)),
              (std::vector<int64_t>{7, 6, 9, 2, 8, 4, 0, 3, 5, 1}));
    EXPECT_EQ(seededPermutation(10, streamKey(42, 4)),
              (std::vector<int64_t>{3, 4, 7, 8, 2, 0, 5, 6, 9, 1}));
    EXPECT_EQ(seededPermutation(1, 5), (std::vector<int64_t>{0}));
    EXPECT_TRUE(seededPermutation(0, 5).empty());
}

TEST(ExampleDataset, PacksFirstFitInTheGivenOrderWithExactRows) {
    auto d = ExampleDataset::create(handMade(), options(8));
    ASSERT_TRUE(d.ok()) << d.error().message;
    const ExampleRows& rows = d->trainRows();
    // a(4) -> row 0; b(2) -> row 0; c(6) -> row 1; d(3) -> row 2 (row 0 has 2 free); e(1) -> row 0.
    ASSERT_EQ(rows.rows(), 3);
    EXPECT_EQ(rows.rowExamples(0), (std::vector<int64_t>{0, 1, 4}));
    EXPECT_EQ(rows.rowExamples(1), (std::vector<int64_t>{2}));
    EXPECT_EQ(rows.rowExamples(2), (std::vector<int64_t>{3}));
    EXPECT_EQ(rows.usedSlots(), 16);
    EXPECT_EQ(rows.paddingSlots(), 8);
    EXPECT_EQ(rows.trainedTargets(), 11);
    EXPECT_EQ(d->describe(),
              "5 training examples (21 tokens, 11 trained on: 52%) packed into 3 rows of 8 "
              "tokens (67% filled)");

    // Unshuffled, B = 2: step 0 reads rows 0, 1; step 1 rows 2, 0 (the second epoch begins).
    const Batch s0 = trainBatch(*d, 0, 2, false, 0);
    EXPECT_EQ(slice(s0.inputs, 0, 8), (V{10, 11, 12, 13, 20, 21, 50, 99}));
    EXPECT_EQ(slice(s0.targets, 0, 8), (V{-1, 12, 13, 14, 21, 22, 51, -1}));
    EXPECT_EQ(slice(s0.positions, 0, 8), (V{0, 1, 2, 3, 0, 1, 0, 0}));
    EXPECT_EQ(slice(s0.inputs, 1, 8), (V{30, 31, 32, 33, 34, 35, 99, 99}));
    EXPECT_EQ(slice(s0.targets, 1, 8), (V{-1, -1, 33, 34, 35, 36, -1, -1}));
    EXPECT_EQ(slice(s0.positions, 1, 8), (V{0, 1, 2, 3, 4, 5, 0, 0}));
    EXPECT_EQ(s0.trained, 6 + 4);
    const Batch s1 = trainBatch(*d, 1, 2, false, 0);
    EXPECT_EQ(slice(s1.inputs, 0, 8), (V{40, 41, 42, 99, 99, 99, 99, 99}));
    EXPECT_EQ(slice(s1.targets, 0, 8), (V{-1, 42, -1, -1, -1, -1, -1, -1}));
    EXPECT_EQ(slice(s1.positions, 0, 8), (V{0, 1, 2, 0, 0, 0, 0, 0}));
    EXPECT_EQ(slice(s1.inputs, 1, 8), slice(s0.inputs, 0, 8));
    EXPECT_EQ(s1.trained, 1 + 6);
    for (const Batch* b : {&s0, &s1}) {
        EXPECT_TRUE(model::ops::checkPositionIds(b->positions.data(), 2, 8).ok());
    }
}

TEST(ExampleDataset, PacksInTheSeededOrder) {
    ExampleOptions o = options(8);
    o.packShuffled = true;
    o.seed = 7;
    auto d = ExampleDataset::create(handMade(), o);
    ASSERT_TRUE(d.ok()) << d.error().message;
    // Placement order seededPermutation(5, streamKey(7, 2)) = 4, 3, 2, 0, 1 (Python): e(1) and
    // d(3) -> row 0, c(6) -> row 1, a(4) fills row 0, b(2) fills row 1.
    ASSERT_EQ(d->trainRows().rows(), 2);
    EXPECT_EQ(d->trainRows().rowExamples(0), (std::vector<int64_t>{4, 3, 0}));
    EXPECT_EQ(d->trainRows().rowExamples(1), (std::vector<int64_t>{2, 1}));
    EXPECT_EQ(d->trainRows().paddingSlots(), 0);
    const Batch b = trainBatch(*d, 0, 2, false, 0);
    EXPECT_EQ(slice(b.inputs, 0, 8), (V{50, 40, 41, 42, 10, 11, 12, 13}));
    EXPECT_EQ(slice(b.targets, 0, 8), (V{51, -1, 42, -1, -1, 12, 13, 14}));
    EXPECT_EQ(slice(b.positions, 0, 8), (V{0, 0, 1, 2, 0, 1, 2, 3}));
}

TEST(ExampleDataset, WithoutPackingEachExampleHasItsRowAndDensePositions) {
    auto d = ExampleDataset::create(handMade(), options(8, false));
    ASSERT_TRUE(d.ok()) << d.error().message;
    EXPECT_EQ(d->trainRows().rows(), 5);
    EXPECT_TRUE(d->positionIdsAreDense());
    const Batch b = trainBatch(*d, 1, 2, false, 0);  // rows 2, 3
    EXPECT_EQ(slice(b.inputs, 0, 8), (V{30, 31, 32, 33, 34, 35, 99, 99}));
    EXPECT_EQ(slice(b.targets, 1, 8), (V{-1, 42, -1, -1, -1, -1, -1, -1}));
    EXPECT_EQ(slice(b.positions, 0, 8), (V{0, 1, 2, 3, 4, 5, 6, 7}));
    EXPECT_EQ(slice(b.positions, 1, 8), (V{0, 1, 2, 3, 4, 5, 6, 7}));
    // An example of T + 1 tokens fills its row exactly: its last token is only a target.
    auto full =
        ExampleDataset::create({example({1, 2, 3, 4, 5}, {0, 1, 1, 1, 1}, "x")}, options(4, false));
    ASSERT_TRUE(full.ok()) << full.error().message;
    const Batch f = trainBatch(*full, 0, 1, false, 0);
    EXPECT_EQ(f.inputs, (V{1, 2, 3, 4}));
    EXPECT_EQ(f.targets, (V{2, 3, 4, 5}));
    EXPECT_EQ(full->trainStats().truncated, 0);
}

// Random examples with unique first tokens (1000 + index) so a row's examples can be read back.
std::vector<Example> randomExamples(int n, int maxLength, uint32_t seed) {
    std::mt19937 rng(seed);
    std::vector<Example> out;
    for (int k = 0; k < n; ++k) {
        const int length = 2 + int(rng() % uint32_t(maxLength - 1));
        Example e;
        e.origin = fmt::format("r{}", k);
        e.ids.push_back(1000 + k);
        e.mask.push_back(0);
        for (int t = 1; t < length; ++t) {
            e.ids.push_back(int32_t(rng() % 500));
            e.mask.push_back(uint8_t(rng() % 2));
        }
        e.mask.back() = 1;  // at least one trained token
        out.push_back(std::move(e));
    }
    return out;
}

// Checks a row against the examples it came from, and returns them (by first token, minus 1000).
std::vector<int> readRow(const std::vector<Example>& all, const int32_t* inputs,
                         const int32_t* targets, const int32_t* positions, int T, int32_t pad) {
    std::vector<int> found;
    int o = 0;
    while (o < T && inputs[o] >= 1000) {
        const int k = inputs[o] - 1000;
        const Example& e = all[size_t(k)];
        found.push_back(k);
        for (int t = 0; t + 1 < int(e.ids.size()); ++t, ++o) {
            EXPECT_LT(o, T) << "an example straddles two rows";
            if (o >= T) return found;
            EXPECT_EQ(positions[o], t);
            EXPECT_EQ(inputs[o], e.ids[size_t(t)]);
            // The target is this example's own next token (or -1), never the next example's.
            EXPECT_EQ(targets[o], e.mask[size_t(t) + 1] ? e.ids[size_t(t) + 1] : -1);
        }
    }
    for (; o < T; ++o) {
        EXPECT_EQ(inputs[o], pad);
        EXPECT_EQ(targets[o], -1);
    }
    return found;
}

TEST(ExampleDataset, EveryExampleOncePerEpochAndNoTargetCrossesExamples) {
    const std::vector<Example> all = randomExamples(150, 24, 3);
    for (const bool pack : {true, false}) {
        ExampleOptions o = options(32, pack);
        o.packShuffled = true;
        auto d = ExampleDataset::create(all, o);
        ASSERT_TRUE(d.ok()) << d.error().message;
        const int64_t R = d->trainRows().rows();
        const int B = 4;
        ASSERT_TRUE(d->checkBatch(B).ok());
        if (pack) {
            EXPECT_LT(R, 150);  // packing did put several examples in a row
        }
        std::map<int64_t, std::vector<int>> perEpoch;
        const int64_t steps = (3 * R + B - 1) / B;
        for (int64_t s = 0; s < steps; ++s) {
            const Batch b = trainBatch(*d, s, B, true, 11);
            EXPECT_TRUE(model::ops::checkPositionIds(b.positions.data(), B, 32).ok());
            int64_t trained = 0;
            for (int i = 0; i < B; ++i) {
                const size_t at = size_t(i) * 32;
                const auto rowTrained =
                    std::count_if(b.targets.begin() + long(at), b.targets.begin() + long(at) + 32,
                                  [](int32_t t) { return t >= 0; });
                EXPECT_GT(rowTrained, 0) << "a row with nothing to train on";
                trained += rowTrained;
                const auto found = readRow(all, b.inputs.data() + at, b.targets.data() + at,
                                           b.positions.data() + at, 32, 99);
                auto& epoch = perEpoch[(s * B + i) / R];
                epoch.insert(epoch.end(), found.begin(), found.end());
            }
            EXPECT_EQ(b.trained, trained);
        }
        for (int64_t e = 0; e < 3; ++e) {
            std::vector<int> seen = perEpoch[e];
            std::sort(seen.begin(), seen.end());
            std::vector<int> expected(150);
            for (int k = 0; k < 150; ++k) expected[size_t(k)] = k;
            EXPECT_EQ(seen, expected) << "epoch " << e << (pack ? " packed" : " unpacked");
        }
    }
}

TEST(ExampleDataset, ShuffledRowsFollowTheEpochPermutationAndAreReproducible) {
    auto d = ExampleDataset::create(handMade(), options(8));
    ASSERT_TRUE(d.ok()) << d.error().message;
    // R = 3, B = 2, seed 42: epoch 0 reads rows seededPermutation(3, streamKey(42, 4)) = 2, 0, 1
    // and epoch 1 seededPermutation(3, streamKey(42, 5)) = 0, 1, 2 (Python).
    const std::vector<int64_t> expected{2, 0, 1, 0, 1, 2};
    for (int64_t g = 0; g < 6; ++g) {
        EXPECT_EQ(d->trainRow(g / 2, 2, int(g % 2), true, 42), expected[size_t(g)]) << g;
    }
    // The same batches from a copy, from threads, and in another order.
    const ExampleDataset copy = *d;
    std::vector<Batch> serial;
    for (int64_t s = 0; s < 12; ++s) serial.push_back(trainBatch(*d, s, 2, true, 42));
    std::vector<Batch> threaded(12, Batch(2, 8));
    std::vector<std::thread> threads;
    for (int w = 0; w < 3; ++w) {
        threads.emplace_back([&, w] {
            for (int64_t s = 11 - w; s >= 0; s -= 3)
                threaded[size_t(s)] = trainBatch(copy, s, 2, true, 42);
        });
    }
    for (std::thread& t : threads) t.join();
    for (size_t s = 0; s < 12; ++s) {
        EXPECT_EQ(serial[s].inputs, threaded[s].inputs) << s;
        EXPECT_EQ(serial[s].targets, threaded[s].targets) << s;
        EXPECT_EQ(serial[s].positions, threaded[s].positions) << s;
    }
    // Another seed gives another order somewhere in the first epochs.
    bool differs = false;
    for (int64_t g = 0; g < 30; ++g) {
        differs |= d->trainRow(g / 2, 2, int(g % 2), true, 43) !=
                   d->trainRow(g / 2, 2, int(g % 2), true, 42);
    }
    EXPECT_TRUE(differs);
}

TEST(ExampleDataset, HeldOutSplitBySeededExamples) {
    std::vector<Example> ten;
    for (int k = 0; k < 10; ++k) ten.push_back(example({k, k + 1}, {0, 1}, std::to_string(k)));
    const auto origins = [](const std::vector<Example>& v) {
        std::vector<std::string> out;
        for (const Example& e : v) out.push_back(e.origin);
        return out;
    };
    // seededPermutation(10, streamKey(7, 1)) = 7, 6, 9, ... (Python): the first V are held out.
    auto f = splitExamples(ten, 0.3, -1, 7);
    ASSERT_TRUE(f.ok()) << f.error().message;
    EXPECT_EQ(origins(f->heldOut), (std::vector<std::string>{"6", "7", "9"}));
    EXPECT_EQ(origins(f->train), (std::vector<std::string>{"0", "1", "2", "3", "4", "5", "8"}));
    auto c = splitExamples(ten, 0.9, 2, 7);  // a count overrides the fraction
    ASSERT_TRUE(c.ok());
    EXPECT_EQ(origins(c->heldOut), (std::vector<std::string>{"6", "7"}));
    auto small = splitExamples(ten, 0.01, -1, 7);  // floor(0.1) = 0, at least one
    ASSERT_TRUE(small.ok());
    EXPECT_EQ(origins(small->heldOut), (std::vector<std::string>{"7"}));
    auto none = splitExamples(ten, 0.0, -1, 7);
    ASSERT_TRUE(none.ok());
    EXPECT_TRUE(none->heldOut.empty());
    EXPECT_EQ(none->train.size(), 10u);
    EXPECT_FALSE(splitExamples(ten, 0.0, 10, 7).ok());
    EXPECT_FALSE(splitExamples(ten, 1.0, -1, 7).ok());
    EXPECT_FALSE(splitExamples(ten, -0.1, -1, 7).ok());
    const auto all = splitExamples(ten, 0.0, 10, 7);
    EXPECT_NE(all.error().message.find("leaves none to train on"), std::string::npos);

    // Through the data set: the split does not depend on T, and a given split is kept.
    ExampleOptions o = options(8);
    o.heldOutFraction = 0.3;
    o.seed = 7;
    auto d8 = ExampleDataset::create(ten, o);
    o.T = 64;
    auto d64 = ExampleDataset::create(ten, o);
    ASSERT_TRUE(d8.ok() && d64.ok());
    EXPECT_EQ(origins(d8->heldOutRows().examples()), origins(d64->heldOutRows().examples()));
    EXPECT_EQ(d8->heldOutStats().given, 3);
    std::vector<Example> train(ten.begin(), ten.begin() + 8), held(ten.begin() + 8, ten.end());
    auto given = ExampleDataset::create(train, held, options(8));
    ASSERT_TRUE(given.ok());
    EXPECT_EQ(origins(given->heldOutRows().examples()), (std::vector<std::string>{"8", "9"}));
    EXPECT_EQ(given->trainStats().given, 8);
}

TEST(ExampleDataset, ValidationCountsEveryHeldOutRowOnce) {
    std::vector<Example> held;
    for (int k = 0; k < 7; ++k) held.push_back(example({1000 + k, 5, 6}, {0, 0, 1}, "h"));
    auto d = ExampleDataset::create(handMade(), held, options(4, false));
    ASSERT_TRUE(d.ok()) << d.error().message;
    ASSERT_EQ(d->heldOutRows().rows(), 7);
    const int B = 3;
    ASSERT_EQ(d->validationBatches(B), 3);  // ceil(7 / 3)
    std::vector<int> seen;
    int64_t trained = 0;
    for (int64_t j = 0; j < 3; ++j) {
        const Batch b = validationBatch(*d, j, B);
        EXPECT_TRUE(model::ops::checkPositionIds(b.positions.data(), B, 4).ok());
        for (int i = 0; i < B; ++i) {
            const auto found = readRow(d->heldOutRows().examples(), b.inputs.data() + i * 4,
                                       b.targets.data() + i * 4, b.positions.data() + i * 4, 4, 99);
            seen.insert(seen.end(), found.begin(), found.end());
        }
        trained += b.trained;
        if (j == 2) {  // one held-out row, then two rows of padding with no target at all
            EXPECT_EQ(b.trained, 1);
            EXPECT_TRUE(std::all_of(b.targets.begin() + 4, b.targets.end(),
                                    [](int32_t t) { return t == -1; }));
        }
    }
    EXPECT_EQ(seen, (std::vector<int>{0, 1, 2, 3, 4, 5, 6}));
    EXPECT_EQ(trained, 7);
    EXPECT_EQ(d->describe(),
              "5 training examples (19 tokens, 9 trained on: 47%) in 5 rows of 4 tokens (70% "
              "filled); 7 held out in 7 rows");
    // Packed (first-fit in order), the 7 two-slot examples fill 4 rows of 4 slots: one batch of 4.
    auto packed = ExampleDataset::create(handMade(), held, options(4));
    ASSERT_TRUE(packed.ok()) << packed.error().message;
    EXPECT_EQ(packed->heldOutRows().rows(), 4);
    EXPECT_EQ(packed->validationBatches(4), 1);
    EXPECT_EQ(validationBatch(*packed, 0, 4).trained, 7);
    // No held-out examples: no validation batch.
    auto none = ExampleDataset::create(handMade(), options(8));
    ASSERT_TRUE(none.ok());
    EXPECT_EQ(none->validationBatches(2), 0);
}

std::vector<Example> withLongOnes() {
    std::vector<Example> v = handMade();
    // 9 tokens, trained from token 2: truncated to 5 tokens, 3 trained remain, 4 tokens cut.
    v.push_back(example({60, 61, 62, 63, 64, 65, 66, 67, 68}, {0, 0, 1, 1, 1, 1, 1, 1, 1}, "long"));
    // 8 tokens, trained only past token 5: nothing trained survives the cut.
    v.push_back(example({70, 71, 72, 73, 74, 75, 76, 77}, {0, 0, 0, 0, 0, 0, 1, 1}, "late"));
    // No trained token at all (mask[0] never counts).
    v.push_back(example({80, 81, 82}, {1, 0, 0}, "prompt-only"));
    return v;
}

TEST(ExampleDataset, TruncatesLongExamplesAndCountsThem) {
    auto d = ExampleDataset::create(withLongOnes(), options(4));
    ASSERT_TRUE(d.ok()) << d.error().message;
    const ExampleStats& s = d->trainStats();
    EXPECT_EQ(s.given, 8);
    EXPECT_EQ(s.longerThanRow, 3);  // c (7 tokens), long, late
    EXPECT_EQ(s.truncated, 2);      // c -> 5 tokens (2 cut), long -> 5 (4 cut)
    EXPECT_EQ(s.tokensCut, 6);
    EXPECT_EQ(s.droppedByTruncation, 1);
    EXPECT_EQ(s.untrained, 1);
    EXPECT_EQ(s.examples, 6);
    EXPECT_EQ(s.tokens, 5 + 3 + 5 + 4 + 2 + 5);
    EXPECT_EQ(s.trainedTokens, 3 + 2 + 2 + 1 + 1 + 3);
    EXPECT_EQ(s.truncatedOrigins, (std::vector<std::string>{"c", "long"}));
    EXPECT_EQ(s.droppedOrigins, (std::vector<std::string>{"late"}));
    EXPECT_EQ(s.untrainedOrigins, (std::vector<std::string>{"prompt-only"}));
    EXPECT_EQ(s.longest, 9);
    EXPECT_EQ(s.longestOrigin, "long");
    // The truncated "long" keeps its first 5 tokens: 4 slots, its last target is token 4.
    const auto& kept = d->trainRows().examples();
    const auto it =
        std::find_if(kept.begin(), kept.end(), [](const Example& e) { return e.origin == "long"; });
    ASSERT_NE(it, kept.end());
    EXPECT_EQ(it->ids, (V{60, 61, 62, 63, 64}));

    const auto warnings = d->warnings(1, 1);
    ASSERT_EQ(warnings.size(), 3u);
    EXPECT_EQ(warnings[0].kind, DataWarning::Kind::Truncated);
    EXPECT_NE(warnings[0].message.find("2 examples are longer than the 5 tokens"),
              std::string::npos)
        << warnings[0].message;
    EXPECT_NE(warnings[0].message.find("6 tokens cut), e.g. c, long"), std::string::npos);
    EXPECT_EQ(warnings[1].kind, DataWarning::Kind::DroppedByTruncation);
    EXPECT_NE(warnings[1].message.find("late"), std::string::npos);
    EXPECT_EQ(warnings[2].kind, DataWarning::Kind::Untrained);
    EXPECT_NE(warnings[2].message.find("prompt-only"), std::string::npos);
}

TEST(ExampleDataset, RefusesLongExamplesNamingTheLongestAndTheFix) {
    ExampleOptions o = options(4);
    o.longExamples = LongExamples::Refuse;
    auto d = ExampleDataset::create(withLongOnes(), o);
    ASSERT_FALSE(d.ok());
    const std::string& m = d.error().message;
    EXPECT_NE(m.find("3 of 8 examples are longer than the 5 tokens a row of "
                     "max_sequence_length 4 holds"),
              std::string::npos)
        << m;
    EXPECT_NE(m.find("long (9 tokens), late (8 tokens), c (7 tokens)"), std::string::npos) << m;
    EXPECT_NE(m.find("Raise max_sequence_length to 8"), std::string::npos) << m;
    EXPECT_NE(m.find("allow truncation"), std::string::npos) << m;
    o.T = 8;
    EXPECT_TRUE(ExampleDataset::create(withLongOnes(), o).ok());
}

TEST(ExampleDataset, StatisticsAndLengthHistogram) {
    std::vector<Example> v;
    for (const int length : {2, 3, 5, 32, 33, 40, 70}) {
        std::vector<int32_t> ids(size_t(length), 1);
        std::vector<uint8_t> mask(size_t(length), 1);
        v.push_back(example(ids, mask, fmt::format("len{}", length)));
    }
    auto d = ExampleDataset::create(v, options(31));
    ASSERT_TRUE(d.ok()) << d.error().message;
    const LengthHistogram& h = d->trainStats().lengths;
    EXPECT_EQ(h.limit, 32);
    EXPECT_EQ(h.binWidth, 2);  // ceil(32 / 16)
    std::vector<int64_t> expected(LengthHistogram::kBins, 0);
    expected[0] = 1;   // 2
    expected[1] = 1;   // 3
    expected[2] = 1;   // 5
    expected[15] = 1;  // 32: the last length that fits
    expected[16] = 1;  // 33
    expected[19] = 1;  // 40
    EXPECT_EQ(h.counts, expected);
    EXPECT_EQ(h.beyond, 1);  // 70 > 64
    const ExampleStats& s = d->trainStats();
    EXPECT_EQ(s.longerThanRow, 3);
    EXPECT_EQ(s.truncated, 3);
    EXPECT_EQ(s.tokensCut, 1 + 8 + 38);
    EXPECT_EQ(s.tokens, 2 + 3 + 5 + 4 * 32);
    EXPECT_EQ(s.trainedTokens, 1 + 2 + 4 + 4 * 31);
    EXPECT_EQ(d->trainRows().trainedTargets(), s.trainedTokens);
}

TEST(ExampleDataset, BatchSizeAndEpochWarnings) {
    auto d = ExampleDataset::create(handMade(), options(8));
    ASSERT_TRUE(d.ok()) << d.error().message;
    EXPECT_TRUE(d->checkBatch(3).ok());
    const Status s = d->checkBatch(4);
    ASSERT_FALSE(s.ok());
    EXPECT_NE(s.error().message.find("fill 3 rows of 8 tokens but batch_size is 4"),
              std::string::npos)
        << s.error().message;
    EXPECT_NE(s.error().message.find("Lower batch_size to 3"), std::string::npos);
    EXPECT_NE(s.error().message.find("one example per row gives 5 rows"), std::string::npos);
    // Turning packing off is only offered when it would give enough rows.
    const Status six = d->checkBatch(6);
    ASSERT_FALSE(six.ok());
    EXPECT_EQ(six.error().message.find("packing off"), std::string::npos) << six.error().message;

    EXPECT_DOUBLE_EQ(d->epochs(30, 2), 20.0);
    EXPECT_TRUE(d->warnings(30, 2).empty());  // exactly 20 epochs: no warning
    const auto w = d->warnings(31, 2);
    ASSERT_EQ(w.size(), 1u);
    EXPECT_EQ(w[0].kind, DataWarning::Kind::ManyEpochs);
    EXPECT_NE(w[0].message.find("31 steps of 2 rows go over the 3 training rows 20.7 times"),
              std::string::npos)
        << w[0].message;
    EXPECT_NE(w[0].message.find("train at most 30 steps"), std::string::npos);
}

TEST(ExampleDataset, RefusesBadExamplesAndSetsWithNothingToTrain) {
    auto mismatched = ExampleDataset::create({example({1, 2, 3}, {0, 1}, "x.jsonl:3")}, options(8));
    ASSERT_FALSE(mismatched.ok());
    EXPECT_NE(mismatched.error().message.find("x.jsonl:3 has 3 token ids but a mask of 2"),
              std::string::npos);
    auto negative = ExampleDataset::create({example({1, -2}, {0, 1}, "y")}, options(8));
    ASSERT_FALSE(negative.ok());
    EXPECT_NE(negative.error().message.find("negative token id -2"), std::string::npos);
    auto untrained = ExampleDataset::create(
        {example({1, 2}, {1, 0}, "p1"), example({3}, {1}, "p2")}, options(8));
    ASSERT_FALSE(untrained.ok());
    EXPECT_NE(untrained.error().message.find("none of the 2 training examples"), std::string::npos)
        << untrained.error().message;
    EXPECT_NE(untrained.error().message.find("p1, p2"), std::string::npos);
    EXPECT_FALSE(ExampleDataset::create({}, options(8)).ok());
    EXPECT_FALSE(ExampleDataset::create(handMade(), options(0)).ok());
    // A held-out split whose examples all have nothing to train on is refused, not left empty.
    auto heldEmpty = ExampleDataset::create(handMade(), {example({1, 2}, {0, 0}, "q")}, options(8));
    ASSERT_FALSE(heldEmpty.ok());
    EXPECT_NE(heldEmpty.error().message.find("held-out"), std::string::npos);
}

}  // namespace
}  // namespace ws::data
