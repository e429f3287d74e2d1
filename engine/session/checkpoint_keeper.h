// SPDX-License-Identifier: GPL-3.0-or-later
// CheckpointKeeper: the checkpoint cadence of one run (internal to the session). It writes
// checkpoint-<step> every runconfig.checkpoint_steps steps and once more when the run finishes or
// is stopped, records each file's SHA-256 in the run store, and keeps only the newest
// runconfig.max_checkpoints folders - deleting older ones only after the new one is complete and
// recorded (each hidden by a rename first, so a kill mid-delete leaves no checkpoint-<step> that
// lacks files). The run's metrics are flushed to the store before each checkpoint is written, so
// a checkpoint on disk never covers steps whose metrics a kill could still lose. atStart removes
// what a killed process left (hidden .partial folders, atomic-write temp files); the store's rows
// are reconciled by the resume (session/resume.h). A checkpoint that cannot be written is reported
// through `log` as an error and training goes on: losing a checkpoint must not also lose the run.
// Not thread-safe: used by the training thread between steps, when MemoryX is consistent.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>

#include "engine/config/config.h"
#include "engine/model/parameters.h"
#include "engine/modelio/checkpoints.h"
#include "engine/modelio/weights_io.h"
#include "engine/optim/schedule.h"
#include "engine/session/events.h"

namespace ws::store {
class RunRecorder;
}

namespace ws::session {

class CheckpointKeeper {
public:
    using Log = std::function<void(LogLine::Level, std::string)>;
    // `lastWritten`: the step of a checkpoint that already holds this state (the one resumed
    // from), or -1.
    // `read` finds each tensor of the weights and optimizer state (modelio::TensorReader).
    CheckpointKeeper(const config::Config& config, std::filesystem::path modelDir,
                     const model::ParameterTable& table, modelio::TensorReader read,
                     int stateCopies, const optim::LearningRateSchedule& schedule,
                     store::RunRecorder* store, int64_t runId, int64_t lastWritten, Log log);

    // Removes partial folders a killed writer left; runconfig.save_initial_checkpoint.
    void atStart(int64_t step);
    // Every runconfig.checkpoint_steps, or now when `requested`.
    void afterStep(int64_t step, bool requested = false);
    void atEnd(int64_t step);  // the final checkpoint (skipped when `step` is already saved)
    // The loss of `divergedStep` was not finite. It was computed with the weights saved as the
    // checkpoint of the step before, so resuming from that one diverges again at once, whatever
    // the learning rate: it is set aside as checkpoint-<step>.diverged (kept, never resumed from).
    void setAsideDiverged(int64_t divergedStep);
    // The run's folder was deleted under the running session (a checkpoint failed for it):
    // nothing more can be saved, so training should stop.
    bool folderGone() const { return m_folderGone; }
    // Sparsity masks to write beside the optimizer state (modelio::writeCheckpoint).
    void setMasks(modelio::MaskReader masks) { m_masks = std::move(masks); }

private:
    void write(int64_t step);
    void prune(int64_t newest);

    const config::Config& m_config;
    std::filesystem::path m_modelDir;
    const model::ParameterTable& m_table;
    modelio::TensorReader m_read;
    int m_stateCopies;
    const optim::LearningRateSchedule& m_schedule;
    store::RunRecorder* m_store;
    int64_t m_runId;
    int64_t m_lastWritten;
    Log m_log;
    modelio::MaskReader m_masks;
    bool m_folderGone = false;
};

}  // namespace ws::session
