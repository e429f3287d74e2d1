// SPDX-License-Identifier: GPL-3.0-or-later
// Sweeps across the processes of an `mpirun` job: `mpirun -np P wafer sweep SWEEP`. Rank 0's
// SweepRunner (runner.h, RunnerOptions::comm) plans the sweep, keeps every decision (which trial
// runs next, ASHA at the rungs, the divergence bound) and the run store, and runs one trial at a
// time itself; every other rank runs runSweepWorker: one trial at a time as a Session without a
// store, whose record (run row, status, metrics, log, summary) is forwarded to rank 0's store as
// it is written, so the store holds what a trial run in one process holds. After each step the
// worker sends the step's loss; at a rung (or a loss past sweep.max_loss) it waits for rank 0's
// continue/stop before the next step, so decisions are exactly those of one process.
//
// Faults: workers and rank 0 send heartbeats; a worker rank 0 has not heard from for
// RunnerOptions::workerTimeout is lost: its trial goes back to the front of the queue and runs
// on another rank. That needs `mpirun --mca orte_enable_recovery 1` (Open MPI 4; without it
// mpirun ends the whole job when one process dies, and `wafer sweep --resume` reruns only the
// trials without a result). A job that lost a rank ends without MPI_Finalize, which would wait
// for the dead rank forever.
// Thread-safety: runSweepWorker runs on the calling thread (one per process).
#pragma once

#include <chrono>

#include "engine/comm/comm.h"

namespace ws::sweep {

struct SweepWorkerResult {
    bool rankLost = false;  // the job lost a rank: end the process without MPI_Finalize
    bool rootLost = false;  // rank 0 stopped answering: this worker gave up
};

// Runs the trials rank 0 sends until rank 0 says the sweep is over. Ignores no signal: the caller
// decides (the CLI ignores SIGINT/SIGTERM, which mpirun forwards, and lets rank 0 stop the sweep).
SweepWorkerResult runSweepWorker(comm::Comm& comm,
                                 std::chrono::milliseconds rootTimeout = std::chrono::seconds(60));

// Rank 0 ended before its sweep started (a usage error, a bad sweep file): the workers end.
void releaseSweepWorkers(comm::Comm& comm);

// Compute cores this process may use (its CPU affinity).
int availableCores();

}  // namespace ws::sweep
