// SPDX-License-Identifier: GPL-3.0-or-later
// Training across processes (`mpirun -np P wafer train`): the step orders rank 0's Session sends
// before every step, and the loop the other ranks run instead of a Session. Rank 0 alone touches
// the corpus, the run store, the model folder, checkpoints and evaluation; before each step it
// broadcasts a StepOrder and the step's batch on the Control channel, and the other ranks run
// the same StreamingExecutor step for their systems (executor.h: weights arrive from rank 0's
// MemoryX, gradients go back to it). An order with go == 0 ends training on every rank.
// MemoryX sharded (memoryx.shards = N > 1): ranks 1..N-1 also hold a shard (streaming/shards.h):
// they initialise their own tensors from the seed (the same bits rank 0 would draw), update their
// layers with the learning rate the step order carries, and between steps answer rank 0's fetch
// and put orders, which move one tensor of one buffer (weights or an optimizer state copy) to or
// from rank 0: checkpoints and the final weights are written tensor by tensor that way, and a
// resume loads each shard's tensors the same way, so rank 0 never holds another shard whole.
// Thread-safety: the Control channel belongs to the thread that runs the Session or the worker.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "engine/comm/comm.h"
#include "engine/config/config.h"
#include "engine/core/result.h"
#include "engine/model/parameters.h"
#include "engine/streaming/memoryx.h"
#include "engine/streaming/shards.h"

namespace ws::session {

inline constexpr int32_t kOrderEnd = 0, kOrderStep = 1, kOrderFetch = 2, kOrderPut = 3;

struct StepOrder {
    int32_t go = 0;          // kOrderStep: run step `step`; kOrderEnd: training is over; ...
    int32_t microBatch = 0;  // sequences per system per micro-batch, as rank 0's fit chose
    int64_t step = 0;        // 0-based global step
    uint64_t dropoutSeed = 0;
    double lr = 0.0;     // the step's learning rate (MemoryX shards update with it)
    int32_t buffer = 0;  // kOrderFetch/kOrderPut: 0 the weights, 1... optimizer state copies
    int32_t tensor = 0;  // kOrderFetch/kOrderPut: an index into ParameterTable::tensors()
};

// Rank 0: sends an order, and for go == 1 the (B, T) inputs and targets after it.
void sendStepOrder(comm::Comm& comm, const StepOrder& order, std::vector<int32_t>& inputs,
                   std::vector<int32_t>& targets);

// Where buffer b (as in StepOrder) of tensor t lives in the MemoryX shard of `rank`; the
// optimizer state is in the Trainable layout of `groups` (every parameter's, global offsets), and
// a frozen tensor has none (null).
float* shardTensor(streaming::MemoryX& memoryx, const streaming::ShardPlan& plan, int rank,
                   const model::ParameterTable& table, int buffer, size_t tensor,
                   const std::vector<optim::ParamGroup>& groups);

// The MemoryX of shard `rank`: memoryx.backing as configured, a file-backed shard of a rank
// other than 0 in "<memoryx.path>.shard<rank>"; gradients and optimizer state for the
// parameters that train (optim::GradientLayout::Trainable of parameterGroups) only.
Result<std::unique_ptr<streaming::MemoryX>> createShardMemoryX(const config::Config& config,
                                                               const model::ParameterTable& table,
                                                               const streaming::ShardPlan& plan,
                                                               int rank);

// Rank 0's access, between steps, to every shard's tensors: its own directly, another shard's by
// a fetch or put order (one tensor at a time; read()'s pointer is valid until the next call).
class ShardAccess {
public:
    ShardAccess(comm::Comm* comm, const streaming::ShardPlan& plan,
                const model::ParameterTable& table, streaming::MemoryX& local,
                std::vector<optim::ParamGroup> groups);
    const float* read(int buffer, size_t tensor);
    void write(int buffer, size_t tensor, const void* data, size_t bytes);

private:
    comm::Comm* m_comm;
    const streaming::ShardPlan& m_plan;
    const model::ParameterTable& m_table;
    streaming::MemoryX& m_local;
    std::vector<optim::ParamGroup> m_groups;
    std::vector<float> m_scratch;  // (largest tensor) another shard's tensor, as fetched
};

// Ranks other than 0: follows rank 0's orders with the config rank 0 runs, computing this
// rank's systems, until the order to stop. Fails (before any order) when the config cannot run
// across comm.size() processes; a failure inside a step ends the whole job (Comm::abort).
Status runClusterWorker(comm::Comm& comm, const config::Config& config);

// Which rank on which host computes which systems: "rank 0 on a: system 0; rank 1 on b:
// systems 1-2" (the run log's record of the placement).
std::string describePlacement(const comm::Comm& comm, int systems);

// The message a job with more processes than systems gets (empty when P <= num_csx).
std::string clusterPlacementProblem(int processes, int systems);

}  // namespace ws::session
