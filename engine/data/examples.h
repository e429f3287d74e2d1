// SPDX-License-Identifier: GPL-3.0-or-later
// Supervised (instruction/chat) examples before they become rows: the tokenized example with its
// training mask, the options that shape the data set, the held-out split by examples, and the
// preparation of one split (the long-example policy, examples with nothing to train on, the
// statistics the wizard and the CLI show). example_dataset.h is the front door; this header
// holds the phases it runs, each usable alone.
//
// Notation: an example is L tokens ids[0..L) with mask[0..L) (nonzero = the token is trained on,
// i.e. predicted). It occupies L - 1 slots of a row of T slots: slot t has input ids[t] and
// target ids[t + 1] when mask[t + 1] is set, else -1 (no loss). Its last token is only ever a
// target, so an example of T + 1 tokens fills a row exactly, and mask[0] never counts (the first
// token is never predicted). The "trained tokens" of an example are the t in [1, L) with mask[t].
//
// Seeded orders (reproducible on every system and thread count; SplitMix64 throughout):
//   mix64(z):  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9; z = (z ^ (z >> 27)) * 0x94D049BB133111EB;
//              z ^ (z >> 31)   (all mod 2^64; the same finaliser as dataset.h)
//   streamKey(seed, stream) = mix64(seed + stream * 0x9E3779B97F4A7C15)
//   seededPermutation(n, key): p = 0, 1, .., n-1; s = key; for j = n-1 down to 1:
//              s += 0x9E3779B97F4A7C15; r = mix64(s) mod (j + 1); swap(p[j], p[r])
//   Streams: 1 = the held-out split, 2 = the training rows' packing order, 3 = the held-out
//   rows' packing order, 4 + e = epoch e's order of the training rows (example_dataset.h).
//
// Held-out split (splitExamples): n examples, V held out: V = count when a count is given,
// else V = floor(n * fraction), at least 1 when fraction > 0. The held-out examples are those at
// p[0..V) of seededPermutation(n, streamKey(seed, 1)); both splits keep the input order. The
// split depends only on (n, V, seed), not on T or on the policies below, so changing the sequence
// length never moves an example between the splits.
//
// Thread-safety: pure functions over their arguments.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/core/result.h"

namespace ws::data {

struct Example {
    std::vector<int32_t> ids;   // (L) token ids
    std::vector<uint8_t> mask;  // (L) nonzero: the token is trained on (predicted)
    std::string origin;         // names the record in messages, e.g. "train.jsonl:12"
};

// What to do with an example longer than T + 1 tokens (it would not fit one row).
enum class LongExamples {
    Truncate,  // keep its first T + 1 tokens; counted, and dropped when no trained token is left
    Refuse,    // the data set is refused, naming the longest examples and the fix
};

struct ExampleOptions {
    int T = 0;                 // max_sequence_length: slots per row
    bool pack = true;          // several whole examples per row (VSL) or one example per row
    bool packShuffled = true;  // pack in a seeded order (streams 2, 3) or in the given order
    LongExamples longExamples = LongExamples::Truncate;
    double heldOutFraction = 0.0;  // in [0, 1); used when heldOutCount < 0
    int64_t heldOutCount = -1;     // examples held out; >= 0 overrides the fraction
    uint64_t seed = 0;             // the split and the packing order
    int32_t padId = 0;             // input of padding slots (e.g. EOS); their target is -1
};

uint64_t splitMix64(uint64_t z);  // mix64 above
uint64_t streamKey(uint64_t seed, uint64_t stream);
std::vector<int64_t> seededPermutation(int64_t n, uint64_t key);

// Example lengths (tokens, before truncation) against the row: bin k holds the lengths in
// (k * binWidth, (k + 1) * binWidth] (bin 0 also holds empty examples); 32 bins reach twice the
// limit, longer ones are counted in `beyond`.
struct LengthHistogram {
    static constexpr int kBins = 32;
    int64_t limit = 0;     // T + 1: the longest example that fits a row
    int64_t binWidth = 1;  // ceil(limit / 16)
    std::vector<int64_t> counts = std::vector<int64_t>(kBins, 0);
    int64_t beyond = 0;

    explicit LengthHistogram(int T = 0);
    void add(int64_t length);
};

// One split's figures. given = examples + untrained + droppedByTruncation.
struct ExampleStats {
    int64_t given = 0;                // examples handed in
    int64_t examples = 0;             // examples kept (trained on)
    int64_t tokens = 0;               // tokens of the kept examples, after truncation
    int64_t trainedTokens = 0;        // targets with a loss over the kept examples
    int64_t longerThanRow = 0;        // given examples longer than T + 1 tokens
    int64_t truncated = 0;            // of those, kept after truncation
    int64_t tokensCut = 0;            // tokens removed by truncation (kept examples only)
    int64_t droppedByTruncation = 0;  // long examples whose every trained token was cut off
    int64_t untrained = 0;            // dropped: no trained token even before truncation
    int64_t longest = 0;              // longest given example (tokens)
    std::string longestOrigin;
    std::vector<std::string> truncatedOrigins;  // the first few, for messages
    std::vector<std::string> untrainedOrigins;  // the first few, for messages
    std::vector<std::string> droppedOrigins;    // emptied by truncation, the first few
    LengthHistogram lengths;
};

// Checks every example's shape (ids and mask of one length, ids >= 0) and, under Refuse, that no
// example is longer than T + 1 tokens: the error names how many are, the longest few with their
// origins and lengths, and the fix (raise max_sequence_length to fit them, or allow truncation).
Status checkExamples(const std::vector<Example>& examples, const ExampleOptions& options);

struct ExampleSplit {
    std::vector<Example> train;
    std::vector<Example> heldOut;
};
// The held-out split of the header comment. Errors: a fraction outside [0, 1), a count or a
// fraction that leaves no training example.
Result<ExampleSplit> splitExamples(std::vector<Example> examples, double fraction, int64_t count,
                                   uint64_t seed);

// One split, ready to pack: long examples truncated to T + 1 tokens (checkExamples refuses them
// first under Refuse), examples without a trained token dropped; `stats` describes what happened.
struct PreparedExamples {
    std::vector<Example> examples;
    ExampleStats stats;
};
PreparedExamples prepareExamples(std::vector<Example> examples, int T);

// Targets of an example with a loss: the t in [1, L) with mask[t] set.
int64_t trainedTokens(const Example& example);

}  // namespace ws::data
