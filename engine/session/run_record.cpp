// SPDX-License-Identifier: GPL-3.0-or-later
// A session's record of its run in the run store (see run_record.h).
#include "engine/session/run_record.h"

#include <fmt/format.h>

#include "engine/session/resume.h"

namespace ws::session {
namespace fs = std::filesystem;

Result<RunRecord> RunRecord::open(const fs::path& db, store::RunRecorder* recorder,
                                  bool openStore) {
    RunRecord record;
    if (recorder) {
        record.m_recorder = recorder;
    } else if (openStore) {
        auto opened = store::RunStore::open(db);
        if (!opened.ok()) return opened.error();
        record.m_store = std::move(opened).value();
        record.m_recorder = record.m_store.get();
    }
    return record;
}

Status RunRecord::createRun(const store::NewRun& run) {
    auto id = m_recorder->createRun(run);
    if (!id.ok()) return id.error();
    m_runId = *id;
    return Status::success();
}

Status RunRecord::continueRun(int64_t run, int64_t startStep, const fs::path& modelDir,
                              const modelio::CheckpointContents& resumed) {
    m_runId = run;
    if (Status st = m_store->truncateAfter(run, startStep); !st.ok()) return st;
    return reconcileCheckpointRecords(*m_store, run, modelDir, resumed);
}

void RunRecord::metric(int64_t step, const char* key, double value, double wallTime) {
    if (m_recorder) m_recorder->logMetric(m_runId, step, key, value, wallTime);
}

void RunRecord::event(LogLine::Level level, std::string_view message) {
    if (!m_recorder || m_runId < 0) return;
    const char* name = level == LogLine::Level::Error     ? "error"
                       : level == LogLine::Level::Warning ? "warning"
                                                          : "info";
    m_recorder->logEvent(m_runId, name, message);
}

Status RunRecord::setStatus(RunState state) {
    // Paused is recorded too: a studio following the run from another process shows it.
    if (!m_recorder || m_runId < 0 || state == RunState::Preparing) return Status::success();
    return m_recorder->setStatus(m_runId, runStateName(state));
}

void RunRecord::setModelDir(const fs::path& dir) {
    if (m_recorder) (void)m_recorder->setModelDir(m_runId, dir.string());
}

void RunRecord::setSummary(std::string_view json) {
    if (m_recorder) (void)m_recorder->setSummary(m_runId, json);
}

Status RunRecord::savePlacement(const std::vector<store::RankPlacement>& ranks,
                                const std::vector<store::MemoryXShard>& shards) {
    if (!m_store) return Status::success();
    if (Status st = store::savePlacement(*m_store, m_runId, ranks); !st.ok()) return st;
    return store::saveMemoryXShards(*m_store, m_runId, shards);
}

std::optional<std::string> RunRecord::lostRecords(const Status& statusWrite) {
    if (!m_store || m_lostRecordsReported) return std::nullopt;
    m_store->flush();
    Status lost = m_store->asyncWriteStatus();
    if (lost.ok()) lost = statusWrite;
    // A deleted store file takes the writes with it, and SQLite, writing on through its open
    // descriptor, never notices.
    if (std::error_code ec; lost.ok() && !fs::exists(m_store->path(), ec)) {
        m_lostRecordsReported = true;
        return fmt::format(
            "run store {} was deleted while the run was running; its record of this run went "
            "with it",
            m_store->path().string());
    }
    if (lost.ok()) return std::nullopt;
    m_lostRecordsReported = true;
    return fmt::format(
        "{}; the run's record in the run store is incomplete (free some disk space where {} is, "
        "or give another store with --db; the weights and checkpoints in the model folder are "
        "not affected)",
        lost.error().message, m_store->path().string());
}

void RunRecord::flush() {
    if (m_recorder) m_recorder->flush();
}

}  // namespace ws::session
