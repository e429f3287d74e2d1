// Training across processes (`mpirun -np P wafer train`): the step orders rank 0's Session sends
// before every step, and the loop the other ranks run instead of a Session. Rank 0 alone touches
// the corpus, the run store, the model folder, checkpoints and evaluation; before each step it
// broadcasts a StepOrder and the step's batch on the Control channel, and the other ranks run
// the same StreamingExecutor step for their systems (executor.h: weights arrive from rank 0's
// MemoryX, gradients go back to it). An order with go == 0 ends training on every rank.
// Thread-safety: the Control channel belongs to the thread that runs the Session or the worker.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "engine/comm/comm.h"
#include "engine/config/config.h"
#include "engine/core/result.h"

namespace ws::session {

struct StepOrder {
    int32_t go = 0;          // 1: run step `step`; 0: training is over
    int32_t microBatch = 0;  // sequences per system per micro-batch, as rank 0's fit chose
    int64_t step = 0;        // 0-based global step
    uint64_t dropoutSeed = 0;
};

// Rank 0: sends an order, and for go == 1 the (B, T) inputs and targets after it.
void sendStepOrder(comm::Comm& comm, const StepOrder& order, std::vector<int32_t>& inputs,
                   std::vector<int32_t>& targets);

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
