// SPDX-License-Identifier: GPL-3.0-or-later
// RunFolder: the model folder one run writes to (its weights, config.yaml, the tokenizer's files,
// checkpoint-<step>/ folders, the control requests of other processes): chosen, created and
// locked for the run (folder_lock.h: one session per folder, in any process). A folder another
// session holds is refused. Not thread-safe: one owner; movable.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>

#include "engine/config/config.h"
#include "engine/core/result.h"
#include "engine/modelio/model_folder.h"
#include "engine/session/folder_lock.h"
#include "engine/session/resume.h"

namespace ws::session {

class RunFolder {
public:
    // Where a run's folder is: a resumed run's placement when it names one, else
    // runconfig.model_dir, else "run-<runId>" ("scratch" without a run id) in the runs folder
    // beside the run store at `db`, so two stores never share a folder.
    static std::filesystem::path choose(const std::optional<ResumePlacement>& placement,
                                        const config::Config& config,
                                        const std::filesystem::path& db, int64_t runId);

    // Creates `dir` and locks it for this run; refuses, naming it, a folder another session
    // holds. Control requests other processes left for an earlier session of the folder are
    // stale and go before the lock is taken, since askers write only to a held folder
    // (sendRunControl): a request sent once the lock is ours is for this session and stays. A
    // folder held by another process is not ours to touch.
    static Result<RunFolder> claim(const std::filesystem::path& dir);

    const std::filesystem::path& path() const { return m_dir; }

    // config.yaml and the tokenizer's files (modelio::writeModelFolderFiles), written when the
    // run starts so that its checkpoints load before the final weights exist.
    Status writeModelFiles(const config::Config& config,
                           const tokenizer::Tokenizer& tokenizer) const;

private:
    RunFolder(std::filesystem::path dir, FolderLock lock)
        : m_dir(std::move(dir)), m_lock(std::move(lock)) {}
    std::filesystem::path m_dir;
    FolderLock m_lock;  // held until the RunFolder goes
};

}  // namespace ws::session
