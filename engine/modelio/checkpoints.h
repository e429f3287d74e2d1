// SPDX-License-Identifier: GPL-3.0-or-later
// Training checkpoints: a folder `checkpoint-<step>/` inside the run's model folder holding
//   model.safetensors      the weights (Hugging Face GPT-2 names, config YAML in the metadata),
//   optimizer.safetensors  the optimizer state per parameter: <name>.exp_avg and <name>.exp_avg_sq
//                          (AdamW), <name>.momentum_buffer (SGD with momentum); step in metadata;
//                          with sparsity, <name>.sparsity_mask (U8, the tensor's shape, 1 =
//                          pruned) for every masked matrix (optim/sparse_masks.h),
//   trainer_state.json     global step, data-loader position, RNG streams, LR schedule position,
//                          config hash, and the SHA-256 of both tensor files.
// Everything a training step reads besides weights and optimizer state is a pure function of
// (config, global step): the batch (Dataset::trainBatch), the dropout stream
// (rng::dropoutSeedForStep), the learning rate (LearningRateSchedule::at) and Adam's bias
// correction (step + 1). Restoring those three things therefore resumes a run bit for bit.
//
// Writing is atomic: the files go to a hidden `.checkpoint-<step>.partial/` folder (each written
// to a temp file, fsynced, renamed), which is then renamed to `checkpoint-<step>` and the model
// folder fsynced. A folder named checkpoint-<step> is always complete; an existing one is never
// replaced. Reading verifies everything (JSON shape, format tag, checksums, safetensors headers,
// tensor names, shapes and dtypes, config identity) before a single value is copied out, and every
// error names the file and what is wrong with it.
// Thread-safety: free functions over their arguments; a CheckpointContents is read-only.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "engine/config/config.h"
#include "engine/core/result.h"
#include "engine/fileio/safetensors.h"
#include "engine/model/parameters.h"
#include "engine/modelio/weights_io.h"
#include "engine/optim/optimizer.h"

namespace ws::modelio {

inline constexpr const char* kModelFile = "model.safetensors";
inline constexpr const char* kOptimizerFile = "optimizer.safetensors";
inline constexpr const char* kTrainerStateFile = "trainer_state.json";
inline constexpr const char* kTrainerStateFormat = "wafer-studio-trainer-state";

// The contents of trainer_state.json (besides the file checksums).
struct TrainerState {
    int64_t globalStep = 0;  // optimizer updates applied; the next step to run has this index
    int64_t maxSteps = 0;
    int64_t runId = -1;      // the run that wrote it (-1: no run store)
    std::string configHash;  // config::hashConfig of the run's config
    std::string optimizerType;
    // Data loader: batches are a function of the step (data/dataset.h), so its position is the
    // next step; the rest pins down which formula produced the batches so far.
    int batchSize = 0;
    int sequenceLength = 0;
    bool shuffle = false;
    int64_t shuffleSeed = 0;
    // Counter-based RNG (model/random.h): the dropout stream's key and the counter (the step)
    // the next step reads.
    int64_t seed = 0;
    uint64_t dropoutStreamKey = 0;
    double nextLearningRate = 0.0;  // schedule at globalStep, for people reading the file
    std::map<std::string, std::string> fileSha256;  // model.safetensors, optimizer.safetensors

    // What trainer_state.json says about a run of `config` after `step` steps.
    static TrainerState forRun(const config::Config& config, int64_t step, int64_t runId,
                               double nextLearningRate);
};

// "checkpoint-<step>", and the step of such a folder name (nullopt for anything else).
std::string checkpointFolderName(int64_t step);
std::optional<int64_t> checkpointStep(const std::filesystem::path& folder);
// Complete checkpoint folders in `modelDir` (by name; partial folders are hidden), by step.
std::vector<std::pair<int64_t, std::filesystem::path>> listCheckpoints(
    const std::filesystem::path& modelDir);

struct WrittenCheckpoint {
    std::filesystem::path folder;
    std::map<std::string, std::string> fileSha256;  // all three files, by file name
};

// Writes checkpoint-<state.globalStep> into `modelDir` (see the header comment). `optimizer`
// holds `stateCopies` buffers of table.totalSize() floats (optim::Optimizer::stateCopies).
// Refuses, naming it, a checkpoint folder that already exists.
Result<WrittenCheckpoint> writeCheckpoint(const std::filesystem::path& modelDir,
                                          const model::ParameterTable& table, const float* weights,
                                          const optim::OptimizerState& optimizer, int stateCopies,
                                          const config::Config& config, const TrainerState& state);

// The same, reading each tensor where `read` finds it (weights_io.h), one at a time. `frozen`
// (one flag per tensor, empty: none): frozen tensors have no optimizer state, so the optimizer
// file holds the state of the tensors that train only (read is never asked for the rest).
// `masks` (optional): a tensor's sparsity mask (table.tensors()[t].size bytes), or null for a
// tensor without one.
using MaskReader = std::function<const uint8_t*(size_t tensor)>;
inline constexpr const char* kMaskSuffix = ".sparsity_mask";
Result<WrittenCheckpoint> writeCheckpoint(const std::filesystem::path& modelDir,
                                          const model::ParameterTable& table,
                                          const TensorReader& read, int stateCopies,
                                          const config::Config& config, const TrainerState& state,
                                          const std::vector<bool>& frozen = {},
                                          const MaskReader& masks = {});

// A checkpoint folder that passed every check that does not need the model's shape.
struct CheckpointContents {
    std::filesystem::path folder;
    TrainerState state;
    config::Config config;                          // the config the checkpoint was trained with
    std::map<std::string, std::string> fileSha256;  // all three files as they are on disk now
    fileio::SafetensorsFile model;
    fileio::SafetensorsFile optimizer;
};

// Opens and verifies a checkpoint folder: trainer_state.json is well-formed and ours, both tensor
// files parse, their SHA-256 matches what trainer_state.json recorded, the config in
// model.safetensors is the one whose hash trainer_state.json names, the optimizer file's step and
// type agree with it.
Result<CheckpointContents> openCheckpoint(const std::filesystem::path& folder);

// Copies the weights and optimizer state into MemoryX-layout buffers after checking every tensor
// of `table` is present with its shape in fp32 (anything else could not resume exactly).
Status loadCheckpointTensors(const CheckpointContents& checkpoint,
                             const model::ParameterTable& table, float* weights,
                             const optim::OptimizerState& optimizer, int stateCopies);

// The same checks, then hands each tensor's bytes (buffer as TensorReader numbers them) to `put`.
// `frozen` (one flag per tensor, empty: none): frozen tensors get their weights only; their
// optimizer state may be absent (this layout) or present (checkpoints written before frozen
// tensors lost their state: it is skipped), all or none of it.
using TensorSink = std::function<void(int buffer, size_t tensor, const void* data, size_t bytes)>;
Status loadCheckpointTensors(const CheckpointContents& checkpoint,
                             const model::ParameterTable& table, const TensorSink& put,
                             int stateCopies, const std::vector<bool>& frozen = {});

// The sparsity masks a checkpoint holds (<name>.sparsity_mask, U8 of the tensor's shape), each
// handed to `put` after every one is checked; how many there are (0: a dense checkpoint).
using MaskSink = std::function<void(size_t tensor, const uint8_t* mask, size_t bytes)>;
Result<size_t> loadCheckpointMasks(const CheckpointContents& checkpoint,
                                   const model::ParameterTable& table, const MaskSink& put);

// The keys whose values differ between two configs, as "key: a -> b" lines in declaration order.
std::vector<std::string> configDifferences(const config::Config& a, const config::Config& b);
// Whether a key (as configDifferences names it) leaves the training trajectory unchanged
// (logging, evaluation, checkpoint cadence, where MemoryX lives, ...).
bool keyKeepsResumeExact(const std::string& key);

}  // namespace ws::modelio
