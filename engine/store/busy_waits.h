// SPDX-License-Identifier: GPL-3.0-or-later
// How often the run store waited for another connection's lock: the store's writer connection
// meets another process's write transaction (another studio, `wafer`, a `sqlite3` shell) and waits
// up to 5 s for it instead of failing with "database is locked". For diagnostics and for tests
// that must prove a write really contended. Thread-safe.
#pragma once

#include <cstdint>

namespace ws::store {

// Waits so far in this process, over every RunStore's writer connection: each time one found the
// write lock held and began to wait (however long it then waited).
uint64_t busyWaitsInProcess();

}  // namespace ws::store
