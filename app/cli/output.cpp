// SPDX-License-Identifier: GPL-3.0-or-later
#include "app/cli/output.h"

#include <csignal>

#include <cmath>
#include <cstdlib>
#include <iostream>

namespace ws::cli {

namespace {

std::atomic<bool> g_ctrlC{false};
bool g_slurmSigterm = false;  // alsoStopOnSigterm() in a Slurm job: every SIGTERM only stops
static_assert(std::atomic<bool>::is_always_lock_free, "set from a signal handler");

extern "C" void onCtrlC(int signal) {
    g_ctrlC = true;
    std::signal(signal, SIG_DFL);  // a second Ctrl-C ends the process at once
}

extern "C" void onEverySigterm(int) {
    g_ctrlC = true;
}

}  // namespace

std::atomic<bool>& catchCtrlC() {
    g_ctrlC = false;
    std::signal(SIGINT, onCtrlC);
    return g_ctrlC;
}

void alsoStopOnSigterm() {
    g_slurmSigterm = std::getenv("SLURM_JOB_ID") != nullptr;
    std::signal(SIGTERM, g_slurmSigterm ? onEverySigterm : onCtrlC);
}

bool startedBySrun() {
    return !std::getenv("OMPI_COMM_WORLD_SIZE") && std::getenv("PMIX_RANK") &&
           std::getenv("SLURM_JOB_ID");
}

void restoreCtrlC() {
    std::signal(SIGINT, SIG_DFL);
    // In a Slurm job the SIGTERMs of a stop may still arrive after the run has ended: they must
    // not kill the process while it prints its summary and leaves the job (Slurm's SIGKILL
    // after KillWait still ends one that hangs).
    if (!g_slurmSigterm) std::signal(SIGTERM, SIG_DFL);
}

int fail(const std::string& message) {
    std::cerr << "wafer: error: " << message << "\n";
    return 1;
}

nlohmann::json number(double value) {
    return std::isfinite(value) ? nlohmann::json(value) : nlohmann::json(nullptr);
}

nlohmann::json stepJson(const session::StepMetrics& m) {
    return {{"event", "step"},
            {"step", m.step},
            {"max_steps", m.maxSteps},
            {"loss", number(m.loss)},
            {"eval_loss", number(m.evalLoss)},
            {"eval_bpb", number(m.evalBitsPerByte)},
            {"lr", m.learningRate},
            {"grad_norm", number(m.gradNorm)},
            {"tokens_per_s", m.tokensPerSec},
            {"tokens_seen", m.tokensSeen},
            {"elapsed_s", m.elapsedSec}};
}

nlohmann::json summaryJson(const session::RunSummary& s) {
    return {{"event", "summary"},
            {"run_id", s.runId},
            {"status", session::runStateName(s.state)},
            {"steps", s.steps},
            {"final_loss", number(s.finalLoss)},
            {"final_eval_loss", number(s.finalEvalLoss)},
            {"final_eval_bpb", number(s.finalEvalBitsPerByte)},
            {"initial_eval_loss", number(s.initialEvalLoss)},
            {"tokens_per_s", s.tokensPerSec},
            {"elapsed_s", s.elapsedSec},
            {"emulated_s", s.emulatedSec},
            {"parameters", s.parameterCount},
            {"unigram_entropy", s.unigramEntropyNats},
            {"emulated_flops", s.emulatedFlops},
            {"model_dir", s.modelDir.string()},
            {"detail", s.detail}};
}

const char* levelName(session::LogLine::Level level) {
    switch (level) {
        case session::LogLine::Level::Warning:
            return "warning";
        case session::LogLine::Level::Error:
            return "error";
        default:
            return "info";
    }
}

const char* levelPrefix(session::LogLine::Level level) {
    switch (level) {
        case session::LogLine::Level::Warning:
            return "warning: ";
        case session::LogLine::Level::Error:
            return "error: ";
        default:
            return "";
    }
}

}  // namespace ws::cli
