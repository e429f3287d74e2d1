// SPDX-License-Identifier: GPL-3.0-or-later
// The `wafer` subcommands. Each registers its options on the CLI11 app and returns the exit code
// through a callback; main.cpp only wires them. Exit codes: 0 success (a stopped run included),
// 1 a failure reported on stderr, 2 usage error, 3 the run diverged, 4 the μP coord check ran
// but its verdict is FAIL.
#pragma once

#include <CLI/CLI.hpp>

#include "engine/comm/comm.h"

namespace ws::cli {

// Options every command shares.
struct CommonOptions {
    bool json = false;            // one JSON object per line on stdout instead of text
    std::string dbPath;           // run store; empty = the user data folder's runs.sqlite
    comm::Comm* comm = nullptr;   // the job's processes (several under mpirun; main.cpp owns it)
    bool workersStarted = false;  // rank 0 of several: the other ranks have the config to run
    bool sweepJob = false;        // `mpirun ... wafer sweep`: the other ranks run sweep trials
};

// `mpirun -np P wafer train`: every rank but 0 runs this instead of parsing its arguments; it
// follows the config and the step orders rank 0 sends. Rank 0 calls releaseIdleWorkers when it
// ends without starting a run (a usage error, --help, a bad config), so the others end too.
int runTrainWorker(comm::Comm& comm);
void releaseIdleWorkers(CommonOptions& common);
// `mpirun -np P wafer sweep`: every rank but 0 runs the trials rank 0 sends (sweep/cluster.h).
// A job that lost a rank ends here without MPI_Finalize, which would wait for the dead rank.
int runSweepWorker(comm::Comm& comm);
void releaseIdleSweepWorkers(comm::Comm& comm);

void addTrainCommand(CLI::App& app, CommonOptions& common, int& exitCode);
void addValidateCommand(CLI::App& app, CommonOptions& common, int& exitCode);
void addRunsCommand(CLI::App& app, CommonOptions& common, int& exitCode);
void addFieldsCommand(CLI::App& app, CommonOptions& common, int& exitCode);
void addSampleCommand(CLI::App& app, CommonOptions& common, int& exitCode);
void addChatCommand(CLI::App& app, CommonOptions& common, int& exitCode);
void addPredictCommand(CLI::App& app, CommonOptions& common, int& exitCode);
void addValidateEmulatorCommand(CLI::App& app, CommonOptions& common, int& exitCode);
void addCoordCheckCommand(CLI::App& app, CommonOptions& common, int& exitCode);
void addSweepCommand(CLI::App& app, CommonOptions& common, int& exitCode);
void addInteropCommands(CLI::App& app, CommonOptions& common, int& exitCode);  // import, export
void addFinetuneCommand(CLI::App& app, CommonOptions& common, int& exitCode);
void addEvalCommand(CLI::App& app, CommonOptions& common, int& exitCode);
void addStoreCommand(CLI::App& app, CommonOptions& common, int& exitCode);   // check, recover
void addLessonCommand(CLI::App& app, CommonOptions& common, int& exitCode);  // list, check, run
void addTokenizeCommand(CLI::App& app, CommonOptions& common, int& exitCode);

}  // namespace ws::cli
