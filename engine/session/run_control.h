// SPDX-License-Identifier: GPL-3.0-or-later
// Run control across processes: how a process that does not own a run's Session - the studio
// following a `wafer train` it started under mpirun, or `wafer runs pause RUN` in a shell - asks
// that run to pause between layers, continue, step one layer phase, write a checkpoint now, or
// stop. The asker writes a small request file in the run's model folder (`.wafer-control.json`,
// written atomically: temp file, fsync, rename, so a reader sees the old file or the new one,
// never half of one); the process that trains (rank 0 under mpirun) reads it every ~200 ms and
// turns it into Session::setPaused / stepOnePhase / requestCheckpoint / requestStop. What the run
// does in answer shows in the run store like everything else about a run: status "paused" and
// back to "running", a checkpoint row, status "stopped".
//
// Why a file and not a store table: the folder is already the one place a single training
// process owns (FolderLock), it needs no schema change and no writer on the store's connection
// from outside the training process, and a request can never outlive its folder. The file holds
// the asker's wishes, not a command queue: the desired pause state and a stop flag, and counters
// for the one-shot commands (checkpoints asked for, layer phases asked for). Rewriting it whole
// therefore loses nothing when two requests come faster than the poll. Stale requests never act:
// the session deletes the file when it claims the folder (before it can be asked anything), the
// file names the run it is for, and the follower acts only on counters that moved since it last
// read.
// Thread-safety: the free functions are safe from any thread and process (the last rename wins;
// sendRunControl's read-modify-write is not atomic between two askers, who would each still leave
// a complete file). RunControlFollower belongs to the thread that polls it.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/core/result.h"

namespace ws::session {

class Session;

inline constexpr std::string_view kControlFileName = ".wafer-control.json";

// The whole request file.
struct ControlRequest {
    int64_t runId = -1;       // the run it is for; another run's file is ignored
    int64_t sequence = 0;     // bumped by every write: "something changed"
    bool paused = false;      // pause between layers (true) or run (false)
    bool stop = false;        // stop after the step in flight, with a final checkpoint
    int64_t checkpoints = 0;  // checkpoint-now requests made so far
    int64_t layerSteps = 0;   // while paused: layer phases to let through, so far
    bool operator==(const ControlRequest&) const = default;
};

enum class ControlCommand { Pause, Continue, StepLayer, Checkpoint, Stop };
const char* controlCommandName(ControlCommand command);  // "pause", "continue", ...
std::optional<ControlCommand> parseControlCommand(std::string_view name);

// The request in `modelDir`, or nullopt when there is none. A file that is not a request (bad
// JSON, wrong fields) is an error naming it.
Result<std::optional<ControlRequest>> readControlRequest(const std::filesystem::path& modelDir);
// Replaces the request in `modelDir` atomically; the folder must exist.
Status writeControlRequest(const std::filesystem::path& modelDir, const ControlRequest& request);
// Removes the request file (a session claiming the folder: nothing asked before it counts).
void clearControlRequest(const std::filesystem::path& modelDir);

// Asks run `runId`, training in `modelDir`, to do `command`: reads the request there (another
// run's, or an unreadable one, counts as none), applies the command and writes it back. Refused,
// with the reason, when no session holds the folder (the run is not training).
Result<ControlRequest> sendRunControl(const std::filesystem::path& modelDir, int64_t runId,
                                      ControlCommand command);

// The training side: reads the session's request file at most every `interval` once the session
// has claimed its folder, and applies what changed since the last read.
class RunControlFollower {
public:
    explicit RunControlFollower(
        Session& session, std::chrono::milliseconds interval = std::chrono::milliseconds(200));
    // Polls when `interval` has passed since the last read (at once the first time). Returns one
    // line per command applied ("pause requested", ...) for the caller to print; an unreadable
    // file is reported once, then ignored until it changes.
    std::vector<std::string> poll();

private:
    Session& m_session;
    std::chrono::milliseconds m_interval;
    std::chrono::steady_clock::time_point m_lastRead{};
    bool m_readOnce = false;
    ControlRequest m_applied;  // what has been acted on (runId -1: nothing yet)
    std::string m_lastError;
};

}  // namespace ws::session
