// SPDX-License-Identifier: GPL-3.0-or-later
// FolderLock: one training process per model folder. A session holds an advisory lock
// (flock on `<folder>/.wafer.lock`) while it trains, so a second session aimed at the same
// folder - a `wafer train --resume` of a run that is still training, two runs given one
// runconfig.model_dir - is refused instead of interleaving checkpoints or truncating a live
// run's metrics. The kernel drops the lock when the process dies (SIGKILL included), so a
// killed run never leaves a stale lock behind. Not thread-safe: one owner; movable.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

#include "engine/core/result.h"

namespace ws::session {

class FolderLock {
public:
    // Refuses, naming the folder, when another session (in any process) holds it.
    static Result<FolderLock> acquire(const std::filesystem::path& folder);
    // Whether a session (in any process, this one included) holds `folder` now. A folder that
    // has no lock file is not held. Probes without creating anything.
    static bool isHeld(const std::filesystem::path& folder);

    FolderLock(FolderLock&& other) noexcept;
    FolderLock& operator=(FolderLock&&) = delete;
    FolderLock(const FolderLock&) = delete;
    ~FolderLock();  // releases

private:
    explicit FolderLock(int fd) : m_fd(fd) {}
    int m_fd = -1;
};

// The status to show for a stored run: the store's, except that a run recorded as "running" (or
// "paused") whose folder no session holds was killed (SIGKILL, a crash, power loss) before it could
// record its end; it is shown as "interrupted", and Resume continues it from its newest checkpoint.
// Runs without a folder keep their stored status.
std::string shownRunStatus(std::string_view storedStatus, const std::filesystem::path& runFolder);

}  // namespace ws::session
