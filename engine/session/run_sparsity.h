// SPDX-License-Identifier: GPL-3.0-or-later
// RunSparsity: which of a run's weights are held at zero. Static sparsity (model.sparsity) prunes
// by magnitude once, before training; the top-level sparsity section (optim/sparse_masks.h) keeps
// masks in MemoryX, restored from the checkpoint resumed from or initialised, reapplied after
// each step and updated on schedule (RigL reads the step's dense gradient, a regrown weight
// restarts with fresh optimizer state). It gives the emulator each block's nonzeros, the run
// store per-layer sparsity metrics, and checkpoints the masks.
// Not thread-safe: the session's worker thread, between steps.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "engine/config/config.h"
#include "engine/modelio/checkpoints.h"
#include "engine/optim/sparse_masks.h"
#include "engine/session/events.h"
#include "engine/session/resume.h"
#include "engine/session/run_record.h"
#include "engine/session/run_weights.h"
#include "engine/wafer/sparsity.h"

namespace ws::session {

class RunSparsity {
public:
    using Log = std::function<void(LogLine::Level, std::string)>;

    // `weights` must be whole (not sharded) for either kind, and outlive this.
    RunSparsity(const config::Config& config, RunWeights& weights, Log log);

    // model.sparsity: prunes MemoryX's weights once (nothing when its level is 0).
    Status pruneStatic();
    // The sparsity section: masks from the checkpoint of `resume` or initialised (nothing when
    // the section is absent or its level is 0).
    Status prepareMasks(const ResumePlan* resume);

    bool masked() const { return m_masks.has_value(); }
    int64_t prunedWeights() const { return m_prunedWeights; }  // zero weights the wafer skips
    // Each block's per-column nonzeros as the wafer sees them now (empty: dense), and those of
    // the static sparsity alone.
    std::vector<wafer::BlockSparsity> blocks() const;
    std::vector<wafer::BlockSparsity> staticBlocks() const;

    // After the optimizer step of step `step` (0-based): pruned weights back to zero and the
    // scheduled mask update. True when the masks changed (the emulator plans again).
    bool afterStep(int64_t step);
    // Whether step `stepsDone` (1-based) records its per-layer figures: the first of this
    // session, every log step, the last, and every step whose masks change.
    bool recordDue(int64_t stepsDone, int64_t firstStep, int64_t maxSteps, int logSteps) const;
    // Per layer: the share of its masked weights at zero and the imbalance it causes on the
    // wafer, into `metrics` and the run's record.
    void record(StepMetrics& metrics, RunRecord& record) const;
    // The masks checkpoints write beside the optimizer state (null without masks).
    modelio::MaskReader maskReader() const;

private:
    const config::Config& m_config;
    RunWeights& m_weights;
    Log m_log;
    std::optional<wafer::StaticSparsity> m_static;
    std::optional<optim::SparseMasks> m_masks;
    uint8_t* m_pruned = nullptr;  // MemoryX's pruneMask bytes (the masks)
    int64_t m_prunedWeights = 0;
};

}  // namespace ws::session
