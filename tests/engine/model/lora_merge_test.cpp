// SPDX-License-Identifier: GPL-3.0-or-later
// mergeAdapters (issue 16): every adapted weight becomes W + scale · A · B (checked element by
// element against a plain triple loop), every other tensor is copied bit for bit, the merged
// plain GPT-2 computes the adapted model's logits within float rounding, and B = 0 merges to the
// base exactly.
#include "engine/model/lora_merge.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "engine/model/gpt.h"
#include "engine/model/random.h"
#include "support/test_shapes.h"

namespace ws::model {
namespace {

using ws::testing::gptShape;
using ws::testing::modelConfigOf;

GptShape adaptedShape(std::vector<std::string> targets) {
    GptShape s = gptShape(37, 16, 2, 2, 48, 12);
    s.applyLora(
        config::LoraConfig{.rank = 3, .alpha = 5.0, .dropout = 0.0, .targets = std::move(targets)});
    return s;
}

std::vector<float> randomParams(const GptShape& s, uint64_t seed) {
    const ParameterTable table(s);
    std::vector<float> p(table.totalSize());
    for (size_t i = 0; i < p.size(); ++i) p[i] = float(0.2 * rng::standardNormal(seed, i));
    for (const auto& t : table.tensors())
        if (t.name.find("ln_") != std::string::npos && t.name.ends_with(".weight"))
            for (size_t i = 0; i < t.size; ++i) p[t.offset + i] += 1.0f;
    return p;
}

TEST(LoraMerge, AdaptedWeightsGainScaledProductOthersAreCopied) {
    const GptShape s = adaptedShape({"c_attn", "mlp.c_proj"});
    const std::vector<float> p = randomParams(s, 3);
    const std::vector<float> merged = lora::mergeAdapters(s, p.data());
    const ParameterTable table(s), base(lora::baseShape(s));
    ASSERT_EQ(merged.size(), base.totalSize());
    for (const TensorSlice& t : base.tensors()) {
        const TensorSlice* from = table.find(t.name);
        ASSERT_NE(from, nullptr);
        const std::string module = t.name.substr(0, t.name.size() - std::string(".weight").size());
        const TensorSlice* A = table.find(module + ".lora_A.weight");
        const TensorSlice* B = table.find(module + ".lora_B.weight");
        if (!A) {
            EXPECT_EQ(std::memcmp(merged.data() + t.offset, p.data() + from->offset,
                                  t.size * sizeof(float)),
                      0)
                << t.name;
            continue;
        }
        const int64_t IN = t.shape[0], OUT = t.shape[1], R = A->shape[1];
        for (int64_t i = 0; i < IN; ++i)
            for (int64_t o = 0; o < OUT; ++o) {
                double sum = 0.0;
                for (int64_t r = 0; r < R; ++r)
                    sum += double(p[A->offset + size_t(i * R + r)]) *
                           double(p[B->offset + size_t(r * OUT + o)]);
                const double want = double(p[from->offset + size_t(i * OUT + o)]) + 5.0 / 3.0 * sum;
                EXPECT_EQ(merged[t.offset + size_t(i * OUT + o)], float(want))
                    << t.name << " [" << i << "," << o << "]";
            }
    }
}

TEST(LoraMerge, MergedModelComputesTheAdaptedLogits) {
    const GptShape s = adaptedShape({"c_attn", "attn.c_proj", "c_fc", "mlp.c_proj"});
    const std::vector<float> p = randomParams(s, 9);
    const std::vector<float> merged = lora::mergeAdapters(s, p.data());
    std::vector<int32_t> tokens(12);
    for (size_t i = 0; i < tokens.size(); ++i) tokens[i] = int32_t(rng::bits(4, i) % 37);
    Gpt<float> adapted(s, 1, 12), plain(lora::baseShape(s), 1, 12);
    adapted.forward(p.data(), tokens.data(), nullptr, false, 0);
    plain.forward(merged.data(), tokens.data(), nullptr, false, 0);
    double worst = 0.0;
    for (int t = 0; t < 12; ++t)
        for (int v = 0; v < 37; ++v)
            worst = std::max(
                worst, std::abs(double(adapted.logits(0, t)[v]) - double(plain.logits(0, t)[v])));
    EXPECT_LT(worst, 1e-4);
}

TEST(LoraMerge, ZeroBMergesToTheBaseExactly) {
    const GptShape s = adaptedShape({"c_attn", "c_fc"});
    std::vector<float> p = randomParams(s, 5);
    const ParameterTable table(s);
    for (const auto& t : table.tensors())
        if (t.name.find(".lora_B.") != std::string::npos)
            std::fill(p.begin() + std::ptrdiff_t(t.offset),
                      p.begin() + std::ptrdiff_t(t.offset + t.size), 0.0f);
    EXPECT_EQ(lora::mergeAdapters(s, p.data()), lora::baseWeights(s, p.data()));
}

}  // namespace
}  // namespace ws::model
