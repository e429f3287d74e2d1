// SPDX-License-Identifier: GPL-3.0-or-later
// The exact dataflow mode (dataflow.h): per-core tiles, explicit broadcasts and reductions, on
// the same (possibly folded) mapping the cycle model uses.
#include "engine/wafer/dataflow.h"

#include <fmt/format.h>

#include <algorithm>

namespace ws::wafer {

namespace {

Status checkGrid(const WaferSpec& spec, const GridMapping& g, int M, int K, int N) {
    if (spec.cores() > kMaxDataflowCores)
        return Error{
            fmt::format("exact dataflow mode runs on small wafers only ({} cores > {}); use the "
                        "teaching-16x16 spec",
                        spec.cores(), kMaxDataflowCores)};
    if (M < 1 || K < 1 || N < 1)
        return Error{fmt::format("matmul sizes must be positive, got M={} K={} N={}", M, K, N)};
    if (g.rows != spec.gridRows || g.cols != spec.gridCols || g.m.total != M || g.n.total != N)
        return Error{
            fmt::format("the mapping is for {} x {} on {} x {} cores, not {} x {} on {} x {}",
                        g.m.total, g.n.total, g.rows, g.cols, M, N, spec.gridRows, spec.gridCols)};
    return Status::success();
}

struct Core {
    bool active = false;
    int64_t vRow = 0, vCol = 0;
    std::vector<float> a;    // owned X tile (rows x k-block of this row segment), row-major
    std::vector<float> b;    // owned W tile (k-block of this column x cols), or dY tile
    std::vector<float> acc;  // output tile (or partial dW)
    int64_t fmacs = 0;
};

std::vector<Core> makeCores(const GridMapping& g) {
    std::vector<Core> cores(size_t(g.rows) * g.cols);
    for (int r = 0; r < g.rows; ++r)
        for (int c = 0; c < g.cols; ++c) {
            Core& core = cores[size_t(r) * g.cols + c];
            core.active = g.toVirtual(r, c, core.vRow, core.vCol);
        }
    return cores;
}

void finishStats(const std::vector<Core>& cores, const std::vector<double>& rowLink,
                 const std::vector<double>& colLink, DataflowStats* stats) {
    if (!stats) return;
    stats->maxRowLinkBytes = *std::max_element(rowLink.begin(), rowLink.end());
    stats->maxColLinkBytes = *std::max_element(colLink.begin(), colLink.end());
    stats->maxCoreFmacs = 0;
    stats->minCoreFmacs = cores.empty() ? 0 : cores[0].fmacs;
    for (const auto& c : cores) {
        stats->maxCoreFmacs = std::max(stats->maxCoreFmacs, c.fmacs);
        stats->minCoreFmacs = std::min(stats->minCoreFmacs, c.fmacs);
    }
}

}  // namespace

Result<std::vector<float>> summaMatmul(const WaferSpec& spec, const float* X, const float* W, int M,
                                       int K, int N, DataflowStats* stats) {
    return summaMatmul(spec, mapUnfolded(M, N, spec.gridRows, spec.gridCols), X, W, M, K, N, stats);
}

Result<std::vector<float>> summaMatmul(const WaferSpec& spec, const GridMapping& g, const float* X,
                                       const float* W, int M, int K, int N, DataflowStats* stats) {
    if (Status s = checkGrid(spec, g, M, K, N); !s.ok()) return s.error();
    const int R = g.rows, C = g.cols;
    const Split kByCol = Split::of(K, g.groupCols);  // X's k-blocks along each row segment
    const Split kByRow = Split::of(K, R);            // W's k-blocks down each column
    std::vector<Core> cores = makeCores(g);
    auto at = [&](int r, int c) -> Core& { return cores[size_t(r) * C + c]; };
    // Distribute: each core copies only its own tiles out of the global operands.
    for (int r = 0; r < R; ++r)
        for (int c = 0; c < C; ++c) {
            Core& core = at(r, c);
            if (!core.active) continue;
            for (int64_t i = g.m.begin(core.vRow); i < g.m.end(core.vRow); ++i)
                for (int64_t k = kByCol.begin(core.vCol); k < kByCol.end(core.vCol); ++k)
                    core.a.push_back(X[i * K + k]);
            for (int64_t k = kByRow.begin(r); k < kByRow.end(r); ++k)
                for (int64_t j = g.n.begin(core.vCol); j < g.n.end(core.vCol); ++j)
                    core.b.push_back(W[k * N + j]);
            core.acc.assign(size_t(g.m.size(core.vRow) * g.n.size(core.vCol)), 0.0f);
        }
    std::vector<double> rowLink(static_cast<size_t>(R), 0.0);
    std::vector<double> colLink(static_cast<size_t>(C), 0.0);
    // One message per row segment (r, group) and per column.
    std::vector<std::vector<float>> rowMsg(size_t(R) * g.folds);
    std::vector<std::vector<float>> colMsg(static_cast<size_t>(C));
    std::vector<double> segLink(size_t(R) * g.folds, 0.0);
    for (int64_t k = 0; k < K; ++k) {
        // Row broadcasts: in each segment, the core owning column k of the row panel sends it.
        const int64_t ownerVCol = k / kByCol.block;
        for (int r = 0; r < R; ++r)
            for (int group = 0; group < g.folds; ++group) {
                const Core& owner = at(r, g.physicalCol(group, ownerVCol));
                const int64_t width = kByCol.size(ownerVCol), kk = k - kByCol.begin(ownerVCol);
                auto& msg = rowMsg[size_t(r) * g.folds + group];
                msg.clear();
                for (int64_t i = 0; i < g.m.size(owner.vRow); ++i)
                    msg.push_back(owner.a[size_t(i * width + kk)]);
                segLink[size_t(r) * g.folds + group] += double(msg.size()) * sizeof(float);
            }
        // Column broadcasts: the core owning row k of each column panel sends it down.
        const int ownerRow = int(k / kByRow.block);
        for (int c = 0; c < C; ++c) {
            const Core& owner = at(ownerRow, c);
            if (!owner.active) continue;
            const int64_t width = g.n.size(owner.vCol), kk = k - kByRow.begin(ownerRow);
            auto& msg = colMsg[size_t(c)];
            msg.assign(owner.b.begin() + kk * width, owner.b.begin() + (kk + 1) * width);
            colLink[size_t(c)] += double(msg.size()) * sizeof(float);
        }
        // Every core adds the outer product of the two panels it received.
        for (int r = 0; r < R; ++r)
            for (int c = 0; c < C; ++c) {
                Core& core = at(r, c);
                if (!core.active) continue;
                const auto& x = rowMsg[size_t(r) * g.folds + size_t(c / g.groupCols)];
                const auto& w = colMsg[size_t(c)];
                for (size_t i = 0; i < x.size(); ++i)
                    for (size_t j = 0; j < w.size(); ++j) core.acc[i * w.size() + j] += x[i] * w[j];
                core.fmacs += int64_t(x.size() * w.size());
            }
    }
    std::vector<float> Y(static_cast<size_t>(M) * N, 0.0f);
    for (const Core& core : cores) {
        if (!core.active) continue;
        const int64_t width = g.n.size(core.vCol);
        for (int64_t i = 0; i < g.m.size(core.vRow); ++i)
            for (int64_t j = 0; j < width; ++j)
                Y[size_t((g.m.begin(core.vRow) + i) * N + g.n.begin(core.vCol) + j)] =
                    core.acc[size_t(i * width + j)];
    }
    for (int r = 0; r < R; ++r)  // a row's busiest link is in its busiest segment
        for (int group = 0; group < g.folds; ++group)
            rowLink[size_t(r)] = std::max(rowLink[size_t(r)], segLink[size_t(r) * g.folds + group]);
    if (stats) stats->steps = K;
    finishStats(cores, rowLink, colLink, stats);
    return Y;
}

Result<std::vector<float>> tokenStationaryWeightGrad(const WaferSpec& spec, const GridMapping& g,
                                                     const float* X, const float* dY, int M, int K,
                                                     int N, DataflowStats* stats) {
    if (Status s = checkGrid(spec, g, M, K, N); !s.ok()) return s.error();
    const int R = g.rows, C = g.cols;
    std::vector<Core> cores = makeCores(g);
    auto at = [&](int r, int c) -> Core& { return cores[size_t(r) * C + c]; };
    std::vector<double> rowLink(static_cast<size_t>(R), 0.0);
    std::vector<double> colLink(static_cast<size_t>(C), 0.0);
    for (int r = 0; r < R; ++r)
        for (int group = 0; group < g.folds; ++group) {
            const int64_t vRow = int64_t(group) * R + r;
            const int64_t rows = g.m.size(vRow), first = g.m.begin(vRow);
            // Row panel X[rows, :], gathered along the segment from its k-block owners: each
            // value crosses the segment once.
            std::vector<float> panel(static_cast<size_t>(rows * K));
            for (int64_t i = 0; i < rows; ++i)
                for (int64_t k = 0; k < K; ++k) panel[size_t(i * K + k)] = X[(first + i) * K + k];
            rowLink[size_t(r)] = std::max(rowLink[size_t(r)], double(panel.size()) * sizeof(float));
            for (int64_t vc = 0; vc < g.groupCols; ++vc) {
                Core& core = at(r, g.physicalCol(group, vc));
                const int64_t cols = g.n.size(vc), firstCol = g.n.begin(vc);
                for (int64_t i = 0; i < rows; ++i)
                    for (int64_t j = 0; j < cols; ++j)
                        core.b.push_back(dY[(first + i) * N + firstCol + j]);
                core.acc.assign(size_t(K * cols), 0.0f);  // partial dW[:, cols]
                for (int64_t i = 0; i < rows; ++i)
                    for (int64_t k = 0; k < K; ++k) {
                        const float x = panel[size_t(i * K + k)];
                        for (int64_t j = 0; j < cols; ++j)
                            core.acc[size_t(k * cols + j)] += x * core.b[size_t(i * cols + j)];
                    }
                core.fmacs = rows * K * cols;
            }
        }
    // Reductions: partials flow down each physical column (row 0 first, each hop adding its
    // own), then the fold groups' column sums of the same columns are added in group order.
    std::vector<float> dW(static_cast<size_t>(K) * N, 0.0f);
    for (int64_t vc = 0; vc < g.groupCols; ++vc) {
        const int64_t cols = g.n.size(vc);
        std::vector<float> total(size_t(K * cols), 0.0f);
        for (int group = 0; group < g.folds; ++group) {
            const int c = g.physicalCol(group, vc);
            std::vector<float> running = at(0, c).acc;
            for (int r = 1; r < R; ++r) {
                colLink[size_t(c)] += double(running.size()) * sizeof(float);
                const auto& mine = at(r, c).acc;
                for (size_t e = 0; e < running.size(); ++e) running[e] += mine[e];
            }
            for (size_t e = 0; e < total.size(); ++e) total[e] += running[e];
        }
        for (int64_t k = 0; k < K; ++k)
            for (int64_t j = 0; j < cols; ++j)
                dW[size_t(k * N + g.n.begin(vc) + j)] = total[size_t(k * cols + j)];
    }
    if (stats) stats->steps = R - 1 + (g.folds - 1);
    finishStats(cores, rowLink, colLink, stats);
    return dW;
}

}  // namespace ws::wafer
