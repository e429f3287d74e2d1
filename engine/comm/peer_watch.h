// SPDX-License-Identifier: GPL-3.0-or-later
// PeerWatch: across processes, notices a peer that stopped answering - its host went down, or
// the network to it was cut - while the job's collectives wait on it without a word for as long
// as TCP retransmits (a quarter of an hour and more: a vanished host sends no reset). Every
// other rank's thread sends rank 0 a heartbeat each period; on rank 0, a rank heard from once
// and then silent for `timeout` is reported once, in one message naming its rank and host
// (stderr, unless the caller takes it). Only rank 0 reports: a rank cut off with its host
// cannot be heard, and its output waiting for the network would keep its Open MPI daemon from
// noticing that mpirun is gone and ending it. (Where rank 0's host vanishes, mpirun, usually on
// that host, goes with it, and the other hosts' daemons end their ranks.)
// It does not end the job: mpirun cannot end a job while it still waits on the vanished host's
// daemon (an MPI_Abort then hangs as long as TCP retransmits). mpirun ends it, without that
// daemon, once TCP keepalive on its own connections says the host is gone: after
// oob_tcp_keepalive_time + _probes x _intvl (300 + 9 x 20 s by default; lower them with
// --mca to end the job sooner).
// Heartbeats travel on the point-to-point Sweep channel (a dead peer is an error returned there,
// never fatal), which a training job does not otherwise use: a sweep job has its own worker
// timeout and must not run a PeerWatch. A rank that ends says goodbye first, so rank 0 stops
// watching it (ranks finish at different times: rank 0 writes the final checkpoint last).
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

#include "engine/comm/comm.h"

namespace ws::comm {

class PeerWatch {
public:
    // Called on the watch's thread with the silent peer's rank and the message naming it
    // (default: the message on stderr, prefixed with this rank and host).
    using OnSilent = std::function<void(int rank, const std::string& message)>;

    // Starts watching (every rank of the job at about the same point). No thread in a
    // one-process job, or with timeout 0.
    PeerWatch(Comm& comm, std::chrono::milliseconds timeout, OnSilent onSilent = {},
              std::chrono::milliseconds period = std::chrono::milliseconds(500));
    ~PeerWatch();  // stops; a rank other than 0 says goodbye, so rank 0 stops watching it
    PeerWatch(const PeerWatch&) = delete;
    PeerWatch& operator=(const PeerWatch&) = delete;

private:
    void run();

    Comm& m_comm;
    const std::chrono::milliseconds m_timeout, m_period;
    OnSilent m_onSilent;
    std::mutex m_mutex;
    std::condition_variable m_wake;
    bool m_stop = false;
    std::thread m_thread;
};

// The watch's timeout: WAFER_PEER_TIMEOUT in seconds (0 turns the watch off), else 30 s.
// Error when the variable is not a number.
Result<std::chrono::milliseconds> peerTimeoutFromEnvironment();

// What the watch says when `rank` on `host` has been silent for `silent`.
std::string silentPeerMessage(int rank, const std::string& host, std::chrono::milliseconds silent);

}  // namespace ws::comm
