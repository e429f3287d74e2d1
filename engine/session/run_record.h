// SPDX-License-Identifier: GPL-3.0-or-later
// RunRecord: a session's record of its run, in the run store it opened (store/run_store.h) or in
// the recorder it was given (a sweep trial on another rank forwards to rank 0's store): the run's
// row, its status, log events, metrics, summary and placement, a continued run's rows put back in
// line with its folder, and the report of rows the store lost. An empty record (no store: tests,
// benchmarks) records nothing. Not thread-safe: the session's worker thread.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/core/result.h"
#include "engine/modelio/checkpoints.h"
#include "engine/session/events.h"
#include "engine/store/placement_records.h"
#include "engine/store/run_recorder.h"
#include "engine/store/run_store.h"

namespace ws::session {

class RunRecord {
public:
    RunRecord() = default;  // records nothing
    // Records into `recorder` when given (not owned; must outlive the record), else into the
    // run store at `db`, opened here when `openStore`; else nothing.
    static Result<RunRecord> open(const std::filesystem::path& db, store::RunRecorder* recorder,
                                  bool openStore);

    store::RunRecorder* recorder() const { return m_recorder; }  // null: nothing is recorded
    store::RunStore* store() const { return m_store.get(); }     // null unless opened here
    int64_t runId() const { return m_runId; }                    // -1 before the run has a row

    // A new run's row (status "created"); its id becomes runId().
    Status createRun(const store::NewRun& run);
    // Takes up run `run` of the opened store, continued from `resumed` after `startStep` steps:
    // the rows logged after that step go, and the checkpoint rows follow `modelDir` again
    // (reconcileCheckpointRecords, resume.h).
    Status continueRun(int64_t run, int64_t startStep, const std::filesystem::path& modelDir,
                       const modelio::CheckpointContents& resumed);

    // Asynchronous, as the recorder's: never slows the training loop.
    void metric(int64_t step, const char* key, double value, double wallTime);
    // Once the run has a row.
    void event(LogLine::Level level, std::string_view message);
    // Once the run has a row; Preparing is not recorded (the row starts "created").
    Status setStatus(RunState state);
    void setModelDir(const std::filesystem::path& dir);
    void setSummary(std::string_view json);
    // Which rank on which host computes which systems, and MemoryX's shards (the opened store
    // only: a forwarded record has no placement).
    Status savePlacement(const std::vector<store::RankPlacement>& ranks,
                         const std::vector<store::MemoryXShard>& shards);
    // Rows the opened store could not write (its disk filled up, its file was deleted), or
    // `statusWrite` when that failed: what the run log must say about them, once; nullopt when
    // nothing was lost or it was said already. The model folder is another matter: its
    // checkpoints are written and checked on their own.
    std::optional<std::string> lostRecords(const Status& statusWrite);
    void flush();

private:
    std::unique_ptr<store::RunStore> m_store;  // opened by this record
    store::RunRecorder* m_recorder = nullptr;  // m_store, or the one given
    int64_t m_runId = -1;
    bool m_lostRecordsReported = false;
};

}  // namespace ws::session
