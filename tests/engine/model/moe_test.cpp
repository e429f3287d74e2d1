// SPDX-License-Identifier: GPL-3.0-or-later
// Mixture of experts in the Gpt step: finite-difference gradients through router and experts
// (top_k 1 and 2, with and without capacity drops, with the load-balancing loss), one expert
// with k = 1 equal to the dense model bit for bit (fp32 and bf16), the router learning from the
// loss alone at top_k 1 and 2, the routing rules (capacity order, ties) and the token counts.
#include "engine/model/moe.h"

#include <gtest/gtest.h>

#include <cmath>
#include <numeric>
#include <string>
#include <vector>

#include "engine/model/gpt.h"
#include "engine/model/random.h"
#include "gradcheck.h"
#include "support/test_shapes.h"

namespace ws::model {
namespace {

using testing::expectGradientMatches;
using ws::testing::gradcheckShape;

GptShape moeShape(int experts, int k, double capacityFactor, double lbCoef) {
    GptShape s = gradcheckShape(true);
    s.numExperts = experts;
    s.topK = k;
    s.moeEvery = 1;
    s.capacityFactor = capacityFactor;
    s.lbCoef = lbCoef;
    return s;
}

// Initialized weights with every 1-D tensor (gains, biases) perturbed off its trivial value.
std::vector<float> weights(const GptShape& s, double stdev, uint64_t seed) {
    const ParameterTable table(s);
    config::ModelConfig m = ws::testing::modelConfigOf(s);
    m.embeddingInitializer = {"normal", 0.0, stdev, -1, 1};
    m.initializer = {"normal", 0.0, stdev, -1, 1};
    std::vector<float> p(table.totalSize());
    initParameters(table, m, seed, p.data());
    for (const TensorSlice& t : table.tensors()) {
        if (t.shape.size() != 1) continue;
        for (size_t i = 0; i < t.size; ++i)
            p[t.offset + i] += float(0.1 * rng::standardNormal(seed + 99, t.offset + i));
    }
    return p;
}

std::vector<int32_t> tokens(int n, int vocab, uint64_t seed) {
    std::vector<int32_t> ids(static_cast<size_t>(n));
    for (int i = 0; i < n; ++i) ids[size_t(i)] = int32_t(rng::bits(seed, uint64_t(i)) % vocab);
    return ids;
}

void checkMoeGradient(const GptShape& shape, bool expectDrops) {
    const int B = 2, T = 5;
    Gpt<double> gpt(shape, B, T);
    const std::vector<float> init = weights(shape, 0.3, 5);
    std::vector<double> params(init.begin(), init.end());
    const auto inputs = tokens(B * T, shape.vocab, 1), targets = tokens(B * T, shape.vocab, 2);
    auto loss = [&] { return gpt.forward(params.data(), inputs.data(), targets.data(), true, 7); };
    loss();
    int dropped = 0;
    for (int l = 0; l < shape.layers; ++l) {
        if (!shape.isMoeBlock(l)) {
            EXPECT_TRUE(gpt.expertTokenCounts(l).empty());
            continue;
        }
        dropped += gpt.droppedAssignments(l);
        int kept = 0;
        for (int c : gpt.expertTokenCounts(l)) kept += c;
        EXPECT_EQ(kept + gpt.droppedAssignments(l), B * T * shape.topK);
        EXPECT_EQ(gpt.loadBalancingLoss(l) > 0.0, shape.lbCoef > 0.0);
    }
    EXPECT_EQ(dropped > 0, expectDrops);
    std::vector<double> grads(params.size(), 0.0);
    gpt.backward(params.data(), grads.data());
    for (int l = 0; l < shape.layers; ++l) {  // every router gets a gradient
        if (!shape.isMoeBlock(l)) continue;
        const TensorSlice* router =
            gpt.table().find("h." + std::to_string(l) + ".mlp.router.weight");
        ASSERT_NE(router, nullptr);
        double norm = 0;
        for (size_t i = 0; i < router->size; ++i) norm += std::abs(grads[router->offset + i]);
        EXPECT_GT(norm, 0.0) << router->name;
    }
    std::vector<size_t> every(params.size());
    std::iota(every.begin(), every.end(), size_t{0});
    expectGradientMatches(params, grads, loss, "dparams", std::move(every));
}

TEST(MoeGradcheck, TopOneNoCapacityWithLoadBalancing) {
    checkMoeGradient(moeShape(3, 1, 0.0, 0.1), false);
}

TEST(MoeGradcheck, TopTwoNoCapacityWithLoadBalancing) {
    checkMoeGradient(moeShape(3, 2, 0.0, 0.1), false);
}

TEST(MoeGradcheck, TopOneWithCapacityDrops) {
    checkMoeGradient(moeShape(3, 1, 0.5, 0.1), true);
}

TEST(MoeGradcheck, TopTwoWithCapacityDropsAndNormalisedWeights) {
    GptShape s = moeShape(4, 2, 0.6, 0.05);
    s.expertNormalize = true;
    checkMoeGradient(s, true);
}

TEST(MoeGradcheck, EveryOtherBlockWithoutLoadBalancing) {
    GptShape s = moeShape(2, 1, 0.0, 0.0);
    s.layers = 3;
    s.moeEvery = 2;  // blocks 0 and 2
    checkMoeGradient(s, false);
}

// One expert with top_k 1: the gate is softmax over one logit = 1 exactly, so the block is the
// dense GPT-2 block with the MLP's weights moved into expert 0 (and the router learns nothing).
void checkSingleExpertEqualsDense(bool bf16) {
    GptShape dense = gradcheckShape(true);
    dense.dropout = 0.1;
    dense.bf16 = bf16;
    GptShape moe = dense;
    moe.numExperts = 1;
    moe.topK = 1;
    moe.lbCoef = 0.0;
    moe.capacityFactor = 1.0;  // capacity = all tokens: nothing is dropped
    const ParameterTable dt(dense), mt(moe);
    const std::vector<float> pd = weights(dense, 0.3, 11);
    std::vector<float> pm = weights(moe, 0.3, 12);  // the router keeps its own random values
    auto moeName = [](const std::string& name) {
        const size_t at = name.find(".mlp.c_");
        if (at == std::string::npos) return name;
        return name.substr(0, at) + ".mlp.experts.0." + name.substr(at + 5);
    };
    for (const TensorSlice& t : dt.tensors()) {
        const TensorSlice* m = mt.find(moeName(t.name));
        ASSERT_NE(m, nullptr) << t.name;
        std::copy(pd.begin() + long(t.offset), pd.begin() + long(t.offset + t.size),
                  pm.begin() + long(m->offset));
    }
    const int B = 2, T = 6;
    Gpt<float> a(dense, B, T), b(moe, B, T);
    const auto in = tokens(B * T, dense.vocab, 3), tg = tokens(B * T, dense.vocab, 4);
    const float la = a.forward(pd.data(), in.data(), tg.data(), true, 5);
    const float lb = b.forward(pm.data(), in.data(), tg.data(), true, 5);
    EXPECT_EQ(la, lb);
    std::vector<float> ga(pd.size(), 0.0f), gb(pm.size(), 0.0f);
    a.backward(pd.data(), ga.data());
    b.backward(pm.data(), gb.data());
    for (const TensorSlice& t : dt.tensors()) {
        const TensorSlice* m = mt.find(moeName(t.name));
        for (size_t i = 0; i < t.size; ++i)
            ASSERT_EQ(ga[t.offset + i], gb[m->offset + i]) << t.name << "[" << i << "]";
    }
    const TensorSlice* router = mt.find("h.0.mlp.router.weight");
    for (size_t i = 0; i < router->size; ++i) EXPECT_EQ(gb[router->offset + i], 0.0f);
    EXPECT_EQ(b.expertTokenCounts(1), std::vector<int>{B * T});
}

TEST(MoeTest, OneExpertTopOneEqualsTheDenseModelBitForBit) {
    checkSingleExpertEqualsDense(false);
}

TEST(MoeTest, OneExpertTopOneEqualsTheDenseModelInBf16Too) {
    checkSingleExpertEqualsDense(true);
}

// The trap of Cerebras' MoE write-up: with top_k 1 and renormalised weights the router gets no
// gradient. Here the gate is the softmax probability, so the router learns from the loss alone
// (no load-balancing loss) at top_k 1 and 2.
void checkRouterLearns(int k) {
    GptShape s = gradcheckShape(true);
    s.numExperts = 4;
    s.topK = k;
    s.lbCoef = 0.0;
    const ParameterTable table(s);
    std::vector<float> p = weights(s, 0.2, 21);
    const std::vector<float> start = p;
    const int B = 4, T = 8;
    Gpt<float> gpt(s, B, T);
    const auto in = tokens(B * T, s.vocab, 5);
    std::vector<int32_t> tg(in.size());
    for (size_t i = 0; i < in.size(); ++i) tg[i] = (in[i] + 1) % s.vocab;
    const TensorSlice* router = table.find("h.1.mlp.router.weight");
    float first = 0, last = 0;
    for (int step = 0; step < 30; ++step) {
        const float loss = gpt.forward(p.data(), in.data(), tg.data(), true, 0);
        (step == 0 ? first : last) = loss;
        std::vector<float> g(p.size(), 0.0f);
        gpt.backward(p.data(), g.data());
        double norm = 0;
        for (size_t i = 0; i < router->size; ++i) norm += std::abs(g[router->offset + i]);
        ASSERT_GT(norm, 1e-7) << "step " << step << ": the router gets no gradient";
        for (size_t i = 0; i < p.size(); ++i) p[i] -= 0.5f * g[i];
    }
    double moved = 0;
    for (size_t i = 0; i < router->size; ++i)
        moved += std::abs(double(p[router->offset + i]) - start[router->offset + i]);
    EXPECT_GT(moved / double(router->size), 1e-3);
    EXPECT_LT(last, first);
}

TEST(MoeTest, RouterLearnsWithTopOne) {
    checkRouterLearns(1);
}

TEST(MoeTest, RouterLearnsWithTopTwo) {
    checkRouterLearns(2);
}

// Frozen tensors (fine-tuning's freeze_blocks, or any tensor): a frozen router or expert gets no
// gradient written, and every trainable gradient is the same bits as with nothing frozen.
TEST(MoeTest, FrozenRouterAndExpertLeaveTheOtherGradientsUnchanged) {
    GptShape s = gradcheckShape(true);
    s.numExperts = 3;
    s.topK = 2;
    s.lbCoef = 0.01;
    const ParameterTable table(s);
    const std::vector<float> p = weights(s, 0.2, 31);
    const int B = 2, T = 6;
    const auto in = tokens(B * T, s.vocab, 8), tg = tokens(B * T, s.vocab, 9);
    Gpt<float> all(s, B, T), some(s, B, T);
    std::vector<bool> frozen(table.tensors().size(), false);
    std::vector<std::string> names = {"h.0.mlp.router.weight", "h.1.mlp.experts.1.c_fc.weight",
                                      "h.1.mlp.experts.1.c_proj.bias"};
    for (size_t t = 0; t < table.tensors().size(); ++t)
        for (const std::string& name : names)
            if (table.tensors()[t].name == name) frozen[t] = true;
    some.setFrozen(frozen);
    all.forward(p.data(), in.data(), tg.data(), true, 1);
    some.forward(p.data(), in.data(), tg.data(), true, 1);
    std::vector<float> ga(p.size(), 0.0f), gs(p.size(), 7.0f);
    all.backward(p.data(), ga.data());
    for (size_t t = 0; t < table.tensors().size(); ++t) {  // gradients accumulate into 0 ...
        const TensorSlice& slice = table.tensors()[t];
        if (!frozen[t]) std::fill_n(gs.begin() + long(slice.offset), slice.size, 0.0f);
    }
    some.backward(p.data(), gs.data());
    for (size_t t = 0; t < table.tensors().size(); ++t) {
        const TensorSlice& slice = table.tensors()[t];
        for (size_t i = 0; i < slice.size; ++i)
            ASSERT_EQ(gs[slice.offset + i], frozen[t] ? 7.0f : ga[slice.offset + i])
                << slice.name << "[" << i << "]";  // ... and frozen ones are never written
    }
}

TEST(MoeRouting, CapacityKeepsFirstChoicesInTokenOrderThenSecondChoices) {
    // 4 tokens, 2 experts, k 2: every token ranks expert 0 first except token 3.
    const std::vector<double> probs = {0.9, 0.1, 0.8, 0.2, 0.6, 0.4, 0.3, 0.7};
    std::vector<double> gates(8);
    moe::Routing r;
    moe::route(r, gates.data(), probs.data(), 4, 2, 2, /*capacity=*/3, false, 1.0);
    EXPECT_EQ(r.choice, (std::vector<int32_t>{0, 1, 0, 1, 0, 1, 1, 0}));
    EXPECT_EQ(r.routed, (std::vector<int>{4, 4}));
    // Expert 0: first choices of tokens 0, 1, 2 fill it; token 3's second choice is dropped.
    // Expert 1: token 3's first choice, then second choices of tokens 0 and 1; token 2's dropped.
    EXPECT_EQ(r.counts, (std::vector<int>{3, 3}));
    EXPECT_EQ(r.dropped, 2);
    EXPECT_EQ(r.row[2 * 3 + 1], -1);  // token 3, slot 1 (expert 0)
    EXPECT_EQ(r.row[2 * 2 + 1], -1);  // token 2, slot 1 (expert 1)
    EXPECT_EQ(r.tokenOfRow, (std::vector<int32_t>{0, 1, 2, 0, 1, 3}));
    EXPECT_EQ(gates[1], 0.1);  // the softmax probability itself, not renormalised
    // Balanced assignments (f = 1/2 each) and mean probabilities 0.65 / 0.35: lb = 2 · (0.5 ·
    // 0.65 + 0.5 · 0.35) = 1.
    EXPECT_NEAR(r.lbLoss, 1.0, 1e-12);
}

TEST(MoeRouting, TiesGoToTheLowerExpertAndNormalisationSumsToOne) {
    const std::vector<float> probs = {0.25f, 0.25f, 0.25f, 0.25f};
    std::vector<float> gates(2);
    moe::Routing r;
    moe::route(r, gates.data(), probs.data(), 1, 4, 2, 1, true, 0.0);
    EXPECT_EQ(r.choice, (std::vector<int32_t>{0, 1}));
    EXPECT_EQ(gates, (std::vector<float>{0.5f, 0.5f}));
    EXPECT_EQ(r.lbLoss, 0.0);
}

}  // namespace
}  // namespace ws::model
