// SPDX-License-Identifier: GPL-3.0-or-later
// Damage detection, backups and recovery for the run store file.
//
// A run store holds every run's history, so a damaged one is never overwritten or silently
// replaced by an empty list. RunStore::open refuses a damaged file with a message naming these
// routes; the CLI (`wafer store check|backup|recover`) and the studio's recovery dialog call them:
// - checkStore: reads the file (never writes) and says whether it is healthy, and what the last
//   good backup holds;
// - backupStore: copies the store with SQLite's online backup into "<store>.backup", but only after
//   the copy passes `PRAGMA quick_check`, so the backup is always a good one. RunStore::open keeps
//   it fresh through refreshBackup;
// - recoverStore: salvages every row SQLite can still read (SQLite's .recover route, done in
//   process: Debian's sqlite3 shell lacks the sqlite_dbpage table .recover needs) or restores
//   the backup. The damaged file (and its -wal, -shm) is kept beside the store as
//   "<store>.damaged-<UTC time>", and the recovered file is moved into place atomically;
// - or, when neither works, starts a fresh store, keeping the damaged file the same way.
//
// Thread-safety: free functions; safe to call from any thread. Failure contract: Errors name the
// file and the fix; on any failure the store file is left exactly as it was.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

#include "engine/core/result.h"

namespace ws::store {

// A backup is retaken when the store has changed since it and it is older than
// kBackupMinInterval, and in any case once it is older than kBackupMaxAge (which also re-reads
// every page of a store that did not change, finding damage early).
inline constexpr std::chrono::minutes kBackupMinInterval{10};
inline constexpr std::chrono::hours kBackupMaxAge{6};

// How long a check, backup or recovery waits for another connection's lock before giving up.
inline constexpr std::chrono::milliseconds kBusyWait{5000};

struct BackupInfo {
    std::filesystem::path path;
    std::string taken;  // ISO-8601 UTC of its last write
    int64_t runs = 0;
};

struct StoreHealth {
    // Busy: another connection (a run opening the store, converting it to WAL, a sweep's other
    // trial) held a lock for longer than kBusyWait, so nothing could be read; nothing is known to
    // be wrong with the file, and it is never treated as damaged. The same when the file cannot
    // be read because it cannot be written (a WAL store on a read-only disk; see
    // notWritableAdvice).
    enum class State { Missing, Healthy, Busy, Damaged };
    State state = State::Missing;
    std::string problem;  // for Damaged and Busy: what SQLite said
    std::optional<BackupInfo> backup;
};

std::filesystem::path backupPathFor(const std::filesystem::path& db);  // "<db>.backup"

// When `db` cannot be opened because it cannot be written (SQLite writes even to read a WAL
// store: its -wal and -shm files live beside it): an error naming the file, why (a read-only
// disk, folder or file) and the way out. "" when writing is not the problem.
std::string notWritableAdvice(const std::filesystem::path& db);

// Never writes to `db`.
StoreHealth checkStore(const std::filesystem::path& db);

// Writes a verified copy of `db` to backupPathFor(db). An Error when the copy does not pass
// quick_check (the store is damaged: the previous backup is kept) or cannot be written.
Status backupStore(const std::filesystem::path& db);
// backupStore when the store holds runs and its backup is missing, older than kBackupMaxAge, or
// older than kBackupMinInterval and older than the store's last change; otherwise nothing.
Status refreshBackup(const std::filesystem::path& db);

// Salvage: every row SQLite can still read. Backup: the last good backup. Fresh: nothing kept
// in the store: the damaged file (and its backup) moved aside, so the next open starts an empty
// store (the route left when neither of the others works).
enum class RecoveryMethod { Salvage, Backup, Fresh };

struct RecoveryReport {
    std::filesystem::path damagedKeptAt;  // where the damaged file now is
    int64_t runs = 0, metrics = 0;        // what the recovered store holds
};

// Only for a damaged store. An error names what failed, says the store is unchanged, and lists
// the routes still open (never a backup that does not exist).
Result<RecoveryReport> recoverStore(const std::filesystem::path& db, RecoveryMethod method);

// The paragraph shown when a store is damaged: what happened and the commands that recover it
// (salvage, the backup when there is one, a fresh store).
std::string damagedStoreAdvice(const std::filesystem::path& db, const StoreHealth& health);

}  // namespace ws::store
