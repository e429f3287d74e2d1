// SPDX-License-Identifier: GPL-3.0-or-later
// WriteQueue: the run store's single writer thread (internal to wafer::store).
// Producers enqueue metric and event rows in O(1) under a mutex and never touch the disk; the
// writer thread gathers them for up to kBatchWindow (or until kBatchRows are waiting, a flush is
// requested or a synchronous job arrives) and writes each gathering in one transaction. Jobs (the
// store's synchronous writes: create a run, set its status...) run on the same thread, after the
// rows queued before them, so every write to the file is ordered and made by one connection.
// Thread-safe: any thread may push, call or flush. The destructor writes everything queued.
#pragma once

#include <SQLiteCpp/Database.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "engine/core/result.h"

namespace ws::store::detail {

struct MetricRow {
    int64_t run;
    int64_t step;
    std::string key;
    double value;
    double wallTime;
};

struct EventRow {
    int64_t run;
    std::chrono::system_clock::time_point time;
    std::string level;
    std::string message;
};

inline constexpr auto kBatchWindow = std::chrono::milliseconds(50);
inline constexpr size_t kBatchRows = 1000;

class WriteQueue {
public:
    using Job = std::function<void(SQLite::Database&)>;

    WriteQueue(std::unique_ptr<SQLite::Database> db, std::string dbName);
    ~WriteQueue();
    WriteQueue(const WriteQueue&) = delete;
    WriteQueue& operator=(const WriteQueue&) = delete;

    void pushMetric(MetricRow row);
    void pushEvent(EventRow row);

    // Runs fn(db) on the writer thread after everything queued before it, and returns its
    // result (a Result<T> or Status). An exception from fn becomes an Error.
    template <typename F>
    auto call(F fn) -> std::invoke_result_t<F&, SQLite::Database&>;

    // Blocks until every row and job pushed before the call is committed.
    void flush();

    // The first asynchronous write failure since the store opened (rows that could not be
    // written), or success.
    Status health() const;

    // What to do when `e` says the disk is full (SQLITE_FULL) or the file is damaged
    // (SQLITE_CORRUPT, SQLITE_NOTADB), "" otherwise.
    std::string failureHint(const std::exception& e) const;

private:
    uint64_t pushJob(Job job);
    void waitDone(uint64_t sequence);
    void run();
    void writeRows(const std::vector<MetricRow>& metrics, const std::vector<EventRow>& events);
    void writeRowsOnce(const std::vector<MetricRow>& metrics, const std::vector<EventRow>& events,
                       size_t& unknownRun);
    void noteFailure(const std::string& message);

    std::unique_ptr<SQLite::Database> m_db;  // used by the writer thread only
    const std::string m_dbName;

    mutable std::mutex m_mutex;
    std::condition_variable m_wake;  // writer: work arrived / flush wanted / stopping
    std::condition_variable m_done;  // flushers and callers: a gathering was committed
    std::vector<MetricRow> m_metrics;
    std::vector<EventRow> m_events;
    std::vector<Job> m_jobs;
    uint64_t m_pushed = 0;       // items (rows + jobs) ever pushed
    uint64_t m_written = 0;      // items the writer has finished
    uint64_t m_flushWanted = 0;  // highest m_pushed a flush() is waiting for
    bool m_stopping = false;
    std::string m_failure;  // first asynchronous failure, "" when none

    std::thread m_thread;  // last: starts after every member above exists
};

template <typename F>
auto WriteQueue::call(F fn) -> std::invoke_result_t<F&, SQLite::Database&> {
    using R = std::invoke_result_t<F&, SQLite::Database&>;
    std::optional<R> result;
    const uint64_t sequence = pushJob([&](SQLite::Database& db) {
        try {
            result.emplace(fn(db));
        } catch (const std::exception& e) {
            result.emplace(Error{m_dbName + ": " + e.what() + failureHint(e)});
        }
    });
    waitDone(sequence);
    return std::move(*result);
}

}  // namespace ws::store::detail
