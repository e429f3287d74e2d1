// The step orders and the worker loop of training across processes (see cluster_worker.h).
#include "engine/session/cluster_worker.h"

#include <fmt/format.h>

#include <optional>

#include "engine/model/parameters.h"
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
    const model::GptShape shape = model::GptShape::fromConfig(cfg.model);
    const int B = cfg.trainInput.batchSize, T = cfg.trainInput.maxSequenceLength;
    std::vector<int32_t> inputs(size_t(B) * T), targets(size_t(B) * T);
    std::optional<streaming::StreamingExecutor> executor;
    for (;;) {
        StepOrder order;
        comm.broadcast(comm::Channel::Control, &order, sizeof order, 0);
        if (order.go == 0) return Status::success();
        comm.broadcast(comm::Channel::Control, inputs.data(), inputs.size() * sizeof(int32_t), 0);
        comm.broadcast(comm::Channel::Control, targets.data(), targets.size() * sizeof(int32_t), 0);
        try {
            if (!executor) {
                streaming::StreamingOptions options;
                options.systems = cfg.runconfig.numCsx;
                options.microBatch = order.microBatch;
                options.weightBufferLayers = cfg.wafer.weightBufferLayers;
                options.comm = &comm;
                executor.emplace(shape, B, T, options);
            }
        } catch (const std::bad_alloc&) {
            comm.abort(1, "out of memory allocating this rank's systems");
        }
        // lr and the update count only matter where MemoryX is (rank 0).
        executor->step(order.step, inputs.data(), targets.data(), 0.0,
                       cfg.optimizer.maxGradientNorm, order.step + 1, order.dropoutSeed);
    }
}

}  // namespace ws::session
