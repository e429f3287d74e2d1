// SPDX-License-Identifier: GPL-3.0-or-later
// Shared output helpers of the CLI: error reporting and the stable JSON shapes scripts read
// (keys: event, step, loss, eval_loss, lr, grad_norm, tokens_per_s, tokens_seen, elapsed_s).
#pragma once

#include <atomic>
#include <nlohmann/json.hpp>
#include <string>

#include "engine/session/session.h"

namespace ws::cli {

struct CommonOptions;

// Starts `session` and shows it until it ends: a live progress line (or JSON lines), Ctrl-C stops
// it cleanly, then the summary. Returns the exit code (commands.h). Shared by train and finetune.
int driveSession(session::Session& session, const CommonOptions& common);

// Ctrl-C while a command runs: catchCtrlC() clears the returned flag and installs a handler
// that sets it (the command then stops cleanly) and lets a second Ctrl-C end the process at once;
// restoreCtrlC() puts the default back. One flag for the process: one command runs at a time.
std::atomic<bool>& catchCtrlC();
// After catchCtrlC(): SIGTERM sets the same flag (mpirun turns Ctrl-C into SIGTERM to its ranks).
// A second SIGTERM ends the process at once, as a second Ctrl-C does, except in a Slurm job: a
// Slurm stop (scancel, the time limit) sends SIGTERM twice, from slurmstepd to every process of
// the step and from srun or mpirun in the batch script passing on their own, and Slurm kills
// after its KillWait anyway; there restoreCtrlC() leaves SIGTERM stopping, since those SIGTERMs
// may come after the run ended.
void alsoStopOnSigterm();
// This process is a rank that `srun --mpi=pmix` started (PMIx's and Slurm's variables, none of
// mpirun's): Slurm, not mpirun, ends its job.
bool startedBySrun();
void restoreCtrlC();

// Prints "wafer: error: <message>" on stderr; returns exit code 1.
int fail(const std::string& message);
// A JSON number, or null for NaN/Inf (JSON has no NaN).
nlohmann::json number(double value);
nlohmann::json stepJson(const session::StepMetrics& m);
nlohmann::json summaryJson(const session::RunSummary& s);
const char* levelName(session::LogLine::Level level);
const char* levelPrefix(session::LogLine::Level level);

}  // namespace ws::cli
