// SPDX-License-Identifier: GPL-3.0-or-later
// Resume: target resolution, the resume config, verification and placement in the run store.
#include "engine/session/resume.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

#include "engine/core/paths.h"
#include "engine/store/run_store.h"

namespace ws::session {
namespace fs = std::filesystem;

namespace {

fs::path sameFileKey(const fs::path& path) {
    std::error_code ec;
    fs::path key = fs::weakly_canonical(fs::absolute(path, ec), ec);
    return ec ? path.lexically_normal() : key;
}

Result<fs::path> newestCheckpointIn(const fs::path& modelDir, const std::string& what) {
    const auto found = modelio::listCheckpoints(modelDir);
    std::error_code ec;
    const fs::path config = modelDir / "config.yaml";  // written as the run starts
    if (found.empty() && fs::exists(config, ec)) {
        // Killed or stopped before its first checkpoint: no weights to continue from, but the
        // run's own config, which starts it again from step 0.
        return Error{fmt::format(
            "{} ended before its first checkpoint (there is no checkpoint-<step> folder in {}), "
            "so there is nothing to continue from; start it again from step 0 with the same "
            "config: wafer train {} (runconfig.checkpoint_steps writes checkpoints during "
            "training)",
            what, modelDir.string(), config.string())};
    }
    if (found.empty()) {
        return Error{
            fmt::format("{} has no checkpoint folder (checkpoint-<step>) in {}; set "
                        "runconfig.checkpoint_steps to write them during training",
                        what, modelDir.string())};
    }
    return found.back().second;
}

bool allDigits(std::string_view text) {
    return !text.empty() &&
           std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
}

}  // namespace

Result<fs::path> resolveResumeTarget(std::string_view target, const fs::path& dbPath) {
    const fs::path asPath{std::string(target)};
    std::error_code ec;
    if (fs::is_directory(asPath, ec)) {
        if (fs::exists(asPath / modelio::kTrainerStateFile, ec) || modelio::checkpointStep(asPath))
            return asPath;
        return newestCheckpointIn(asPath, "folder " + asPath.string());
    }
    if (!allDigits(target)) {
        return Error{fmt::format(
            "--resume {}: neither a folder nor a run id (a checkpoint-<step> folder, a run's "
            "model folder, or the id `wafer runs list` shows)",
            target)};
    }
    const fs::path db = dbPath.empty() ? store::RunStore::defaultPath() : dbPath;
    if (!fs::exists(db, ec)) {
        return Error{fmt::format("--resume {}: no run store at {} to look the run up in (--db)",
                                 target, db.string())};
    }
    auto store = store::RunStore::open(db);
    if (!store.ok()) return store.error();
    int64_t id = 0;
    try {
        id = std::stoll(std::string(target));
    } catch (const std::exception&) {
        return Error{fmt::format("--resume {}: not a run id", target)};
    }
    auto run = (*store)->getRun(id);
    if (!run.ok()) return run.error();
    if (run->modelDir.empty()) {
        return Error{fmt::format("run {} has no model folder recorded", id)};
    }
    return newestCheckpointIn(run->modelDir, fmt::format("run {}", id));
}

Result<config::LoadedConfig> resumeConfig(const fs::path& checkpointFolder,
                                          const std::vector<std::string>& overrides) {
    auto model = fileio::SafetensorsFile::open(checkpointFolder / modelio::kModelFile);
    if (!model.ok()) return model.error();
    const auto& meta = model->metadata();
    const auto yaml = meta.find("config_yaml");
    if (yaml == meta.end()) {
        return Error{
            fmt::format("{}: no config_yaml in its metadata; not a Wafer Studio checkpoint",
                        model->path().string())};
    }
    return config::parseConfig(yaml->second, model->path().string() + " (config)", {}, overrides);
}

Result<ResumePlan> planResume(const fs::path& folder, const config::Config& config,
                              bool allowConfigChange) {
    auto opened = modelio::openCheckpoint(folder);
    if (!opened.ok()) return opened.error();
    ResumePlan plan{std::move(opened).value(), {}, {}};
    const modelio::TrainerState& state = plan.checkpoint.state;
    const fs::path stateFile = folder / modelio::kTrainerStateFile;

    // The positions trainer_state.json records must be those its config implies.
    const modelio::TrainerState expected = modelio::TrainerState::forRun(
        plan.checkpoint.config, state.globalStep, state.runId, state.nextLearningRate);
    if (expected.batchSize != state.batchSize || expected.sequenceLength != state.sequenceLength ||
        expected.shuffle != state.shuffle || expected.shuffleSeed != state.shuffleSeed ||
        expected.seed != state.seed || expected.dropoutStreamKey != state.dropoutStreamKey ||
        expected.optimizerType != state.optimizerType || expected.maxSteps != state.maxSteps) {
        return Error{fmt::format(
            "{}: data_loader/rng/optimizer entries do not match the config stored in {}; the file "
            "was edited or comes from another run",
            stateFile.string(), modelio::kModelFile)};
    }

    if (config::hashConfig(config) != state.configHash) {
        std::vector<std::string> material;
        for (std::string& line : modelio::configDifferences(plan.checkpoint.config, config)) {
            const std::string key = line.substr(0, line.find(':'));
            if (modelio::keyKeepsResumeExact(key)) {
                plan.notes.push_back(std::move(line));
            } else {
                material.push_back(std::move(line));
            }
        }
        if (!material.empty() && !allowConfigChange) {
            std::string list;
            for (const auto& line : material) list += "\n  - " + line;
            return Error{fmt::format(
                "{}: the config differs from the one this checkpoint was trained with (hash {} "
                "in {}) in settings that change training (checkpoint -> now):{}\n"
                "Resuming would not continue the run exactly. Resume with the checkpoint's own "
                "config (no config file, no --set of these keys), or pass --allow-config-change "
                "(SessionOptions::allowConfigChange) to continue with the new values anyway",
                folder.string(), state.configHash.substr(0, 12), modelio::kTrainerStateFile, list)};
        }
        plan.warnings = std::move(material);
    }
    if (state.globalStep > config.runconfig.maxSteps) {
        return Error{fmt::format(
            "{}: the checkpoint is at step {}, beyond runconfig.max_steps {}; raise max_steps "
            "(with --allow-config-change) to train further",
            folder.string(), state.globalStep, config.runconfig.maxSteps)};
    }
    return plan;
}

std::vector<LogLine> describeResume(const ResumePlan& plan, const ResumePlacement& placement,
                                    int64_t runId) {
    std::vector<LogLine> lines;
    std::string where;
    if (placement.continueRun) {
        where = fmt::format(", continuing run {}", runId);
    } else if (placement.parentRun) {
        where = fmt::format(" as run {}, linked to run {}", runId, *placement.parentRun);
    }
    lines.push_back({LogLine::Level::Info,
                     fmt::format("resumed from {} at step {}{}", plan.checkpoint.folder.string(),
                                 plan.checkpoint.state.globalStep, where)});
    for (const auto& note : plan.notes) {
        lines.push_back(
            {LogLine::Level::Info, "resume: config change that keeps the run exact: " + note});
    }
    for (const auto& warning : plan.warnings) {
        lines.push_back(
            {LogLine::Level::Warning,
             "resume: config change allowed, the run no longer continues exactly: " + warning});
    }
    return lines;
}

Status checkNoNewerCheckpoint(const fs::path& modelDir, int64_t step) {
    for (const auto& [existing, path] : modelio::listCheckpoints(modelDir)) {
        if (existing > step) {
            return Error{fmt::format(
                "{} already holds {}, newer than the step-{} checkpoint being resumed; continuing "
                "there would overwrite it. Resume from the newest checkpoint, or give the resumed "
                "run another folder (--set runconfig.model_dir=NEW_FOLDER)",
                modelDir.string(), path.filename().string(), step)};
        }
    }
    return Status::success();
}

Status reconcileCheckpointRecords(store::RunStore& store, int64_t run, const fs::path& modelDir,
                                  const modelio::CheckpointContents& resumed) {
    auto records = store.checkpoints(run);
    if (!records.ok()) return records.error();
    const fs::path folderKey = sameFileKey(modelDir);
    std::map<int64_t, bool> anyFileLeft;  // steps of rows in modelDir: does a file remain?
    for (const auto& record : *records) {
        const fs::path file(record.path);
        if (sameFileKey(file.parent_path().parent_path()) != folderKey) continue;
        std::error_code ec;
        anyFileLeft[record.step] = anyFileLeft[record.step] || fs::exists(file, ec);
    }
    for (const auto& [step, left] : anyFileLeft) {
        if (left) continue;
        if (Status st = store.forgetCheckpoint(run, step); !st.ok()) return st;
    }
    const int64_t step = resumed.state.globalStep;
    const fs::path resumedKey = sameFileKey(resumed.folder);
    std::set<std::string> recorded;
    for (const auto& record : *records) {
        const fs::path file(record.path);
        if (record.step == step && sameFileKey(file.parent_path()) == resumedKey)
            recorded.insert(file.filename().string());
    }
    for (const auto& [name, sha] : resumed.fileSha256) {
        if (recorded.count(name)) continue;
        if (Status st = store.recordCheckpoint(run, step, resumed.folder / name, sha); !st.ok())
            return st;
    }
    return Status::success();
}

Result<ResumePlacement> placeResumedRun(store::RunStore* store, const ResumePlan& plan,
                                        const config::Config& config) {
    const modelio::CheckpointContents& checkpoint = plan.checkpoint;
    const int64_t step = checkpoint.state.globalStep;
    ResumePlacement placement;
    placement.modelDir = config.runconfig.modelDir;

    std::optional<store::RunInfo> original;
    if (store && checkpoint.state.runId >= 0) {
        auto run = store->getRun(checkpoint.state.runId);
        if (run.ok()) original = std::move(run).value();
    }
    if (original) {
        // The store's checksums of this folder's files, wherever it recorded them.
        auto records = store->checkpoints(original->id);
        if (!records.ok()) return records.error();
        const fs::path folderKey = sameFileKey(checkpoint.folder);
        for (const auto& record : *records) {
            const fs::path recorded(record.path);
            if (sameFileKey(recorded.parent_path()) != folderKey) continue;
            const auto actual = checkpoint.fileSha256.find(recorded.filename().string());
            if (actual == checkpoint.fileSha256.end()) continue;
            if (actual->second != record.sha256) {
                return Error{fmt::format(
                    "{}: SHA-256 {} differs from {} that the run store ({}) recorded for run {} "
                    "at {}; the checkpoint was replaced or damaged after it was written",
                    recorded.string(), actual->second, record.sha256, store->path().string(),
                    original->id, record.created)};
            }
        }
        const fs::path parentKey = sameFileKey(checkpoint.folder.parent_path());
        const bool inItsFolder =
            !original->modelDir.empty() && sameFileKey(original->modelDir) == parentKey;
        const bool folderKept = config.runconfig.modelDir.empty() ||
                                sameFileKey(config.runconfig.modelDir) == parentKey;
        if (inItsFolder && folderKept) {
            placement.continueRun = original->id;
            placement.modelDir = original->modelDir;
        } else {
            placement.parentRun = original->id;
        }
    }
    if (!placement.modelDir.empty()) {
        if (Status st = checkNoNewerCheckpoint(placement.modelDir, step); !st.ok()) {
            return st.error();
        }
    }
    return placement;
}

}  // namespace ws::session
