// SPDX-License-Identifier: GPL-3.0-or-later
// The local Hugging Face cache (see hf_cache.h): ids, the cache folder, snapshots, the listing.
#include "engine/modelio/hf_cache.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <system_error>

#include "engine/fileio/atomic_file.h"
#include "engine/model/parameters.h"
#include "engine/modelio/hf_config.h"

namespace ws::modelio {
namespace fs = std::filesystem;

namespace {

bool validRepoPart(std::string_view part) {
    if (part.empty() || part.size() > 96 || part.front() == '.' || part.front() == '-')
        return false;
    return std::all_of(part.begin(), part.end(), [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
               c == '-' || c == '_' || c == '.';
    });
}

std::string environment(const char* name) {
    const char* v = std::getenv(name);
    return v ? std::string(v) : std::string();
}

// huggingface_hub expands a leading ~ in these settings.
fs::path expandHome(const std::string& value) {
    if (value == "~" || value.starts_with("~/")) {
        return fs::path(environment("HOME")) / value.substr(std::min<size_t>(2, value.size()));
    }
    return fs::path(value);
}

// "models--org--name" for "org/name".
std::string repoFolderName(std::string_view repo) {
    std::string name = "models--";
    for (char c : repo) {
        if (c == '/')
            name += "--";
        else
            name += c;
    }
    return name;
}

bool isCommitHash(std::string_view s) {
    return s.size() == 40 && std::all_of(s.begin(), s.end(), [](char c) {
               return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
           });
}

std::string readRef(const fs::path& file) {
    auto text = fileio::readWholeFile(file);
    if (!text.ok()) return {};
    std::string ref = *text;
    while (!ref.empty() && (ref.back() == '\n' || ref.back() == '\r' || ref.back() == ' '))
        ref.pop_back();
    return ref;
}

std::vector<std::string> snapshotsIn(const fs::path& repoDir) {
    std::vector<std::string> out;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(repoDir / "snapshots", ec)) {
        if (e.is_directory(ec)) out.push_back(e.path().filename().string());
    }
    std::sort(out.begin(), out.end());
    return out;
}

std::string downloadHint(const std::string& repo) {
    return fmt::format("download it with `huggingface-cli download {}` or pass a folder", repo);
}

}  // namespace

std::optional<HfModelId> parseHfModelId(std::string_view text) {
    HfModelId id;
    if (const size_t at = text.find('@'); at != std::string_view::npos) {
        id.revision = std::string(text.substr(at + 1));
        text = text.substr(0, at);
        if (id.revision.empty() || id.revision.find_first_of("\\") != std::string::npos ||
            id.revision.find("..") != std::string::npos || id.revision.front() == '/') {
            return std::nullopt;
        }
    }
    const size_t slash = text.find('/');
    if (slash == std::string_view::npos || text.find('/', slash + 1) != std::string_view::npos)
        return std::nullopt;
    if (!validRepoPart(text.substr(0, slash)) || !validRepoPart(text.substr(slash + 1)))
        return std::nullopt;
    id.repo = std::string(text);
    return id;
}

HfHub hfHubCache() {
    for (const char* name : {"HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE"}) {
        if (std::string v = environment(name); !v.empty()) return {expandHome(v), name};
    }
    if (std::string v = environment("HF_HOME"); !v.empty())
        return {expandHome(v) / "hub", "HF_HOME"};
    if (std::string v = environment("XDG_CACHE_HOME"); !v.empty())
        return {expandHome(v) / "huggingface" / "hub", "XDG_CACHE_HOME"};
    return {fs::path(environment("HOME")) / ".cache" / "huggingface" / "hub", "the default"};
}

Result<fs::path> resolveHfSnapshot(const HfModelId& id, const fs::path& hubGiven) {
    const HfHub hub = hubGiven.empty() ? hfHubCache() : HfHub{hubGiven, "given"};
    const fs::path repoDir = hub.dir / repoFolderName(id.repo);
    const std::string where = hub.source == "given" || hub.source == "the default"
                                  ? hub.dir.string()
                                  : fmt::format("{}, from {}", hub.dir.string(), hub.source);
    std::error_code ec;
    const std::vector<std::string> snapshots = snapshotsIn(repoDir);
    if (!fs::is_directory(repoDir, ec) || snapshots.empty()) {
        return Error{fmt::format("{} is not in the Hugging Face cache (looked in {}); {}", id.repo,
                                 where, downloadHint(id.repo))};
    }
    const std::string revision = id.revision.empty() ? "main" : id.revision;
    std::string commit;
    if (isCommitHash(revision) && fs::is_directory(repoDir / "snapshots" / revision, ec)) {
        commit = revision;
    } else if (fs::exists(repoDir / "refs" / revision, ec)) {
        commit = readRef(repoDir / "refs" / revision);
        if (commit.empty() || !fs::is_directory(repoDir / "snapshots" / commit, ec)) {
            return Error{fmt::format(
                "{}: {} points at snapshot \"{}\", which is not in {}; the cache is incomplete "
                "({} again)",
                id.repo, (repoDir / "refs" / revision).string(), commit,
                (repoDir / "snapshots").string(), downloadHint(id.repo))};
        }
    } else if (id.revision.empty() && snapshots.size() == 1) {
        commit = snapshots.front();
    } else if (id.revision.empty()) {
        return Error{fmt::format(
            "{}: the cache holds {} snapshots ({}) and no refs/main to choose one; name one as "
            "{}@<commit>",
            id.repo, snapshots.size(), fmt::join(snapshots, ", "), id.repo)};
    } else {
        return Error{fmt::format(
            "{}@{} is not in the Hugging Face cache (looked for {} and a snapshot of that "
            "name in {}; cached: {}); download it with `huggingface-cli download {} --revision "
            "{}` or pass a folder",
            id.repo, id.revision, (repoDir / "refs" / id.revision).string(),
            (repoDir / "snapshots").string(), fmt::join(snapshots, ", "), id.repo, id.revision)};
    }
    return repoDir / "snapshots" / commit;
}

namespace {

// The listing's facts about one snapshot folder.
CachedHfModel describeSnapshot(std::string id, const fs::path& snapshot) {
    CachedHfModel m;
    m.id = std::move(id);
    m.revision = snapshot.filename().string();
    m.snapshot = snapshot;
    std::error_code ec;
    for (auto it = fs::recursive_directory_iterator(snapshot, ec);
         !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
        if (it->is_directory(ec)) continue;
        const auto size = fs::file_size(it->path(), ec);  // follows the symlink into blobs/
        if (ec) {
            if (m.problem.empty()) {
                m.problem = fmt::format(
                    "{} is missing (its blob is gone: a download did not "
                    "finish?)",
                    fs::relative(it->path(), snapshot, ec).string());
            }
            ec.clear();
            continue;
        }
        m.bytes += size;
    }
    const fs::path configFile = snapshot / "config.json";
    if (!fs::exists(configFile, ec)) {
        if (m.problem.empty()) m.problem = "no config.json (not a transformers model folder)";
        return m;
    }
    if (auto text = fileio::readWholeFile(configFile); text.ok()) {
        const auto json = nlohmann::json::parse(*text, nullptr, false);
        if (json.is_object()) {
            const auto arch = json.find("architectures");
            if (arch != json.end() && arch->is_array() && !arch->empty() &&
                arch->front().is_string()) {
                m.architecture = arch->front().get<std::string>();
            } else if (json.contains("model_type") && json["model_type"].is_string()) {
                m.architecture = json["model_type"].get<std::string>();
            }
        }
    }
    auto cfg = readHfConfig(configFile);
    if (!cfg.ok()) {
        if (m.problem.empty()) m.problem = cfg.error().message;
        return m;
    }
    const model::GptShape shape = model::GptShape::fromConfig(cfg->model);
    if (shape.validate().ok()) m.parameters = int64_t(model::ParameterTable(shape).totalSize());
    return m;
}

}  // namespace

std::vector<CachedHfModel> listCachedHfModels(const fs::path& hubGiven) {
    const fs::path hub = hubGiven.empty() ? hfHubCache().dir : hubGiven;
    std::vector<CachedHfModel> out;
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(hub, ec)) {
        const std::string folder = entry.path().filename().string();
        if (!folder.starts_with("models--") || !entry.is_directory(ec)) continue;
        // models--org--name -> org/name (names never hold "--" at the org boundary twice).
        std::string repo = folder.substr(8);
        const size_t sep = repo.find("--");
        if (sep == std::string::npos) continue;
        repo.replace(sep, 2, "/");
        const std::vector<std::string> snapshots = snapshotsIn(entry.path());
        std::string main = readRef(entry.path() / "refs" / "main");
        if (main.empty() && snapshots.size() == 1) main = snapshots.front();
        for (const std::string& commit : snapshots) {
            const std::string id = commit == main ? repo : repo + "@" + commit;
            out.push_back(describeSnapshot(id, entry.path() / "snapshots" / commit));
        }
    }
    std::sort(out.begin(), out.end(),
              [](const CachedHfModel& a, const CachedHfModel& b) { return a.id < b.id; });
    return out;
}

}  // namespace ws::modelio
