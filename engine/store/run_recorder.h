// SPDX-License-Identifier: GPL-3.0-or-later
// RunRecorder: the writes a training session makes to its run's record (the run row, its status,
// summary and folder, metrics, log events, checkpoints). RunStore, the SQLite file, is the one a
// run normally writes to; a sweep trial running in another process of an `mpirun` job writes to
// one that forwards every write to rank 0's RunStore (engine/sweep/cluster.h), so the record it
// leaves is the same as a trial run beside the store.
// Thread-safety and failures: as the implementation states (RunStore: any thread, any method).
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include "engine/core/result.h"

namespace ws::store {

struct NewRun {
    std::string name;                  // empty: "run-<id>"
    std::string configYaml;            // the full config, as saved
    std::string configHash;            // empty: SHA-256 of configYaml
    std::string kind = "train";        // train|finetune|sweep|sweep-trial|...
    std::optional<int64_t> parentRun;  // the run this one continues or fine-tunes
    std::optional<int64_t> sweepId;    // for sweep trials: the id of the run of kind "sweep"
    std::string modelDir;              // the run's output folder
};

class RunRecorder {
public:
    virtual ~RunRecorder() = default;
    virtual Result<int64_t> createRun(const NewRun& run) = 0;  // status "created"
    virtual Status setStatus(int64_t run, std::string_view status) = 0;
    virtual Status setSummary(int64_t run, std::string_view json) = 0;  // valid JSON
    virtual Status setModelDir(int64_t run, const std::filesystem::path& dir) = 0;
    // Asynchronous, O(1): never slows the training loop.
    virtual void logMetric(int64_t run, int64_t step, std::string_view key, double value,
                           double wallTime) = 0;
    virtual void logEvent(int64_t run, std::string_view level, std::string_view message) = 0;
    virtual Status recordCheckpoint(int64_t run, int64_t step, const std::filesystem::path& file,
                                    std::string_view sha256) = 0;
    virtual Status forgetCheckpoint(int64_t run, int64_t step) = 0;
    // Blocks until everything written before the call is recorded.
    virtual void flush() = 0;
};

}  // namespace ws::store
