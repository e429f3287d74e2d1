// SPDX-License-Identifier: GPL-3.0-or-later
// Magnitude pruning and per-column nonzero counts (sparsity.h).
#include "engine/wafer/sparsity.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>

namespace ws::wafer {

std::vector<int64_t> magnitudePruneIndices(const float* W, int64_t count, double level) {
    const int64_t pruned = std::clamp<int64_t>(std::llround(level * double(count)), 0, count);
    std::vector<int64_t> order(static_cast<size_t>(count));
    std::iota(order.begin(), order.end(), 0);
    auto smaller = [&](int64_t a, int64_t b) {
        const float fa = std::fabs(W[a]), fb = std::fabs(W[b]);
        return fa < fb || (fa == fb && a < b);
    };
    if (pruned > 0 && pruned < count)
        std::nth_element(order.begin(), order.begin() + pruned, order.end(), smaller);
    order.resize(size_t(pruned));
    std::sort(order.begin(), order.end());
    return order;
}

namespace {

std::vector<int64_t> columnPrefix(const std::vector<int64_t>& pruned, int64_t K, int64_t N) {
    std::vector<int64_t> perColumn(static_cast<size_t>(N), K);
    for (int64_t i : pruned) --perColumn[size_t(i % N)];
    std::vector<int64_t> prefix(size_t(N) + 1, 0);
    for (int64_t j = 0; j < N; ++j)
        prefix[size_t(j) + 1] = prefix[size_t(j)] + perColumn[size_t(j)];
    return prefix;
}

const char* const kTargets[] = {"qkv", "attn_proj", "fc", "fc_proj"};

Status checkSparsity(double level, const std::vector<std::string>& targets) {
    if (!(level >= 0 && level < 1))
        return Error{fmt::format("model.sparsity.level is {}; it must be in [0, 1)", level)};
    for (const auto& t : targets)
        if (std::find_if(std::begin(kTargets), std::end(kTargets),
                         [&](const char* n) { return t == n; }) == std::end(kTargets))
            return Error{fmt::format(
                "model.sparsity.targets: unknown target \"{}\"; allowed: qkv, attn_proj, fc, "
                "fc_proj",
                t)};
    return Status::success();
}

// The four prunable matrices of block `block`: offset into the parameters, K, N, and the
// BlockSparsity member they fill.
struct PrunableMatrix {
    const char* target;
    size_t offset;
    int64_t K, N;
    std::vector<int64_t> BlockSparsity::*member;
};

std::vector<PrunableMatrix> prunableMatrices(const model::ParameterTable& table, int block) {
    const auto& s = table.shape();
    const size_t base = table.layers()[size_t(model::ParameterTable::blockLayer(block))].offset;
    const model::BlockOffsets o = model::blockOffsets(s, block);
    const int64_t C = s.channels, F = s.ffn;
    return {{"qkv", base + o.qkvw, C, s.qkvWidth(), &BlockSparsity::qkv},
            {"attn_proj", base + o.attprojw, s.qWidth(), C, &BlockSparsity::attnProj},
            {"fc", base + o.fcw, C, s.mlpInWidth(), &BlockSparsity::fc},
            {"fc_proj", base + o.fcprojw, F, C, &BlockSparsity::fcProj}};
}

bool wanted(const std::vector<std::string>& targets, const char* name) {
    return targets.empty() || std::find(targets.begin(), targets.end(), name) != targets.end();
}

}  // namespace

std::vector<int64_t> columnNonzerosAfterPruning(const float* W, int64_t K, int64_t N,
                                                double level) {
    return columnPrefix(magnitudePruneIndices(W, K * N, level), K, N);
}

std::vector<int64_t> uniformColumnNonzeros(int64_t K, int64_t N, double level) {
    const int64_t keep = std::llround((1.0 - level) * double(K));
    std::vector<int64_t> prefix(size_t(N) + 1, 0);
    for (int64_t j = 0; j < N; ++j) prefix[size_t(j) + 1] = prefix[size_t(j)] + keep;
    return prefix;
}

Result<BlockSparsity> blockSparsityFromWeights(const model::ParameterTable& table,
                                               const float* params, int block, double level,
                                               const std::vector<std::string>& targets) {
    if (Status st = checkSparsity(level, targets); !st.ok()) return st.error();
    if (block < 0 || block >= table.shape().layers)
        return Error{
            fmt::format("block {} does not exist (the model has {})", block, table.shape().layers)};
    BlockSparsity out;
    for (const auto& m : prunableMatrices(table, block))
        if (wanted(targets, m.target))
            out.*m.member = columnNonzerosAfterPruning(params + m.offset, m.K, m.N, level);
    return out;
}

Result<StaticSparsity> StaticSparsity::prune(const model::ParameterTable& table, float* params,
                                             double level,
                                             const std::vector<std::string>& targets) {
    if (Status st = checkSparsity(level, targets); !st.ok()) return st.error();
    StaticSparsity out;
    for (int b = 0; b < table.shape().layers; ++b) {
        BlockSparsity blockSparsity;
        for (const auto& m : prunableMatrices(table, b)) {
            if (!wanted(targets, m.target)) continue;
            const auto pruned = magnitudePruneIndices(params + m.offset, m.K * m.N, level);
            blockSparsity.*m.member = columnPrefix(pruned, m.K, m.N);
            for (int64_t i : pruned) out.m_positions.push_back(int64_t(m.offset) + i);
        }
        out.m_blocks.push_back(std::move(blockSparsity));
    }
    out.reapply(params);
    return out;
}

void StaticSparsity::reapply(float* params) const {
    for (int64_t p : m_positions) params[p] = 0.0f;
}

}  // namespace ws::wafer
