// SPDX-License-Identifier: GPL-3.0-or-later
// The training mask across systems and micro-batches (issue 34): a step's gradient and loss are
// the means over the GLOBAL batch's trained targets (>= 0), however those fall between systems
// and micro-batches. 2 systems x 2 micro-batches with most trained tokens in one micro-batch and
// none in another train like one system over the whole batch, and not like the mean of the
// micro-batches' means (which weights a micro-batch's few tokens as much as another's many); in
// fp32, bf16 and with LoRA on a frozen base.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "engine/model/gpt.h"
#include "engine/model/model_facts.h"
#include "engine/model/parameters.h"
#include "engine/optim/optimizer.h"
#include "engine/streaming/executor.h"
#include "engine/streaming/memoryx.h"
#include "streaming_test_util.h"

namespace ws::streaming {
namespace {

using testing::adamw;
using testing::batch;
using testing::startWeights;
using testing::streamingShape;
using testing::TrainableStore;
using testing::trainableStore;

constexpr int kB = 8, kT = 8, kSteps = 4;
constexpr int kSystems = 2, kMicro = 2;  // 2 systems x 2 micro-batches of 2 sequences

// The step's targets with the mask: with 2 systems x 2 micro-batches, system s's micro-batch m
// holds sequences 4s + 2m and 4s + 2m + 1. Sequences 0-1 train everywhere (16 tokens), 2-3 on
// two tokens, 4-5 on one, 6-7 on none (an all-masked micro-batch).
void maskedBatch(int64_t step, int vocab, std::vector<int32_t>& in, std::vector<int32_t>& out) {
    batch(step, kB, kT, vocab, in, out);
    for (int b = 2; b < kB; ++b) {
        for (int t = 0; t < kT; ++t) {
            const bool trained = (b == 2 && t == 7) || (b == 3 && t == 6) || (b == 5 && t == 3);
            if (!trained) out[size_t(b) * kT + t] = -1 - int32_t((b + t) % 3);
        }
    }
}

std::vector<optim::ParamGroup> groupsFor(const model::ParameterTable& table) {
    return testing::groupsFor(table, config::OptimizerConfig{});
}

struct MaskedRun {
    std::vector<float> weights;
    std::vector<double> losses;
    std::vector<int64_t> lossTokens;
};

// The plain reference on the host. meanOfMeans false: one Gpt over the whole batch (the mean
// over its trained targets). true: the wrong semantics, each of the 2 x 2 micro-batches' own
// mean, averaged (an all-masked micro-batch counting as 0).
MaskedRun trainPlain(const model::GptShape& shape, bool meanOfMeans,
                     const std::vector<int32_t>& positionIds) {
    const model::ParameterTable table(shape);
    const auto groups = groupsFor(table);
    std::vector<bool> frozen;
    for (const auto& g : groups) frozen.push_back(g.frozen);
    MaskedRun r;
    r.weights = startWeights(table);
    std::vector<float> grads(table.totalSize());
    optim::Optimizer opt(adamw(0.0), groups, table.totalSize());
    const int rows = meanOfMeans ? kMicro : kB, parts = kB / rows;
    model::Gpt<float> gpt(shape, rows, kT);
    gpt.setFrozen(frozen);
    std::vector<int32_t> in, out;
    for (int step = 0; step < kSteps; ++step) {
        maskedBatch(step, shape.vocab, in, out);
        std::fill(grads.begin(), grads.end(), 0.0f);
        double loss = 0.0;
        for (int p = 0; p < parts; ++p) {
            const size_t at = size_t(p) * rows * kT;
            gpt.setPositionIds(positionIds.empty() ? nullptr : positionIds.data() + at);
            loss += gpt.forward(r.weights.data(), in.data() + at, out.data() + at, true, 0);
            gpt.backward(r.weights.data(), grads.data());
        }
        for (float& g : grads) g /= float(parts);
        r.losses.push_back(loss / parts);
        r.lossTokens.push_back(model::countTrainedTargets(out.data(), out.size()));
        opt.update(r.weights.data(), grads.data(), 1e-2, 1.0, step + 1);
    }
    return r;
}

MaskedRun trainStreamed(const model::GptShape& shape, int systems, int microBatch,
                        const std::vector<int32_t>& positionIds) {
    const model::ParameterTable table(shape);
    const auto groups = groupsFor(table);
    const TrainableStore store =
        trainableStore(shape, groups, adamw(0.0), startWeights(table), systems, microBatch, kB, kT);
    MemoryX& mx = *store.memoryx;
    StreamingExecutor& exec = *store.executor;
    exec.setPositionIds(positionIds.empty() ? nullptr : positionIds.data());
    MaskedRun r;
    std::vector<int32_t> in, out;
    for (int step = 0; step < kSteps; ++step) {
        maskedBatch(step, shape.vocab, in, out);
        const auto s = exec.step(step, in.data(), out.data(), 1e-2, 0.0, step + 1, 0);
        r.losses.push_back(s.loss);
        r.lossTokens.push_back(s.lossTokens);
    }
    r.weights.assign(mx.weights(), mx.weights() + table.totalSize());
    return r;
}

double worstDifference(const std::vector<float>& a, const std::vector<float>& b) {
    double worst = 0.0;
    for (size_t i = 0; i < a.size(); ++i) worst = std::max(worst, double(std::abs(a[i] - b[i])));
    return worst;
}

// Within executor_test.cpp's several-systems tolerance (losses 1e-5, weights 1e-4) of the plain
// global mean, and at least ten times that away from the mean of the micro-batches' means.
// positionIds (kB,kT): packed rows, or empty.
void expectGlobalMean(const model::GptShape& shape, const std::vector<int32_t>& positionIds = {}) {
    const MaskedRun plain = trainPlain(shape, false, positionIds);
    const MaskedRun wrong = trainPlain(shape, true, positionIds);
    const MaskedRun streamed = trainStreamed(shape, kSystems, kMicro, positionIds);
    ASSERT_EQ(streamed.losses.size(), plain.losses.size());
    ASSERT_EQ(streamed.weights.size(), plain.weights.size());
    for (size_t i = 0; i < plain.losses.size(); ++i) {
        EXPECT_EQ(plain.lossTokens[i], 19);
        EXPECT_EQ(streamed.lossTokens[i], 19);
        EXPECT_NEAR(streamed.losses[i], plain.losses[i], 1e-5) << "step " << i;
        EXPECT_GT(std::abs(wrong.losses[i] - plain.losses[i]), 1e-4) << "step " << i;
    }
    const double close = worstDifference(streamed.weights, plain.weights);
    const double far = worstDifference(wrong.weights, plain.weights);
    EXPECT_LT(close, 1e-4);
    EXPECT_GT(far, 1e-3);
    ::testing::Test::RecordProperty("worst_weight_difference", std::to_string(close));
    ::testing::Test::RecordProperty("mean_of_means_weight_difference", std::to_string(far));
    // The trained weights moved (the comparison is not of two untouched starts).
    EXPECT_GT(worstDifference(plain.weights, startWeights(model::ParameterTable(shape))), 1e-3);
}

TEST(LossMaskExecutor, TwoSystemsTwoMicroBatchesGiveTheGlobalBatchMean) {
    expectGlobalMean(streamingShape(true));
    expectGlobalMean(streamingShape(false));
}

TEST(LossMaskExecutor, Bf16GivesTheGlobalBatchMean) {
    model::GptShape shape = streamingShape(true);
    shape.bf16 = true;
    expectGlobalMean(shape);
}

TEST(LossMaskExecutor, LoraOnAFrozenBaseGivesTheGlobalBatchMean) {
    model::GptShape shape = streamingShape(true);
    shape.applyLora(config::LoraConfig{
        .rank = 2, .alpha = 4.0, .dropout = 0.0, .targets = {"c_attn", "c_fc", "mlp.c_proj"}});
    const auto groups = groupsFor(model::ParameterTable(shape));
    ASSERT_TRUE(std::any_of(groups.begin(), groups.end(), [](auto& g) { return g.frozen; }));
    expectGlobalMean(shape);
}

// Packed rows (position ids restarting at each document, as examples are packed): documents of
// 3 and 5 tokens in every row.
TEST(LossMaskExecutor, PackedRowsGiveTheGlobalBatchMean) {
    std::vector<int32_t> positionIds(size_t(kB) * kT);
    for (size_t i = 0; i < positionIds.size(); ++i) {
        const int t = int(i % kT);
        positionIds[i] = t < 3 ? t : t - 3;
    }
    expectGlobalMean(streamingShape(true), positionIds);
    // The packing reached the model: the dense rows train otherwise.
    EXPECT_NE(trainPlain(streamingShape(true), false, positionIds).losses,
              trainPlain(streamingShape(true), false, {}).losses);
}

// MoE blocks stream per expert; the head is the same. Without the load-balancing term (a mean
// over each micro-batch's routing) and with room for every token (no capacity drops, which
// depend on the micro-batch), 2 x 2 train like one system over the global batch.
TEST(LossMaskExecutor, MoeGivesTheGlobalBatchMean) {
    model::GptShape shape = streamingShape(true);
    shape.numExperts = 3;
    shape.topK = 2;
    shape.moeEvery = 1;
    shape.capacityFactor = 4.0;
    shape.lbCoef = 0.0;
    ASSERT_TRUE(shape.validate(kB, kT).ok());
    expectGlobalMean(shape);
}

// One system, one micro-batch: the executor is the plain step bit for bit with the mask too.
TEST(LossMaskExecutor, OneSystemIsThePlainStepBitForBit) {
    const auto shape = streamingShape(false);
    const MaskedRun plain = trainPlain(shape, false, {});
    const MaskedRun streamed = trainStreamed(shape, 1, 0, {});
    EXPECT_EQ(streamed.losses, plain.losses);
    EXPECT_TRUE(streamed.weights == plain.weights) << "weights differ";
}

// A step whose every target is masked: loss 0 over 0 tokens, and no gradient (AdamW's weight
// decay still applies; without it nothing moves).
TEST(LossMaskExecutor, AnAllMaskedStepTrainsNothing) {
    const auto shape = streamingShape(true);
    const model::ParameterTable table(shape);
    auto oc = adamw(0.0);
    oc.weightDecay = 0.0;
    auto mx = MemoryX::create(config::MemoryXConfig{}, table.totalSize(),
                              optim::Optimizer::stateCopies(oc), largestLayerSize(table));
    ASSERT_TRUE(mx.ok());
    model::initParameters(table, config::ModelConfig{}, 42, (*mx)->weights());
    const std::vector<float> before((*mx)->weights(), (*mx)->weights() + table.totalSize());
    optim::Optimizer opt(oc, testing::groupsOf(table), table.totalSize(), (*mx)->optimizerState());
    StreamingOptions options;
    options.systems = kSystems;
    options.microBatch = kMicro;
    StreamingExecutor exec(shape, kB, kT, options, **mx, opt);
    std::vector<int32_t> in, out;
    batch(0, kB, kT, shape.vocab, in, out);
    std::fill(out.begin(), out.end(), -1);
    const auto r = exec.step(0, in.data(), out.data(), 1e-2, 0.0, 1, 0);
    EXPECT_EQ(r.loss, 0.0);
    EXPECT_EQ(r.lossTokens, 0);
    EXPECT_EQ(r.gradNorm, 0.0);
    const std::vector<float> after((*mx)->weights(), (*mx)->weights() + table.totalSize());
    EXPECT_TRUE(after == before);
}

// Nothing masked: lossTokens is the whole batch and the loss its plain mean.
TEST(LossMaskExecutor, UnmaskedStepCountsEveryToken) {
    const auto shape = streamingShape(true);
    const model::ParameterTable table(shape);
    const auto oc = adamw(0.0);
    auto mx = MemoryX::create(config::MemoryXConfig{}, table.totalSize(),
                              optim::Optimizer::stateCopies(oc), largestLayerSize(table));
    ASSERT_TRUE(mx.ok());
    model::initParameters(table, config::ModelConfig{}, 42, (*mx)->weights());
    optim::Optimizer opt(oc, testing::groupsOf(table), table.totalSize(), (*mx)->optimizerState());
    StreamingOptions options;
    options.systems = kSystems;
    options.microBatch = kMicro;
    StreamingExecutor exec(shape, kB, kT, options, **mx, opt);
    std::vector<int32_t> in, out;
    batch(0, kB, kT, shape.vocab, in, out);
    const auto r = exec.step(0, in.data(), out.data(), 1e-2, 0.0, 1, 0);
    EXPECT_EQ(r.lossTokens, kB * kT);
    EXPECT_GT(r.loss, 1.0);
}

}  // namespace
}  // namespace ws::streaming
