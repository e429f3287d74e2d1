// SPDX-License-Identifier: GPL-3.0-or-later
// The checkpoint cadence of a run (see checkpoint_keeper.h).
#include "engine/session/checkpoint_keeper.h"

#include <fmt/format.h>

#include <vector>

#include "engine/core/kill_points.h"
#include "engine/modelio/checkpoints.h"
#include "engine/session/param_groups.h"
#include "engine/session/run_control.h"
#include "engine/store/run_store.h"

namespace ws::session {
namespace fs = std::filesystem;

CheckpointKeeper::CheckpointKeeper(const config::Config& config, fs::path modelDir,
                                   const model::ParameterTable& table, modelio::TensorReader read,
                                   int stateCopies, const optim::LearningRateSchedule& schedule,
                                   store::RunRecorder* store, int64_t runId, int64_t lastWritten,
                                   Log log)
    : m_config(config),
      m_modelDir(std::move(modelDir)),
      m_table(table),
      m_read(std::move(read)),
      m_stateCopies(stateCopies),
      m_schedule(schedule),
      m_store(store),
      m_runId(runId),
      m_lastWritten(lastWritten),
      m_log(std::move(log)) {}

void CheckpointKeeper::atStart(int64_t step) {
    // Partial folders are what a killed writer (or pruner) left behind, and .<file>.tmp-XXXXXX
    // the temp file of an atomic write (the final weights) it never renamed into place; one
    // process writes a run's folder, and this one holds it now. Except the control file: the
    // studio or `wafer runs pause` may be writing a request into it at this very moment.
    const std::string controlTemp = "." + std::string(kControlFileName) + ".tmp-";
    std::vector<fs::path> partial;
    std::error_code ec;
    for (fs::directory_iterator it(m_modelDir, ec), end; !ec && it != end; it.increment(ec)) {
        const std::string name = it->path().filename().string();
        if ((name.rfind(".checkpoint-", 0) == 0 && name.ends_with(".partial")) ||
            (name.starts_with('.') && name.find(".tmp-") != std::string::npos &&
             !name.starts_with(controlTemp))) {
            partial.push_back(it->path());
        }
    }
    for (const auto& folder : partial) {
        fs::remove_all(folder, ec);
        m_log(LogLine::Level::Info,
              fmt::format("checkpoint: removed {}, left by an interrupted write", folder.string()));
    }
    if (m_config.runconfig.saveInitialCheckpoint && step == 0 && m_lastWritten < 0) write(step);
}

void CheckpointKeeper::afterStep(int64_t step, bool requested) {
    const int every = m_config.runconfig.checkpointSteps;
    if ((requested || (every > 0 && step % every == 0)) && step != m_lastWritten) write(step);
}

void CheckpointKeeper::atEnd(int64_t step) {
    if (step != m_lastWritten) write(step);
}

void CheckpointKeeper::setAsideDiverged(int64_t divergedStep) {
    const int64_t bad = divergedStep - 1;
    const fs::path folder = m_modelDir / modelio::checkpointFolderName(bad);
    std::error_code ec;
    if (bad < 0 || !fs::is_directory(folder, ec)) return;
    fs::path aside = folder;
    aside += ".diverged";
    fs::remove_all(aside, ec);
    fs::rename(folder, aside, ec);
    if (ec) {
        m_log(LogLine::Level::Warning,
              fmt::format("checkpoint: {} gave the non-finite loss of step {}, but cannot be set "
                          "aside ({}): resume from an earlier checkpoint",
                          folder.string(), divergedStep, ec.message()));
        return;
    }
    if (m_store && m_runId >= 0) (void)m_store->forgetCheckpoint(m_runId, bad);
    if (m_lastWritten == bad) m_lastWritten = -1;
    const auto left = modelio::listCheckpoints(m_modelDir);
    m_log(LogLine::Level::Warning,
          fmt::format("checkpoint: set {} aside as {}: its weights gave the non-finite loss of "
                      "step {}, so resuming from it would diverge again; {}",
                      folder.filename().string(), aside.filename().string(), divergedStep,
                      left.empty() ? std::string("no earlier checkpoint is left")
                                   : fmt::format("resume from {} (e.g. with a smaller learning "
                                                 "rate: --allow-config-change --set "
                                                 "optimizer.learning_rate=...)",
                                                 left.back().second.string())));
}

void CheckpointKeeper::write(int64_t step) {
    // The metrics logged up to this step reach the store before the checkpoint exists: a process
    // killed once it is on disk resumes from it and never logs those steps again.
    if (m_store) m_store->flush();
    const modelio::TrainerState state =
        modelio::TrainerState::forRun(m_config, step, m_runId, m_schedule.at(step));
    // Optimizer state of the tensors that train only (MemoryX keeps none for the frozen ones).
    auto written = modelio::writeCheckpoint(
        m_modelDir, m_table, m_read, m_stateCopies, m_config, state,
        frozenTensors(parameterGroups(m_table, m_config.optimizer)), m_masks);
    if (!written.ok()) {
        std::error_code ec;
        m_folderGone = !fs::is_directory(m_modelDir, ec);
        m_log(LogLine::Level::Error,
              fmt::format(
                  "checkpoint at step {} not written: {}; {}", step, written.error().message,
                  m_folderGone ? std::string("the run's folder was deleted")
                  : m_lastWritten >= 0
                      ? fmt::format(
                            "training goes on, and {} stays the newest complete "
                            "checkpoint",
                            (m_modelDir / modelio::checkpointFolderName(m_lastWritten)).string())
                      : std::string("training goes on")));
        return;
    }
    m_lastWritten = step;
    killPoint("checkpoint-record");
    if (m_store && m_runId >= 0) {
        for (const auto& [name, sha] : written->fileSha256) {
            if (Status st = m_store->recordCheckpoint(m_runId, step, written->folder / name, sha);
                !st.ok()) {
                m_log(LogLine::Level::Error, st.error().message);
            }
        }
    }
    m_log(LogLine::Level::Info, fmt::format("checkpoint: wrote {}", written->folder.string()));
    prune(step);
}

void CheckpointKeeper::prune(int64_t newest) {
    const int keep = m_config.runconfig.maxCheckpoints;
    if (keep <= 0) return;
    auto existing = modelio::listCheckpoints(m_modelDir);
    if (existing.size() <= size_t(keep)) return;
    const size_t excess = existing.size() - size_t(keep);
    for (size_t i = 0; i < excess; ++i) {
        const auto& [step, folder] = existing[i];
        if (step >= newest) break;  // never the one just written
        // Out of sight in one rename first: a process killed while deleting leaves a hidden
        // .partial folder (removed by the next atStart), never a checkpoint-<step> missing files.
        const fs::path doomed =
            m_modelDir / fmt::format(".{}.pruned.partial", folder.filename().string());
        std::error_code ec;
        fs::remove_all(doomed, ec);
        fs::rename(folder, doomed, ec);
        if (ec) {
            m_log(LogLine::Level::Warning, fmt::format("cannot delete old checkpoint {}: {}",
                                                       folder.string(), ec.message()));
            continue;
        }
        killPoint("checkpoint-prune");
        if (m_store && m_runId >= 0) (void)m_store->forgetCheckpoint(m_runId, step);
        fs::remove_all(doomed, ec);
        m_log(LogLine::Level::Info,
              fmt::format("checkpoint: deleted {} (runconfig.max_checkpoints {})",
                          folder.filename().string(), keep));
    }
}

}  // namespace ws::session
