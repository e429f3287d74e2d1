// SPDX-License-Identifier: GPL-3.0-or-later
// A tiny model trained with plain SGD on a repeated 12-token pattern (B 2, T 24): the loss it
// starts from and ends at, for "the model really learns" checks in fp32 and bf16 mode.
// Header-only; single-threaded test helper.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "engine/model/gpt.h"

namespace ws::model::testing {

struct OverfitLosses {
    float first = 0, last = 0;
};

// `params` (the shape's table layout) is trained in place for `steps` steps at learning rate 0.3.
inline OverfitLosses overfitRepeatedSequence(const GptShape& s, std::vector<float>& params,
                                             int steps) {
    const int B = 2, T = 24;
    Gpt<float> gpt(s, B, T);
    std::vector<int32_t> in(size_t(B) * T), tg(size_t(B) * T);
    const int pattern[] = {3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8};
    for (int b = 0; b < B; ++b) {
        for (int t = 0; t < T; ++t) {
            in[size_t(b * T + t)] = pattern[(t + b) % 12];
            tg[size_t(b * T + t)] = pattern[(t + b + 1) % 12];
        }
    }
    std::vector<float> g(params.size());
    OverfitLosses losses;
    for (int step = 0; step < steps; ++step) {
        std::fill(g.begin(), g.end(), 0.0f);
        losses.last = gpt.forward(params.data(), in.data(), tg.data(), true, uint64_t(step));
        if (step == 0) losses.first = losses.last;
        gpt.backward(params.data(), g.data());
        for (size_t i = 0; i < params.size(); ++i) params[i] -= 0.3f * g[i];  // plain SGD
    }
    return losses;
}

}  // namespace ws::model::testing
