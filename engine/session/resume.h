// SPDX-License-Identifier: GPL-3.0-or-later
// Resuming a run from a checkpoint folder (modelio/checkpoints.h): finding the folder a user means
// ("--resume 12" or a path), the config to resume with, and the checks that make a resume exact
// or refuse it with the reason. Used by Session (SessionOptions::resumeFrom) and the CLI.
//
// Where a resumed run lands in the run store: when the checkpoint's run is in the store and the
// checkpoint lies in that run's model folder, the resume CONTINUES THAT RUN (same id, same folder;
// metrics and checkpoint rows logged after the checkpoint by a process that was killed are
// dropped, so the curve is one unbroken line). Otherwise (a copied folder, another store, a
// different runconfig.model_dir) a new run starts whose parent_run is the checkpoint's run when
// this store knows it. Either way nothing is overwritten: a model folder that already holds a
// checkpoint newer than the one resumed from is refused, since continuing there would replace it.
// Thread-safety: free functions over their arguments.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/config/config_yaml.h"
#include "engine/core/result.h"
#include "engine/modelio/checkpoints.h"
#include "engine/session/events.h"

namespace ws::store {
class RunStore;
}

namespace ws::session {

// `target` is a checkpoint folder, a model folder (its newest complete checkpoint), or a run id
// in the run store at `dbPath` (empty: the default store; the run's newest checkpoint).
Result<std::filesystem::path> resolveResumeTarget(std::string_view target,
                                                  const std::filesystem::path& dbPath);

// The config a checkpoint was trained with (from its model.safetensors), with `overrides`
// ("key=value") applied the way --set applies them.
Result<config::LoadedConfig> resumeConfig(const std::filesystem::path& checkpointFolder,
                                          const std::vector<std::string>& overrides = {});

struct ResumePlan {
    modelio::CheckpointContents checkpoint;
    std::vector<std::string> notes;     // config differences that keep the resume exact
    std::vector<std::string> warnings;  // differences accepted with allowConfigChange
};

// Opens and verifies `folder` for a run of `config`. A config that differs from the checkpoint's
// in anything that changes training (see keyKeepsResumeExact) is refused with every difference
// listed, unless allowConfigChange.
Result<ResumePlan> planResume(const std::filesystem::path& folder, const config::Config& config,
                              bool allowConfigChange);

// Where the resumed run goes (see the header comment).
struct ResumePlacement {
    std::optional<int64_t> continueRun;  // the run to continue in the store
    std::optional<int64_t> parentRun;    // or the run a new one links to
    std::filesystem::path modelDir;      // empty: the session's default for a new run
};

// Decides the placement, checks the store's recorded SHA-256 of the checkpoint's files (a
// mismatch is refused) and that the target model folder holds no newer checkpoint. `store` may
// be null (no run store): then a new run in config.runconfig.model_dir.
Result<ResumePlacement> placeResumedRun(store::RunStore* store, const ResumePlan& plan,
                                        const config::Config& config);

// What the run log says about a resume: where from, which run, the config changes accepted.
std::vector<LogLine> describeResume(const ResumePlan& plan, const ResumePlacement& placement,
                                    int64_t runId);

// Refuses when `modelDir` holds a checkpoint newer than `step` (continuing would overwrite it).
Status checkNoNewerCheckpoint(const std::filesystem::path& modelDir, int64_t step);

// Brings a continued run's checkpoint rows back in line with its model folder. A process killed
// between putting a checkpoint in place and recording its checksums, or between deleting an old
// checkpoint and forgetting it, left the store behind the folder: the rows of checkpoints in
// `modelDir` whose files are all gone are dropped, and the files of `resumed` (the checkpoint
// being continued from, verified) that have no row are recorded.
Status reconcileCheckpointRecords(store::RunStore& store, int64_t run,
                                  const std::filesystem::path& modelDir,
                                  const modelio::CheckpointContents& resumed);

}  // namespace ws::session
