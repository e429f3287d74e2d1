// SPDX-License-Identifier: GPL-3.0-or-later
// The model folder of one run: chosen, created, locked (see run_folder.h).
#include "engine/session/run_folder.h"

#include <fmt/format.h>

#include "engine/session/run_control.h"
#include "engine/store/run_store.h"

namespace ws::session {
namespace fs = std::filesystem;

fs::path RunFolder::choose(const std::optional<ResumePlacement>& placement,
                           const config::Config& config, const fs::path& db, int64_t runId) {
    if (placement && !placement->modelDir.empty()) return placement->modelDir;
    if (!config.runconfig.modelDir.empty()) return config.runconfig.modelDir;
    return store::RunStore::runsFolderFor(db) /
           (runId >= 0 ? fmt::format("run-{}", runId) : std::string("scratch"));
}

Result<RunFolder> RunFolder::claim(const fs::path& dir) {
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec) {
        return Error{
            fmt::format("cannot create runconfig.model_dir {}: {}", dir.string(), ec.message())};
    }
    if (!FolderLock::isHeld(dir)) clearControlRequest(dir);
    auto lock = FolderLock::acquire(dir);
    if (!lock.ok()) return lock.error();
    return RunFolder(dir, std::move(lock).value());
}

Status RunFolder::writeModelFiles(const config::Config& config,
                                  const tokenizer::Tokenizer& tokenizer) const {
    return modelio::writeModelFolderFiles(m_dir, config, {&tokenizer, {}, {}});
}

}  // namespace ws::session
