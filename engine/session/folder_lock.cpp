// SPDX-License-Identifier: GPL-3.0-or-later
// One training process per model folder (see folder_lock.h).
#include "engine/session/folder_lock.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace ws::session {

Result<FolderLock> FolderLock::acquire(const std::filesystem::path& folder) {
    const std::filesystem::path file = folder / ".wafer.lock";
    const int fd = ::open(file.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) {
        const int error = errno;
        return Error{fmt::format(
            "cannot create {}: {}{}", file.string(), std::strerror(error),
            error == EROFS || error == EACCES || error == EPERM
                ? fmt::format(" (the run's folder {} must be writable: make it writable, or "
                              "choose another folder with runconfig.model_dir)",
                              folder.string())
                : std::string())};
    }
    if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
        const int err = errno;
        ::close(fd);
        if (err == EWOULDBLOCK) {
            return Error{fmt::format(
                "{} is in use by another training session (a run still training there, or "
                "a resume of it); wait for it to end or stop it, or choose another "
                "runconfig.model_dir",
                folder.string())};
        }
        return Error{fmt::format("cannot lock {}: {}", file.string(), std::strerror(err))};
    }
    return FolderLock(fd);
}

bool FolderLock::isHeld(const std::filesystem::path& folder) {
    const int fd = ::open((folder / ".wafer.lock").c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return false;
    // flock locks belong to the open file description, so this probe conflicts with a lock held
    // through any other descriptor, in this process too.
    const bool held = ::flock(fd, LOCK_SH | LOCK_NB) != 0 && errno == EWOULDBLOCK;
    ::close(fd);  // releases the probe's own lock, if it got one
    return held;
}

FolderLock::FolderLock(FolderLock&& other) noexcept : m_fd(other.m_fd) {
    other.m_fd = -1;
}

FolderLock::~FolderLock() {
    if (m_fd >= 0) ::close(m_fd);  // closing the descriptor releases the flock
}

std::string shownRunStatus(std::string_view storedStatus, const std::filesystem::path& runFolder) {
    const bool live = storedStatus == "running" || storedStatus == "paused";
    if (live && !runFolder.empty() && !FolderLock::isHeld(runFolder)) return "interrupted";
    return std::string(storedStatus);
}

}  // namespace ws::session
