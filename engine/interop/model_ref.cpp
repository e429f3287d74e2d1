// resolveModelRef (see model_ref.h).
#include "engine/interop/model_ref.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <string>

#include "engine/store/run_store.h"

namespace ws::interop {
namespace fs = std::filesystem;

Result<ModelRef> resolveModelRef(std::string_view ref, const fs::path& dbPath) {
    std::error_code ec;
    if (fs::exists(fs::path(ref), ec)) return ModelRef{fs::path(ref), std::nullopt};
    int64_t id = -1;
    const auto [end, err] = std::from_chars(ref.data(), ref.data() + ref.size(), id);
    if (ref.empty() || err != std::errc() || end != ref.data() + ref.size()) {
        return Error{fmt::format("{}: no such file or folder, and not a run id", ref)};
    }
    const fs::path db = dbPath.empty() ? store::RunStore::defaultPath() : dbPath;
    if (!fs::exists(db, ec)) {
        return Error{
            fmt::format("run {}: there is no run store at {} (pass --db, or give a "
                        "folder)",
                        id, db.string())};
    }
    auto store = store::RunStore::open(db);
    if (!store.ok()) return store.error();
    auto run = (*store)->getRun(id);
    if (!run.ok()) return run.error();
    if (!run->modelDir.empty() && fs::exists(fs::path(run->modelDir) / "model.safetensors", ec)) {
        return ModelRef{fs::path(run->modelDir), id};
    }
    auto checkpoints = (*store)->checkpoints(id);
    if (checkpoints.ok()) {
        for (auto it = checkpoints->rbegin(); it != checkpoints->rend(); ++it) {
            const fs::path file(it->path);
            if (fs::exists(file, ec)) return ModelRef{file, id};
        }
    }
    return Error{
        fmt::format("run {} ({}) has no model.safetensors yet in {} and no checkpoint "
                    "on disk",
                    id, run->name, run->modelDir.empty() ? "-" : run->modelDir)};
}

}  // namespace ws::interop
