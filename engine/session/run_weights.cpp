// SPDX-License-Identifier: GPL-3.0-or-later
// A run's weights and optimizer state in MemoryX, whole or sharded (see run_weights.h).
#include "engine/session/run_weights.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "engine/fileio/safetensors.h"
#include "engine/modelio/checkpoints.h"
#include "engine/session/param_groups.h"

namespace ws::session {

namespace {

// The embedding rows of a safetensors weights file (wte.weight in this engine's or GPT-2's names,
// model.embed_tokens.weight in Llama's); nullopt when the file is not one or holds none.
std::optional<int64_t> embeddingRows(const std::string& path) {
    auto file = fileio::SafetensorsFile::open(path);
    if (!file.ok()) return std::nullopt;
    for (const char* name : {"wte.weight", "transformer.wte.weight", "model.embed_tokens.weight"})
        if (const auto* info = file->find(name); info && info->shape.size() == 2)
            return info->shape[0];
    return std::nullopt;
}

// A (V, C) table of `oldRows` rows grown to the first V rows of `into`: the old rows copied bit
// for bit, each new row the mean of the old ones (Hugging Face's resize_token_embeddings with
// mean_resizing, the default since transformers 4.46, without its 1e-9-scaled noise).
void growRows(const float* old, int64_t oldRows, int64_t rows, int64_t C, float* into) {
    std::copy(old, old + oldRows * C, into);
    std::vector<double> mean(size_t(C), 0.0);
    for (int64_t r = 0; r < oldRows; ++r)
        for (int64_t c = 0; c < C; ++c) mean[size_t(c)] += double(old[r * C + c]);
    for (int64_t r = oldRows; r < rows; ++r)
        for (int64_t c = 0; c < C; ++c)
            into[r * C + c] = float(mean[size_t(c)] / double(std::max<int64_t>(oldRows, 1)));
}

// The base's tensors of `base` (read from `baseParams`) into `params` laid out by `table`,
// whose vocabulary may have more rows (growRows); adapters keep their initial values.
void copyBase(const model::ParameterTable& base, const std::vector<float>& baseParams,
              const model::ParameterTable& table, float* params) {
    for (const model::TensorSlice& t : base.tensors()) {
        const model::TensorSlice* into = table.find(t.name);
        if (!into) continue;         // cannot happen: the adapted table holds every base tensor
        if (into->size != t.size) {  // wte or lm_head (V, C) of a grown vocabulary
            growRows(baseParams.data() + t.offset, t.shape[0], into->shape[0], t.shape[1],
                     params + into->offset);
            continue;
        }
        std::copy(baseParams.begin() + std::ptrdiff_t(t.offset),
                  baseParams.begin() + std::ptrdiff_t(t.offset + t.size), params + into->offset);
    }
}

// runconfig.checkpoint_path into `params` (laid out by `table`). With LoRA the file holds the
// base model without adapters: its tensors are read by name into the adapted layout and the
// adapters are initialised (A seeded, B = 0, so training starts from the base exactly). A file
// that holds this table's adapters too (a LoRA run's weights, imported PEFT adapters) continues
// them: it is read whole. A file whose embedding has fewer rows than model.vocab_size (a
// fine-tune that added a chat template's special tokens) grows: `grownFrom` says from how many.
Status loadStartingFile(const config::Config& cfg, const model::ParameterTable& table,
                        float* params, int64_t& grownFrom) {
    const std::string& path = cfg.runconfig.checkpointPath;
    const std::optional<int64_t> rows = embeddingRows(path);
    const bool grows = rows && *rows > 0 && *rows < table.shape().vocab;
    if (!table.shape().hasLora() && !grows) return modelio::loadWeights(path, table, params);
    if (auto file = fileio::SafetensorsFile::open(path);
        !grows && file.ok() && modelio::matchWeights(*file, table).ok()) {
        return modelio::readWeights(*file, table, params);
    }
    model::GptShape baseShape = table.shape();
    baseShape.applyLora(std::nullopt);
    if (grows) baseShape.vocab = int(*rows);
    const model::ParameterTable base(baseShape);
    std::vector<float> baseParams(base.totalSize());
    if (Status st = modelio::loadWeights(path, base, baseParams.data()); !st.ok()) return st;
    model::initParameters(table, cfg.model, static_cast<uint64_t>(cfg.runconfig.seed), params);
    copyBase(base, baseParams, table, params);
    if (grows) grownFrom = *rows;
    return Status::success();
}

}  // namespace

RunWeights::RunWeights(const config::Config& config, const model::GptShape& shape)
    : m_config(config),
      m_table(std::make_unique<model::ParameterTable>(shape)),
      m_stateCopies(optim::Optimizer::stateCopies(config.optimizer)) {}

Status RunWeights::planShards(int processes) {
    // memoryx.shards > 1: this rank keeps shard 0 (the first layers); the others keep theirs.
    const int shards = m_config.memoryx.shards;
    if (shards > 1) {
        if (std::string problem =
                streaming::shardsProblem(shards, processes, int(m_table->layers().size()));
            !problem.empty()) {
            return Error{problem};
        }
    }
    m_plan = streaming::ShardPlan(*m_table, shards);
    m_groups = parameterGroups(*m_table, m_config.optimizer);
    return Status::success();
}

std::string RunWeights::allocationActivity() const {
    const int shards = m_config.memoryx.shards;
    return fmt::format("allocating MemoryX ({} parameters with their optimizer state{})",
                       m_plan.count(0), shards > 1 ? ", shard 0 of " + std::to_string(shards) : "");
}

Status RunWeights::allocate(comm::Comm* comm) {
    auto memoryx = createShardMemoryX(m_config, *m_table, m_plan, 0);
    if (!memoryx.ok()) return memoryx.error();
    m_memoryx = std::move(memoryx).value();
    const bool sharded = m_config.memoryx.shards > 1;
    m_weights = sharded ? nullptr : m_memoryx->weights();
    if (sharded) m_shards.emplace(comm, m_plan, *m_table, *m_memoryx, m_groups);
    return Status::success();
}

Status RunWeights::loadStarting(const ResumePlan* resume, const Log& log) {
    return m_shards ? loadShards(resume, log) : loadWhole(resume, log);
}

Status RunWeights::loadWhole(const ResumePlan* resume, const Log& log) {
    const config::Config& cfg = m_config;
    if (resume) {
        return modelio::loadCheckpointTensors(
            resume->checkpoint, *m_table,
            [&](int buffer, size_t t, const void* data, size_t bytes) {
                std::memcpy(shardTensor(*m_memoryx, m_plan, 0, *m_table, buffer, t, m_groups), data,
                            bytes);
            },
            m_stateCopies, frozenTensors(m_groups));
    }
    if (!cfg.runconfig.checkpointPath.empty()) {
        int64_t grownFrom = 0;
        if (Status st = loadStartingFile(cfg, *m_table, m_weights, grownFrom); !st.ok()) {
            return st;
        }
        log(LogLine::Level::Info, "initialised from " + cfg.runconfig.checkpointPath);
        logGrowth(grownFrom, log);
        return Status::success();
    }
    model::initParameters(*m_table, cfg.model, static_cast<uint64_t>(cfg.runconfig.seed),
                          m_weights);
    return Status::success();
}

// loadWhole with MemoryX sharded: rank 0 initialises its own tensors (the other shards theirs,
// from the same seeded streams), or hands each tensor of a checkpoint to its shard.
Status RunWeights::loadShards(const ResumePlan* resume, const Log& log) {
    const config::Config& cfg = m_config;
    ShardAccess& access = *m_shards;
    if (resume) {
        return modelio::loadCheckpointTensors(
            resume->checkpoint, *m_table,
            [&](int buffer, size_t t, const void* data, size_t bytes) {
                access.write(buffer, t, data, bytes);
            },
            m_stateCopies, frozenTensors(m_groups));
    }
    if (!cfg.runconfig.checkpointPath.empty()) {
        // The weights file is read whole (weights only: a quarter of an AdamW MemoryX), then
        // each tensor goes to its shard.
        std::vector<float> whole(m_table->totalSize());
        int64_t grownFrom = 0;
        if (Status st = loadStartingFile(cfg, *m_table, whole.data(), grownFrom); !st.ok()) {
            return st;
        }
        for (size_t t = 0; t < m_table->tensors().size(); ++t) {
            const auto& slice = m_table->tensors()[t];
            access.write(0, t, whole.data() + slice.offset, slice.size * sizeof(float));
        }
        log(LogLine::Level::Info, "initialised from " + cfg.runconfig.checkpointPath);
        logGrowth(grownFrom, log);
        return Status::success();
    }
    model::initParameterTensors(
        *m_table, cfg.model, static_cast<uint64_t>(cfg.runconfig.seed), [&](size_t t) {
            return m_plan.ownerOfLayer(m_table->tensors()[t].layerIndex) == 0
                       ? shardTensor(*m_memoryx, m_plan, 0, *m_table, 0, t, m_groups)
                       : nullptr;
        });
    return Status::success();
}

void RunWeights::logGrowth(int64_t grownFrom, const Log& log) const {
    if (grownFrom <= 0) return;
    const int64_t V = m_table->shape().vocab;
    std::string what =
        m_addedTokens.empty() ? fmt::format("token ids {} to {}", grownFrom, V - 1) : m_addedTokens;
    log(LogLine::Level::Info,
        fmt::format("vocabulary {} → {} for {} (mean-initialised: each new row of {} is the mean "
                    "of the base's rows){}",
                    grownFrom, V, what, m_table->shape().tiedEmbedding ? "wte" : "wte and lm_head",
                    m_config.lora && m_config.lora->trainableTokensFrom > 0
                        ? "; under LoRA these rows train, the rest of the base stays frozen"
                        : ""));
}

modelio::TensorReader RunWeights::reader() {
    if (m_shards) return [&access = *m_shards](int b, size_t t) { return access.read(b, t); };
    return [this](int b, size_t t) -> const float* {
        return shardTensor(*m_memoryx, m_plan, 0, *m_table, b, t, m_groups);
    };
}

const float* RunWeights::allWeights(std::vector<float>& gathered) {
    if (m_weights) return m_weights;
    gathered.resize(m_table->totalSize());
    const modelio::TensorReader read = reader();
    for (size_t t = 0; t < m_table->tensors().size(); ++t) {
        const auto& slice = m_table->tensors()[t];
        std::copy_n(read(0, t), slice.size, gathered.data() + slice.offset);
    }
    return gathered.data();
}

std::vector<store::MemoryXShard> RunWeights::shardRecords() const {
    std::vector<store::MemoryXShard> shards;
    // Weights for every parameter; gradients and state for those that train.
    for (int k = 0; m_shards && k < m_plan.shards(); ++k) {
        const size_t trained = m_plan.trainableOnRank(m_groups, k);
        shards.push_back({k, m_plan.layerNames(*m_table, k),
                          int64_t((m_plan.count(k) - trained) * sizeof(float) +
                                  trained * bytesPerTrainedParameter())});
    }
    return shards;
}

}  // namespace ws::session
