// Magnitude pruning and per-column nonzero counts (sparsity.h).
#include "engine/wafer/sparsity.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>

namespace ws::wafer {

std::vector<int64_t> columnNonzerosAfterPruning(const float* W, int64_t K, int64_t N,
                                                double level) {
    const int64_t total = K * N;
    const int64_t pruned = std::clamp<int64_t>(std::llround(level * double(total)), 0, total);
    std::vector<int64_t> order(static_cast<size_t>(total));
    std::iota(order.begin(), order.end(), 0);
    auto smaller = [&](int64_t a, int64_t b) {
        const float fa = std::fabs(W[a]), fb = std::fabs(W[b]);
        return fa < fb || (fa == fb && a < b);
    };
    if (pruned > 0 && pruned < total)
        std::nth_element(order.begin(), order.begin() + pruned, order.end(), smaller);
    std::vector<int64_t> perColumn(static_cast<size_t>(N), K);
    for (int64_t i = 0; i < pruned; ++i) --perColumn[size_t(order[size_t(i)] % N)];
    std::vector<int64_t> prefix(size_t(N) + 1, 0);
    for (int64_t j = 0; j < N; ++j)
        prefix[size_t(j) + 1] = prefix[size_t(j)] + perColumn[size_t(j)];
    return prefix;
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
    const auto& s = table.shape();
    if (!(level >= 0 && level < 1))
        return Error{fmt::format("model.sparsity.level is {}; it must be in [0, 1)", level)};
    if (block < 0 || block >= s.layers)
        return Error{fmt::format("block {} does not exist (the model has {})", block, s.layers)};
    const char* names[] = {"qkv", "attn_proj", "fc", "fc_proj"};
    for (const auto& t : targets)
        if (std::find_if(std::begin(names), std::end(names),
                         [&](const char* n) { return t == n; }) == std::end(names))
            return Error{fmt::format(
                "model.sparsity.targets: unknown target \"{}\"; allowed: qkv, attn_proj, fc, "
                "fc_proj",
                t)};
    auto wanted = [&](const char* n) {
        return targets.empty() || std::find(targets.begin(), targets.end(), n) != targets.end();
    };
    const size_t base = table.layers()[size_t(model::ParameterTable::blockLayer(block))].offset;
    const model::BlockOffsets o = model::blockOffsets(s);
    const int64_t C = s.channels, F = s.ffn;
    BlockSparsity out;
    if (wanted("qkv"))
        out.qkv = columnNonzerosAfterPruning(params + base + o.qkvw, C, 3 * C, level);
    if (wanted("attn_proj"))
        out.attnProj = columnNonzerosAfterPruning(params + base + o.attprojw, C, C, level);
    if (wanted("fc")) out.fc = columnNonzerosAfterPruning(params + base + o.fcw, C, F, level);
    if (wanted("fc_proj"))
        out.fcProj = columnNonzerosAfterPruning(params + base + o.fcprojw, F, C, level);
    return out;
}

}  // namespace ws::wafer
