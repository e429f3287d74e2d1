// SPDX-License-Identifier: GPL-3.0-or-later
// Makes SQLite's file locks immune to the rest of the process.
//
// SQLite's unix VFS locks with POSIX advisory record locks (fcntl F_SETLK), which belong to the
// *process*: the kernel drops all of them the moment the process closes *any* descriptor of the
// same file. A file dialog, a folder view or MIME sniffing that opens and closes the run store's
// file (or its -shm) therefore silently releases the studio's locks; another process (the CLI)
// then believes it is the last connection, checkpoints and deletes the WAL under the studio, and
// the store is corrupted (SQLite's "How To Corrupt An SQLite Database File", section 2.2).
//
// useOpenFileDescriptionLocks() swaps two of the unix VFS's system calls (sqlite3_vfs
// xSetSystemCall): every lock SQLite takes becomes a Linux open-file-description lock
// (F_OFD_SETLK), placed on one private descriptor per file that this module opens (by reopening
// /proc/self/fd/N) and closes only when SQLite has closed its last descriptor of that file. The
// private descriptor plays the role the process played for POSIX locks — all of SQLite's
// connections in this process share it, so they see each other exactly as before — but a close by
// anyone else no longer touches it. OFD locks and POSIX locks conflict with each other, so other
// programs that use plain SQLite (the sqlite3 shell) still exclude and are excluded correctly.
//
// Thread-safety: call before the process opens its first SQLite connection (RunStore::open does,
// once); the hooks themselves are thread-safe. Failure contract: where OFD locks or /proc are not
// available the hooks fall back to SQLite's own POSIX locks, as before; the environment variable
// WAFER_STORE_LOCKS=posix keeps SQLite's own locks (a diagnostic switch, and the control in tests).
#pragma once

namespace ws::store::detail {

// Installs the hooks (idempotent). Returns whether they are active.
bool useOpenFileDescriptionLocks();
// Whether the hooks are installed in this process.
bool openFileDescriptionLocksActive();

}  // namespace ws::store::detail
