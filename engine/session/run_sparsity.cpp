// SPDX-License-Identifier: GPL-3.0-or-later
// Which of a run's weights are held at zero (see run_sparsity.h).
#include "engine/session/run_sparsity.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <chrono>
#include <cstring>

namespace ws::session {

namespace {

// Which BlockSparsity member a masked matrix fills (null: not one of the four block matrices,
// e.g. an expert's, which the cycle model plans dense).
std::vector<int64_t> wafer::BlockSparsity::*memberFor(const std::string& name, int block) {
    const std::string prefix = fmt::format("h.{}.", block);
    if (name == prefix + "attn.c_attn.weight") return &wafer::BlockSparsity::qkv;
    if (name == prefix + "attn.c_proj.weight") return &wafer::BlockSparsity::attnProj;
    if (name == prefix + "mlp.c_fc.weight") return &wafer::BlockSparsity::fc;
    if (name == prefix + "mlp.c_proj.weight") return &wafer::BlockSparsity::fcProj;
    return nullptr;
}

}  // namespace

RunSparsity::RunSparsity(const config::Config& config, RunWeights& weights, Log log)
    : m_config(config), m_weights(weights), m_log(std::move(log)) {}

// Static sparsity: prune once, here, and keep the pruned weights at zero after every step.
Status RunSparsity::pruneStatic() {
    const config::Config& cfg = m_config;
    if (cfg.model.sparsity.level <= 0) return Status::success();
    auto pruned =
        wafer::StaticSparsity::prune(m_weights.table(), m_weights.weights(),
                                     cfg.model.sparsity.level, cfg.model.sparsity.targets);
    if (!pruned.ok()) return pruned.error();
    m_static.emplace(std::move(pruned).value());
    m_prunedWeights = m_static->prunedCount();
    m_log(LogLine::Level::Info,
          fmt::format("sparsity: {} weights pruned to zero by magnitude ({:.0f}% of {})",
                      m_static->prunedCount(), 100.0 * cfg.model.sparsity.level,
                      cfg.model.sparsity.targets.empty()
                          ? std::string("every block matrix")
                          : fmt::format("{}", fmt::join(cfg.model.sparsity.targets, ", "))));
    return Status::success();
}

Status RunSparsity::prepareMasks(const ResumePlan* resume) {
    const config::Config& cfg = m_config;
    if (!cfg.sparsity || cfg.sparsity->sparsity <= 0) return Status::success();
    const config::SparsitySectionConfig& sp = *cfg.sparsity;
    const model::ParameterTable& table = m_weights.table();
    float* weights = m_weights.weights();
    auto masks =
        optim::SparseMasks::create(sp, table, uint64_t(cfg.runconfig.seed), cfg.runconfig.maxSteps);
    if (!masks.ok()) return masks.error();
    m_masks.emplace(std::move(masks).value());
    m_pruned = m_weights.memoryx().pruneMask();
    if (!m_pruned || !weights)
        return Error{"sparsity: MemoryX holds no masks (internal: created without them)"};
    size_t restored = 0;
    if (resume) {
        auto loaded = modelio::loadCheckpointMasks(
            resume->checkpoint, table, [&](size_t tensor, const uint8_t* mask, size_t bytes) {
                std::memcpy(m_pruned + table.tensors()[tensor].offset, mask, bytes);
            });
        if (!loaded.ok()) return loaded.error();
        restored = *loaded;
    }
    if (restored == 0) {
        m_masks->initialise(weights, m_pruned);
    } else if (restored != m_masks->matrices().size()) {
        return Error{fmt::format(
            "sparsity: the checkpoint holds {} masks but sparsity.param_name_patterns select {} "
            "matrices; resume with the config it was trained with",
            restored, m_masks->matrices().size())};
    } else {
        m_masks->reapply(weights, m_pruned);
    }
    for (const auto& m : m_masks->matrices())
        m_prunedWeights += optim::SparseMasks::prunedIn(m, m_pruned);
    std::string when = "the mask stays (static)";
    if (sp.dynamic()) {
        when = fmt::format("masks change every {} steps from step {} until {}", sp.schedule.freq,
                           sp.schedule.start, m_masks->stop());
        if (sp.type != "gmp")
            when += fmt::format(", drop fraction {} from {:g}", sp.dropFraction.type,
                                sp.dropFraction.init);
        else
            when += fmt::format(", level {:g} -> {:g} (cubic)", sp.initSparsity, sp.sparsity);
    }
    m_log(LogLine::Level::Info,
          fmt::format("sparsity: {} at {:.0f}% over {} matrices ({} ... {}); initial mask {}; "
                      "{}; {} weights held at zero",
                      sp.type, 100.0 * sp.sparsity, m_masks->matrices().size(),
                      m_masks->matrices().front().name, m_masks->matrices().back().name,
                      restored ? "from the checkpoint" : sp.initMethod, when, m_prunedWeights));
    return Status::success();
}

std::vector<wafer::BlockSparsity> RunSparsity::staticBlocks() const {
    return m_static ? m_static->blocks() : std::vector<wafer::BlockSparsity>{};
}

std::vector<wafer::BlockSparsity> RunSparsity::blocks() const {
    if (m_static) return m_static->blocks();
    if (!m_masks) return {};
    const int layers = m_weights.table().shape().layers;
    std::vector<wafer::BlockSparsity> perBlock(static_cast<size_t>(layers));
    for (const auto& m : m_masks->matrices()) {
        if (m.block < 0 || m.block >= layers) continue;
        if (auto member = memberFor(m.name, m.block))
            perBlock[size_t(m.block)].*member = optim::SparseMasks::columnNonzeros(m, m_pruned);
    }
    return perBlock;
}

bool RunSparsity::afterStep(int64_t step) {
    float* weights = m_weights.weights();
    if (m_static) m_static->reapply(weights);
    if (!m_masks) return false;
    m_masks->reapply(weights, m_pruned);
    const int64_t stepsDone = step + 1;
    if (!m_masks->updatesAfter(stepsDone)) return false;
    const model::ParameterTable& table = m_weights.table();
    streaming::MemoryX& memoryx = m_weights.memoryx();
    const optim::OptimizerState state = memoryx.optimizerState();
    auto stateOffset = [&](size_t tensor) -> std::optional<size_t> {
        const auto& t = table.tensors()[tensor];
        const auto pieces = optim::trainablePieces(m_weights.groups(), t.offset, t.offset + t.size);
        if (pieces.empty()) return std::nullopt;  // frozen: no gradient, no state
        return pieces[0].stateOffset;
    };
    optim::MaskUpdateAccess access;
    access.gradient = [&](size_t tensor) -> const float* {
        const auto at = stateOffset(tensor);
        return at ? memoryx.gradients() + *at : nullptr;
    };
    // A regrown weight starts from zero with fresh optimizer state.
    access.resetState = [&](size_t tensor, const std::vector<int64_t>& elements) {
        const auto at = stateOffset(tensor);
        if (!at) return;
        for (float* buffer : {state.firstMoment, state.secondMoment})
            if (buffer)
                for (int64_t i : elements) buffer[*at + size_t(i)] = 0.0f;
    };
    const optim::MaskUpdate u = m_masks->update(stepsDone, weights, m_pruned, access);
    m_prunedWeights += u.dropped - u.regrown;
    m_log(LogLine::Level::Info,
          fmt::format("sparsity after step {}: {} weights dropped, {} regrown ({:.1f}% of the "
                      "masked weights at zero)",
                      stepsDone, u.dropped, u.regrown, 100.0 * m_masks->levelAfter(stepsDone)));
    return u.dropped + u.regrown != 0;
}

bool RunSparsity::recordDue(int64_t stepsDone, int64_t firstStep, int64_t maxSteps,
                            int logSteps) const {
    return m_masks && (stepsDone == firstStep + 1 || stepsDone % logSteps == 0 ||
                       stepsDone == maxSteps || m_masks->updatesAfter(stepsDone));
}

// The imbalance of a layer: the busiest output column's nonzeros over the mean column's
// (1 = balanced), worst matrix.
void RunSparsity::record(StepMetrics& metrics, RunRecord& record) const {
    if (!m_masks) return;
    const int64_t step = metrics.step;
    const int L = m_weights.table().shape().layers;
    std::vector<int64_t> total(size_t(L), 0), zero(size_t(L), 0);
    std::vector<double> imbalance(size_t(L), 1.0);
    for (const auto& m : m_masks->matrices()) {
        if (m.block < 0 || m.block >= L) continue;
        const auto prefix = optim::SparseMasks::columnNonzeros(m, m_pruned);
        const int64_t nonzero = prefix.back();
        total[size_t(m.block)] += int64_t(m.size());
        zero[size_t(m.block)] += int64_t(m.size()) - nonzero;
        int64_t busiest = 0;
        for (size_t j = 0; j + 1 < prefix.size(); ++j)
            busiest = std::max(busiest, prefix[j + 1] - prefix[j]);
        const double mean = double(nonzero) / double(m.cols);
        if (mean > 0)
            imbalance[size_t(m.block)] =
                std::max(imbalance[size_t(m.block)], double(busiest) / mean);
    }
    const double wall = double(std::chrono::duration_cast<std::chrono::milliseconds>(
                                   std::chrono::system_clock::now().time_since_epoch())
                                   .count()) /
                        1000.0;
    metrics.blockSparsity.assign(size_t(L), 0.0);
    metrics.blockImbalance = imbalance;
    for (int b = 0; b < L; ++b) {
        if (total[size_t(b)] == 0) continue;
        metrics.blockSparsity[size_t(b)] = double(zero[size_t(b)]) / double(total[size_t(b)]);
        const std::string layer = fmt::format("h.{}", b);
        const std::string level = "sparsity/" + layer;
        const std::string skew = "sparsity_imbalance/" + layer;
        record.metric(step, level.c_str(), double(zero[size_t(b)]) / double(total[size_t(b)]),
                      wall);
        record.metric(step, skew.c_str(), imbalance[size_t(b)], wall);
    }
}

modelio::MaskReader RunSparsity::maskReader() const {
    if (!m_masks) return {};
    const model::ParameterTable& table = m_weights.table();
    std::vector<bool> masked(table.tensors().size(), false);
    for (const auto& m : m_masks->matrices()) masked[m.tensor] = true;
    return [pruned = m_pruned, masked, &table](size_t t) -> const uint8_t* {
        return masked[t] ? pruned + table.tensors()[t].offset : nullptr;
    };
}

}  // namespace ws::session
