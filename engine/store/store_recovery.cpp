// SPDX-License-Identifier: GPL-3.0-or-later
// Damage detection, verified backups and recovery of the run store (see store_recovery.h).
#include "engine/store/store_recovery.h"

#include <SQLiteCpp/Backup.h>
#include <SQLiteCpp/Database.h>
#include <SQLiteCpp/Statement.h>
#include <SQLiteCpp/Transaction.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <sqlite3.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <fstream>
#include <limits>
#include <optional>
#include <stdexcept>
#include <vector>

#include "engine/store/ofd_locks.h"
#include "engine/store/run_store.h"
#include "engine/store/schema.h"
#include "engine/store/time_format.h"

namespace ws::store {

namespace fs = std::filesystem;

namespace {

fs::path withSuffix(const fs::path& p, const std::string& suffix) {
    return fs::path(p.string() + suffix);
}

std::string fileTimeIso(const fs::path& p) {
    std::error_code ec;
    const auto t = fs::last_write_time(p, ec);
    if (ec) return "";
    return detail::isoUtc(std::chrono::time_point_cast<std::chrono::system_clock::duration>(
                              std::chrono::file_clock::to_sys(t)),
                          false);
}

// fsync a file or a folder so that a following rename (or the rename just made) is durable.
bool syncPath(const fs::path& p) {
    const int fd = ::open(p.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return false;
    const bool ok = ::fsync(fd) == 0;
    ::close(fd);
    return ok;
}

// "ok", or the first problem quick_check (or opening) reports.
std::string quickCheck(SQLite::Database& db) {
    SQLite::Statement check(db, "PRAGMA quick_check(1)");
    return check.executeStep() ? check.getColumn(0).getString() : "quick_check returned nothing";
}

// A read-only connection that waits up to kBusyWait for another connection's lock (without it, a
// store being opened or written by another process at that moment reads as "database is locked").
SQLite::Database openReadOnly(const fs::path& db) {
    return SQLite::Database(db.string(), SQLite::OPEN_READONLY, int(kBusyWait.count()));
}

bool isBusy(const SQLite::Exception& e) {
    const int code = e.getErrorCode() & 0xff;
    return code == SQLITE_BUSY || code == SQLITE_LOCKED;
}

int64_t countRows(SQLite::Database& db, const char* table) {
    if (!db.tableExists(table)) return 0;
    return db.execAndGet(fmt::format("SELECT count(*) FROM {}", table)).getInt64();
}

std::optional<BackupInfo> readBackup(const fs::path& db) {
    const fs::path path = backupPathFor(db);
    std::error_code ec;
    if (!fs::is_regular_file(path, ec)) return std::nullopt;
    BackupInfo info;
    info.path = path;
    info.taken = fileTimeIso(path);
    try {
        SQLite::Database backup(path.string(), SQLite::OPEN_READONLY);
        info.runs = countRows(backup, "runs");
    } catch (const std::exception&) {
        return std::nullopt;  // not usable as a backup
    }
    return info;
}

// SQLite's "file is not a database" often means only the 100-byte header's magic or page size
// was overwritten; a copy with them restored lets SQLite read the rest.
void repairHeader(const fs::path& copy) {
    std::fstream f(copy, std::ios::in | std::ios::out | std::ios::binary);
    unsigned char header[18] = {};
    f.read(reinterpret_cast<char*>(header), sizeof header);
    if (!f) return;
    static constexpr char kMagic[] = "SQLite format 3";  // 16 bytes with its NUL
    const unsigned pageSize = unsigned(header[16]) << 8 | header[17];
    const bool sizeOk = pageSize == 1 || (pageSize >= 512 && (pageSize & (pageSize - 1)) == 0);
    if (std::memcmp(header, kMagic, 16) == 0 && sizeOk) return;
    f.seekp(0);
    f.write(kMagic, 16);
    if (!sizeOk) {
        const unsigned char defaultSize[2] = {0x10, 0x00};  // 4096, SQLite's default
        f.write(reinterpret_cast<const char*>(defaultSize), 2);
    }
}

// Copies the rows of `table` that can still be read: forward in rowid order until a damaged page
// stops the scan, then past the damage by probing ever larger rowid jumps, then backward from the
// end. Rows are inserted with their rowids, so each is copied once whichever scan finds it.
int64_t salvageRows(SQLite::Database& from, SQLite::Database& to, const std::string& table) {
    std::string names, placeholders = "?";  // rowid first
    int columns = 0;
    {
        SQLite::Statement probe(from, fmt::format("SELECT * FROM \"{}\" LIMIT 0", table));
        columns = probe.getColumnCount();
        for (int c = 0; c < columns; ++c) {
            names += fmt::format(",\"{}\"", probe.getColumnName(c));
            placeholders += ",?";
        }
    }
    SQLite::Statement insert(to, fmt::format("INSERT OR IGNORE INTO \"{}\"(rowid{}) VALUES({})",
                                             table, names, placeholders));
    int64_t copied = 0;
    // Scans from `after` in `order`; returns the last rowid read (or `after` if none).
    auto scan = [&](int64_t after, bool descending) {
        int64_t last = after;
        try {
            SQLite::Statement rows(
                from, fmt::format("SELECT rowid, * FROM \"{}\" WHERE rowid {} ? ORDER BY rowid {}",
                                  table, descending ? "<" : ">", descending ? "DESC" : "ASC"));
            rows.bind(1, after);
            while (rows.executeStep()) {
                last = rows.getColumn(0).getInt64();
                insert.reset();
                insert.clearBindings();
                for (int c = 0; c <= columns; ++c) {
                    const SQLite::Column value = rows.getColumn(c);
                    switch (value.getType()) {
                        case SQLITE_INTEGER:
                            insert.bind(c + 1, value.getInt64());
                            break;
                        case SQLITE_FLOAT:
                            insert.bind(c + 1, value.getDouble());
                            break;
                        case SQLITE_TEXT:
                            insert.bind(c + 1, value.getString());
                            break;
                        case SQLITE_BLOB:
                            insert.bind(c + 1, value.getBlob(), value.getBytes());
                            break;
                        default:
                            insert.bind(c + 1);
                            break;
                    }
                }
                copied += insert.exec();
            }
        } catch (const std::exception&) {
            // A damaged page: the rows before it are copied; the caller probes past it.
        }
        return last;
    };
    int64_t forward = scan(std::numeric_limits<int64_t>::min(), false);
    for (int64_t jump = 1; jump > 0 && jump < (int64_t(1) << 40); jump *= 2) {
        const int64_t resumed = scan(forward + jump, false);
        if (resumed > forward + jump) forward = resumed, jump = 1;
    }
    scan(std::numeric_limits<int64_t>::max(), true);
    return copied;
}

// Rebuilds the damaged store's schema in `work`/recovered.sqlite from a header-repaired copy and
// copies every row SQLite can still read (SQLite's own .recover needs the sqlite_dbpage table,
// which Debian's library is built without).
Result<fs::path> salvageInto(const fs::path& db, const fs::path& work) {
    // Work on copies: opening the damaged file itself could checkpoint its WAL into it.
    const fs::path copy = work / "damaged.sqlite";
    std::error_code ec;
    fs::copy_file(db, copy, ec);
    if (!ec && fs::exists(withSuffix(db, "-wal"), ec))
        fs::copy_file(withSuffix(db, "-wal"), withSuffix(copy, "-wal"), ec);
    if (ec)
        return Error{fmt::format("cannot copy {} to salvage it: {}", db.string(), ec.message())};
    repairHeader(copy);
    const fs::path recovered = work / "recovered.sqlite";
    try {
        SQLite::Database from(copy.string(), SQLite::OPEN_READWRITE);
        std::vector<std::pair<std::string, std::string>> tables, others;  // name, sql
        SQLite::Statement schema(from,
                                 "SELECT type, name, sql FROM sqlite_schema WHERE sql IS NOT NULL "
                                 "AND name NOT LIKE 'sqlite_%'");
        while (schema.executeStep()) {
            auto& list = schema.getColumn(0).getString() == "table" ? tables : others;
            list.emplace_back(schema.getColumn(1).getString(), schema.getColumn(2).getString());
        }
        if (std::none_of(tables.begin(), tables.end(),
                         [](const auto& t) { return t.first == "runs"; })) {
            return Error{fmt::format("{} has no runs table left to salvage", db.string())};
        }
        SQLite::Database to(recovered.string(), SQLite::OPEN_READWRITE | SQLite::OPEN_CREATE);
        SQLite::Transaction transaction(to);
        for (const auto& [name, sql] : tables) {
            to.exec(sql);
            salvageRows(from, to, name);
        }
        for (const auto& [name, sql] : others) to.exec(sql);  // indexes rebuilt from the rows
        const int version = from.execAndGet("PRAGMA user_version").getInt();
        if (version < 0) {  // RunStore::open refuses it: the salvaged copy would be no better
            return Error{fmt::format(
                "{} has schema version {} in its header, which no version of Wafer Studio "
                "writes, so its rows cannot be placed in a schema",
                db.string(), version)};
        }
        to.exec(fmt::format("PRAGMA user_version = {}", version));
        to.exec(fmt::format("PRAGMA application_id = {}", detail::kApplicationId));
        transaction.commit();
        const std::string check = quickCheck(to);
        if (check != "ok") {
            return Error{
                fmt::format("the salvaged copy of {} fails quick_check: {}", db.string(), check)};
        }
    } catch (const std::exception& e) {
        return Error{
            fmt::format("SQLite cannot read what is left of {} ({})", db.string(), e.what())};
    }
    return recovered;
}

std::string runsText(int64_t n) {
    return fmt::format("{} run{}", n, n == 1 ? "" : "s");
}

std::string compactUtcNow() {
    std::string iso = detail::isoUtc(std::chrono::system_clock::now(), false);
    std::erase(iso, '-');
    std::erase(iso, ':');
    return iso;  // 20261201T041500Z
}

}  // namespace

// (see store_recovery.h)
std::string notWritableAdvice(const fs::path& dbPath) {
    const fs::path folder = dbPath.has_parent_path() ? dbPath.parent_path() : fs::path(".");
    std::string why;
    struct statvfs disk {};
    if (::statvfs(folder.c_str(), &disk) == 0 && (disk.f_flag & ST_RDONLY) != 0) {
        why = "is on a read-only disk";
    } else if (::access(folder.c_str(), W_OK) != 0) {
        why = fmt::format("is in a folder that is not writable ({})", folder.string());
    } else if (::access(dbPath.c_str(), F_OK) == 0 && ::access(dbPath.c_str(), W_OK) != 0) {
        why = "is a read-only file";
    } else {
        return {};
    }
    return fmt::format(
        "run store {} {}: the store must be writable to record or change runs (SQLite keeps "
        "its -wal and -shm files beside it; `wafer runs list` and `runs show` read it as it "
        "is); make it writable, or copy it to a writable folder and give that with --db",
        dbPath.string(), why);
}

fs::path backupPathFor(const fs::path& db) {
    return withSuffix(db, ".backup");
}

StoreHealth checkStore(const fs::path& db) {
    detail::useOpenFileDescriptionLocks();
    StoreHealth health;
    health.backup = readBackup(db);
    std::error_code ec;
    if (!fs::exists(db, ec)) return health;
    health.state = StoreHealth::State::Healthy;
    if (fs::file_size(db, ec) == 0 && !fs::exists(withSuffix(db, "-wal"), ec)) {
        if (health.backup && health.backup->runs > 0) {
            health.state = StoreHealth::State::Damaged;
            health.problem = fmt::format("the file is empty, but its backup holds {}",
                                         runsText(health.backup->runs));
        }
        return health;
    }
    try {
        SQLite::Database store = openReadOnly(db);
        const std::string check = quickCheck(store);
        if (check != "ok") {
            health.state = StoreHealth::State::Damaged;
            health.problem = check;
        }
    } catch (const SQLite::Exception& e) {
        health.state = isBusy(e) ? StoreHealth::State::Busy : StoreHealth::State::Damaged;
        health.problem = e.what();
        // Unreadable because unwritable (a WAL store on a read-only disk): not damage.
        if (std::string advice = notWritableAdvice(db); !advice.empty()) {
            health.state = StoreHealth::State::Busy;
            health.problem = std::move(advice);
        }
    } catch (const std::exception& e) {
        health.state = StoreHealth::State::Damaged;
        health.problem = e.what();
    }
    return health;
}

Status backupStore(const fs::path& db) {
    detail::useOpenFileDescriptionLocks();
    const fs::path target = backupPathFor(db);
    const fs::path temp = withSuffix(target, fmt::format(".tmp-{}", ::getpid()));
    std::error_code ec;
    fs::remove(temp, ec);
    try {
        SQLite::Database source = openReadOnly(db);
        {
            SQLite::Database copy(temp.string(), SQLite::OPEN_READWRITE | SQLite::OPEN_CREATE);
            {
                // BUSY/LOCKED come back as a result, not an exception: an unfinished copy must
                // never replace the previous backup.
                SQLite::Backup backup(copy, source);
                if (const int rc = backup.executeStep(-1); rc != SQLITE_DONE) {
                    throw std::runtime_error(
                        fmt::format("the copy stopped before the end ({}); the store is in use",
                                    sqlite3_errstr(rc)));
                }
            }
            // The copy inherits WAL mode from the store's header; a backup is one plain file.
            copy.execAndGet("PRAGMA journal_mode = DELETE");
        }
        SQLite::Database copy(temp.string(), SQLite::OPEN_READONLY);
        const std::string check = quickCheck(copy);
        if (check != "ok") {
            fs::remove(temp, ec);
            return Error{fmt::format("run store {} is damaged ({}); the backup {} was kept",
                                     db.string(), check, target.string())};
        }
    } catch (const std::exception& e) {
        fs::remove(temp, ec);
        return Error{fmt::format("cannot back up run store {} to {}: {}", db.string(),
                                 target.string(), e.what())};
    }
    for (const char* side : {"-wal", "-shm"}) fs::remove(withSuffix(temp, side), ec);
    if (!syncPath(temp)) {
        fs::remove(temp, ec);
        return Error{fmt::format("cannot write the backup {} (fsync failed)", temp.string())};
    }
    fs::rename(temp, target, ec);
    if (ec) {
        fs::remove(temp, ec);
        return Error{
            fmt::format("cannot put the backup in place at {}: {}", target.string(), ec.message())};
    }
    syncPath(target.parent_path().empty() ? fs::path(".") : target.parent_path());
    return {};
}

Status refreshBackup(const fs::path& db) {
    std::error_code ec;
    const auto now = fs::file_time_type::clock::now();
    const auto taken = fs::last_write_time(backupPathFor(db), ec);
    if (!ec) {
        auto changed = fs::last_write_time(db, ec);
        if (const auto wal = fs::last_write_time(withSuffix(db, "-wal"), ec); !ec)
            changed = std::max(changed, wal);
        const auto age = now - taken;
        if (age < kBackupMinInterval || (age < kBackupMaxAge && changed <= taken)) return {};
    }
    try {
        SQLite::Database store = openReadOnly(db);
        if (countRows(store, "runs") == 0) return {};  // nothing to lose yet
    } catch (const std::exception&) {
        // Unreadable: backupStore reports it.
    }
    return backupStore(db);
}

namespace {

const char* methodName(RecoveryMethod method) {
    switch (method) {
        case RecoveryMethod::Salvage:
            return "Salvage";
        case RecoveryMethod::Backup:
            return "Restoring the backup";
        case RecoveryMethod::Fresh:
            return "Starting a fresh store";
    }
    return "Recovery";
}

// The ways back from a damaged store that exist, one "- ..." line each: salvage (unless it is
// what just failed), the backup when there is one (and saying so when there is none), and a
// fresh store; then where the damaged file goes.
std::string routesBack(const fs::path& db, const StoreHealth& health,
                       std::optional<RecoveryMethod> failed) {
    std::vector<std::string> routes;
    if (failed != RecoveryMethod::Salvage)
        routes.push_back(fmt::format(
            "salvage what SQLite can still read: `wafer store recover --db {}`", db.string()));
    if (health.backup && failed != RecoveryMethod::Backup)
        routes.push_back(fmt::format(
            "restore the last good backup, taken {} with {}: `wafer store recover --db {} "
            "--from-backup`",
            health.backup->taken, runsText(health.backup->runs), db.string()));
    routes.push_back(fmt::format(
        "start a fresh, empty store: `wafer store recover --db {} --fresh`{}", db.string(),
        health.backup ? " (its backup is kept beside the damaged file)" : ""));
    std::string text;
    if (!health.backup && failed)
        text += fmt::format("There is no backup to restore (no readable {}).\n",
                            backupPathFor(db).string());
    for (size_t i = 0; i < routes.size(); ++i) {
        std::string route = routes[i];
        if (i > 0 && !failed) {
            route = "Or " + route;
        } else {
            route[0] = char(std::toupper(static_cast<unsigned char>(route[0])));
        }
        text += "- " + route + "\n";
    }
    text += fmt::format("{} the damaged file beside the store as {}.damaged-<time>.",
                        routes.size() == 1 ? "It keeps" : "Each keeps", db.filename().string());
    return text;
}

// Moves the store file and its -wal, -shm and -journal to `to` (+ the same suffixes); on failure
// the store is where it was.
Status moveStoreAside(const fs::path& db, const fs::path& to) {
    std::error_code ec;
    fs::rename(db, to, ec);
    if (ec)
        return Error{
            fmt::format("cannot move the damaged store {} aside: {}", db.string(), ec.message())};
    for (const char* side : {"-wal", "-shm", "-journal"}) {
        if (fs::exists(withSuffix(db, side), ec))
            fs::rename(withSuffix(db, side), withSuffix(to, side), ec);
    }
    return {};
}

// A fresh store: the damaged file (and its backup, which would otherwise be replaced by the new
// store's first backup) moved aside; the next RunStore::open creates an empty store.
Result<RecoveryReport> startFresh(const fs::path& db, const StoreHealth& health) {
    RecoveryReport report;
    report.damagedKeptAt = withSuffix(db, ".damaged-" + compactUtcNow());
    std::error_code ec;
    const fs::path backupKeptAt = withSuffix(report.damagedKeptAt, ".backup");
    if (health.backup) {
        fs::rename(health.backup->path, backupKeptAt, ec);
        if (ec)
            return Error{fmt::format("cannot move the backup {} aside: {}",
                                     health.backup->path.string(), ec.message())};
    }
    if (Status moved = moveStoreAside(db, report.damagedKeptAt); !moved) {
        if (health.backup) fs::rename(backupKeptAt, health.backup->path, ec);
        return moved.error();
    }
    syncPath(db.parent_path().empty() ? fs::path(".") : db.parent_path());
    return report;
}

}  // namespace

Result<RecoveryReport> recoverStore(const fs::path& db, RecoveryMethod method) {
    const StoreHealth health = checkStore(db);
    if (health.state == StoreHealth::State::Missing) {
        return Error{fmt::format("there is no run store at {} to recover", db.string())};
    }
    if (health.state == StoreHealth::State::Busy) {
        return Error{fmt::format(
            "run store {} is in use: another program held it locked for {} s ({}). Nothing was "
            "changed; stop the runs or the studio using it and try again",
            db.string(), kBusyWait.count() / 1000, health.problem)};
    }
    if (health.state == StoreHealth::State::Healthy) {
        return Error{fmt::format(
            "run store {} passes SQLite's quick_check: nothing to recover{}", db.string(),
            method == RecoveryMethod::Backup
                ? " (restoring the backup would lose the runs recorded since it was taken)"
            : method == RecoveryMethod::Fresh
                ? " (a fresh store would put its runs out of sight; to start over anyway, "
                  "give another store with --db)"
                : "")};
    }
    // Every failure below leaves the store as it was, and names the routes still open.
    const auto failed = [&](const std::string& why) {
        return Error{
            fmt::format("{} failed: {}. Nothing was changed: the damaged file is still "
                        "at {}.\n{}",
                        methodName(method), why, db.string(), routesBack(db, health, method))};
    };
    if (method == RecoveryMethod::Backup && !health.backup) return failed("there is no backup");
    if (method == RecoveryMethod::Fresh) {
        auto fresh = startFresh(db, health);
        if (!fresh.ok()) return failed(fresh.error().message);
        return fresh;
    }
    const fs::path work = withSuffix(db, ".recovering");
    std::error_code ec;
    fs::remove_all(work, ec);
    fs::create_directories(work, ec);
    if (ec) return failed(fmt::format("cannot create {}: {}", work.string(), ec.message()));
    auto cleanup = [&] { fs::remove_all(work, ec); };

    fs::path recovered;
    if (method == RecoveryMethod::Salvage) {
        auto salvaged = salvageInto(db, work);
        if (!salvaged.ok()) {
            cleanup();
            return failed(salvaged.error().message);
        }
        recovered = *salvaged;
    } else {
        recovered = work / "restored.sqlite";
        fs::copy_file(health.backup->path, recovered, ec);
        if (ec) {
            cleanup();
            return failed(fmt::format("cannot copy the backup {}: {}", health.backup->path.string(),
                                      ec.message()));
        }
    }
    RecoveryReport report;
    try {
        SQLite::Database out(recovered.string(), SQLite::OPEN_READONLY);
        report.runs = countRows(out, "runs");
        report.metrics = countRows(out, "metrics");
    } catch (const std::exception& e) {
        cleanup();
        return failed(fmt::format("the recovered store cannot be read: {}", e.what()));
    }
    syncPath(recovered);

    // Keep the damaged files, under one name, then move the recovered store into place.
    report.damagedKeptAt = withSuffix(db, ".damaged-" + compactUtcNow());
    if (Status moved = moveStoreAside(db, report.damagedKeptAt); !moved) {
        cleanup();
        return failed(moved.error().message);
    }
    fs::rename(recovered, db, ec);
    if (ec) {
        const std::string why = ec.message();
        fs::rename(report.damagedKeptAt, db, ec);  // put the damaged one back: nothing lost
        cleanup();
        return failed(
            fmt::format("cannot move the recovered store into place at {}: {}", db.string(), why));
    }
    syncPath(db.parent_path().empty() ? fs::path(".") : db.parent_path());
    cleanup();
    return report;
}

std::string damagedStoreAdvice(const fs::path& db, const StoreHealth& health) {
    // A file that never was an SQLite database is more likely a wrong path than a damaged store.
    char magic[16] = {};
    std::ifstream(db, std::ios::binary).read(magic, sizeof magic);
    const bool sqliteFile = std::memcmp(magic, "SQLite format 3", 16) == 0;
    std::error_code ec;
    const bool usedAsStore = health.backup || fs::is_directory(RunStore::runsFolderFor(db), ec) ||
                             fs::exists(withSuffix(db, "-wal"), ec);
    std::string text =
        sqliteFile || usedAsStore
            ? fmt::format("The run store {} is damaged ({}). It has not been changed.\n",
                          db.string(), health.problem)
            : fmt::format(
                  "{} is not an SQLite database ({}); it has not been changed. If you "
                  "meant another run store, check the path; if this was one:\n",
                  db.string(), health.problem);
    return text + routesBack(db, health, std::nullopt);
}

}  // namespace ws::store
