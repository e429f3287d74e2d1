// SPDX-License-Identifier: GPL-3.0-or-later
// The backward with frozen tensors (Gpt::setFrozen, issue 16): a frozen tensor's gradient slice
// is never written (its bytes stay as they were, here a NaN canary), and every trainable
// gradient is the same bits as the full backward's, for LoRA (with adapter dropout, fp32 and
// bf16) and for freeze_embeddings / freeze_blocks with a tied or untied head. And the adapters'
// matmuls on the bf16 backend against the fp32 path within a stated tolerance; and the MemoryX
// figures (model::deriveFacts) counting gradients and optimizer state of trainable tensors only.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "engine/model/gpt.h"
#include "engine/model/lora.h"
#include "engine/model/model_facts.h"
#include "engine/model/random.h"
#include "support/test_shapes.h"

namespace ws::model {
namespace {

using ws::testing::gptShape;

std::vector<int32_t> tokens(int n, int vocab, uint64_t seed) {
    std::vector<int32_t> ids(static_cast<size_t>(n));
    for (int i = 0; i < n; ++i) ids[size_t(i)] = int32_t(rng::bits(seed, uint64_t(i)) % vocab);
    return ids;
}

std::vector<float> randomParams(const ParameterTable& table, uint64_t seed) {
    std::vector<float> p(table.totalSize());
    for (size_t i = 0; i < p.size(); ++i) p[i] = float(rng::uniform(seed, i) - 0.5) * 0.2f;
    // LayerNorm gains near 1, so the activations keep their scale.
    for (const auto& t : table.tensors())
        if (t.name.find("ln_") != std::string::npos && t.name.ends_with(".weight"))
            for (size_t i = 0; i < t.size; ++i) p[t.offset + i] += 1.0f;
    return p;
}

// One forward + backward on `gpt` (frozen flags set or not); the gradients start at zero, but
// those of the `canary` tensors at NaN (the backward accumulates).
std::vector<float> gradients(Gpt<float>& gpt, const std::vector<float>& params,
                             const std::vector<bool>& canary = {}) {
    const int N = gpt.batch() * gpt.seqLen();
    const auto in = tokens(N, gpt.shape().vocab, 1), out = tokens(N, gpt.shape().vocab, 2);
    std::vector<float> grads(params.size(), 0.0f);
    for (size_t t = 0; t < canary.size(); ++t) {
        const auto& slice = gpt.table().tensors()[t];
        if (canary[t])
            std::fill_n(grads.begin() + std::ptrdiff_t(slice.offset), slice.size,
                        std::numeric_limits<float>::quiet_NaN());
    }
    gpt.forward(params.data(), in.data(), out.data(), true, 77);
    gpt.backward(params.data(), grads.data());
    return grads;
}

void expectFrozenUntouchedTrainableSame(const GptShape& shape,
                                        const config::OptimizerConfig& freeze) {
    const ParameterTable table(shape);
    const auto params = randomParams(table, 5);
    Gpt<float> full(shape, 2, 8), skipping(shape, 2, 8);
    std::vector<bool> frozen;
    size_t frozenCount = 0;
    for (const auto& t : table.tensors()) {
        frozen.push_back(isFrozenTensor(table, t, freeze));
        frozenCount += frozen.back();
    }
    ASSERT_GT(frozenCount, 0u);
    ASSERT_LT(frozenCount, table.tensors().size());
    skipping.setFrozen(frozen);
    const auto reference = gradients(full, params);
    const auto grads = gradients(skipping, params, frozen);
    for (size_t t = 0; t < table.tensors().size(); ++t) {
        const auto& slice = table.tensors()[t];
        if (frozen[t]) {
            size_t written = 0;
            for (size_t i = 0; i < slice.size; ++i) written += !std::isnan(grads[slice.offset + i]);
            EXPECT_EQ(written, 0u) << slice.name << " is frozen: its gradient is never written";
        } else {
            EXPECT_EQ(std::memcmp(grads.data() + slice.offset, reference.data() + slice.offset,
                                  slice.size * sizeof(float)),
                      0)
                << slice.name << " trains: the same bits as the full backward";
        }
    }
}

GptShape loraShape(bool bf16, bool tied) {
    GptShape s = gptShape(23, 16, 2, 2, 32, 8, tied);
    s.bf16 = bf16;
    s.dropout = 0.1;
    s.applyLora(config::LoraConfig{.rank = 3,
                                   .alpha = 6.0,
                                   .dropout = 0.1,
                                   .targets = {"c_attn", "attn.c_proj", "c_fc", "mlp.c_proj"}});
    return s;
}

TEST(FrozenBackward, LoraComputesOnlyTheAdaptersGradientsBitForBit) {
    expectFrozenUntouchedTrainableSame(loraShape(false, true), {});
    expectFrozenUntouchedTrainableSame(loraShape(false, false), {});
}

TEST(FrozenBackward, LoraInBf16ComputesOnlyTheAdaptersGradientsBitForBit) {
    expectFrozenUntouchedTrainableSame(loraShape(true, true), {});
}

TEST(FrozenBackward, FrozenEmbeddingsAndBlocksSkipTheirWeightGradients) {
    config::OptimizerConfig freeze;
    freeze.freezeEmbeddings = true;
    freeze.freezeBlocks = 1;
    for (bool tied : {true, false}) {
        GptShape s = gptShape(23, 16, 3, 2, 32, 8, tied);
        s.dropout = 0.1;
        expectFrozenUntouchedTrainableSame(s, freeze);
    }
    config::OptimizerConfig blocksOnly;
    blocksOnly.freezeBlocks = 2;
    expectFrozenUntouchedTrainableSame(gptShape(23, 16, 3, 2, 32, 8), blocksOnly);
}

// In bf16 mode the adapter's products run on the bf16 backend (bf16 operands, fp32
// accumulation). Against the fp32 products on the same bf16-valued inputs, every output is
// within 2^-7 of the largest output magnitude (a few bf16 roundings of each operand; sums of 64
// or fewer terms), and they differ (the bf16 path really ran).
TEST(LoraBf16, AdapterMatmulsOnTheBf16BackendMatchFp32WithinTolerance) {
    const int N = 24, IN = 64, R = 8, OUT = 48;
    auto randomVec = [](size_t n, uint64_t seed, double scale) {
        std::vector<float> v(n);
        for (size_t i = 0; i < n; ++i) v[i] = float((rng::uniform(seed, i) - 0.5) * scale);
        return v;
    };
    const auto x = randomVec(size_t(N) * IN, 1, 2.0), A = randomVec(size_t(IN) * R, 2, 0.5);
    const auto B = randomVec(size_t(R) * OUT, 3, 0.5), dout = randomVec(size_t(N) * OUT, 4, 1.0);
    struct Result {
        std::vector<float> out, u, dinp, dA, dB;
    };
    auto run = [&](bool bf16) {
        Result r;
        r.out.assign(size_t(N) * OUT, 0.25f);
        r.u.assign(size_t(N) * R, 0.0f);
        r.dinp.assign(size_t(N) * IN, 0.0f);
        r.dA.assign(size_t(IN) * R, 0.0f);
        r.dB.assign(size_t(R) * OUT, 0.0f);
        std::vector<float> du(size_t(N) * R), dropped(size_t(N) * IN);
        lora::loraForward<float>(r.out.data(), r.u.data(), dropped.data(), x.data(), A.data(),
                                 B.data(), N, IN, R, OUT, 2.0f, 0.0, 9, bf16);
        lora::loraBackward<float>(r.dinp.data(), r.dA.data(), r.dB.data(), du.data(),
                                  dropped.data(), dout.data(), x.data(), r.u.data(), A.data(),
                                  B.data(), N, IN, R, OUT, 2.0f, 0.0, 9, bf16);
        return r;
    };
    const Result fp32 = run(false), bf16 = run(true);
    auto compare = [](const std::vector<float>& ref, const std::vector<float>& got,
                      const char* what) {
        double largest = 0.0, worst = 0.0;
        for (size_t i = 0; i < ref.size(); ++i) {
            largest = std::max(largest, std::abs(double(ref[i])));
            worst = std::max(worst, std::abs(double(ref[i]) - double(got[i])));
        }
        EXPECT_LE(worst, largest / 128.0) << what;
        EXPECT_GT(worst, 0.0) << what << ": the bf16 products must round their operands";
    };
    compare(fp32.out, bf16.out, "out");
    compare(fp32.u, bf16.u, "u");
    compare(fp32.dinp, bf16.dinp, "dinp");
    compare(fp32.dA, bf16.dA, "dA");
    compare(fp32.dB, bf16.dB, "dB");
}

// What MemoryX holds, as `wafer validate` and the Config tab report it: fp32 weights of every
// tensor (adapters included), gradients and optimizer state of the trainable ones only.
TEST(ModelFactsMemory, GradientsAndStateCountTheTrainableParametersOnly) {
    config::Config c;
    c.model = ws::testing::modelConfig(64, 32, 3, 4, 128, 16);
    c.optimizer.optimizerType = "adamw";
    const ModelFacts full = deriveFacts(c);
    const int64_t P = full.parameters;
    EXPECT_EQ(full.trainableParameters, P);
    EXPECT_EQ(full.weightBytes, 4 * P);
    EXPECT_EQ(full.gradientBytes, 4 * P);
    EXPECT_EQ(full.optimizerBytes, 8 * P);

    c.lora = config::LoraConfig{.rank = 4, .alpha = 8.0, .targets = {"c_attn", "c_fc"}};
    const ModelFacts lora = deriveFacts(c);
    const int64_t adapters = 3 * 4 * ((32 + 96) + (32 + 128));
    EXPECT_EQ(lora.adapterParameters, adapters);
    EXPECT_EQ(lora.trainableParameters, adapters);
    EXPECT_EQ(lora.weightBytes, 4 * (P + adapters));
    EXPECT_EQ(lora.gradientBytes, 4 * adapters);
    EXPECT_EQ(lora.optimizerBytes, 8 * adapters);

    c.lora.reset();
    c.optimizer.freezeEmbeddings = true;
    c.optimizer.freezeBlocks = 1;
    GptShape shape = GptShape::fromConfig(c.model);
    const ParameterTable table(shape);
    const int64_t frozen = int64_t(table.layers()[0].size +
                                   table.layers()[size_t(ParameterTable::blockLayer(0))].size);
    const ModelFacts partly = deriveFacts(c);
    EXPECT_EQ(partly.trainableParameters, P - frozen);
    EXPECT_EQ(partly.gradientBytes, 4 * (P - frozen));
    EXPECT_EQ(partly.weightBytes, 4 * P);
}

}  // namespace
}  // namespace ws::model
