// SPDX-License-Identifier: GPL-3.0-or-later
// The model, data and optimizer shared by the crash tests and the process they kill, so the
// test can replay exactly what the killed process computed.
#pragma once

#include <vector>

#include "streaming_test_util.h"

namespace ws::streaming::crash {

constexpr int kBatch = 8, kSeq = 16;

inline model::GptShape shape() {
    model::GptShape s = testing::streamingShape();
    s.channels = 64;
    s.ffn = 256;
    s.heads = 4;
    return s;
}
inline void initialise(const model::ParameterTable& table, float* weights) {
    config::ModelConfig mc;
    model::initParameters(table, mc, 42, weights);
}
inline config::OptimizerConfig optimizer() {
    return testing::adamw(0.0);
}
inline std::vector<optim::ParamGroup> groups(const model::ParameterTable& t) {
    return testing::groupsOf(t);
}
inline void batch(int64_t step, std::vector<int32_t>& in, std::vector<int32_t>& out) {
    testing::batch(step, kBatch, kSeq, shape().vocab, in, out);
}

}  // namespace ws::streaming::crash
