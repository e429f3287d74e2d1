// SPDX-License-Identifier: GPL-3.0-or-later
// resolveModelRef (see model_ref.h).
#include "engine/interop/model_ref.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <string>

#include "engine/core/paths.h"
#include "engine/interop/hf_import.h"
#include "engine/model/model_facts.h"
#include "engine/modelio/hf_cache.h"
#include "engine/modelio/hf_weights.h"
#include "engine/store/run_store.h"
#include "engine/tokenizer/hf_tokenizer.h"
#include "engine/tokenizer/tokenizer.h"

namespace ws::interop {
namespace fs = std::filesystem;

Result<ModelRef> resolveModelRef(std::string_view ref, const fs::path& dbPath) {
    std::error_code ec;
    if (fs::exists(fs::path(ref), ec)) return ModelRef{fs::path(ref), std::nullopt};
    int64_t id = -1;
    const auto [end, err] = std::from_chars(ref.data(), ref.data() + ref.size(), id);
    if (ref.empty() || err != std::errc() || end != ref.data() + ref.size()) {
        if (ref == kShippedBaseName) {
            const fs::path shipped = appDataDir() / "resources" / "base-model";
            if (!fs::exists(shipped / "model.safetensors", ec)) {
                return Error{fmt::format(
                    "base: the shipped base model is not at {} (is Wafer Studio installed "
                    "whole? see `wafer --version` for where it looks)",
                    shipped.string())};
            }
            return ModelRef{shipped, std::nullopt};
        }
        if (const auto hfId = modelio::parseHfModelId(ref)) {
            auto snapshot = modelio::resolveHfSnapshot(*hfId);
            if (!snapshot.ok()) {
                return Error{fmt::format("{} (there is no file or folder {} either)",
                                         snapshot.error().message, ref)};
            }
            return ModelRef{*snapshot, std::nullopt};
        }
        return Error{fmt::format(
            "{}: no such file or folder, and not a run id, a Hugging Face model id (org/name) "
            "or `base` (the shipped base model)",
            ref)};
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

namespace {

// A Hugging Face folder (or the weights file / shard index in one) as a LoadedModel, through the
// import's checks, without writing anything.
Result<modelio::LoadedModel> loadHfFolder(const fs::path& path) {
    auto hf = inspectHfFolder(path);
    if (!hf.ok()) return hf.error();
    modelio::LoadedModel m;
    m.config = importedRunConfig(*hf);
    m.shape = model::GptShape::fromConfig(m.config.model);
    m.facts = model::deriveFacts(m.config);
    m.folder = hf->folder;
    m.weightsFile = hf->weightsFile;
    m.tokenizerFolder = hf->folder;
    if (!hf->tokenizerJson.empty()) {
        auto fast = tokenizer::loadHfTokenizer(hf->tokenizerJson);
        if (!fast.ok()) return fast.error();
        m.tokenizer = std::shared_ptr<const tokenizer::Tokenizer>(std::move(fast).value());
    } else if (hf->byteTokenizer) {
        m.tokenizer = tokenizer::makeByteTokenizer();
    } else {
        auto bpe = tokenizer::loadGpt2Bpe(hf->vocabFile, hf->mergesFile);
        if (!bpe.ok()) return bpe.error();
        m.tokenizer = std::shared_ptr<const tokenizer::Tokenizer>(std::move(bpe).value());
    }
    auto params = readHfWeights(*hf, model::ParameterTable(m.shape));
    if (!params.ok()) return params.error();
    m.params = std::move(params).value();
    return m;
}

}  // namespace

Result<modelio::LoadedModel> loadModelRef(std::string_view ref, const fs::path& dbPath,
                                          std::string* description) {
    auto resolved = resolveModelRef(ref, dbPath);
    if (!resolved.ok()) return resolved.error();
    if (description) {
        if (resolved->runId) {
            *description = fmt::format("run {} ({})", *resolved->runId, resolved->path.string());
        } else if (resolved->path.string() != ref) {
            *description = fmt::format("{} ({})", ref, resolved->path.string());
        } else {
            *description = std::string(ref);
        }
    }
    std::error_code ec;
    const fs::path& p = resolved->path;
    const fs::path folder = fs::is_directory(p, ec) ? p : p.parent_path();
    const bool hfFile =
        !fs::is_directory(p, ec) && (p.extension() == ".bin" || modelio::isHfWeightsIndex(p) ||
                                     p.filename() == "model.safetensors");
    if ((fs::is_directory(p, ec) || hfFile) &&
        looksLikeHfFolder(folder.empty() ? fs::path(".") : folder)) {
        return loadHfFolder(p);
    }
    return modelio::loadModel(p);
}

}  // namespace ws::interop
