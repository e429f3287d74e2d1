// SPDX-License-Identifier: GPL-3.0-or-later
// MemoryX in the Trainable layout (issue 16): gradients and optimizer state for the parameters
// that train only. Sizes exact; a LoRA run and a run with frozen embeddings and blocks, streamed
// with the new layout (frozen gradients neither computed nor streamed), give the same weights bit
// for bit as the full-gradient reference whose frozen gradients are discarded (plain Gpt backward
// into a full buffer, an optimizer over the Full layout); several systems equal one; only
// trainable gradient bytes leave the systems; a file-backed store rolls back an interrupted
// update of the compact state.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <vector>

#include "engine/model/gpt.h"
#include "engine/model/model_facts.h"
#include "engine/model/parameters.h"
#include "engine/optim/optimizer.h"
#include "engine/streaming/executor.h"
#include "engine/streaming/memoryx.h"
#include "streaming_test_util.h"
#include "support/temp_dir.h"

namespace ws::streaming {
namespace {

using testing::adamw;
using testing::batch;
using testing::groupsFor;
using testing::startWeights;
using testing::streamingShape;
using testing::TrainableStore;
using testing::trainableStore;

constexpr int kB = 8, kT = 8, kSteps = 4;

model::GptShape loraShape(bool bf16) {
    model::GptShape s = streamingShape(true);
    s.bf16 = bf16;
    s.applyLora(config::LoraConfig{
        .rank = 2, .alpha = 4.0, .dropout = 0.1, .targets = {"c_attn", "c_fc", "mlp.c_proj"}});
    return s;
}

struct Run {
    std::vector<float> weights;
    std::vector<double> losses, norms;
    int64_t bytesOut = 0, bytesIn = 0;
    int bytesPerWeight = 0;
    size_t memoryxBytes = 0;
};

// The reference: the plain full backward (every gradient computed), an optimizer over the Full
// layout that skips the frozen groups (their gradients computed and discarded).
Run trainReference(const model::GptShape& shape, const config::OptimizerConfig& freeze,
                   double maxNorm) {
    const model::ParameterTable table(shape);
    Run r;
    r.weights = startWeights(table);
    std::vector<float> grads(table.totalSize());
    optim::Optimizer opt(adamw(maxNorm), groupsFor(table, freeze), table.totalSize());
    model::Gpt<float> gpt(shape, kB, kT);
    std::vector<int32_t> in, out;
    for (int step = 0; step < kSteps; ++step) {
        batch(step, kB, kT, shape.vocab, in, out);
        std::fill(grads.begin(), grads.end(), 0.0f);
        r.losses.push_back(gpt.forward(r.weights.data(), in.data(), out.data(), true, 100 + step));
        gpt.backward(r.weights.data(), grads.data());
        const double norm = opt.gradientNorm(grads.data());
        r.norms.push_back(norm);
        opt.update(r.weights.data(), grads.data(), 1e-2, optim::clipFactor(norm, maxNorm),
                   step + 1);
    }
    return r;
}

Run trainStreamed(const model::GptShape& shape, const config::OptimizerConfig& freeze,
                  double maxNorm, int systems, int microBatch) {
    const model::ParameterTable table(shape);
    const auto groups = groupsFor(table, freeze);
    const TrainableStore store = trainableStore(shape, groups, adamw(maxNorm), startWeights(table),
                                                systems, microBatch, kB, kT);
    MemoryX& mx = *store.memoryx;
    StreamingExecutor& exec = *store.executor;
    Run r;
    std::vector<int32_t> in, out;
    for (int step = 0; step < kSteps; ++step) {
        batch(step, kB, kT, shape.vocab, in, out);
        const auto s = exec.step(step, in.data(), out.data(), 1e-2, maxNorm, step + 1, 100 + step);
        r.losses.push_back(s.loss);
        r.norms.push_back(s.gradNorm);
    }
    r.weights.assign(mx.weights(), mx.weights() + table.totalSize());
    r.bytesOut = exec.stats().bytesStreamedOut;
    r.bytesIn = exec.stats().bytesStreamedIn;
    r.bytesPerWeight = exec.stats().bytesPerWeight;
    r.memoryxBytes = mx.bytes();
    return r;
}

size_t differing(const std::vector<float>& a, const std::vector<float>& b) {
    size_t n = 0;
    for (size_t i = 0; i < a.size(); ++i) n += std::memcmp(&a[i], &b[i], sizeof(float)) != 0;
    return n;
}

TEST(TrainableLayout, MemoryXHoldsGradientsAndStateOfTrainableParametersOnly) {
    const model::ParameterTable table(loraShape(false));
    const auto groups = groupsFor(table, {});
    const size_t P = table.totalSize(), trained = optim::trainableSize(groups);
    size_t adapters = 0;
    for (const auto& t : table.tensors())
        if (t.name.find(".lora_") != std::string::npos) adapters += t.size;
    EXPECT_EQ(trained, adapters);
    EXPECT_EQ(trained, model::trainableParameterCount(table, {}));
    auto mx = MemoryX::create(config::MemoryXConfig{}, P, 2, largestLayerSize(table), trained);
    ASSERT_TRUE(mx.ok());
    EXPECT_EQ((*mx)->bytes(), (P + 3 * trained) * sizeof(float));  // weights + grads + 2 moments
    EXPECT_EQ((*mx)->trainableCount(), trained);
    const auto state = (*mx)->optimizerState();
    EXPECT_EQ(state.firstMoment, (*mx)->gradients() + trained);
    EXPECT_EQ(state.secondMoment, (*mx)->gradients() + 2 * trained);
    optim::Optimizer opt(adamw(0.0), groups, P, state, optim::GradientLayout::Trainable);
    EXPECT_EQ(opt.stateSize(), trained);
    EXPECT_EQ(opt.firstMoment().size(), trained);
    // A shard whose layers are all frozen keeps weights alone.
    auto none = MemoryX::create(config::MemoryXConfig{}, P, 2, largestLayerSize(table), 0);
    ASSERT_TRUE(none.ok());
    EXPECT_EQ((*none)->bytes(), P * sizeof(float));
    // Nothing frozen: the Trainable layout is the Full one, and MemoryX's size is unchanged.
    auto all = MemoryX::create(config::MemoryXConfig{}, P, 2, largestLayerSize(table));
    ASSERT_TRUE(all.ok());
    EXPECT_EQ((*all)->bytes(), 4 * P * sizeof(float));
}

// (bf16, max gradient norm, micro-batch)
class LoraTrainableLayout : public ::testing::TestWithParam<std::tuple<bool, double, int>> {};

TEST_P(LoraTrainableLayout, EqualsFullGradientReferenceBitForBit) {
    const auto [bf16, maxNorm, microBatch] = GetParam();
    auto shape = loraShape(bf16);
    // Micro-batches draw other dropout masks than one whole batch: compare them without.
    if (microBatch > 0) shape.loraDropout = 0.0;
    const auto ref = trainReference(shape, {}, maxNorm);
    const auto got = trainStreamed(shape, {}, maxNorm, 1, microBatch);
    if (microBatch == 0) {
        EXPECT_EQ(got.losses, ref.losses);
        EXPECT_EQ(got.norms, ref.norms);
    }
    const size_t P = model::ParameterTable(shape).totalSize();
    if (microBatch == 0) {
        EXPECT_EQ(differing(got.weights, ref.weights), 0u) << "of " << P << " weights";
    } else {
        // Micro-batches sum the gradient in another order: the same step within rounding.
        double worst = 0.0;
        for (size_t i = 0; i < P; ++i)
            worst = std::max(worst, double(std::abs(got.weights[i] - ref.weights[i])));
        EXPECT_LT(worst, 1e-5);
    }
    // The whole model streams in, the frozen base included, as bf16 in bf16 mode.
    const model::ParameterTable table(shape);
    EXPECT_EQ(got.bytesPerWeight, bf16 ? 2 : 4);
    if (microBatch == 0) {
        EXPECT_EQ(got.bytesIn, kSteps * model::streamedWeightsPerPass(table) * (bf16 ? 2 : 4));
    }
    // The base never moved.
    const auto start = startWeights(table);
    for (const auto& t : table.tensors())
        if (t.name.find(".lora_") == std::string::npos) {
            EXPECT_EQ(std::memcmp(got.weights.data() + t.offset, start.data() + t.offset,
                                  t.size * sizeof(float)),
                      0)
                << t.name;
        }
}

INSTANTIATE_TEST_SUITE_P(Bf16ClipMicro, LoraTrainableLayout,
                         ::testing::Values(std::make_tuple(false, 0.0, 0),
                                           std::make_tuple(false, 0.5, 0),
                                           std::make_tuple(true, 0.5, 0),
                                           std::make_tuple(false, 0.0, 2)));

TEST(TrainableLayout, FrozenEmbeddingsAndBlockEqualFullGradientReferenceBitForBit) {
    config::OptimizerConfig freeze;
    freeze.freezeEmbeddings = true;
    freeze.freezeBlocks = 1;
    for (bool tied : {true, false}) {
        const auto shape = streamingShape(tied);
        const auto ref = trainReference(shape, freeze, 0.5);
        const auto got = trainStreamed(shape, freeze, 0.5, 1, 0);
        EXPECT_EQ(got.losses, ref.losses);
        EXPECT_EQ(got.norms, ref.norms);
        EXPECT_EQ(differing(got.weights, ref.weights), 0u) << (tied ? "tied" : "untied");
        const model::ParameterTable table(shape);
        const size_t trained = model::trainableParameterCount(table, freeze);
        EXPECT_EQ(got.memoryxBytes, (table.totalSize() + 3 * trained) * sizeof(float));
    }
}

TEST(TrainableLayout, SeveralSystemsEqualOneAndStreamOnlyTrainableGradients) {
    auto shape = loraShape(false);
    shape.loraDropout = 0.0;  // each system draws its own masks: compare without
    const model::ParameterTable table(shape);
    const size_t trained = model::trainableParameterCount(table, {});
    const auto one = trainStreamed(shape, {}, 0.5, 1, 0);
    for (int systems : {2, 4}) {
        const auto many = trainStreamed(shape, {}, 0.5, systems, 0);
        double worst = 0.0;
        for (size_t i = 0; i < one.weights.size(); ++i)
            worst = std::max(worst, double(std::abs(many.weights[i] - one.weights[i])));
        EXPECT_LT(worst, 1e-5) << systems << " systems";
        for (int s = 0; s < kSteps; ++s)
            EXPECT_NEAR(many.losses[size_t(s)], one.losses[size_t(s)], 1e-5);
        // Each system streams the adapters' gradients out, once per step, and nothing else.
        EXPECT_EQ(many.bytesOut, int64_t(trained * sizeof(float)) * systems * kSteps);
    }
    EXPECT_EQ(one.bytesOut, int64_t(trained * sizeof(float)) * kSteps);
}

// A file-backed store: the compact state of the layer being updated is journaled and rolled back.
TEST(TrainableLayout, FileBackedStoreRollsBackAnInterruptedUpdateOfTheCompactState) {
    ws::testing::TempDir dir("mx_trainable");
    const auto path = dir.path() / "store";
    config::MemoryXConfig c;
    c.backing = "file";
    c.path = path.string();
    const size_t P = 1000, trained = 100;
    {
        auto mx = MemoryX::create(c, P, 2, 200, trained);
        ASSERT_TRUE(mx.ok()) << mx.error().message;
        EXPECT_EQ((*mx)->trainableCount(), trained);
        float* w = (*mx)->weights();
        auto state = (*mx)->optimizerState();
        for (size_t i = 0; i < P; ++i) w[i] = float(i);
        for (size_t i = 0; i < trained; ++i) {
            state.firstMoment[i] = float(i) + 0.5f;
            state.secondMoment[i] = float(i) + 0.25f;
        }
        // Update weights [200, 400) whose state lives at [30, 60), then "crash" before the end.
        (*mx)->beginUpdate(200, 200, 30, 30);
        for (size_t i = 200; i < 400; ++i) w[i] = -1.0f;
        for (size_t i = 30; i < 60; ++i) state.firstMoment[i] = state.secondMoment[i] = -1.0f;
    }  // unmapped without endUpdate: the journal stays marked valid
    auto mx = MemoryX::open(path);
    ASSERT_TRUE(mx.ok()) << mx.error().message;
    EXPECT_TRUE((*mx)->rolledBack());
    EXPECT_EQ((*mx)->trainableCount(), trained);
    EXPECT_EQ((*mx)->bytes(), (P + 3 * trained) * sizeof(float));
    const float* w = (*mx)->weights();
    auto state = (*mx)->optimizerState();
    size_t wrong = 0;
    for (size_t i = 0; i < P; ++i) wrong += w[i] != float(i);
    for (size_t i = 0; i < trained; ++i)
        wrong +=
            state.firstMoment[i] != float(i) + 0.5f || state.secondMoment[i] != float(i) + 0.25f;
    EXPECT_EQ(wrong, 0u);
}

}  // namespace
}  // namespace ws::streaming
