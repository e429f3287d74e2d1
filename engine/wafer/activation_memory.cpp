// SPDX-License-Identifier: GPL-3.0-or-later
// The activation byte accounting (activation_memory.h).
#include "engine/wafer/activation_memory.h"

#include <fmt/format.h>

#include <algorithm>

namespace ws::wafer {

const char* blockActivationName(BlockActivation a) {
    switch (a) {
        case BlockActivation::Keep:
            return "keep";
        case BlockActivation::Offload:
            return "offload";
        case BlockActivation::Recompute:
            return "recompute";
        case BlockActivation::RecomputeOffload:
            return "recompute + offload checkpoint";
    }
    return "?";
}

double blockStoredBytes(const model::GptShape& s, double tokens) {
    if (s.gpt2Blocks()) return kBlockStoredBytesPerTokenChannel * s.channels * tokens;
    // The same tensors per token, from their own widths (2 bytes each, 1 per dropout mask):
    // norm inputs 4C; attention: its input 2C, q 2Q, k and v 4K, output 2Q, mask C; MLP: its
    // input 2C, the activation's input 2·mlpIn ([gate | up] for SwiGLU), its output 2F, mask C.
    // GPT-2's widths (Q = K = C, mlpIn = F = 4C) give Korthikanti's 34 C.
    const double C = s.channels, Q = s.qWidth(), K = s.kvWidth(), F = s.ffn;
    const double perToken = 10 * C + 4 * Q + 4 * K + 2 * double(s.mlpInWidth()) + 2 * F;
    return perToken * tokens;
}

double blockCheckpointBytes(const model::GptShape& s, double tokens) {
    return kCheckpointBytesPerTokenChannel * s.channels * tokens;
}

double blockOffloadBytes(const model::GptShape& s, double tokens, BlockActivation a) {
    switch (a) {
        case BlockActivation::Offload:
            return blockStoredBytes(s, tokens);
        case BlockActivation::RecomputeOffload:
            return blockCheckpointBytes(s, tokens);
        default:
            return 0;
    }
}

double residentActivationBytes(const model::GptShape& s, double tokens, const ActivationCounts& c) {
    const double A = blockStoredBytes(s, tokens), X = blockCheckpointBytes(s, tokens);
    // At the forward's end: the head's input, the kept blocks and the kept inputs.
    const double forwardEnd = X + c.keep * A + c.recompute * X;
    // Recomputing (the kept blocks freed by then): the kept inputs, the recomputed block's
    // activations and, with offloaded inputs, the one in use and the one prefetched.
    const double recomputing =
        c.recomputed() > 0 ? c.recompute * X + A + (c.recomputeOffload > 0 ? 2 * X : 0.0) : 0.0;
    // Offloading (first in the forward, last in the backward: nothing else resident then): the
    // block computing and the one draining out or prefetched in.
    const double offloading = c.offload > 0 ? 2 * A : 0.0;
    return std::max({forwardEnd, recomputing, offloading});
}

double offloadBytesPerMicroBatch(const model::GptShape& s, double tokens,
                                 const ActivationCounts& c) {
    return c.offload * blockOffloadBytes(s, tokens, BlockActivation::Offload) +
           c.recomputeOffload * blockOffloadBytes(s, tokens, BlockActivation::RecomputeOffload);
}

std::vector<BlockActivation> blockActivationsFor(const ActivationCounts& c) {
    std::vector<BlockActivation> out;
    out.reserve(size_t(c.blocks()));
    out.insert(out.end(), size_t(c.offload), BlockActivation::Offload);
    out.insert(out.end(), size_t(c.recomputeOffload), BlockActivation::RecomputeOffload);
    out.insert(out.end(), size_t(c.recompute), BlockActivation::Recompute);
    out.insert(out.end(), size_t(c.keep), BlockActivation::Keep);
    return out;
}

ActivationCounts countsOf(const std::vector<BlockActivation>& blocks) {
    ActivationCounts c;
    for (auto a : blocks) {
        switch (a) {
            case BlockActivation::Keep:
                ++c.keep;
                break;
            case BlockActivation::Offload:
                ++c.offload;
                break;
            case BlockActivation::Recompute:
                ++c.recompute;
                break;
            case BlockActivation::RecomputeOffload:
                ++c.recomputeOffload;
                break;
        }
    }
    return c;
}

std::string describeCounts(const ActivationCounts& c) {
    const int L = c.blocks();
    auto part = [&](int n, const char* what) {
        return n == L ? fmt::format("{} (all {} blocks)", what, L) : fmt::format("{} {}", what, n);
    };
    if (c.allKeep()) return part(L, "keep");
    std::string out;
    auto add = [&](int n, const char* what) {
        if (n == 0) return;
        if (!out.empty()) out += " + ";
        out += part(n, what);
    };
    add(c.offload, "offload");
    add(c.recomputeOffload, "recompute + offload checkpoints");
    add(c.recompute, "recompute");
    add(c.keep, "keep");
    if (c.keep + c.offload + c.recompute + c.recomputeOffload != 0 &&
        out.find("all") == std::string::npos)
        out += fmt::format(" of {} blocks", L);
    return out;
}

LayerOps recomputeBlockOps(const model::GptShape& s, int batch, int seqLen, const WaferSpec& spec,
                           const BlockSparsity* sparsity, const ExpertLoad* moe) {
    LayerOps forward = blockOps(s, batch, seqLen, Pass::Forward, spec, sparsity, moe);
    LayerOps out = blockOps(s, batch, seqLen, Pass::Backward, spec, sparsity, moe);
    std::vector<WaferOp> ops;
    ops.reserve(forward.ops.size() + out.ops.size());
    for (auto& op : forward.ops) {
        op.name = kRecomputePrefix + op.name;
        ops.push_back(std::move(op));
    }
    for (auto& op : out.ops) ops.push_back(std::move(op));
    out.ops = std::move(ops);
    return out;
}

bool isRecomputeOp(const WaferOp& op) {
    return op.name.rfind(kRecomputePrefix, 0) == 0;
}

}  // namespace ws::wafer
