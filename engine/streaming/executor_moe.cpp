// SPDX-License-Identifier: GPL-3.0-or-later
// StreamingExecutor::Impl, MoE: an MoE block moves as stream units (its shared part, then each
// expert), its gradient leaves in the same units, and each system counts the tokens its experts
// computed in the step. See executor_impl.h.
#include <algorithm>

#include "engine/streaming/executor_impl.h"

namespace ws::streaming {

std::vector<model::StreamUnit> StreamingExecutor::Impl::unitsOf(int layerIndex) const {
    const int block = layerIndex - 1;
    if (block < 0 || block >= table.shape().layers || !table.shape().isMoeBlock(block)) return {};
    return table.streamUnits(block);
}

std::vector<std::pair<size_t, size_t>> StreamingExecutor::Impl::piecesFor(
    int layerIndex, bool forward, std::vector<int>* pieceExpert) const {
    const auto& l = layer(layerIndex);
    if (layerIndex == model::ParameterTable::embeddingLayer() && !forward) return {};
    const auto units = unitsOf(layerIndex);
    if (!units.empty()) {
        std::vector<std::pair<size_t, size_t>> pieces;
        for (const auto& u : units) {
            pieces.push_back({u.offset, u.size});
            if (pieceExpert) pieceExpert->push_back(u.expert);
        }
        return pieces;
    }
    std::vector<std::pair<size_t, size_t>> pieces = {{l.offset, l.size}};
    if (layerIndex == headIndex() && table.shape().tiedEmbedding) {
        pieces.push_back({wteOffset(), wteSize()});
    }
    return pieces;
}

void StreamingExecutor::Impl::countExperts(int ls, int block, const model::Gpt<float>& gpt) {
    const auto& counts = gpt.expertTokenCounts(block);
    auto& sum = expertTokens[size_t(ls)][size_t(block)];
    if (sum.size() < counts.size()) sum.resize(counts.size(), 0);
    for (size_t e = 0; e < counts.size(); ++e) sum[e] += counts[e];
}

std::vector<std::vector<int64_t>> StreamingExecutor::Impl::stepExpertTokens() {
    if (!table.shape().hasMoe() || expertTokens.empty()) return {};
    std::vector<std::vector<int64_t>> sum = expertTokens[0];
    for (size_t ls = 1; ls < expertTokens.size(); ++ls)
        for (size_t b = 0; b < sum.size(); ++b)
            for (size_t e = 0; e < sum[b].size(); ++e) sum[b][e] += expertTokens[ls][b][e];
    if (!comm) return sum;
    std::vector<int64_t> flat;
    for (const auto& b : sum) flat.insert(flat.end(), b.begin(), b.end());
    const size_t bytes = flat.size() * sizeof(int64_t);
    std::vector<int64_t> all(flat.size() * size_t(comm->size()));
    comm->gather(comm::Channel::Gradients, flat.data(), bytes, all.data(),
                 std::vector<size_t>(size_t(comm->size()), bytes), 0);
    if (!root()) return {};
    for (int r = 1; r < comm->size(); ++r) {
        size_t at = size_t(r) * flat.size();
        for (auto& b : sum)
            for (auto& v : b) v += all[at++];
    }
    return sum;
}

std::vector<std::pair<int, std::vector<optim::TrainablePiece>>>
StreamingExecutor::Impl::gradientUnits(int layerIndex) const {
    const auto& pieces = layerPieces[size_t(layerIndex)];
    const auto units = unitsOf(layerIndex);
    if (units.empty()) return {{-1, pieces}};
    std::vector<std::pair<int, std::vector<optim::TrainablePiece>>> out;
    for (const auto& u : units) {
        std::vector<optim::TrainablePiece> clipped;
        for (const auto& p : pieces) {
            const size_t a = std::max(p.offset, u.offset);
            const size_t b = std::min(p.offset + p.size, u.offset + u.size);
            if (a < b) clipped.push_back({a, p.stateOffset + (a - p.offset), b - a});
        }
        if (!clipped.empty()) out.push_back({u.expert, std::move(clipped)});
    }
    return out;
}

void StreamingExecutor::Impl::moeStats(StepResult& result) const {
    if (expertTokens.empty()) return;
    double lb = 0.0;
    for (double x : lbLosses) lb += x;
    result.loadBalancingLoss = lb / double(lbLosses.size() * size_t(micros));
}

}  // namespace ws::streaming
