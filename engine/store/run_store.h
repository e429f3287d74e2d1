// SPDX-License-Identifier: GPL-3.0-or-later
// RunStore: every training run, its metrics, checkpoints and log events, in one SQLite file
// (default userDataDir()/runs.sqlite). Schema versioned with migrations (see schema.h).
//
// Writing never slows the training loop: logMetric/logEvent append to an in-memory queue in O(1)
// and a single writer thread commits the rows in batched transactions (every 50 ms or 1000 rows).
// The other writes (createRun, setStatus, ...) run on the same writer thread, after the rows queued
// before them, and return once committed. Reads use their own connection and see what has been
// committed; call flush() first to read rows you have just logged. The queue is unbounded: the
// writer sustains a few hundred thousand rows/s (bench/store_bench.cpp), far above what training
// logs, so memory only grows if the disk stalls.
// Non-finite metric values (NaN, +-Inf) are stored and read back as such: a diverging run shows.
//
// Thread-safety: any thread may call any method. Failure contract: open() and the synchronous
// calls return an Error naming the file and the problem; a queued row that cannot be written
// (disk full, unknown run id) is reported by asyncWriteStatus(), never by a crash.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/core/result.h"
#include "engine/store/run_recorder.h"

namespace SQLite {
class Database;
}

namespace ws::store {

// Statuses a run can be in (setStatus refuses anything else). "paused": between layers, by
// request; it goes back to "running" (or ends) in the same process.
inline constexpr std::string_view kRunStatuses[] = {"created", "running",  "paused", "finished",
                                                    "stopped", "diverged", "failed"};

struct RunInfo {
    int64_t id = 0;
    std::string name, created, status, configYaml, configHash, modelDir, kind;
    std::optional<int64_t> parentRun;
    std::optional<int64_t> sweepId;
    std::string summaryJson;  // "" until setSummary
};

struct MetricPoint {
    int64_t step = 0;
    double value = 0;     // may be NaN or +-Inf
    double wallTime = 0;  // as logged (NaN if logged as NaN)
};

struct CheckpointRecord {
    int64_t step = 0;
    std::string path;
    std::string sha256;
    std::string created;  // ISO-8601 UTC
};

struct EventRecord {
    std::string time;  // ISO-8601 UTC with milliseconds, taken when logEvent was called
    std::string level;
    std::string message;
};

class RunStore final : public RunRecorder {
public:
    // Opens (creating the file and its folder if needed) and migrates the store. Errors name the
    // file: a folder that cannot be created or written, a file that is not an SQLite database or
    // belongs to another application, a schema newer than this build knows.
    static Result<std::unique_ptr<RunStore>> open(const std::filesystem::path& dbPath);
    // For listing and showing: as open(), except that an existing store this process may not
    // write (a read-only disk, folder or file: store_recovery.h's notWritableAdvice) opens
    // read-only instead of failing; then every write returns an error.
    static Result<std::unique_ptr<RunStore>> openForReading(const std::filesystem::path& dbPath);
    static std::filesystem::path defaultPath();  // userDataDir()/runs.sqlite
    // Where the runs a store numbers keep their folders (run-<id>, sweep-<id>): "runs" beside
    // runs.sqlite, "<name>-runs" beside any other store file, so that two stores in one folder
    // (--db a.sqlite, --db b.sqlite) never write into each other's run-1.
    static std::filesystem::path runsFolderFor(const std::filesystem::path& dbPath);

    ~RunStore() override;  // flushes everything queued, then closes
    RunStore(const RunStore&) = delete;
    RunStore& operator=(const RunStore&) = delete;

    const std::filesystem::path& path() const;

    Result<int64_t> createRun(const NewRun& run) override;  // status "created", created = now
    Status setStatus(int64_t run, std::string_view status) override;  // one of kRunStatuses
    Status setSummary(int64_t run, std::string_view json) override;   // must be valid JSON
    Status renameRun(int64_t run, std::string_view name);
    Status setModelDir(int64_t run, const std::filesystem::path& dir) override;

    // Asynchronous, O(1), never blocks on disk. `wallTime` is stored as given (seconds).
    void logMetric(int64_t run, int64_t step, std::string_view key, double value,
                   double wallTime) override;
    // Asynchronous; the event is timestamped now. Levels by convention: info, warning, error.
    void logEvent(int64_t run, std::string_view level, std::string_view message) override;

    // Synchronous; `sha256` must be 64 hex digits (see ws::sha256File).
    Status recordCheckpoint(int64_t run, int64_t step, const std::filesystem::path& file,
                            std::string_view sha256) override;
    // Synchronous: drops the checkpoint rows of `step` (its folder was pruned).
    Status forgetCheckpoint(int64_t run, int64_t step) override;
    // Synchronous, after everything queued before it: drops the metrics and checkpoint rows above
    // `step`. A run resumed from its checkpoint at `step` continues from there, so rows a killed
    // process logged after that checkpoint belong to a timeline that no longer exists.
    Status truncateAfter(int64_t run, int64_t step);

    // Blocks until everything queued before the call is committed to disk.
    void flush() override;
    // Success, or the first asynchronous write failure since open (rows that were lost).
    Status asyncWriteStatus() const;

    Result<std::vector<RunInfo>> listRuns() const;  // newest first
    Result<RunInfo> getRun(int64_t run) const;
    // One key's points in step order (rows logged for the same step keep their logging order).
    Result<std::vector<MetricPoint>> metrics(int64_t run, std::string_view key) const;
    // The value at the highest step of each key (the last logged on ties).
    Result<std::map<std::string, double>> lastMetrics(int64_t run) const;
    // One key's point at its highest step (the last logged on ties); nullopt when it has none.
    // One index lookup: what `runs list` shows of a run that wrote no summary (paused, stopped
    // by a kill, interrupted).
    Result<std::optional<MetricPoint>> lastPoint(int64_t run, std::string_view key) const;
    Result<std::vector<CheckpointRecord>> checkpoints(int64_t run) const;  // by step
    Result<std::vector<EventRecord>> events(int64_t run) const;            // logging order

    // Deletes the run's row and its metrics, events and checkpoint rows (not files on disk).
    // Runs that named it as parent or sweep keep existing with that link cleared.
    Status deleteRun(int64_t run);

    // For the store's own extensions in other files (sweep_records.h): run `fn` on the writer
    // thread (inside no transaction; open one if needed), or on the read connection.
    Status writeWith(const std::function<Status(SQLite::Database&)>& fn);
    Status readWith(const std::function<Status(SQLite::Database&)>& fn) const;

    // Following the store live (a studio beside `wafer train --db`). dataVersion() is cheap
    // (no table is read): it changes whenever any other connection, this store's own writer
    // thread or another process, has committed since the last call. Poll it and re-read only
    // when it moved. metricsAfter() is metrics() limited to steps above `afterStep`, for
    // appending what a running run logged since the last read.
    Result<int64_t> dataVersion() const;
    Result<std::vector<MetricPoint>> metricsAfter(int64_t run, std::string_view key,
                                                  int64_t afterStep) const;

private:
    struct Impl;
    explicit RunStore(std::unique_ptr<Impl> impl);
    std::unique_ptr<Impl> m_impl;
};

}  // namespace ws::store
