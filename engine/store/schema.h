// SPDX-License-Identifier: GPL-3.0-or-later
// The run store's schema and its migrations (internal to wafer::store; tests include it).
// The schema version lives in `PRAGMA user_version`; kMigrations[i] takes a database from version
// i to i+1, so a new version is one function appended to that list. migrate() applies the missing
// steps in one IMMEDIATE transaction: a failure leaves the file exactly as it was.
// Not thread-safe: call on one connection before sharing it.
#pragma once

#include <SQLiteCpp/Database.h>

#include <span>
#include <string>

#include "engine/core/result.h"

namespace ws::store::detail {

using Migration = void (*)(SQLite::Database&);

// 'WAFR': marks a file as a Wafer Studio run store (PRAGMA application_id).
inline constexpr int kApplicationId = 0x57414652;

// The migrations this build knows, in order; their count is the latest schema version.
std::span<const Migration> migrations();

// Brings `db` (the file `dbName`) up to migrations.size(). Refuses, with a message naming the
// file, a version newer than the list, a file owned by another application, and a version-0 file
// that already has tables (someone else's database).
Status migrate(SQLite::Database& db, std::span<const Migration> migrations,
               const std::string& dbName);

}  // namespace ws::store::detail
