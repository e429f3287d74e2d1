// SPDX-License-Identifier: GPL-3.0-or-later
// Which model a user means on a command line or in a wizard: a path (a run folder, a
// checkpoint-<step> folder, a model.safetensors, a Hugging Face folder), a run id in the run
// store, a Hugging Face model id (org/name[@revision]) in the local Hugging Face cache
// (modelio/hf_cache.h, no network), or `base`, the base model shipped with the app.
// Thread-safety: a free function; opens the store read-only for the lookup.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string_view>

#include "engine/core/result.h"
#include "engine/modelio/load_model.h"

namespace ws::interop {

struct ModelRef {
    std::filesystem::path path;    // folder or file, as modelio::loadModel takes it
    std::optional<int64_t> runId;  // when given as a run id
};

// The name that means the shipped base model (<app data>/resources/base-model).
inline constexpr std::string_view kShippedBaseName = "base";

// An existing path is taken as it is (it wins over an id of the same spelling). Otherwise a
// number is a run id in the store at dbPath (empty: the default store): its model folder when it
// holds model.safetensors, else its newest recorded checkpoint; `base` is the shipped base
// model; org/name[@revision] is that model's snapshot folder in the Hugging Face cache. Errors
// say what was looked for and where.
Result<ModelRef> resolveModelRef(std::string_view ref, const std::filesystem::path& dbPath);

// A model to compute with, whatever `ref` names (as above): a Hugging Face folder (or a cached
// id's snapshot) is read in memory with the checks and mapping of `wafer import`
// (hf_import.h: config.json, the tokenizer, single or sharded weights), anything else through
// modelio::loadModel. `description` receives how to name it to the user (a run: "run 3
// (folder)"; a cached id: "org/name (snapshot folder)").
Result<modelio::LoadedModel> loadModelRef(std::string_view ref, const std::filesystem::path& dbPath,
                                          std::string* description = nullptr);

}  // namespace ws::interop
