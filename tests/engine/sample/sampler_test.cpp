// SPDX-License-Identifier: GPL-3.0-or-later
// Token sampling: greedy, top-k 1 == greedy, seed determinism, temperature's effect on the
// empirical distribution (fixed seed, so the counts are reproducible), top-k / top-p support,
// option validation.
#include "engine/sample/sampler.h"

#include <gtest/gtest.h>

#include <cmath>
#include <set>
#include <vector>

#include "engine/model/random.h"

namespace ws::sample {
namespace {

std::vector<float> someLogits(int n, uint64_t seed) {
    std::vector<float> l(static_cast<size_t>(n));
    for (int i = 0; i < n; ++i) l[size_t(i)] = float(2.0 * model::rng::standardNormal(seed, i));
    return l;
}

SamplingOptions opts(double temperature, int topK = 0, double topP = 1.0, uint64_t seed = 1) {
    SamplingOptions o;
    o.temperature = temperature;
    o.topK = topK;
    o.topP = topP;
    o.seed = seed;
    return o;
}

TEST(Sampler, GreedyIsArgmaxWithTheSmallestIdOnTies) {
    const std::vector<float> l = {0.5f, 3.0f, -1.0f, 3.0f, NAN};
    EXPECT_EQ(argmax(l.data(), 5), 1);
    TokenSampler greedy(opts(0.0));
    for (uint64_t d = 0; d < 10; ++d) EXPECT_EQ(greedy.pick(l.data(), 5, d), 1);
}

TEST(Sampler, TopKOneIsGreedyForAnyTemperatureAndSeed) {
    const auto l = someLogits(500, 3);
    const int32_t best = argmax(l.data(), 500);
    for (uint64_t seed = 0; seed < 5; ++seed) {
        TokenSampler s(opts(1.5, 1, 1.0, seed));
        for (uint64_t d = 0; d < 20; ++d) EXPECT_EQ(s.pick(l.data(), 500, d), best);
    }
}

TEST(Sampler, SameSeedSameDrawsOtherSeedOtherDraws) {
    const auto l = someLogits(300, 4);
    auto draws = [&](uint64_t seed) {
        TokenSampler s(opts(1.0, 0, 1.0, seed));
        std::vector<int32_t> out;
        for (uint64_t d = 0; d < 200; ++d) out.push_back(s.pick(l.data(), 300, d));
        return out;
    };
    EXPECT_EQ(draws(42), draws(42));
    EXPECT_NE(draws(42), draws(43));
}

// Frequencies of 40,000 draws against softmax(logits / T): within 5 standard errors, and the
// top token's share falls as the temperature rises.
TEST(Sampler, TemperatureScalesTheDistribution) {
    const std::vector<float> l = {2.0f, 1.0f, 0.0f, -1.0f};
    const int draws = 40000;
    double previousTop = 1.0;
    for (double T : {0.5, 1.0, 2.0}) {
        TokenSampler s(opts(T, 0, 1.0, 7));
        std::vector<int> counts(4, 0);
        for (int d = 0; d < draws; ++d) ++counts[size_t(s.pick(l.data(), 4, uint64_t(d)))];
        double z = 0.0;
        for (float x : l) z += std::exp(x / T);
        for (int i = 0; i < 4; ++i) {
            const double p = std::exp(l[size_t(i)] / T) / z;
            const double se = std::sqrt(p * (1 - p) / draws);
            EXPECT_NEAR(double(counts[size_t(i)]) / draws, p, 5 * se) << "T " << T << " id " << i;
        }
        const double top = double(counts[0]) / draws;
        EXPECT_LT(top, previousTop) << "T " << T;
        previousTop = top;
    }
}

TEST(Sampler, TopKAndTopPRestrictTheSupport) {
    const auto l = someLogits(100, 5);
    const auto k5 = samplingDistribution(l.data(), 100, opts(1.0, 5));
    ASSERT_EQ(k5.size(), 5u);
    std::set<int32_t> allowed;
    for (const auto& [id, p] : k5) allowed.insert(id);
    EXPECT_TRUE(allowed.count(argmax(l.data(), 100)));
    TokenSampler s(opts(1.0, 5));
    for (uint64_t d = 0; d < 500; ++d) EXPECT_TRUE(allowed.count(s.pick(l.data(), 100, d)));

    // top-p: the smallest most-likely-first set reaching p.
    const auto full = samplingDistribution(l.data(), 100, opts(1.0));
    const auto nucleus = samplingDistribution(l.data(), 100, opts(1.0, 0, 0.6));
    double mass = 0.0;
    for (size_t i = 0; i < nucleus.size(); ++i) {
        EXPECT_EQ(nucleus[i].first, full[i].first);
        mass += full[i].second;
    }
    EXPECT_GE(mass, 0.6 - 1e-12);
    EXPECT_LT(mass - full[nucleus.size() - 1].second, 0.6);
    double sum = 0.0;
    for (const auto& [id, p] : nucleus) sum += p;
    EXPECT_NEAR(sum, 1.0, 1e-12);
}

TEST(Sampler, OnlyIdsBelowVocabAreDrawn) {
    std::vector<float> l(10, 0.0f);
    l[9] = 100.0f;  // a padded row no text maps to
    TokenSampler s(opts(1.0));
    for (uint64_t d = 0; d < 200; ++d) EXPECT_LT(s.pick(l.data(), 9, d), 9);
}

TEST(Sampler, ValidateNamesTheOption) {
    EXPECT_TRUE(opts(0.8).validate().ok());
    EXPECT_NE(opts(-1).validate().error().message.find("temperature"), std::string::npos);
    EXPECT_NE(opts(NAN).validate().error().message.find("temperature"), std::string::npos);
    EXPECT_NE(opts(1, -2).validate().error().message.find("top_k"), std::string::npos);
    EXPECT_NE(opts(1, 0, 0.0).validate().error().message.find("top_p"), std::string::npos);
    EXPECT_NE(opts(1, 0, 1.5).validate().error().message.find("top_p"), std::string::npos);
    SamplingOptions o;
    o.maxTokens = 0;
    EXPECT_NE(o.validate().error().message.find("max_tokens"), std::string::npos);
}

}  // namespace
}  // namespace ws::sample
