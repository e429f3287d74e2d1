// Which model a user means on a command line or in a wizard: a path (a run folder, a
// checkpoint-<step> folder, a model.safetensors, a Hugging Face folder) or a run id in the run
// store. Thread-safety: a free function; opens the store read-only for the lookup.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string_view>

#include "engine/core/result.h"

namespace ws::interop {

struct ModelRef {
    std::filesystem::path path;    // folder or file, as modelio::loadModel takes it
    std::optional<int64_t> runId;  // when given as a run id
};

// An existing path is taken as it is. Otherwise a number is a run id in the store at dbPath
// (empty: the default store): its model folder when it holds model.safetensors, else its newest
// recorded checkpoint. Errors say what was looked for.
Result<ModelRef> resolveModelRef(std::string_view ref, const std::filesystem::path& dbPath);

}  // namespace ws::interop
