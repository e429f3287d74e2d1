// SPDX-License-Identifier: GPL-3.0-or-later
// WriteQueue (see write_queue.h): gathering rows, batched transactions, ordered jobs.
#include "engine/store/write_queue.h"

#include <SQLiteCpp/Statement.h>
#include <SQLiteCpp/Transaction.h>
#include <fmt/format.h>
#include <sqlite3.h>

#include <cmath>

#include "engine/core/kill_points.h"
#include "engine/store/time_format.h"

namespace ws::store::detail {

namespace {
// Columns 4 and 5 of a metrics row: SQLite turns a NaN REAL into NULL and stores -0.0 as the
// integer 0, so those values (and the infinities, for symmetry) carry a `special` tag.
void bindValue(SQLite::Statement& insert, double value) {
    if (std::isnan(value)) {
        insert.bind(4);
        insert.bind(5, "nan");
    } else if (std::isinf(value)) {
        insert.bind(4);
        insert.bind(5, value > 0 ? "inf" : "-inf");
    } else {
        insert.bind(4, value);
        if (value == 0 && std::signbit(value)) {
            insert.bind(5, "-0");
        } else {
            insert.bind(5);
        }
    }
}

// Executes one INSERT and readies the statement for the next row. False when the row breaks a
// constraint (its run does not exist): SQLite aborts that statement only, so the rest of the
// batch can still commit. Any other failure (disk full, I/O) throws and loses the batch.
bool insertRow(SQLite::Statement& insert) {
    try {
        insert.exec();
    } catch (const SQLite::Exception& e) {
        insert.tryReset();  // reset() would rethrow the step's error
        if ((e.getErrorCode() & 0xff) != SQLITE_CONSTRAINT) throw;
        return false;
    }
    insert.reset();
    return true;
}
}  // namespace

WriteQueue::WriteQueue(std::unique_ptr<SQLite::Database> db, std::string dbName)
    : m_db(std::move(db)), m_dbName(std::move(dbName)), m_thread([this] { run(); }) {}

WriteQueue::~WriteQueue() {
    {
        std::lock_guard lock(m_mutex);
        m_stopping = true;
    }
    m_wake.notify_one();
    m_thread.join();
}

void WriteQueue::pushMetric(MetricRow row) {
    bool wake;
    {
        std::lock_guard lock(m_mutex);
        m_metrics.push_back(std::move(row));
        ++m_pushed;
        // Wake the writer only when a gathering starts or fills up: a notify with the writer
        // asleep is a system call, too dear to pay on every metric.
        const size_t waiting = m_metrics.size() + m_events.size() + m_jobs.size();
        wake = waiting == 1 || m_metrics.size() == kBatchRows;
    }
    if (wake) m_wake.notify_one();
}

void WriteQueue::pushEvent(EventRow row) {
    bool wake;
    {
        std::lock_guard lock(m_mutex);
        m_events.push_back(std::move(row));
        ++m_pushed;
        const size_t waiting = m_metrics.size() + m_events.size() + m_jobs.size();
        wake = waiting == 1 || m_events.size() == kBatchRows;
    }
    if (wake) m_wake.notify_one();
}

uint64_t WriteQueue::pushJob(Job job) {
    uint64_t sequence;
    {
        std::lock_guard lock(m_mutex);
        m_jobs.push_back(std::move(job));
        sequence = ++m_pushed;
    }
    m_wake.notify_one();
    return sequence;
}

void WriteQueue::waitDone(uint64_t sequence) {
    std::unique_lock lock(m_mutex);
    m_done.wait(lock, [&] { return m_written >= sequence; });
}

void WriteQueue::flush() {
    std::unique_lock lock(m_mutex);
    const uint64_t target = m_pushed;
    if (m_written >= target) return;
    m_flushWanted = std::max(m_flushWanted, target);
    m_wake.notify_one();
    m_done.wait(lock, [&] { return m_written >= target; });
}

Status WriteQueue::health() const {
    std::lock_guard lock(m_mutex);
    if (m_failure.empty()) return {};
    return Error{m_failure};
}

std::string WriteQueue::failureHint(const std::exception& e) const {
    const auto* sqlite = dynamic_cast<const SQLite::Exception*>(&e);
    const int code = sqlite == nullptr ? 0 : sqlite->getErrorCode() & 0xff;
    if (code == SQLITE_FULL)
        return " (the disk is full: free some disk space where the run store is)";
    if (code == SQLITE_CORRUPT || code == SQLITE_NOTADB)
        return fmt::format(
            " (the store file is damaged: `wafer store check --db {}` says how to "
            "recover it)",
            m_dbName);
    return {};
}

void WriteQueue::noteFailure(const std::string& message) {
    std::lock_guard lock(m_mutex);
    if (m_failure.empty()) m_failure = message;
}

void WriteQueue::run() {
    std::vector<MetricRow> metrics;
    std::vector<EventRow> events;
    std::vector<Job> jobs;
    std::unique_lock lock(m_mutex);
    for (;;) {
        const auto pending = [&] {
            return !m_metrics.empty() || !m_events.empty() || !m_jobs.empty();
        };
        m_wake.wait(lock, [&] { return m_stopping || pending(); });
        if (!pending()) break;  // stopping with nothing left
        // Gather for a while so one transaction (one fsync) carries many rows, unless someone
        // is waiting: a synchronous job, a flush, or the destructor.
        m_wake.wait_for(lock, kBatchWindow, [&] {
            return m_stopping || !m_jobs.empty() || m_flushWanted > m_written ||
                   m_metrics.size() + m_events.size() >= kBatchRows;
        });
        metrics.swap(m_metrics);  // the producers get the emptied vectors back, capacity kept
        events.swap(m_events);
        jobs.swap(m_jobs);
        const uint64_t gathered = m_pushed;
        lock.unlock();

        // Rows first, then jobs: a job never creates something a row queued before it needs
        // (a run id is only known once createRun has returned), and a deleteRun job must see the
        // rows of the run it deletes.
        if (!metrics.empty() || !events.empty()) writeRows(metrics, events);
        for (auto& job : jobs) job(*m_db);
        metrics.clear();
        events.clear();
        jobs.clear();

        lock.lock();
        m_written = gathered;
        m_done.notify_all();
    }
}

void WriteQueue::writeRows(const std::vector<MetricRow>& metrics,
                           const std::vector<EventRow>& events) {
    // Another process holding the write lock past the busy timeout (a long migration, a stuck
    // `sqlite3` shell) is worth a few more waits before rows are given up.
    constexpr int kBusyAttempts = 3;
    for (int attempt = 1;; ++attempt) {
        size_t unknownRun = 0;  // rows naming a run that does not exist (or was deleted meanwhile)
        try {
            writeRowsOnce(metrics, events, unknownRun);
        } catch (const SQLite::Exception& e) {
            const int code = e.getErrorCode() & 0xff;
            if ((code == SQLITE_BUSY || code == SQLITE_LOCKED) && attempt < kBusyAttempts) continue;
            noteFailure(
                fmt::format("run store {}: lost {} metric rows and {} events that could "
                            "not be written: {}{}",
                            m_dbName, metrics.size(), events.size(), e.what(), failureHint(e)));
            return;
        } catch (const std::exception& e) {
            noteFailure(
                fmt::format("run store {}: lost {} metric rows and {} events that could "
                            "not be written: {}",
                            m_dbName, metrics.size(), events.size(), e.what()));
            return;
        }
        if (unknownRun > 0) {
            noteFailure(
                fmt::format("run store {}: dropped {} metric/event rows logged for a run "
                            "id that does not exist (deleted, or never created)",
                            m_dbName, unknownRun));
        }
        return;
    }
}

void WriteQueue::writeRowsOnce(const std::vector<MetricRow>& metrics,
                               const std::vector<EventRow>& events, size_t& unknownRun) {
    // IMMEDIATE: take the write lock (waiting out other processes) before reading anything, so
    // another process committing meanwhile cannot make the write fail at once with "database is
    // locked" (a WAL read snapshot cannot be upgraded once stale). Rolls back if anything throws.
    SQLite::Transaction transaction(*m_db, SQLite::TransactionBehavior::IMMEDIATE);
    SQLite::Statement insertMetric(*m_db,
                                   "INSERT INTO metrics(run, step, key, value, special, "
                                   "wall_time) VALUES (?, ?, ?, ?, ?, ?)");
    for (const MetricRow& row : metrics) {
        insertMetric.bind(1, row.run);
        insertMetric.bind(2, row.step);
        insertMetric.bindNoCopy(3, row.key);
        bindValue(insertMetric, row.value);
        if (std::isnan(row.wallTime)) {
            insertMetric.bind(6);
        } else {
            insertMetric.bind(6, row.wallTime);
        }
        if (!insertRow(insertMetric)) ++unknownRun;
    }
    SQLite::Statement insertEvent(
        *m_db, "INSERT INTO events(run, time, level, message) VALUES (?, ?, ?, ?)");
    for (const EventRow& row : events) {
        insertEvent.bind(1, row.run);
        insertEvent.bind(2, isoUtc(row.time, true));
        insertEvent.bindNoCopy(3, row.level);
        insertEvent.bindNoCopy(4, row.message);
        if (!insertRow(insertEvent)) ++unknownRun;
    }
    killPoint("store-commit");
    transaction.commit();
}

}  // namespace ws::store::detail
