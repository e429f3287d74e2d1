// SPDX-License-Identifier: GPL-3.0-or-later
// RunWeights: a run's master weights, gradients and optimizer state in MemoryX, the parameter
// table that names them and, with memoryx.shards > 1 across processes, the plan that splits them
// by whole layers: this process (rank 0) then keeps shard 0 and reaches the other shards'
// tensors through ShardAccess (cluster_worker.h), one at a time. It loads the weights training
// starts from (the checkpoint resumed from, runconfig.checkpoint_path, or the initializers) and
// hands each tensor to the writers of weights and checkpoints.
// Not thread-safe: the session's worker thread; not movable (ShardAccess refers into it).
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/comm/comm.h"
#include "engine/config/config.h"
#include "engine/core/result.h"
#include "engine/model/parameters.h"
#include "engine/modelio/weights_io.h"
#include "engine/optim/optimizer.h"
#include "engine/session/cluster_worker.h"
#include "engine/session/events.h"
#include "engine/session/resume.h"
#include "engine/store/placement_records.h"
#include "engine/streaming/memoryx.h"
#include "engine/streaming/shards.h"

namespace ws::session {

class RunWeights {
public:
    using Log = std::function<void(LogLine::Level, std::string)>;

    // The parameter table of `shape` (LoRA applied); nothing allocated yet.
    RunWeights(const config::Config& config, const model::GptShape& shape);
    RunWeights(const RunWeights&) = delete;
    RunWeights& operator=(const RunWeights&) = delete;

    // Splits the parameters over memoryx.shards (refused, with the fix, when `processes`
    // cannot hold them) and gives every parameter its optimizer group.
    Status planShards(int processes);
    // What allocate() allocates, for the out-of-memory message.
    std::string allocationActivity() const;
    // MemoryX (shard 0's part when sharded; the other shards are reached through `comm`).
    Status allocate(comm::Comm* comm);
    // The weights (and optimizer state) training starts from: the checkpoint of `resume`,
    // runconfig.checkpoint_path (logged), or the initializers (seeded: a shard other than 0
    // draws its own tensors from the same streams).
    Status loadStarting(const ResumePlan* resume, const Log& log);
    // What the rows a grown vocabulary adds stand for, for the log ("ChatML's <|im_start|>,
    // <|im_end|>"): runconfig.checkpoint_path's embedding with fewer rows than model.vocab_size
    // grows (base rows copied, new rows the mean of the base's) when loadStarting reads it.
    void setAddedTokens(std::string description) { m_addedTokens = std::move(description); }

    const model::ParameterTable& table() const { return *m_table; }
    streaming::MemoryX& memoryx() { return *m_memoryx; }
    const streaming::MemoryX& memoryx() const { return *m_memoryx; }
    // MemoryX's master weights, whole; null when MemoryX is sharded.
    float* weights() const { return m_weights; }
    bool sharded() const { return m_shards.has_value(); }
    const streaming::ShardPlan& shardPlan() const { return m_plan; }
    // Every parameter's optimizer group (global offsets): which tensors train, and so where
    // MemoryX keeps gradients and optimizer state (optim::GradientLayout::Trainable).
    const std::vector<optim::ParamGroup>& groups() const { return m_groups; }
    int stateCopies() const { return m_stateCopies; }  // optimizer state buffers per parameter
    // What MemoryX keeps per parameter that trains: weights, gradients and state copies.
    size_t bytesPerTrainedParameter() const { return sizeof(float) * size_t(2 + m_stateCopies); }

    // Each tensor of the weights and optimizer state, for writers (sharded: fetched).
    modelio::TensorReader reader();
    // Every weight in one buffer, for a forward pass that reads them all: MemoryX's own, or,
    // sharded, gathered tensor by tensor into `gathered` (the weights only).
    const float* allWeights(std::vector<float>& gathered);
    // What each shard holds, for the run store (empty unless sharded).
    std::vector<store::MemoryXShard> shardRecords() const;

private:
    Status loadWhole(const ResumePlan* resume, const Log& log);
    Status loadShards(const ResumePlan* resume, const Log& log);
    void logGrowth(int64_t grownFrom, const Log& log) const;

    const config::Config& m_config;
    std::unique_ptr<model::ParameterTable> m_table;
    std::unique_ptr<streaming::MemoryX> m_memoryx;
    streaming::ShardPlan m_plan;
    std::optional<ShardAccess> m_shards;
    std::vector<optim::ParamGroup> m_groups;
    float* m_weights = nullptr;
    int m_stateCopies = 0;
    std::string m_addedTokens;
};

}  // namespace ws::session
