// The session's part of weight sparsity (the top-level sparsity section; optim/sparse_masks.h):
// the masks in MemoryX (from the checkpoint resumed from, or initialised), their reapplication
// and scheduled updates after each step, the per-layer metrics the Wafer tab charts, and the
// emulator re-planned whenever the masks change, so emulated time follows the current mask.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstring>

#include "engine/modelio/checkpoints.h"
#include "engine/session/emulation.h"
#include "engine/session/session.h"

#include "engine/session/session_state.h"

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

Status Session::prepareMasks(Prepared& p) {
    const config::Config& cfg = m_config.config;
    Impl& s = *m_impl;
    if (!cfg.sparsity || cfg.sparsity->sparsity <= 0) return Status::success();
    const config::SparsitySectionConfig& sp = *cfg.sparsity;
    auto masks = optim::SparseMasks::create(sp, *s.table, uint64_t(cfg.runconfig.seed),
                                            cfg.runconfig.maxSteps);
    if (!masks.ok()) return masks.error();
    p.masks.emplace(std::move(masks).value());
    p.pruned = s.memoryx->pruneMask();
    if (!p.pruned || !p.weights)
        return Error{"sparsity: MemoryX holds no masks (internal: created without them)"};
    size_t restored = 0;
    if (p.resume) {
        auto loaded = modelio::loadCheckpointMasks(
            p.resume->checkpoint, *s.table, [&](size_t tensor, const uint8_t* mask, size_t bytes) {
                std::memcpy(p.pruned + s.table->tensors()[tensor].offset, mask, bytes);
            });
        if (!loaded.ok()) return loaded.error();
        restored = *loaded;
    }
    if (restored == 0) {
        p.masks->initialise(p.weights, p.pruned);
    } else if (restored != p.masks->matrices().size()) {
        return Error{fmt::format(
            "sparsity: the checkpoint holds {} masks but sparsity.param_name_patterns select {} "
            "matrices; resume with the config it was trained with",
            restored, p.masks->matrices().size())};
    } else {
        p.masks->reapply(p.weights, p.pruned);
    }
    for (const auto& m : p.masks->matrices())
        p.prunedWeights += optim::SparseMasks::prunedIn(m, p.pruned);
    std::string when = "the mask stays (static)";
    if (sp.dynamic()) {
        when = fmt::format("masks change every {} steps from step {} until {}", sp.schedule.freq,
                           sp.schedule.start, p.masks->stop());
        if (sp.type != "gmp")
            when += fmt::format(", drop fraction {} from {:g}", sp.dropFraction.type,
                                sp.dropFraction.init);
        else
            when += fmt::format(", level {:g} -> {:g} (cubic)", sp.initSparsity, sp.sparsity);
    }
    log(LogLine::Level::Info,
        fmt::format("sparsity: {} at {:.0f}% over {} matrices ({} ... {}); initial mask {}; {}; "
                    "{} weights held at zero",
                    sp.type, 100.0 * sp.sparsity, p.masks->matrices().size(),
                    p.masks->matrices().front().name, p.masks->matrices().back().name,
                    restored ? "from the checkpoint" : sp.initMethod, when, p.prunedWeights));
    return Status::success();
}

std::vector<wafer::BlockSparsity> Session::currentBlockSparsity(const Prepared& p) const {
    if (p.sparsity) return p.sparsity->blocks();
    if (!p.masks) return {};
    std::vector<wafer::BlockSparsity> blocks(size_t(p.shape.layers));
    for (const auto& m : p.masks->matrices()) {
        if (m.block < 0 || m.block >= p.shape.layers) continue;
        if (auto member = memberFor(m.name, m.block))
            blocks[size_t(m.block)].*member = optim::SparseMasks::columnNonzeros(m, p.pruned);
    }
    return blocks;
}

// After the optimizer step: pruned weights back to zero, the scheduled mask update (RigL reads
// this step's dense gradient, still in MemoryX), and the emulator re-planned when masks changed.
void Session::afterStepSparsity(Prepared& p, Progress& r) {
    if (p.sparsity) p.sparsity->reapply(p.weights);
    if (!p.masks) return;
    p.masks->reapply(p.weights, p.pruned);
    const int64_t stepsDone = r.step + 1;
    if (!p.masks->updatesAfter(stepsDone)) return;
    Impl& s = *m_impl;
    const optim::OptimizerState state = s.memoryx->optimizerState();
    auto stateOffset = [&](size_t tensor) -> std::optional<size_t> {
        const auto& t = s.table->tensors()[tensor];
        const auto pieces = optim::trainablePieces(s.groups, t.offset, t.offset + t.size);
        if (pieces.empty()) return std::nullopt;  // frozen: no gradient, no state
        return pieces[0].stateOffset;
    };
    optim::MaskUpdateAccess access;
    access.gradient = [&](size_t tensor) -> const float* {
        const auto at = stateOffset(tensor);
        return at ? s.memoryx->gradients() + *at : nullptr;
    };
    // A regrown weight starts from zero with fresh optimizer state.
    access.resetState = [&](size_t tensor, const std::vector<int64_t>& elements) {
        const auto at = stateOffset(tensor);
        if (!at) return;
        for (float* buffer : {state.firstMoment, state.secondMoment})
            if (buffer)
                for (int64_t i : elements) buffer[*at + size_t(i)] = 0.0f;
    };
    const optim::MaskUpdate u = p.masks->update(stepsDone, p.weights, p.pruned, access);
    p.prunedWeights += u.dropped - u.regrown;
    log(LogLine::Level::Info,
        fmt::format("sparsity after step {}: {} weights dropped, {} regrown ({:.1f}% of the "
                    "masked weights at zero)",
                    stepsDone, u.dropped, u.regrown, 100.0 * p.masks->levelAfter(stepsDone)));
    if (u.dropped + u.regrown == 0 || !p.emulatedClock) return;
    auto prediction =
        predictRunStep(m_config.config, p.shape, p.fit.microBatch, currentBlockSparsity(p));
    if (!prediction.ok()) return;  // keep the previous plan; training is unaffected
    const double at = p.emulatedClock->stepStart(stepsDone);
    p.emulatedClock.emplace(std::move(prediction).value(), stepsDone, at);
}

// Per layer: the share of its masked weights at zero, and the imbalance it causes on the wafer:
// the busiest output column's nonzeros over the mean column's (1 = balanced), worst matrix.
void Session::recordSparsity(Prepared& p, StepMetrics& metrics) {
    if (!p.masks) return;
    const int64_t step = metrics.step;
    const int L = p.shape.layers;
    std::vector<int64_t> total(size_t(L), 0), zero(size_t(L), 0);
    std::vector<double> imbalance(size_t(L), 1.0);
    for (const auto& m : p.masks->matrices()) {
        if (m.block < 0 || m.block >= L) continue;
        const auto prefix = optim::SparseMasks::columnNonzeros(m, p.pruned);
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
        m_impl->metric(step, level.c_str(), double(zero[size_t(b)]) / double(total[size_t(b)]),
                       wall);
        m_impl->metric(step, skew.c_str(), imbalance[size_t(b)], wall);
    }
}

// The emulated wafer time and FLOPs of one step, as planned for the current mask.
void Session::countEmulatedStep(Prepared& p) {
    if (!p.emulatedClock) return;
    const auto& e = *p.emulatedClock->prediction();
    m_summary.emulatedFlops +=
        e.modelFlopsPerStep - 6.0 * double(p.tokensPerStep()) * double(p.prunedWeights);
}

}  // namespace ws::session
