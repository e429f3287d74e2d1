// SPDX-License-Identifier: GPL-3.0-or-later
// The local Hugging Face cache, read as huggingface_hub lays it out, with no network: a model id
// `org/name` (optionally `org/name@revision`) names
//   <hub>/models--org--name/snapshots/<commit>/
// where <hub> is $HF_HUB_CACHE (or the older $HUGGINGFACE_HUB_CACHE), else $HF_HOME/hub, else
// $XDG_CACHE_HOME/huggingface/hub, else ~/.cache/huggingface/hub, as transformers looks. The
// commit comes from refs/<revision> (revision "main" when none is given); a revision that is a
// commit hash names its snapshot directly; with no refs file, the only snapshot there is. A
// snapshot's files are usually symlinks into ../../blobs/: every reader follows them.
//
// Failure contract: errors name the id, what was looked for and where, and how to get the model
// (`huggingface-cli download ID`, or pass a folder). Thread-safety: free functions; they read
// the environment and the file system only.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/core/result.h"

namespace ws::modelio {

struct HfModelId {
    std::string repo;      // "org/name"
    std::string revision;  // empty: main
};

// "org/name" or "org/name@revision": exactly one '/', both parts made of letters, digits and
// "-_.", neither starting with '.' or '-' (the Hub's rule). nullopt for anything else (a path
// such as ./x/y or /a/b is not an id).
std::optional<HfModelId> parseHfModelId(std::string_view text);

// Where the cache is, and which setting said so ("HF_HUB_CACHE", "HF_HOME", "XDG_CACHE_HOME" or
// "the default").
struct HfHub {
    std::filesystem::path dir;
    std::string source;
};
HfHub hfHubCache();

// The snapshot folder of `id` in `hub` (the cache above when empty).
Result<std::filesystem::path> resolveHfSnapshot(const HfModelId& id,
                                                const std::filesystem::path& hub = {});

// A model in the cache, as a wizard or `wafer import --list-cached` shows it.
struct CachedHfModel {
    std::string id;        // what resolves to this snapshot: "org/name", or "org/name@<commit>" for
                           // a snapshot that refs/main does not point at
    std::string revision;  // the snapshot's commit
    std::filesystem::path snapshot;
    std::string architecture;  // config.json's architectures[0], else its model_type
    uint64_t bytes = 0;        // the snapshot's files, symlinks followed
    int64_t parameters = 0;    // from config.json when Wafer Studio computes that model, else 0
    // Empty when Wafer Studio reads the model's config.json; else why not (the first problem:
    // no config.json, a missing blob, an architecture or key the engine does not compute).
    std::string problem;
    bool usable() const { return problem.empty(); }
};

// Every model snapshot in `hub` (the cache above when empty), sorted by id. A missing cache is
// an empty list; an unreadable entry is listed with its problem rather than failing the list.
std::vector<CachedHfModel> listCachedHfModels(const std::filesystem::path& hub = {});

}  // namespace ws::modelio
