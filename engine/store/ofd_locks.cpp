// SPDX-License-Identifier: GPL-3.0-or-later
// Open-file-description locks for SQLite (see ofd_locks.h for why).
//
// SQLite calls the hooked fcntl with F_SETLK / F_SETLKW / F_GETLK on two kinds of files: the
// database (its lock bytes at 1 GiB) and the WAL index (-shm). For each such file this module keeps
// one private descriptor, the "lock file", and turns the request into the OFD variant on it. The
// lock file is opened the first time SQLite locks through a descriptor of that file and closed
// when SQLite has closed every descriptor it locked through: SQLite never closes a descriptor of a
// file it still holds locks on (with POSIX locks that would drop them), so nothing it relies on is
// released early, and everything is released once it is done with the file.
#include "engine/store/ofd_locks.h"

#include <fcntl.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <unordered_map>
#include <utility>

namespace ws::store::detail {

namespace {

using FcntlCall = int (*)(int, int, ...);
using CloseCall = int (*)(int);

FcntlCall g_fcntl = nullptr;  // SQLite's own (the C library's) fcntl and close
CloseCall g_close = nullptr;
std::atomic<bool> g_active{false};
std::atomic<bool> g_ofdWorks{true};  // cleared if the kernel refuses F_OFD_* (before Linux 3.15)

using FileKey = std::pair<dev_t, ino_t>;
struct LockFile {
    int fd = -1;
    int users = 0;  // SQLite descriptors of this file that have locked through it
};

std::mutex g_mutex;
std::map<FileKey, LockFile> g_lockFiles;
std::unordered_map<int, FileKey> g_users;  // SQLite descriptor -> its file

// The lock file for SQLite's descriptor `fd`, opening it on first use; -1 if none can be had
// (then the caller falls back to a POSIX lock on `fd`, SQLite's own behaviour).
int lockFileFor(int fd) {
    std::lock_guard lock(g_mutex);
    if (const auto user = g_users.find(fd); user != g_users.end()) {
        return g_lockFiles.at(user->second).fd;
    }
    struct stat st {};
    if (::fstat(fd, &st) != 0) return -1;
    const FileKey key{st.st_dev, st.st_ino};
    auto file = g_lockFiles.find(key);
    if (file == g_lockFiles.end()) {
        // Reopening through /proc gives a new open file description of the very same file, even
        // if it has been renamed or unlinked since. Read-write so that write locks are possible
        // whichever connection (read-only or not) locked first.
        char proc[64];
        std::snprintf(proc, sizeof proc, "/proc/self/fd/%d", fd);
        int lockFd = ::open(proc, O_RDWR | O_CLOEXEC | O_NOCTTY);
        if (lockFd < 0) lockFd = ::open(proc, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (lockFd < 0) return -1;
        struct stat again {};
        if (::fstat(lockFd, &again) != 0 || again.st_dev != st.st_dev ||
            again.st_ino != st.st_ino) {
            g_close(lockFd);
            return -1;
        }
        file = g_lockFiles.emplace(key, LockFile{lockFd, 0}).first;
    }
    ++file->second.users;
    g_users.emplace(fd, key);
    return file->second.fd;
}

int ofdCommand(int cmd) {
    switch (cmd) {
        case F_SETLK:
            return F_OFD_SETLK;
        case F_SETLKW:
            return F_OFD_SETLKW;
        default:
            return F_OFD_GETLK;
    }
}

int hookedFcntl(int fd, int cmd, ...) {
    va_list args;
    va_start(args, cmd);
    if (cmd == F_SETLK || cmd == F_SETLKW || cmd == F_GETLK) {
        auto* request = va_arg(args, struct flock*);
        va_end(args);
        const int lockFd = g_ofdWorks.load(std::memory_order_relaxed) ? lockFileFor(fd) : -1;
        if (lockFd >= 0) {
            // The lock file stays open while `fd` is registered, and `fd` is not closed while
            // SQLite is locking through it, so lockFd is valid here without holding the mutex
            // (F_OFD_SETLKW may block).
            struct flock ofd = *request;
            ofd.l_pid = 0;  // required by F_OFD_*
            const int rc = g_fcntl(lockFd, ofdCommand(cmd), &ofd);
            if (rc == 0 || errno != EINVAL) {
                if (cmd == F_GETLK && rc == 0) *request = ofd;
                return rc;
            }
            // EINVAL: this kernel has no OFD locks; behave as SQLite always did from now on.
            g_ofdWorks.store(false, std::memory_order_relaxed);
        }
        return g_fcntl(fd, cmd, request);
    }
    // Every other command SQLite issues (F_GETFD, F_SETFD, F_GETFL) takes an int or nothing.
    const int value = va_arg(args, int);
    va_end(args);
    return g_fcntl(fd, cmd, value);
}

int hookedClose(int fd) {
    {
        std::lock_guard lock(g_mutex);
        if (const auto user = g_users.find(fd); user != g_users.end()) {
            const auto file = g_lockFiles.find(user->second);
            g_users.erase(user);
            if (file != g_lockFiles.end() && --file->second.users == 0) {
                g_close(file->second.fd);  // releases whatever is still locked on it
                g_lockFiles.erase(file);
            }
        }
    }
    return g_close(fd);
}

bool install() {
    if (const char* mode = std::getenv("WAFER_STORE_LOCKS");
        mode && std::strcmp(mode, "posix") == 0) {
        return false;
    }
    if (sqlite3_initialize() != SQLITE_OK) return false;
    sqlite3_vfs* vfs = sqlite3_vfs_find("unix");
    if (!vfs || vfs->iVersion < 3 || !vfs->xGetSystemCall || !vfs->xSetSystemCall) return false;
    g_fcntl = reinterpret_cast<FcntlCall>(vfs->xGetSystemCall(vfs, "fcntl"));
    g_close = reinterpret_cast<CloseCall>(vfs->xGetSystemCall(vfs, "close"));
    if (!g_fcntl || !g_close) return false;
    // Every unix VFS variant shares this one system-call table.
    if (vfs->xSetSystemCall(vfs, "close", reinterpret_cast<sqlite3_syscall_ptr>(&hookedClose)) !=
        SQLITE_OK) {
        return false;
    }
    if (vfs->xSetSystemCall(vfs, "fcntl", reinterpret_cast<sqlite3_syscall_ptr>(&hookedFcntl)) !=
        SQLITE_OK) {
        vfs->xSetSystemCall(vfs, "close", reinterpret_cast<sqlite3_syscall_ptr>(g_close));
        return false;
    }
    return true;
}

}  // namespace

bool useOpenFileDescriptionLocks() {
    static std::once_flag once;
    std::call_once(once, [] { g_active.store(install()); });
    return g_active.load();
}

bool openFileDescriptionLocksActive() {
    return g_active.load();
}

}  // namespace ws::store::detail
