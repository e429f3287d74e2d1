// SPDX-License-Identifier: GPL-3.0-or-later
// Supervised examples (examples.h): the seeded orders, the held-out split, the shape and length
// checks, and the preparation of one split, implemented literally from the header's formulas.
#include "engine/data/examples.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>

namespace ws::data {
namespace {

constexpr uint64_t kGolden = 0x9E3779B97F4A7C15ull;
constexpr size_t kOriginsKept = 5;  // origins remembered per kind, for messages

void rememberOrigin(std::vector<std::string>& origins, const std::string& origin) {
    if (origins.size() < kOriginsKept) origins.push_back(origin);
}

}  // namespace

uint64_t splitMix64(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

uint64_t streamKey(uint64_t seed, uint64_t stream) {
    return splitMix64(seed + stream * kGolden);
}

std::vector<int64_t> seededPermutation(int64_t n, uint64_t key) {
    std::vector<int64_t> p(size_t(std::max<int64_t>(n, 0)));
    std::iota(p.begin(), p.end(), int64_t(0));
    uint64_t s = key;
    for (int64_t j = n - 1; j >= 1; --j) {
        s += kGolden;
        const auto r = int64_t(splitMix64(s) % uint64_t(j + 1));
        std::swap(p[size_t(j)], p[size_t(r)]);
    }
    return p;
}

LengthHistogram::LengthHistogram(int T)
    : limit(int64_t(T) + 1), binWidth(std::max<int64_t>(1, (limit + 15) / 16)) {}

void LengthHistogram::add(int64_t length) {
    const int64_t bin = length <= 0 ? 0 : (length - 1) / binWidth;
    if (bin < kBins) {
        ++counts[size_t(bin)];
    } else {
        ++beyond;
    }
}

int64_t trainedTokens(const Example& example) {
    int64_t n = 0;
    for (size_t t = 1; t < example.mask.size(); ++t) n += example.mask[t] != 0;
    return n;
}

Status checkExamples(const std::vector<Example>& examples, const ExampleOptions& options) {
    if (options.T < 1) {
        return Error{fmt::format("max_sequence_length {} must be at least 1", options.T)};
    }
    if (options.padId < 0) {
        return Error{fmt::format("the padding token id {} must not be negative", options.padId)};
    }
    std::vector<size_t> tooLong;
    const size_t limit = size_t(options.T) + 1;
    for (size_t i = 0; i < examples.size(); ++i) {
        const Example& e = examples[i];
        if (e.ids.size() != e.mask.size()) {
            return Error{fmt::format("example {} has {} token ids but a mask of {}", e.origin,
                                     e.ids.size(), e.mask.size())};
        }
        const auto negative =
            std::find_if(e.ids.begin(), e.ids.end(), [](int32_t id) { return id < 0; });
        if (negative != e.ids.end()) {
            return Error{fmt::format("example {} has the negative token id {} at token {}",
                                     e.origin, *negative, negative - e.ids.begin())};
        }
        if (e.ids.size() > limit) tooLong.push_back(i);
    }
    if (options.longExamples != LongExamples::Refuse || tooLong.empty()) return {};
    std::stable_sort(tooLong.begin(), tooLong.end(), [&](size_t a, size_t b) {
        return examples[a].ids.size() > examples[b].ids.size();
    });
    std::string named;
    for (size_t k = 0; k < std::min(tooLong.size(), kOriginsKept); ++k) {
        const Example& e = examples[tooLong[k]];
        named += fmt::format("{}{} ({} tokens)", k ? ", " : "", e.origin, e.ids.size());
    }
    const size_t longest = examples[tooLong.front()].ids.size();
    return Error{fmt::format(
        "{} of {} examples are longer than the {} tokens a row of max_sequence_length {} holds; "
        "the longest: {}. Raise max_sequence_length to {} to fit them all, or allow truncation "
        "(each long example keeps its first {} tokens)",
        tooLong.size(), examples.size(), limit, options.T, named, longest - 1, limit)};
}

Result<ExampleSplit> splitExamples(std::vector<Example> examples, double fraction, int64_t count,
                                   uint64_t seed) {
    const auto n = int64_t(examples.size());
    int64_t held = 0;
    if (count >= 0) {
        held = count;
    } else {
        if (!(fraction >= 0.0 && fraction < 1.0)) {
            return Error{fmt::format("the held-out fraction {} is outside [0, 1)", fraction)};
        }
        held = int64_t(std::floor(double(n) * fraction));
        if (fraction > 0.0) held = std::max<int64_t>(held, 1);
    }
    if (held > 0 && held >= n) {
        return Error{fmt::format(
            "holding out {} of {} examples leaves none to train on: hold out fewer (a smaller "
            "fraction or count) or add examples",
            held, n)};
    }
    ExampleSplit split;
    std::vector<uint8_t> isHeld(size_t(n), 0);
    const std::vector<int64_t> p = seededPermutation(n, streamKey(seed, 1));
    for (int64_t k = 0; k < held; ++k) isHeld[size_t(p[size_t(k)])] = 1;
    split.heldOut.reserve(size_t(held));
    split.train.reserve(size_t(n - held));
    for (int64_t i = 0; i < n; ++i) {
        (isHeld[size_t(i)] ? split.heldOut : split.train).push_back(std::move(examples[size_t(i)]));
    }
    return split;
}

PreparedExamples prepareExamples(std::vector<Example> examples, int T) {
    PreparedExamples out;
    ExampleStats& s = out.stats;
    s.lengths = LengthHistogram(T);
    const size_t limit = size_t(T) + 1;
    s.given = int64_t(examples.size());
    out.examples.reserve(examples.size());
    for (Example& e : examples) {
        const auto length = int64_t(e.ids.size());
        s.lengths.add(length);
        if (length > s.longest) {
            s.longest = length;
            s.longestOrigin = e.origin;
        }
        if (e.ids.size() > limit) ++s.longerThanRow;
        if (trainedTokens(e) == 0) {
            ++s.untrained;
            rememberOrigin(s.untrainedOrigins, e.origin);
            continue;
        }
        if (e.ids.size() > limit) {
            const int64_t cut = length - int64_t(limit);
            e.ids.resize(limit);
            e.mask.resize(limit);
            if (trainedTokens(e) == 0) {
                ++s.droppedByTruncation;
                rememberOrigin(s.droppedOrigins, e.origin);
                continue;
            }
            ++s.truncated;
            s.tokensCut += cut;
            rememberOrigin(s.truncatedOrigins, e.origin);
        }
        ++s.examples;
        s.tokens += int64_t(e.ids.size());
        s.trainedTokens += trainedTokens(e);
        out.examples.push_back(std::move(e));
    }
    return out;
}

}  // namespace ws::data
