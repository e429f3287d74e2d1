// SPDX-License-Identifier: GPL-3.0-or-later
// RunStore (see run_store.h): opening and migrating the file, the synchronous writes (run on the
// writer thread through WriteQueue::call) and the reads (on a separate read-only connection).
#include "engine/store/run_store.h"

#include <SQLiteCpp/Database.h>
#include <SQLiteCpp/Statement.h>
#include <SQLiteCpp/Transaction.h>
#include <fmt/format.h>
#include <sqlite3.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <cmath>
#include <iterator>
#include <limits>
#include <mutex>
#include <thread>

#include "engine/core/hash.h"
#include "engine/core/paths.h"
#include "engine/store/busy_waits.h"
#include "engine/store/ofd_locks.h"
#include "engine/store/schema.h"
#include "engine/store/store_recovery.h"
#include "engine/store/time_format.h"
#include "engine/store/write_queue.h"

namespace ws::store {

namespace fs = std::filesystem;

namespace {
// Long enough to ride out another process's batch commit or migration, short enough that a
// stuck lock is reported instead of hanging the GUI.
constexpr int kBusyTimeoutMs = 5000;

// SQLite's own busy timeout (sqliteDefaultBusyCallback's schedule of sleeps, given up after
// kBusyTimeoutMs in all), counting each wait: the writer waits exactly as
// sqlite3_busy_timeout(kBusyTimeoutMs) makes it wait, and busyWaitsInProcess() can tell that it
// did.
std::atomic<uint64_t> g_busyWaits{0};

int countedBusyWait(void* /*unused*/, int count) {
    static constexpr int kDelays[] = {1, 2, 5, 10, 15, 20, 25, 25, 25, 50, 50, 100};
    static constexpr int kTotals[] = {0, 1, 3, 8, 18, 33, 53, 78, 103, 128, 178, 228};
    constexpr int kSteps = int(std::size(kDelays));
    if (count == 0) g_busyWaits.fetch_add(1);
    int delay = kDelays[std::min(count, kSteps - 1)];
    const int prior =
        count < kSteps ? kTotals[count] : kTotals[kSteps - 1] + delay * (count - (kSteps - 1));
    if (prior + delay > kBusyTimeoutMs) {
        delay = kBusyTimeoutMs - prior;
        if (delay <= 0) return 0;
    }
    sqlite3_sleep(delay);
    return 1;
}

constexpr const char* kRunColumns =
    "id, name, created, status, config_yaml, config_hash, parent_run, model_dir, kind, sweep_id, "
    "summary_json";

RunInfo runFromRow(const SQLite::Statement& row) {
    RunInfo info;
    info.id = row.getColumn(0).getInt64();
    info.name = row.getColumn(1).getString();
    info.created = row.getColumn(2).getString();
    info.status = row.getColumn(3).getString();
    info.configYaml = row.getColumn(4).getString();
    info.configHash = row.getColumn(5).getString();
    if (!row.getColumn(6).isNull()) info.parentRun = row.getColumn(6).getInt64();
    info.modelDir = row.getColumn(7).getString();
    info.kind = row.getColumn(8).getString();
    if (!row.getColumn(9).isNull()) info.sweepId = row.getColumn(9).getInt64();
    info.summaryJson = row.getColumn(10).getString();
    return info;
}

// The inverse of the writer's encoding (see schema.cpp): a REAL, tagged specials otherwise.
double decodeValue(const SQLite::Column& value, const SQLite::Column& special) {
    const std::string tag = special.isNull() ? std::string() : special.getString();
    if (tag == "-0") return -0.0;
    if (!value.isNull()) return value.getDouble();
    if (tag == "inf") return std::numeric_limits<double>::infinity();
    if (tag == "-inf") return -std::numeric_limits<double>::infinity();
    return std::numeric_limits<double>::quiet_NaN();
}

bool runExists(SQLite::Database& db, int64_t run) {
    SQLite::Statement query(db, "SELECT 1 FROM runs WHERE id = ?");
    query.bind(1, run);
    return query.executeStep();
}

bool isSha256Hex(std::string_view text) {
    return text.size() == 64 &&
           std::all_of(text.begin(), text.end(), [](char c) { return std::isxdigit(uint8_t(c)); });
}

std::string nowIso() {
    return detail::isoUtc(std::chrono::system_clock::now(), false);
}
}  // namespace

struct RunStore::Impl {
    fs::path path;
    std::string name;  // path as text, for messages
    std::unique_ptr<detail::WriteQueue> writer;
    mutable std::mutex readMutex;  // guards reader (one statement at a time)
    std::unique_ptr<SQLite::Database> reader;

    Error noRun(int64_t run) const {
        return Error{
            fmt::format("run store {} has no run with id {} (see `wafer runs list`)", name, run)};
    }

    template <typename F>
    auto read(F fn) const -> std::invoke_result_t<F&, SQLite::Database&> {
        std::lock_guard lock(readMutex);
        try {
            return fn(*reader);
        } catch (const std::exception& e) {
            return readFailure(e);
        }
    }

    // A read that failed. Damage below the pages that opening reads ("database disk image is
    // malformed" from a run's metrics) is only found here: it gets the same advice as a store
    // refused at open, naming the ways back.
    Error readFailure(const std::exception& e) const {
        const auto* sqlite = dynamic_cast<const SQLite::Exception*>(&e);
        const int code = sqlite == nullptr ? 0 : sqlite->getErrorCode() & 0xff;
        if (code != SQLITE_CORRUPT && code != SQLITE_NOTADB)
            return Error{fmt::format("cannot read run store {}: {}", name, e.what())};
        StoreHealth health = checkStore(path);
        if (health.state == StoreHealth::State::Damaged) {
            if (health.problem.empty()) health.problem = e.what();
            return Error{damagedStoreAdvice(path, health)};
        }
        return Error{fmt::format(
            "cannot read run store {}: {}; `wafer store check --db {}` reads every page of it "
            "and says how to recover it if it is damaged",
            name, e.what(), name)};
    }

    // An UPDATE of one run's row; an error when no such run exists.
    template <typename Bind>
    Status updateRun(int64_t run, const char* sql, Bind bind) {
        return writer->call([&](SQLite::Database& db) -> Status {
            SQLite::Statement update(db, sql);
            bind(update);
            update.bind(2, run);  // every caller's SQL is "... = ? WHERE id = ?"
            if (update.exec() == 0) return noRun(run);
            return {};
        });
    }
};

namespace {

// A connection to a store this process may not write (notWritableAdvice gives `why`): read-only,
// and immutable when no -wal file exists (clean: the last writer checkpointed it away), since
// SQLite can neither create the -shm it would want nor lock a file on a read-only disk. With a
// -wal (a writer elsewhere, or one that ended without cleaning up) SQLite reads through it.
Result<std::unique_ptr<SQLite::Database>> openReadOnlyConnection(const fs::path& dbPath,
                                                                 const std::string& why) {
    std::error_code ec;
    const bool wal = fs::exists(fs::path(dbPath.string() + "-wal"), ec);
    const std::string uri = "file:" + dbPath.string() + (wal ? "" : "?immutable=1");
    try {
        auto db = std::make_unique<SQLite::Database>(
            uri, SQLite::OPEN_READONLY | SQLite::OPEN_URI, kBusyTimeoutMs);
        db->execAndGet("PRAGMA schema_version");
        return db;
    } catch (const std::exception& e) {
        return Error{fmt::format("{} (reading it read-only failed too: {})", why, e.what())};
    }
}

}  // namespace

RunStore::RunStore(std::unique_ptr<Impl> impl) : m_impl(std::move(impl)) {}
RunStore::~RunStore() = default;

fs::path RunStore::runsFolderFor(const fs::path& dbPath) {
    const std::string stem = dbPath.stem().string();
    return dbPath.parent_path() / (stem == "runs" ? std::string("runs") : stem + "-runs");
}

fs::path RunStore::defaultPath() {
    return userDataDir() / "runs.sqlite";
}
const fs::path& RunStore::path() const {
    return m_impl->path;
}

Result<std::unique_ptr<RunStore>> RunStore::openForReading(const fs::path& dbPath) {
    // A store this process may not write (a read-only disk, folder or file) opens read-only:
    // its runs can be listed and shown, and anything that writes fails with SQLite's "readonly
    // database". Its schema must be this build's: upgrading it would be a write.
    std::error_code ec;
    const std::string why = notWritableAdvice(dbPath);
    if (why.empty() || !fs::is_regular_file(dbPath, ec) || fs::file_size(dbPath, ec) == 0)
        return open(dbPath);
    detail::useOpenFileDescriptionLocks();
    auto impl = std::make_unique<Impl>();
    impl->path = dbPath;
    impl->name = dbPath.string();
    auto db = openReadOnlyConnection(dbPath, why);
    if (!db.ok()) return db.error();
    if (Status s = detail::migrate(**db, detail::migrations(), impl->name); !s)
        return Error{fmt::format("{}; {}", why, s.error().message)};
    auto reader = openReadOnlyConnection(dbPath, why);
    if (!reader.ok()) return reader.error();
    impl->reader = std::move(reader).value();
    impl->writer = std::make_unique<detail::WriteQueue>(std::move(db).value(), impl->name);
    return std::unique_ptr<RunStore>(new RunStore(std::move(impl)));
}

Result<std::unique_ptr<RunStore>> RunStore::open(const fs::path& dbPath) {
    // Before the first connection: SQLite's locks must not depend on what else the process opens.
    detail::useOpenFileDescriptionLocks();
    auto impl = std::make_unique<Impl>();
    impl->path = dbPath;
    impl->name = dbPath.string();
    const std::string& name = impl->name;
    std::error_code ec;
    if (dbPath.has_parent_path()) fs::create_directories(dbPath.parent_path(), ec);
    if (ec) {
        return Error{fmt::format("cannot create the folder {} for the run store {}: {}",
                                 dbPath.parent_path().string(), name, ec.message())};
    }
    if (fs::is_directory(dbPath, ec)) {
        return Error{fmt::format("run store {} is a folder; give the path of a file", name)};
    }

    // SQLite takes an empty file for a new database: one emptied by accident must not be.
    if (fs::is_regular_file(dbPath, ec) && fs::file_size(dbPath, ec) == 0) {
        if (StoreHealth health = checkStore(dbPath); health.state == StoreHealth::State::Damaged)
            return Error{damagedStoreAdvice(dbPath, health)};
    }
    std::unique_ptr<SQLite::Database> db;
    try {
        db = std::make_unique<SQLite::Database>(name, SQLite::OPEN_READWRITE | SQLite::OPEN_CREATE,
                                                kBusyTimeoutMs);
    } catch (const std::exception& e) {
        if (std::string advice = notWritableAdvice(dbPath); !advice.empty()) return Error{advice};
        return Error{
            fmt::format("cannot open run store {}: {} (check that its folder exists and "
                        "is writable)",
                        name, e.what())};
    }
    sqlite3_busy_handler(db->getHandle(), &countedBusyWait, nullptr);
    try {
        // SQLite reads the file lazily: this is where a file that is not a database shows.
        db->execAndGet("PRAGMA schema_version");
    } catch (const SQLite::Exception& e) {
        if ((e.getErrorCode() & 0xff) == SQLITE_NOTADB ||
            (e.getErrorCode() & 0xff) == SQLITE_CORRUPT) {
            db.reset();
            StoreHealth health = checkStore(dbPath);
            if (health.problem.empty()) health.problem = e.what();
            return Error{damagedStoreAdvice(dbPath, health)};
        }
        if (std::string advice = notWritableAdvice(dbPath); !advice.empty()) return Error{advice};
        return Error{fmt::format("cannot read run store {}: {}", name, e.what())};
    }
    // WAL: readers (the GUI, `wafer runs`) never block the writer. synchronous=FULL makes each
    // batch commit durable, and costs one fsync per batch, not per row. Turning WAL on needs the
    // file to itself, and SQLite answers "locked" at once (no busy wait) while another connection
    // opens the same new store: that is retried until kBusyTimeoutMs.
    for (const auto deadline =
             std::chrono::steady_clock::now() + std::chrono::milliseconds(kBusyTimeoutMs);
         ;) {
        try {
            const std::string mode = db->execAndGet("PRAGMA journal_mode = WAL").getString();
            (void)mode;  // a file system without WAL support keeps a rollback journal: correct
            db->exec("PRAGMA synchronous = FULL");
            db->exec("PRAGMA foreign_keys = ON");
            break;
        } catch (const SQLite::Exception& e) {
            const int code = e.getErrorCode() & 0xff;
            if ((code != SQLITE_BUSY && code != SQLITE_LOCKED) ||
                std::chrono::steady_clock::now() >= deadline) {
                if (std::string advice = notWritableAdvice(dbPath); !advice.empty())
                    return Error{advice};
                return Error{fmt::format("cannot configure run store {}: {}", name, e.what())};
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(5));
        }
    }
    if (Status s = detail::migrate(*db, detail::migrations(), name); !s) {
        if (std::string advice = notWritableAdvice(dbPath); !advice.empty()) return Error{advice};
        db.reset();
        // Damage in the pages the schema's tables live on shows first here.
        if (StoreHealth health = checkStore(dbPath); health.state == StoreHealth::State::Damaged)
            return Error{damagedStoreAdvice(dbPath, health)};
        return s.error();
    }
    try {
        impl->reader =
            std::make_unique<SQLite::Database>(name, SQLite::OPEN_READONLY, kBusyTimeoutMs);
    } catch (const std::exception& e) {
        return Error{fmt::format("cannot open run store {} for reading: {}", name, e.what())};
    }
    // A verified recent copy (see refreshBackup), the route back if the file is ever damaged.
    // Taking it reads every page, so it also finds damage that opening did not: such a store is
    // refused, never written to. Any other failure (a full disk) leaves the older backup in place.
    if (Status backedUp = refreshBackup(dbPath); !backedUp) {
        if (StoreHealth health = checkStore(dbPath); health.state == StoreHealth::State::Damaged)
            return Error{damagedStoreAdvice(dbPath, health)};
    }
    impl->writer = std::make_unique<detail::WriteQueue>(std::move(db), name);
    return std::unique_ptr<RunStore>(new RunStore(std::move(impl)));
}

uint64_t busyWaitsInProcess() {
    return g_busyWaits.load();
}

Result<int64_t> RunStore::createRun(const NewRun& run) {
    if (run.kind.empty()) {
        return Error{
            fmt::format("cannot create a run in {}: its kind is empty (train, finetune, "
                        "sweep, sweep-trial...)",
                        m_impl->name)};
    }
    const std::string hash = run.configHash.empty() ? sha256Hex(run.configYaml) : run.configHash;
    return m_impl->writer->call([&](SQLite::Database& db) -> Result<int64_t> {
        const std::pair<const char*, std::optional<int64_t>> links[] = {{"parent", run.parentRun},
                                                                        {"sweep", run.sweepId}};
        for (const auto& [role, link] : links) {
            if (link && !runExists(db, *link)) {
                return Error{
                    fmt::format("cannot create run '{}' in {}: its {} run {} does not "
                                "exist",
                                run.name, m_impl->name, role, *link)};
            }
        }
        SQLite::Transaction transaction(db, SQLite::TransactionBehavior::IMMEDIATE);
        SQLite::Statement insert(db,
                                 "INSERT INTO runs(name, created, status, config_yaml, "
                                 "config_hash, parent_run, model_dir, kind, sweep_id) VALUES "
                                 "(?, ?, 'created', ?, ?, ?, ?, ?, ?)");
        insert.bind(1, run.name);
        insert.bind(2, nowIso());
        insert.bind(3, run.configYaml);
        insert.bind(4, hash);
        if (run.parentRun) insert.bind(5, *run.parentRun);
        insert.bind(6, run.modelDir);
        insert.bind(7, run.kind);
        if (run.sweepId) insert.bind(8, *run.sweepId);
        insert.exec();
        const int64_t id = db.getLastInsertRowid();
        if (run.name.empty()) {
            SQLite::Statement rename(db, "UPDATE runs SET name = ? WHERE id = ?");
            rename.bind(1, fmt::format("run-{}", id));
            rename.bind(2, id);
            rename.exec();
        }
        transaction.commit();
        return id;
    });
}

Status RunStore::setStatus(int64_t run, std::string_view status) {
    if (std::find(std::begin(kRunStatuses), std::end(kRunStatuses), status) ==
        std::end(kRunStatuses)) {
        return Error{
            fmt::format("unknown run status '{}' for run {} (allowed: created, running, "
                        "finished, stopped, diverged, failed)",
                        status, run)};
    }
    const std::string value(status);
    return m_impl->updateRun(run, "UPDATE runs SET status = ? WHERE id = ?",
                             [&](SQLite::Statement& s) { s.bind(1, value); });
}

Status RunStore::setSummary(int64_t run, std::string_view json) {
    const std::string value(json);
    return m_impl->writer->call([&](SQLite::Database& db) -> Status {
        SQLite::Statement check(db, "SELECT json_valid(?)");
        check.bind(1, value);
        if (!check.executeStep() || check.getColumn(0).getInt() != 1) {
            return Error{
                fmt::format("the summary of run {} is not valid JSON: {:.80}", run, value)};
        }
        SQLite::Statement update(db, "UPDATE runs SET summary_json = ? WHERE id = ?");
        update.bind(1, value);
        update.bind(2, run);
        if (update.exec() == 0) return m_impl->noRun(run);
        return {};
    });
}

Status RunStore::renameRun(int64_t run, std::string_view name) {
    if (name.empty()) return Error{fmt::format("cannot rename run {} to an empty name", run)};
    const std::string value(name);
    return m_impl->updateRun(run, "UPDATE runs SET name = ? WHERE id = ?",
                             [&](SQLite::Statement& s) { s.bind(1, value); });
}

Status RunStore::setModelDir(int64_t run, const fs::path& dir) {
    const std::string value = dir.string();
    return m_impl->updateRun(run, "UPDATE runs SET model_dir = ? WHERE id = ?",
                             [&](SQLite::Statement& s) { s.bind(1, value); });
}

void RunStore::logMetric(int64_t run, int64_t step, std::string_view key, double value,
                         double wallTime) {
    m_impl->writer->pushMetric({run, step, std::string(key), value, wallTime});
}

void RunStore::logEvent(int64_t run, std::string_view level, std::string_view message) {
    m_impl->writer->pushEvent(
        {run, std::chrono::system_clock::now(), std::string(level), std::string(message)});
}

Status RunStore::recordCheckpoint(int64_t run, int64_t step, const fs::path& file,
                                  std::string_view sha256) {
    if (!isSha256Hex(sha256)) {
        return Error{
            fmt::format("checkpoint {} of run {}: '{}' is not a SHA-256 digest (64 hex "
                        "digits)",
                        file.string(), run, sha256)};
    }
    std::string digest(sha256);
    std::transform(digest.begin(), digest.end(), digest.begin(),
                   [](char c) { return static_cast<char>(std::tolower(uint8_t(c))); });
    return m_impl->writer->call([&](SQLite::Database& db) -> Status {
        if (!runExists(db, run)) return m_impl->noRun(run);
        SQLite::Statement insert(
            db, "INSERT INTO checkpoints(run, step, path, sha256, created) VALUES (?, ?, ?, ?, ?)");
        insert.bind(1, run);
        insert.bind(2, step);
        insert.bind(3, file.string());
        insert.bind(4, digest);
        insert.bind(5, nowIso());
        insert.exec();
        return {};
    });
}

Status RunStore::forgetCheckpoint(int64_t run, int64_t step) {
    return m_impl->writer->call([&](SQLite::Database& db) -> Status {
        if (!runExists(db, run)) return m_impl->noRun(run);
        SQLite::Statement erase(db, "DELETE FROM checkpoints WHERE run = ? AND step = ?");
        erase.bind(1, run);
        erase.bind(2, step);
        erase.exec();
        return {};
    });
}

Status RunStore::truncateAfter(int64_t run, int64_t step) {
    return m_impl->writer->call([&](SQLite::Database& db) -> Status {
        SQLite::Transaction transaction(db, SQLite::TransactionBehavior::IMMEDIATE);
        if (!runExists(db, run)) return m_impl->noRun(run);
        for (const char* sql : {"DELETE FROM metrics WHERE run = ? AND step > ?",
                                "DELETE FROM checkpoints WHERE run = ? AND step > ?"}) {
            SQLite::Statement erase(db, sql);
            erase.bind(1, run);
            erase.bind(2, step);
            erase.exec();
        }
        transaction.commit();
        return {};
    });
}

void RunStore::flush() {
    m_impl->writer->flush();
}
Status RunStore::asyncWriteStatus() const {
    return m_impl->writer->health();
}

Status RunStore::deleteRun(int64_t run) {
    return m_impl->writer->call([&](SQLite::Database& db) -> Status {
        SQLite::Transaction transaction(db, SQLite::TransactionBehavior::IMMEDIATE);
        if (!runExists(db, run)) return m_impl->noRun(run);
        for (const char* sql :
             {"DELETE FROM metrics WHERE run = ?", "DELETE FROM events WHERE run = ?",
              "DELETE FROM checkpoints WHERE run = ?", "DELETE FROM run_placement WHERE run = ?",
              "DELETE FROM runs WHERE id = ?"}) {
            SQLite::Statement erase(db, sql);
            erase.bind(1, run);
            erase.exec();
        }
        transaction.commit();
        return {};
    });
}

Result<std::vector<RunInfo>> RunStore::listRuns() const {
    return m_impl->read([&](SQLite::Database& db) -> Result<std::vector<RunInfo>> {
        SQLite::Statement query(db,
                                fmt::format("SELECT {} FROM runs ORDER BY id DESC", kRunColumns));
        std::vector<RunInfo> runs;
        while (query.executeStep()) runs.push_back(runFromRow(query));
        return runs;
    });
}

Result<RunInfo> RunStore::getRun(int64_t run) const {
    return m_impl->read([&](SQLite::Database& db) -> Result<RunInfo> {
        SQLite::Statement query(db, fmt::format("SELECT {} FROM runs WHERE id = ?", kRunColumns));
        query.bind(1, run);
        if (!query.executeStep()) return m_impl->noRun(run);
        return runFromRow(query);
    });
}

Result<std::vector<MetricPoint>> RunStore::metrics(int64_t run, std::string_view key) const {
    return metricsAfter(run, key, std::numeric_limits<int64_t>::min());
}

Result<std::map<std::string, double>> RunStore::lastMetrics(int64_t run) const {
    return m_impl->read([&](SQLite::Database& db) -> Result<std::map<std::string, double>> {
        if (!runExists(db, run)) return m_impl->noRun(run);
        SQLite::Statement query(db, R"SQL(
            SELECT key, value, special FROM (
                SELECT key, value, special,
                       ROW_NUMBER() OVER (PARTITION BY key ORDER BY step DESC, rowid DESC) AS rank
                FROM metrics WHERE run = ?)
            WHERE rank = 1)SQL");
        query.bind(1, run);
        std::map<std::string, double> last;
        while (query.executeStep()) {
            last[query.getColumn(0).getString()] =
                decodeValue(query.getColumn(1), query.getColumn(2));
        }
        return last;
    });
}

Result<std::optional<MetricPoint>> RunStore::lastPoint(int64_t run, std::string_view key) const {
    const std::string keyText(key);
    return m_impl->read([&](SQLite::Database& db) -> Result<std::optional<MetricPoint>> {
        if (!runExists(db, run)) return m_impl->noRun(run);
        SQLite::Statement query(db,
                                "SELECT step, value, special, wall_time FROM metrics WHERE run "
                                "= ? AND key = ? ORDER BY step DESC, rowid DESC LIMIT 1");
        query.bind(1, run);
        query.bind(2, keyText);
        if (!query.executeStep()) return std::optional<MetricPoint>();
        const auto wall = query.getColumn(3);
        return std::optional<MetricPoint>(MetricPoint{
            query.getColumn(0).getInt64(), decodeValue(query.getColumn(1), query.getColumn(2)),
            wall.isNull() ? std::numeric_limits<double>::quiet_NaN() : wall.getDouble()});
    });
}

Result<std::vector<CheckpointRecord>> RunStore::checkpoints(int64_t run) const {
    return m_impl->read([&](SQLite::Database& db) -> Result<std::vector<CheckpointRecord>> {
        if (!runExists(db, run)) return m_impl->noRun(run);
        SQLite::Statement query(db,
                                "SELECT step, path, sha256, created FROM checkpoints WHERE run = ? "
                                "ORDER BY step, rowid");
        query.bind(1, run);
        std::vector<CheckpointRecord> out;
        while (query.executeStep()) {
            out.push_back({query.getColumn(0).getInt64(), query.getColumn(1).getString(),
                           query.getColumn(2).getString(), query.getColumn(3).getString()});
        }
        return out;
    });
}

Result<std::vector<EventRecord>> RunStore::events(int64_t run) const {
    return m_impl->read([&](SQLite::Database& db) -> Result<std::vector<EventRecord>> {
        if (!runExists(db, run)) return m_impl->noRun(run);
        SQLite::Statement query(
            db, "SELECT time, level, message FROM events WHERE run = ? ORDER BY rowid");
        query.bind(1, run);
        std::vector<EventRecord> out;
        while (query.executeStep()) {
            out.push_back({query.getColumn(0).getString(), query.getColumn(1).getString(),
                           query.getColumn(2).getString()});
        }
        return out;
    });
}

Status RunStore::writeWith(const std::function<Status(SQLite::Database&)>& fn) {
    return m_impl->writer->call([&](SQLite::Database& db) -> Status { return fn(db); });
}

Status RunStore::readWith(const std::function<Status(SQLite::Database&)>& fn) const {
    return m_impl->read([&](SQLite::Database& db) -> Status { return fn(db); });
}

// --- Following the store live (see run_store.h) ---

Result<int64_t> RunStore::dataVersion() const {
    return m_impl->read([&](SQLite::Database& db) -> Result<int64_t> {
        // SQLite bumps it for commits by any other connection, in this process or another.
        return db.execAndGet("PRAGMA data_version").getInt64();
    });
}

Result<std::vector<MetricPoint>> RunStore::metricsAfter(int64_t run, std::string_view key,
                                                        int64_t afterStep) const {
    const std::string keyText(key);
    return m_impl->read([&](SQLite::Database& db) -> Result<std::vector<MetricPoint>> {
        if (!runExists(db, run)) return m_impl->noRun(run);
        // A range of the (run, key, step) index: the cost is the new rows, not the run's.
        SQLite::Statement query(db,
                                "SELECT step, value, special, wall_time FROM metrics WHERE run "
                                "= ? AND key = ? AND step > ? ORDER BY step, rowid");
        query.bind(1, run);
        query.bind(2, keyText);
        query.bind(3, afterStep);
        std::vector<MetricPoint> points;
        while (query.executeStep()) {
            const auto wall = query.getColumn(3);
            points.push_back(
                {query.getColumn(0).getInt64(), decodeValue(query.getColumn(1), query.getColumn(2)),
                 wall.isNull() ? std::numeric_limits<double>::quiet_NaN() : wall.getDouble()});
        }
        return points;
    });
}

}  // namespace ws::store
