// SPDX-License-Identifier: GPL-3.0-or-later
// The messages of a sweep across processes (private to engine/sweep): rank 0's SweepRunner and
// the workers of cluster.h exchange them on comm::Channel::Sweep, each a JSON object tagged with
// its kind. Doubles that decide anything (losses, metric values) travel as their 64 bits, so rank
// 0 sees exactly what the worker computed. Messages of one sender with one tag arrive in order,
// and rank 0 receives every tag with one receive, so a worker's records, steps and end arrive in
// the order it sent them.
#pragma once

#include <bit>
#include <chrono>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "engine/comm/comm.h"
#include "engine/config/config.h"
#include "engine/core/hash.h"
#include "engine/data/corpus.h"

namespace ws::sweep::cluster {

enum Tag : int {
    // rank 0 -> worker
    kAssign =
        1,   // a trial to run: {trial, config, corpus, db, cache, name, sweep, rungs, max_loss}
    kStop,   // stop the running trial between layers (the user stopped the sweep)
    kReply,  // the answer a worker waits for: {id} | {error} after "create", {stop} after a step
    kQuit,   // no more trials: {lost} (a rank died: exit without MPI_Finalize, which waits on it)
    // worker -> rank 0
    kReady,   // {cores}: ready for trials
    kRecord,  // one write to the trial's run record: {op, ...} (store::RunRecorder)
    kStep,    // {trial, step, max_steps, loss}: a step ended; waits for kReply when it must
    kEnd,     // {trial, state, steps, run, elapsed, detail[, mismatch]}: the trial's session ended
    // both ways
    kHeartbeat,  // "still here", every kHeartbeatEvery
};

inline constexpr std::chrono::milliseconds kHeartbeatEvery{500};
// Sends of rank 0 to a worker give up after this (a dead peer never takes a large message).
inline constexpr std::chrono::milliseconds kSendTimeout{5000};

inline uint64_t bits(double v) {
    return std::bit_cast<uint64_t>(v);
}
inline double fromBits(const nlohmann::json& j) {
    return std::bit_cast<double>(j.get<uint64_t>());
}

inline bool send(comm::Comm& comm, int dest, Tag tag, const nlohmann::json& body,
                 std::chrono::milliseconds timeout = std::chrono::hours(24 * 365)) {
    return comm::sendString(comm, comm::Channel::Sweep, dest, int(tag), body.dump(), timeout);
}

// Every rank reads a trial's corpus itself (at the same path): its identity is the SHA-256 of
// the text train_input.data_dir reads, or why it cannot be read. Rank 0 sends its own with each
// trial, and a worker that reads something else refuses the trial (kEnd {mismatch}).
inline std::string corpusIdentity(const config::Config& config) {
    auto text = data::readCorpus(config.trainInput.dataDir, {config.trainInput.allowBinary});
    return text.ok() ? sha256Hex(*text) : "unreadable (" + text.error().message + ")";
}

inline nlohmann::json parse(const comm::Message& m) {
    return m.bytes.empty() ? nlohmann::json::object()
                           : nlohmann::json::parse(m.bytes, nullptr, /*allow_exceptions=*/false);
}

}  // namespace ws::sweep::cluster
