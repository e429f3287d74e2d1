// SPDX-License-Identifier: GPL-3.0-or-later
// The step orders and the worker loop of training across processes (see cluster_worker.h).
#include "engine/session/cluster_worker.h"

#include <fmt/format.h>

#include <optional>

#include <algorithm>
#include <cstring>
#include <new>

#include "engine/model/parameters.h"
#include "engine/session/param_groups.h"
#include "engine/streaming/executor.h"
#include "engine/tensor/threads.h"

namespace ws::session {

void sendStepOrder(comm::Comm& comm, const StepOrder& order, std::vector<int32_t>& inputs,
                   std::vector<int32_t>& targets) {
    StepOrder copy = order;
    comm.broadcast(comm::Channel::Control, &copy, sizeof copy, 0);
    if (order.go == 0) return;
    comm.broadcast(comm::Channel::Control, inputs.data(), inputs.size() * sizeof(int32_t), 0);
    comm.broadcast(comm::Channel::Control, targets.data(), targets.size() * sizeof(int32_t), 0);
}

float* shardTensor(streaming::MemoryX& memoryx, const streaming::ShardPlan& plan, int rank,
                   const model::ParameterTable& table, int buffer, size_t tensor,
                   const std::vector<optim::ParamGroup>& groups) {
    const auto& t = table.tensors()[tensor];
    if (buffer == 0) return memoryx.weights() + (t.offset - plan.begin(rank));
    const auto pieces = optim::trainablePieces(groups, t.offset, t.offset + t.size);
    if (pieces.empty()) return nullptr;  // frozen: no optimizer state
    const size_t local = pieces[0].stateOffset - plan.overTrainable(groups).begin(rank);
    const optim::OptimizerState state = memoryx.optimizerState();
    return (buffer == 1 ? state.firstMoment : state.secondMoment) + local;
}

Result<std::unique_ptr<streaming::MemoryX>> createShardMemoryX(const config::Config& config,
                                                               const model::ParameterTable& table,
                                                               const streaming::ShardPlan& plan,
                                                               int rank) {
    config::MemoryXConfig mx = config.memoryx;
    if (rank > 0 && mx.backing == "file") mx.path += fmt::format(".shard{}", rank);
    // Sparsity masks (top-level sparsity section) beside the weights; sharding refuses them.
    const size_t maskBytes =
        config.sparsity && config.sparsity->sparsity > 0 ? plan.count(rank) : 0;
    return streaming::MemoryX::create(
        mx, plan.count(rank), optim::Optimizer::stateCopies(config.optimizer),
        streaming::largestLayerSize(table),
        plan.trainableOnRank(parameterGroups(table, config.optimizer), rank), maskBytes);
}

ShardAccess::ShardAccess(comm::Comm* comm, const streaming::ShardPlan& plan,
                         const model::ParameterTable& table, streaming::MemoryX& local,
                         std::vector<optim::ParamGroup> groups)
    : m_comm(comm), m_plan(plan), m_table(table), m_local(local), m_groups(std::move(groups)) {}

const float* ShardAccess::read(int buffer, size_t tensor) {
    const auto& t = m_table.tensors()[tensor];
    const int owner = m_plan.ownerOfLayer(t.layerIndex);
    if (owner == 0) return shardTensor(m_local, m_plan, 0, m_table, buffer, tensor, m_groups);
    StepOrder order;
    order.go = kOrderFetch;
    order.buffer = buffer;
    order.tensor = int32_t(tensor);
    m_comm->broadcast(comm::Channel::Control, &order, sizeof order, 0);
    m_scratch.resize(t.size);
    comm::transfer(*m_comm, comm::Channel::Control, nullptr, m_scratch.data(),
                   t.size * sizeof(float), owner, 0);
    return m_scratch.data();
}

void ShardAccess::write(int buffer, size_t tensor, const void* data, size_t bytes) {
    const auto& t = m_table.tensors()[tensor];
    const int owner = m_plan.ownerOfLayer(t.layerIndex);
    if (owner == 0) {
        std::memcpy(shardTensor(m_local, m_plan, 0, m_table, buffer, tensor, m_groups), data,
                    bytes);
        return;
    }
    StepOrder order;
    order.go = kOrderPut;
    order.buffer = buffer;
    order.tensor = int32_t(tensor);
    m_comm->broadcast(comm::Channel::Control, &order, sizeof order, 0);
    comm::transfer(*m_comm, comm::Channel::Control, data, nullptr, bytes, 0, owner);
}

std::string describePlacement(const comm::Comm& comm, int systems) {
    std::string text;
    for (int r = 0; r < comm.size(); ++r) {
        const auto mine = comm::systemsOfRank(systems, comm.size(), r);
        text += fmt::format("{}rank {} on {}: {}", r == 0 ? "" : "; ", r, comm.hostOf(r),
                            mine.count == 1 ? fmt::format("system {}", mine.first)
                                            : fmt::format("systems {}-{}", mine.first,
                                                          mine.first + mine.count - 1));
    }
    return text;
}

std::string clusterPlacementProblem(int processes, int systems) {
    if (processes <= systems) return {};
    return fmt::format(
        "{} processes but runconfig.num_csx is {}: each process computes whole systems, so run "
        "at most {} (mpirun -np {}) or raise runconfig.num_csx",
        processes, systems, systems, systems);
}

Status runClusterWorker(comm::Comm& comm, const config::Config& cfg) {
    if (std::string problem = clusterPlacementProblem(comm.size(), cfg.runconfig.numCsx);
        !problem.empty()) {
        return Error{problem};
    }
    tensor::setComputeThreads(cfg.runconfig.numThreads);
    model::GptShape shape = model::GptShape::fromConfig(cfg.model);
    shape.applyLora(cfg.lora);
    const int B = cfg.trainInput.batchSize, T = cfg.trainInput.maxSequenceLength;
    std::vector<int32_t> inputs(size_t(B) * T), targets(size_t(B) * T);
    const model::ParameterTable table(shape);
    const int shards = cfg.memoryx.shards, me = comm.rank();
    if (shards > 1) {
        if (std::string problem =
                streaming::shardsProblem(shards, comm.size(), int(table.layers().size()));
            !problem.empty()) {
            return Error{problem};
        }
    }
    // A MemoryX shard, its own tensors initialised from the seed as rank 0 would draw them
    // (a resume or runconfig.checkpoint_path then overwrites them with put orders).
    const streaming::ShardPlan plan(table, shards);
    std::unique_ptr<streaming::MemoryX> memoryx;
    std::optional<optim::Optimizer> optimizer;
    std::vector<optim::ParamGroup> groups = parameterGroups(table, cfg.optimizer);
    if (me < shards && shards > 1) {
        try {
            auto created = createShardMemoryX(cfg, table, plan, me);
            if (!created.ok()) return created.error();
            memoryx = std::move(created).value();
            model::initParameterTensors(
                table, cfg.model, static_cast<uint64_t>(cfg.runconfig.seed), [&](size_t t) {
                    return plan.ownerOfLayer(table.tensors()[t].layerIndex) == me
                               ? shardTensor(*memoryx, plan, me, table, 0, t, groups)
                               : nullptr;
                });
            optimizer.emplace(cfg.optimizer, plan.localGroups(groups, me), plan.count(me),
                              memoryx->optimizerState(), optim::GradientLayout::Trainable);
        } catch (const std::bad_alloc&) {
            return Error{fmt::format(
                "out of memory allocating this rank's MemoryX shard ({} parameters with their "
                "optimizer state): raise memoryx.shards, or give the ranks more memory",
                plan.count(me))};
        }
    }

    std::optional<streaming::StreamingExecutor> executor;
    for (;;) {
        StepOrder order;
        comm.broadcast(comm::Channel::Control, &order, sizeof order, 0);
        if (order.go == kOrderEnd) return Status::success();
        if (order.go == kOrderFetch || order.go == kOrderPut) {
            const auto& t = table.tensors()[size_t(order.tensor)];
            const int owner = plan.ownerOfLayer(t.layerIndex);
            float* mine = owner == me && memoryx
                              ? shardTensor(*memoryx, plan, me, table, order.buffer,
                                            size_t(order.tensor), groups)
                              : nullptr;
            if (order.go == kOrderFetch)
                comm::transfer(comm, comm::Channel::Control, mine, nullptr, t.size * sizeof(float),
                               owner, 0);
            else
                comm::transfer(comm, comm::Channel::Control, nullptr, mine, t.size * sizeof(float),
                               0, owner);
            continue;
        }
        comm.broadcast(comm::Channel::Control, inputs.data(), inputs.size() * sizeof(int32_t), 0);
        comm.broadcast(comm::Channel::Control, targets.data(), targets.size() * sizeof(int32_t), 0);
        try {
            if (!executor) {
                streaming::StreamingOptions options;
                options.systems = cfg.runconfig.numCsx;
                options.microBatch = order.microBatch;
                options.weightBufferLayers = cfg.wafer.weightBufferLayers;
                options.comm = &comm;
                options.memoryxShards = shards;
                options.reduceFanIn = cfg.memoryx.reduceFanIn;
                options.groups = groups;  // which gradients leave the systems
                if (memoryx)
                    executor.emplace(shape, B, T, options, *memoryx, *optimizer);
                else
                    executor.emplace(shape, B, T, options);
            }
        } catch (const std::bad_alloc&) {
            comm.abort(1, "out of memory allocating this rank's systems");
        }
        // lr and the update count only matter where MemoryX is (rank 0 and the shards).
        executor->step(order.step, inputs.data(), targets.data(), order.lr,
                       cfg.optimizer.maxGradientNorm, order.step + 1, order.dropoutSeed);
    }
}

}  // namespace ws::session
