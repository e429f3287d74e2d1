// Shared pieces of the streaming tests: a small GPT, a deterministic batch and the plain
// (non-streamed) training step that streamed training must reproduce.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/model/gpt.h"
#include "engine/optim/optimizer.h"
#include "support/test_shapes.h"

namespace ws::streaming::testing {

using ::ws::testing::streamingShape;

inline config::OptimizerConfig adamw(double maxNorm) {
    config::OptimizerConfig c;
    c.optimizerType = "adamw";
    c.betas = {0.9, 0.95};
    c.weightDecay = 0.1;
    c.maxGradientNorm = maxNorm;
    return c;
}

inline std::vector<optim::ParamGroup> groupsOf(const model::ParameterTable& table) {
    std::vector<optim::ParamGroup> groups;
    for (const auto& t : table.tensors()) groups.push_back({t.offset, t.size, t.decay, t.lrScale});
    return groups;
}

// Tokens of step `step`: a fixed pseudo-random pattern, (B,T) inputs and next-token targets.
inline void batch(int64_t step, int B, int T, int vocab, std::vector<int32_t>& in,
                  std::vector<int32_t>& out) {
    in.resize(size_t(B) * T);
    out.resize(size_t(B) * T);
    for (int i = 0; i < B * T + 1; ++i) {
        const int32_t token = int32_t((i * 7 + step * 13 + (i / 5) * 3) % vocab);
        if (i < B * T) in[size_t(i)] = token;
        if (i > 0) out[size_t(i - 1)] = token;
    }
}

}  // namespace ws::streaming::testing
