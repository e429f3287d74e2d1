// SPDX-License-Identifier: GPL-3.0-or-later
// Helpers the whole-model tests share (gpt_test.cpp, llama_model_test.cpp): initialized weights
// with perturbed gains and biases, random tokens, and the finite-difference check of every
// parameter's gradient through Gpt<double>.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "engine/model/gpt.h"
#include "engine/model/random.h"
#include "gradcheck.h"
#include "support/test_shapes.h"

namespace ws::model::testing {

inline config::ModelConfig configFor(const GptShape& s, double stdev) {
    config::ModelConfig m = ws::testing::modelConfigOf(s);
    m.embeddingInitializer = {"normal", 0.0, stdev, -1, 1};
    m.initializer = {"normal", 0.0, stdev, -1, 1};
    return m;
}

// Initialized weights; norm gains and all biases perturbed too so their gradients are exercised
// away from the trivial 1/0 values.
inline std::vector<float> initialWeights(const GptShape& s, double stdev, uint64_t seed) {
    const ParameterTable table(s);
    std::vector<float> p(table.totalSize());
    initParameters(table, configFor(s, stdev), seed, p.data());
    for (const TensorSlice& t : table.tensors()) {
        if (t.shape.size() != 1) continue;
        for (size_t i = 0; i < t.size; ++i) {
            p[t.offset + i] += float(0.1 * rng::standardNormal(seed + 99, t.offset + i));
        }
    }
    return p;
}

template <typename Real>
std::vector<Real> convert(const std::vector<float>& v) {
    return std::vector<Real>(v.begin(), v.end());
}

inline std::vector<int32_t> tokens(int n, int vocab, uint64_t seed) {
    std::vector<int32_t> ids(static_cast<size_t>(n));
    for (int i = 0; i < n; ++i) ids[size_t(i)] = int32_t(rng::bits(seed, uint64_t(i)) % vocab);
    return ids;
}

// Every parameter's gradient against central differences of the loss (B = 2, T = 5), and every
// tensor gets a nonzero gradient. positionIds (B,T): packed sequences, or null.
inline void checkWholeModelGradient(GptShape shape, bool training,
                                    const int32_t* positionIds = nullptr) {
    const int B = 2, T = 5;
    Gpt<double> gpt(shape, B, T);
    if (positionIds) gpt.setPositionIds(positionIds);
    std::vector<double> params = convert<double>(initialWeights(shape, 0.3, 5));
    const auto inputs = tokens(B * T, shape.vocab, 1), targets = tokens(B * T, shape.vocab, 2);
    const uint64_t seed = 77;
    auto loss = [&] {
        return gpt.forward(params.data(), inputs.data(), targets.data(), training, seed);
    };
    const double l0 = loss();
    EXPECT_GT(l0, 0.5);
    std::vector<double> grads(params.size(), 0.0);
    gpt.backward(params.data(), grads.data());
    for (const TensorSlice& t : gpt.table().tensors()) {  // every tensor gets a gradient
        double norm = 0;
        for (size_t i = 0; i < t.size; ++i) norm += std::abs(grads[t.offset + i]);
        EXPECT_GT(norm, 0.0) << t.name;
    }
    const double worst = expectGradientMatches(params, grads, loss, "dparams");
    ::testing::Test::RecordProperty("worst_relative_error", std::to_string(worst));
}

}  // namespace ws::model::testing
