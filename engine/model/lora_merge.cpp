// SPDX-License-Identifier: GPL-3.0-or-later
// mergeAdapters / baseWeights (see lora_merge.h).
#include "engine/model/lora_merge.h"

#include <algorithm>

#include "engine/model/lora.h"
#include "engine/tensor/threads.h"

namespace ws::model::lora {

GptShape baseShape(const GptShape& adapted) {
    GptShape s = adapted;
    s.applyLora(std::nullopt);
    return s;
}

std::vector<float> baseWeights(const GptShape& adapted, const float* params) {
    const ParameterTable table(adapted), base(baseShape(adapted));
    std::vector<float> out(base.totalSize());
    for (const TensorSlice& t : base.tensors()) {
        const TensorSlice* from = table.find(t.name);  // every base tensor is in the adapted table
        std::copy(params + from->offset, params + from->offset + from->size,
                  out.begin() + std::ptrdiff_t(t.offset));
    }
    return out;
}

std::vector<float> mergeAdapters(const GptShape& adapted, const float* params) {
    std::vector<float> out = baseWeights(adapted, params);
    if (!adapted.hasLora()) return out;
    const ParameterTable table(adapted), base(baseShape(adapted));
    const BlockOffsets ao = blockOffsets(adapted), bo = blockOffsets(base.shape());
    // The base weight each target's update lands in (a slice: its columns of the fused one).
    const std::array<size_t, kTargetCount> baseWeight = {
        bo.qkvw, bo.attprojw, bo.fcw, bo.fcprojw, bo.qkvw, bo.qkvw, bo.qkvw, bo.fcw, bo.fcw};
    const int R = adapted.loraRank;
    const double scale = adapted.loraScale;
    for (int l = 0; l < adapted.layers; ++l) {
        const size_t from = table.layers()[size_t(ParameterTable::blockLayer(l))].offset;
        const size_t into = base.layers()[size_t(ParameterTable::blockLayer(l))].offset;
        for (size_t t = 0; t < kTargetCount; ++t) {
            if (!adapted.loraTargets[t]) continue;
            const LinearShape ls = linearShape(Target(t), adapted);
            const float* A = params + from + ao.loraA[t];              // (IN, R)
            const float* B = params + from + ao.loraB[t];              // (R, OUT)
            float* W = out.data() + into + baseWeight[t] + ls.column;  // (IN, OUT), row stride ld
            const int OUT = ls.out;
            const size_t ld = size_t(ls.ld);
            tensor::parallelFor(ls.in, tensor::threadsForWork(int64_t(ls.in) * OUT * R),
                                [&](int64_t begin, int64_t end) {
                                    std::vector<double> row(static_cast<size_t>(OUT));
                                    for (int64_t i = begin; i < end; ++i) {
                                        std::fill(row.begin(), row.end(), 0.0);
                                        for (int r = 0; r < R; ++r) {
                                            const double a = A[i * R + r];
                                            const float* b = B + size_t(r) * size_t(OUT);
                                            for (int o = 0; o < OUT; ++o)
                                                row[size_t(o)] += a * b[o];
                                        }
                                        float* w = W + size_t(i) * ld;
                                        for (int o = 0; o < OUT; ++o)
                                            w[o] = float(double(w[o]) + scale * row[size_t(o)]);
                                    }
                                });
        }
    }
    return out;
}

}  // namespace ws::model::lora
